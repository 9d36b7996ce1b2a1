// ApproxCounter: a 64-bit signed counter that is cheap to update from many
// CPUs and cheap to read approximately (the semantics of the kernel's
// lib/percpu_counter.c; our own, lock-free implementation). Formerly
// PerCpuCounter, now a deprecated alias (removed in 0.3).
//
// State: one shared 64-bit count plus one 32-bit delta per CPU. Add(cpu, a)
// adds `a` to cpu's delta; when the delta's magnitude would reach `batch`,
// the whole delta is flushed into the shared count instead (fetch_add) and
// the delta becomes 0. Hence, after every Add, |delta| <= batch - 1.
//
//   Read()     O(1): the shared count only. Approximate:
//              |Read() - exact| <= (batch - 1) * online CPUs < ErrorBound(),
//              where ErrorBound() = batch * online CPUs and "exact" is Sum()
//              taken with no update in flight (offline CPUs hold no delta:
//              the hotplug callback folded it into the count).
//   Sum()      exact: count + deltas of the online CPUs, read as one
//              consistent cut (see "Flush protocol" below) inside a
//              Topology::hotplug_seq() read section. O(online CPUs).
//   Compare(x) like __percpu_counter_compare: the approximate value decides
//              when it is more than ErrorBound() away from x; otherwise the
//              exact Sum() decides.
//
// Flush protocol (replaces the kernel's raw spinlock around count + delta):
// each CPU's slot has a SeqCount `flush_seq`; a flush is
//     flush_seq.WriteBegin(); count.fetch_add(d); delta = 0; WriteEnd();
// i.e. the movement of d from the delta into the count is a write section of
// that CPU's seqcount (its only writer is that CPU; the offline hotplug
// callback takes over once the CPU is dead). Sum() reads, for every online
// CPU, flush_seq (waiting for an even value), then the count and all deltas,
// then an acquire fence, then every flush_seq again; if the sum of the second
// reads equals the sum of the first (each count only grows, so this means
// none changed) no flush overlapped and the result is exact: every CPU's
// contribution is the sum of a prefix of its Adds, each counted exactly
// once. docs/fold_and_hotplug.md has the proof; it needs count to be
// modified ONLY by read-modify-write operations (fetch_add), so that any
// later value of count lies in the release sequence of a flush's fetch_add.
// Non-flushing Adds take no seqcount: a delta changing without moving into
// the count is just a later or earlier prefix.
//
// Memory-ordering contract: Add costs a relaxed load and store of the delta
// (no lock prefix) unless it flushes (one fetch_add plus the seqcount's
// plain stores and release fence). Read() is one relaxed load and orders
// nothing. Sum() orders its loads as described; neither orders other memory.
//
// Usage constraints:
//   * Add(cpu, ...) may be called from any thread with any id (e.g.
//     sched_getcpu()): it claims the CPU for the one add (a CAS) and falls
//     back to the shared count when another writer holds the CPU or the CPU
//     is offline; totals are exact either way (issue 12 item 4).
//   * The single-writer fast path is a WriterToken (AcquireWriter(cpu)):
//     exclusive, so a second writer of the same CPU cannot get one. A token
//     must be released before its CPU goes offline, and the release must
//     happen-before the Offline() call (P1; as the kernel's CPUHP dead
//     callbacks run after the CPU stopped); a new token is acquired after
//     Online() returned (P2). A token still held at Offline is reported
//     (the event returns FailedPrecondition) and its delta folded anyway.
//     AddChecked() validates the id and refuses offline CPUs.
//   * Read/Sum/Compare may run on any thread, concurrently with Adds and
//     hotplug events, but not from inside a hotplug callback of the same
//     topology and not from a signal handler interrupting a flushing writer.
//   * Sum() retries while flushes overlap it; a flushing writer preempted
//     inside its (three-instruction) write section delays Sum() until it
//     runs again, as any seqcount reader.
//   * The counter keeps its Topology and PerCpuAllocator alive (shared
//     ownership), so it may be declared before them or outlive the
//     caller's pointers. The destructor unregisters the hotplug callback
//     before freeing the slots; no Add/Read may run concurrently with or
//     after destruction.
#ifndef PERCPU_PRIMITIVES_PERCPU_COUNTER_H_
#define PERCPU_PRIMITIVES_PERCPU_COUNTER_H_

#include <atomic>
#include <cstdint>
#include <memory>

