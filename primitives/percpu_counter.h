// PerCpuCounter: a 64-bit signed counter that is cheap to update from many
// CPUs and cheap to read approximately (the semantics of the kernel's
// lib/percpu_counter.c; our own, lock-free implementation).
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
//   * Add(cpu, ...) must be called by the only writer of `cpu` at that moment
//     and only while `cpu` is online. Before a CPU goes offline its writers
//     must be quiesced and the quiescence must happen-before the Offline()
//     call (as the kernel's CPUHP dead callbacks run after the CPU stopped).
//     AddChecked() validates the id and refuses offline CPUs (best effort:
//     it cannot close the race with a concurrent Offline()).
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
#include "primitives/percpu_alloc.h"
#include "primitives/seqcount.h"
#include "primitives/status.h"
#include "primitives/topology.h"

namespace percpu {

// One CPU's part of a PerCpuCounter. Zero-filled memory is a valid slot.
struct PerCpuCounterSlot {
  internal::Atomic<int32_t> delta{0};
  SeqCount flush_seq;
};

class PerCpuCounter {
 public:
  // The kernel's default: max(32, 2 * online CPUs).
  static int32_t DefaultBatch(const Topology& topo);

  // batch == 0 selects DefaultBatch(topo). InvalidArgument for batch < 0;
  // allocation errors from the allocator; registration errors from topo.
  static StatusOr<std::unique_ptr<PerCpuCounter>> Create(
      Topology& topo, PerCpuAllocator& alloc, int64_t initial = 0,
      int32_t batch = 0);

  ~PerCpuCounter();
  PerCpuCounter(const PerCpuCounter&) = delete;
  PerCpuCounter& operator=(const PerCpuCounter&) = delete;

  // Adds `amount` on `cpu`. Preconditions: see the header comment (valid,
  // online CPU; only writer of that CPU). Debug builds report an invalid id.
  void Add(int cpu, int64_t amount) {
    if (cpu < 0 || cpu >= num_possible_) {
#if PERCPU_CONTRACT_CHECKS
      internal::ReportContractViolation("PerCpuCounter::Add: invalid cpu id");
#endif
      return;
    }
    PerCpuCounterSlot& s = *slots_.on(cpu);
    // Relaxed suffices: this CPU is the delta's only writer and reads its
    // own latest store.
    const int64_t old = s.delta.load(std::memory_order_relaxed);
    int64_t d;
    if (__builtin_add_overflow(old, amount, &d) || d >= batch_ ||
        d <= -static_cast<int64_t>(batch_)) {
      Flush(s, static_cast<int64_t>(static_cast<uint64_t>(old) +
                                    static_cast<uint64_t>(amount)));
      return;
    }
    // Relaxed suffices: single writer; a reader may see the old or the new
    // delta, both are prefixes of this CPU's Adds.
    s.delta.store(static_cast<int32_t>(d), std::memory_order_relaxed);
  }
  void Inc(int cpu) { Add(cpu, 1); }
  void Dec(int cpu) { Add(cpu, -1); }

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
  const PerCpuPtr<PerCpuCounterSlot>& slots() const { return slots_; }
  // batch * number of online CPUs (read relaxed, a hint under hotplug).
  int64_t ErrorBound() const;

 private:
  PerCpuCounter(Topology& topo, PerCpuAllocator& alloc, int32_t batch,
                PerCpuPtr<PerCpuCounterSlot> slots, int64_t initial);

  void Flush(PerCpuCounterSlot& s, int64_t moved) {
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
  PerCpuPtr<PerCpuCounterSlot> slots_;
  internal::Atomic<int64_t> count_{0};
  uint64_t callback_id_ = 0;
};

}  // namespace percpu

#endif  // PERCPU_PRIMITIVES_PERCPU_COUNTER_H_