#include "primitives/contract.h"
#include "primitives/internal/atomic.h"
#include "primitives/internal/cpu_writers.h"
#include "primitives/percpu_alloc.h"
#include "primitives/seqcount.h"
#include "primitives/status.h"
#include "primitives/topology.h"

namespace percpu {

// One CPU's part of an ApproxCounter. Zero-filled memory is a valid slot.
struct ApproxCounterSlot {
  internal::Atomic<int32_t> delta{0};
  SeqCount flush_seq;
};

class ApproxCounter {
 public:
  // The kernel's default: max(32, 2 * online CPUs).
  static int32_t DefaultBatch(const Topology& topo);

  // batch == 0 selects DefaultBatch(topo). InvalidArgument for batch < 0;
  // allocation errors from the allocator; registration errors from topo.
  static StatusOr<std::unique_ptr<ApproxCounter>> Create(
      Topology& topo, PerCpuAllocator& alloc, int64_t initial = 0,
      int32_t batch = 0);

  ~ApproxCounter();
  ApproxCounter(const ApproxCounter&) = delete;
  ApproxCounter& operator=(const ApproxCounter&) = delete;

  // Adds `amount` on `cpu`, safe from any thread with any id: e.g.
  // Add(sched_getcpu(), 1) from many threads is exact. The add claims the
  // CPU for itself (one CAS); if another writer holds it (a concurrent Add
  // with the same stale id, or a WriterToken), or the CPU is offline, the
  // amount goes straight to the shared count (fetch_add). An id outside
  // [0, num_possible) also goes to the shared count (debug builds report
  // it). For the lock-free single-writer fast path use a WriterToken.
  void Add(int cpu, int64_t amount) {
    if (cpu < 0 || cpu >= num_possible_) {
#if PERCPU_CONTRACT_CHECKS
      internal::ReportContractViolation("ApproxCounter::Add: invalid cpu id");
#endif
      AddShared(amount);
      return;
    }
    if (!writers_.TryClaim(cpu, internal::CpuWriterTable::kTransient)) {
      AddShared(amount);
      return;
    }
    AddOwned(cpu, amount);
    writers_.Release(cpu);
  }
  void Inc(int cpu) { Add(cpu, 1); }
  void Dec(int cpu) { Add(cpu, -1); }

  // The single-writer fast path: exclusive ownership of one CPU's slot.
  // Add() through a token is a relaxed load + store of the CPU's delta (no
  // lock prefix) unless it flushes. Obtain one with AcquireWriter(cpu);
  // release it (destroy it) before that CPU goes offline (the P1 handshake
  // of docs/fold_and_hotplug.md); obtain a new one after Online() returned.
  // Movable, not copyable; one thread at a time may use it.
  class WriterToken {
   public:
    WriterToken() = default;
    WriterToken(WriterToken&& o) noexcept : c_(o.c_), cpu_(o.cpu_) {
      o.c_ = nullptr;
    }
    WriterToken& operator=(WriterToken&& o) noexcept {
      if (this != &o) {
        Reset();
        c_ = o.c_;
        cpu_ = o.cpu_;
        o.c_ = nullptr;
      }
      return *this;
    }
    WriterToken(const WriterToken&) = delete;
    WriterToken& operator=(const WriterToken&) = delete;
    ~WriterToken() { Reset(); }

    void Add(int64_t amount) {
#if PERCPU_CONTRACT_CHECKS
      if (c_ == nullptr) {
        internal::ReportContractViolation(
            "ApproxCounter::WriterToken::Add: empty token");
        return;
      }
#endif
      c_->AddOwned(cpu_, amount);
    }
    void Inc() { Add(1); }
    void Dec() { Add(-1); }
    int cpu() const { return cpu_; }
    bool valid() const { return c_ != nullptr; }
    // Gives the CPU back (also done by the destructor).
    void Reset() {
      if (c_ != nullptr) c_->writers_.ReleaseToken(cpu_);
      c_ = nullptr;
    }

   private:
    friend class ApproxCounter;
    WriterToken(ApproxCounter* c, int cpu) : c_(c), cpu_(cpu) {}
    ApproxCounter* c_ = nullptr;
    int cpu_ = -1;
  };

  // OutOfRange for an invalid id; FailedPrecondition if the CPU is offline
  // or already has a writer (another token, or an Add in progress: retry).
  // The token's acquisition orders its adds after every earlier fold of the
  // CPU (issue 12 item 1).
  StatusOr<WriterToken> AcquireWriter(int cpu);

  // As Add(), validating the CPU id (OutOfRange) and that it is online
  // (FailedPrecondition).
  Status AddChecked(int cpu, int64_t amount);

  // The shared count only: O(1), approximate within ErrorBound().
  int64_t Read() const {
    // Relaxed suffices: an approximate value; nothing is published with it.
    return count_.load(std::memory_order_relaxed);
  }
  // max(Read(), 0), as percpu_counter_read_positive.
  int64_t ReadPositive() const {
    const int64_t v = Read();
    return v < 0 ? 0 : v;
  }
  // Exact sum of every completed Add (see the header comment).
  int64_t Sum() const;
  // -1, 0, 1 as the counter's value is <, ==, > rhs.
  int Compare(int64_t rhs) const;

  int32_t batch() const { return batch_; }
  // The per-CPU slots (diagnostics and tests; the model tests construct the
  // checker's atomics in place through it).
  const PerCpuPtr<ApproxCounterSlot>& slots() const { return slots_; }
  // batch * number of online CPUs (read relaxed, a hint under hotplug).
  int64_t ErrorBound() const;

 private:
  ApproxCounter(Topology& topo, PerCpuAllocator& alloc, int32_t batch,
                PerCpuPtr<ApproxCounterSlot> slots, int64_t initial);

  // The add by the CPU's current owner (transient claim or token).
  void AddOwned(int cpu, int64_t amount) {
    ApproxCounterSlot& s = *slots_.on(cpu);
    // Relaxed suffices: the owner is the delta's only writer and reads its
    // own latest store (or the previous owner's / the fold's, ordered by the
    // claim's acquire CAS).
    const int64_t old = s.delta.load(std::memory_order_relaxed);
    int64_t d;
    if (__builtin_add_overflow(old, amount, &d) || d >= batch_ ||
        d <= -static_cast<int64_t>(batch_)) {
      Flush(s, static_cast<int64_t>(static_cast<uint64_t>(old) +
                                    static_cast<uint64_t>(amount)));
      return;
    }
    // Relaxed suffices: single writer; a reader may see the old or the new
    // delta, both are prefixes of this CPU's Adds (ordered after earlier
    // folds by the claim's release fence).
    s.delta.store(static_cast<int32_t>(d), std::memory_order_relaxed);
  }

  void AddShared(int64_t amount) {
    // Relaxed suffices: count_ is modified only by RMWs (the flush proof
    // needs that); a shared add is simply part of the count.
    count_.fetch_add(amount, std::memory_order_relaxed);
  }

  void Flush(ApproxCounterSlot& s, int64_t moved) {
    s.flush_seq.WriteBegin();
    // Relaxed suffices: the write section's release fence (WriteBegin) and
    // release store (WriteEnd) order it for Sum(); atomicity of the RMW keeps
    // concurrent flushes of other CPUs. count_ is modified ONLY by RMWs.
    count_.fetch_add(moved, std::memory_order_relaxed);
    // Relaxed suffices: ordered by the write section as above.
    s.delta.store(0, std::memory_order_relaxed);
    s.flush_seq.WriteEnd();
  }

  // One attempt-loop of the exact sum over the online CPUs (no hotplug
  // retry; ReadHotplugConsistent wraps it).
  int64_t SumOnline() const;
  Status FoldCallback(HotplugEvent event, int cpu);

  Topology& topo_;
  PerCpuAllocator& alloc_;
  // Keeps topo_ and alloc_ alive (shared ownership) until after the
  // destructor body: any declaration order of counter and owners is safe.
  const internal::PerCpuOwners owners_{topo_, alloc_};
  const int32_t batch_;
  const int num_possible_;
  PerCpuPtr<ApproxCounterSlot> slots_;
  internal::Atomic<int64_t> count_{0};
  internal::CpuWriterTable writers_;  // who writes each CPU's delta
  uint64_t callback_id_ = 0;
};

// The old names (0.1). Removed in 0.3.
using PerCpuCounter [[deprecated("use ApproxCounter; removed in 0.3")]] =
    ApproxCounter;
using PerCpuCounterSlot
    [[deprecated("use ApproxCounterSlot; removed in 0.3")]] = ApproxCounterSlot;

}  // namespace percpu

#endif  // PERCPU_PRIMITIVES_PERCPU_COUNTER_H_
