// LcoreStats<N>: N 64-bit statistics counters per CPU (an SNMP-MIB-like
// block, the kernel's DEFINE_SNMP_STAT + snmp_fold_field, our own code),
// made safe across CPU hotplug: when a CPU goes offline its counts are
// folded into a per-object offline accumulator, so readers visit only the
// online CPUs and no count is ever lost or counted twice. The job: per-lcore
// statistics for threads pinned to a CPU (README "Which type for which
// job"). Formerly PerCpuMib<N>, now a deprecated alias (removed in 0.3).
// Not to be confused with PerCpuU64Mib<N> (percpu_stats.h), the building
// block under CounterSet<N>, whose writers need no CPU id and no pinning.
//
// Layout: one U64StatMib<N> (N U64Stat + one U64StatsSync) per CPU,
// allocated with the per-CPU allocator, plus N U64Stat accumulators.
//
// Writer: Add(cpu, item, delta) updates cpu's block inside its syncp update
// section (a relaxed load and store per counter on 64-bit targets, plus the
// seqcount on 32-bit ones). The CPU id is passed explicitly (discovering it
// with rseq is the writers' part); AddChecked() validates it.
//
// Readers: Read(item) (item-major FoldField) and Snapshot()/FoldInto()
// (cpu-major FoldAll) compute  acc + sum over online CPUs  inside a
// Topology::hotplug_seq() read section, nesting each CPU's syncp fetch loop
// on the seqcount path. They never allocate.
//
// Hotplug protocol (full ordering table and proof in
// docs/fold_and_hotplug.md): the fold callback, for kOffline of cpu c, runs
// inside the hotplug write section before c's online bit is cleared, and
//     acc[i] += slot_c[i];  slot_c[i] = 0        for every item i
// (inside slot_c's own syncp update section too). A reader's section either
// precedes the whole write section (old mask with c, old acc) or follows it
// (new mask without c, new acc); anything in between retries. When c comes
// online again its slot is 0, so nothing is counted twice.
//
// Memory-ordering contract: counters are relaxed; readers' totals are
// monotonic (for increasing counters) for a reader thread, across hotplug
// events; nothing else is ordered by an update.
//
// Usage constraints:
//   * Add(cpu, ...) from any thread with any id: it claims the CPU for the
//     one add (a CAS) or, if another writer holds it or it is offline, adds
//     to the item's shared atomic counter; exact either way (issue 12 item
//     4). The fold waits out an in-progress claimed add.
//   * The single-writer fast path is a WriterToken (AcquireWriter(cpu)),
//     exclusive per CPU. Release it before Offline(c), and the release must
//     happen-before the Offline() call (P1; the fold callback then is the
//     block's only writer, as the kernel's CPUHP dead callbacks run on a
//     dead CPU); acquire a new one after Online() returned (P2). A token
//     still held at Offline is reported (the event fails with
//     FailedPrecondition); its later adds are moved at the next Online.
//   * Readers may run anywhere, concurrently with writers and hotplug
//     events, but not inside a hotplug callback of the same topology.
//   * The object keeps its topology and allocator alive (shared
//     ownership: any declaration order is safe); no access during or after
//     destruction (the destructor unregisters the callback, then frees).
#ifndef PERCPU_PRIMITIVES_PERCPU_MIB_H_
#define PERCPU_PRIMITIVES_PERCPU_MIB_H_

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <string>

#include "primitives/contract.h"
#include "primitives/fold.h"
#include "primitives/internal/atomic.h"
#include "primitives/internal/cpu_writers.h"
#include "primitives/percpu_alloc.h"
#include "primitives/status.h"
#include "primitives/topology.h"
#include "primitives/u64_stats.h"

namespace percpu {

template <size_t N>
class LcoreStats {
 public:
  using Block = U64StatMib<N>;
  static constexpr size_t kItems = N;

  // Allocates the per-CPU blocks (zeroed) and registers the fold callback.
  static StatusOr<std::unique_ptr<LcoreStats>> Create(Topology& topo,
                                                     PerCpuAllocator& alloc) {
    StatusOr<PerCpuPtr<Block>> blocks = alloc.Allocate<Block>();
    if (!blocks.ok()) return blocks.status();
    std::unique_ptr<LcoreStats> mib(
        new (std::nothrow) LcoreStats(topo, alloc, *blocks));
    if (mib == nullptr) {
      (void)alloc.Free(*blocks);
      return ResourceExhaustedError("LcoreStats::Create: out of memory");
    }
    if (!mib->writers_.Init(topo.num_possible())) {
      return ResourceExhaustedError("LcoreStats::Create: out of memory");
    }
    // Registered before any writer can see the object: an event that ran
    // before registration found this object's slots still zero.
    LcoreStats* self = mib.get();
    StatusOr<uint64_t> id = topo.RegisterHotplugCallbacks(
        nullptr, [self](HotplugEvent event, int cpu) {
          return self->FoldCallback(event, cpu);
        });
    if (!id.ok()) return id.status();  // destructor frees the blocks
    mib->callback_id_ = *id;
    // CPUs offline now are dead for writers (later events: the callback).
    for (int cpu = 0; cpu < topo.num_possible(); ++cpu) {
      if (!topo.IsOnline(cpu)) (void)mib->writers_.MarkDead(cpu);
    }
    return mib;
  }

  ~LcoreStats() {
    // Unregister first: afterwards the callback is not running and never
    // runs again, so it cannot touch the freed blocks.
    if (callback_id_ != 0) {
      (void)topo_.UnregisterHotplugCallbacks(callback_id_);
    }
    (void)alloc_.Free(blocks_);
  }

  LcoreStats(const LcoreStats&) = delete;
  LcoreStats& operator=(const LcoreStats&) = delete;

  // Adds `delta` to item `item` of `cpu`, safe from any thread with any id
  // (e.g. sched_getcpu()): the add claims the CPU for itself (one CAS); if
  // another writer holds it or the CPU is offline, the delta goes to the
  // item's shared atomic counter instead. Exact either way. Debug builds
  // report an invalid cpu or item (dropped). The single-writer fast path
  // is a WriterToken.
  void Add(int cpu, size_t item, uint64_t delta) {
    if (cpu < 0 || cpu >= num_possible_ || item >= N) {
#if PERCPU_CONTRACT_CHECKS
      internal::ReportContractViolation(
          "LcoreStats::Add: cpu or item out of range");
#endif
      if (item < N) AddShared(item, delta);
      return;
    }
    if (!writers_.TryClaim(cpu, internal::CpuWriterTable::kTransient)) {
      AddShared(item, delta);
      return;
    }
    AddOwned(cpu, item, delta);
    writers_.Release(cpu);
  }
  void Inc(int cpu, size_t item) { Add(cpu, item, 1); }

  // The single-writer fast path (as ApproxCounter::WriterToken): exclusive
  // ownership of one CPU's block; Add() is the syncp update of one item.
  // Release it before the CPU goes offline (P1), acquire a new one after
  // Online() returned (P2); its acquisition orders its adds after earlier
  // folds of the CPU (issue 12 item 1).
  class WriterToken {
   public:
    WriterToken() = default;
    WriterToken(WriterToken&& o) noexcept : m_(o.m_), cpu_(o.cpu_) {
      o.m_ = nullptr;
    }
    WriterToken& operator=(WriterToken&& o) noexcept {
      if (this != &o) {
        Reset();
        m_ = o.m_;
        cpu_ = o.cpu_;
        o.m_ = nullptr;
      }
      return *this;
    }
    WriterToken(const WriterToken&) = delete;
    WriterToken& operator=(const WriterToken&) = delete;
    ~WriterToken() { Reset(); }

    // An item >= N is dropped (debug builds report it).
    void Add(size_t item, uint64_t delta) {
      if (m_ == nullptr || item >= N) {
#if PERCPU_CONTRACT_CHECKS
        internal::ReportContractViolation(
            "LcoreStats::WriterToken::Add: empty token or item out of range");
#endif
        return;
      }
      m_->AddOwned(cpu_, item, delta);
    }
    void Inc(size_t item) { Add(item, 1); }
    int cpu() const { return cpu_; }
    bool valid() const { return m_ != nullptr; }
    void Reset() {
      if (m_ != nullptr) m_->writers_.ReleaseToken(cpu_);
      m_ = nullptr;
    }

   private:
    friend class LcoreStats;
    WriterToken(LcoreStats* m, int cpu) : m_(m), cpu_(cpu) {}
    LcoreStats* m_ = nullptr;
    int cpu_ = -1;
  };

  // OutOfRange for an invalid id; FailedPrecondition if the CPU is offline
  // or already has a writer.
  StatusOr<WriterToken> AcquireWriter(int cpu) {
    Status valid = topo_.ValidateCpu(cpu);
    if (!valid.ok()) {
      return OutOfRangeError("LcoreStats::AcquireWriter: " + valid.message());
    }
    if (!writers_.TryClaim(cpu, internal::CpuWriterTable::kToken)) {
      return FailedPreconditionError(
          "LcoreStats::AcquireWriter: cpu " + std::to_string(cpu) +
          (writers_.StateOf(cpu) == internal::CpuWriterTable::kDead
               ? " is offline"
               : " already has a writer"));
    }
    return WriterToken(this, cpu);
  }

  // As Add(), validating: OutOfRange for a bad cpu or item,
  // FailedPrecondition for an offline cpu (best effort, see header).
  Status AddChecked(int cpu, size_t item, uint64_t delta) {
    Status valid = topo_.ValidateCpu(cpu);
    if (!valid.ok()) {
      return OutOfRangeError("LcoreStats::Add: " + valid.message());
    }
    if (item >= N) {
      return OutOfRangeError("LcoreStats::Add: item " + std::to_string(item) +
                             " is not in [0, " + std::to_string(N) + ")");
    }
    if (!topo_.IsOnline(cpu)) {
      return FailedPreconditionError("LcoreStats::Add: cpu " +
                                     std::to_string(cpu) + " is not online");
    }
    Add(cpu, item, delta);
    return Status::Ok();
  }

  // Item-major: acc[item] + sum of item over the online CPUs. 0 for an item
  // out of range (debug builds report it).
  uint64_t Read(size_t item) const {
    if (item >= N) {
#if PERCPU_CONTRACT_CHECKS
      internal::ReportContractViolation("LcoreStats::Read: item out of range");
#endif
      return 0;
    }
    return ReadHotplugConsistent(topo_, [&] {
      // Relaxed suffices for shared_: it only grows (fetch_adds).
      return acc_[item].Read() +
             shared_[item].load(std::memory_order_relaxed) +
             FoldField(blocks_, OnlineCpus(topo_), item);
    });
  }

  // Cpu-major: out = acc + sum over the online CPUs. No heap.
  void Snapshot(std::array<uint64_t, N>& out) const {
    const SeqCount& seq = topo_.hotplug_seq();
    for (;;) {
      // Pairs with: WriteEnd()/WriteBegin() of Topology's event path (the
      // acquire load / acquire fence are inside ReadBegin/ReadRetry).
      const uint32_t start = seq.ReadBegin();
      for (size_t i = 0; i < N; ++i) {
        // Relaxed suffices for shared_: it only grows (fetch_adds).
        out[i] = acc_[i].Read() + shared_[i].load(std::memory_order_relaxed);
      }
      FoldAll(blocks_, OnlineCpus(topo_), out);
      if (!seq.ReadRetry(start)) return;
    }
  }

  // Adds the snapshot into out[0..N) (accumulate several MIBs). No heap.
  void FoldInto(uint64_t* out) const {
    std::array<uint64_t, N> snap;
    Snapshot(snap);
    for (size_t i = 0; i < N; ++i) out[i] += snap[i];
  }

  // Cross-check variant: acc + sum over PRESENT CPUs (offline ones hold 0
  // after their fold, so the result equals Snapshot()).
  void SnapshotPresent(std::array<uint64_t, N>& out) const {
    const SeqCount& seq = topo_.hotplug_seq();
    for (;;) {
      // Pairs with: as in Snapshot().
      const uint32_t start = seq.ReadBegin();
      for (size_t i = 0; i < N; ++i) {
        // Relaxed suffices: as in Snapshot().
        out[i] = acc_[i].Read() + shared_[i].load(std::memory_order_relaxed);
      }
      FoldAll(blocks_, PresentCpus(topo_), out);
      if (!seq.ReadRetry(start)) return;
    }
  }

  // The offline accumulator of `item` (diagnostics and tests).
  uint64_t accumulated(size_t item) const {
    if (item >= N) return 0;
    return ReadHotplugConsistent(topo_,
                                 [&] { return acc_[item].Read(); });
  }

  const PerCpuPtr<Block>& blocks() const { return blocks_; }

 private:
  LcoreStats(Topology& topo, PerCpuAllocator& alloc, PerCpuPtr<Block> blocks)
      : topo_(topo),
        alloc_(alloc),
        num_possible_(topo.num_possible()),
        blocks_(blocks) {
    for (size_t i = 0; i < N; ++i) {
      // Relaxed suffices: not yet published.
      shared_[i].store(0, std::memory_order_relaxed);
    }
  }

  // The add by the CPU's current owner (transient claim or token): the
  // block's only writer, ordered after earlier folds by the claim.
  void AddOwned(int cpu, size_t item, uint64_t delta) {
    Block& b = *blocks_.on(cpu);
    b.syncp.UpdateBegin();
    b.items[item].Add(delta);
    b.syncp.UpdateEnd();
  }

  void AddShared(size_t item, uint64_t delta) {
    // Relaxed suffices: many writers, atomicity alone is needed; readers
    // add it inside their hotplug read section.
    shared_[item].fetch_add(delta, std::memory_order_relaxed);
  }

  // kOnline (before the bit is set): a late add of a stale token (a P1
  // violation, already reported at kOffline) is moved, not lost.
  void FoldBlock(Block& b) {
    b.syncp.UpdateBegin();
    for (size_t i = 0; i < N; ++i) {
      acc_[i].Set(acc_[i].Read() + b.items[i].Read());
      b.items[i].Set(0);
    }
    b.syncp.UpdateEnd();
  }

  Status FoldCallback(HotplugEvent event, int cpu) {
    if (cpu < 0 || cpu >= num_possible_) {
      return OutOfRangeError("LcoreStats::FoldCallback: cpu " +
                             std::to_string(cpu));
    }
    // Only kOffline and kOnline touch the block; the CPU is present for
    // both, so its memory is backed.
    if (event == HotplugEvent::kOffline) {
      // Take the CPU from writers: wait out a transient Add, then mark it
      // dead (later Add(cpu) calls go to shared_). A token should have been
      // released before Offline (P1).
      const uint32_t was = writers_.MarkDead(cpu);
      Block& b = *blocks_.on(cpu);
      // Runs inside the hotplug write section; the dying CPU has no writer
      // (precondition), so this is the only writer of its block, and the
      // callbacks are serialized by the topology mutex, so it is the only
      // writer of acc_. acc_ is covered by the hotplug seqcount (readers
      // read it only inside a hotplug read section); the block by its syncp.
      b.syncp.UpdateBegin();
      for (size_t i = 0; i < N; ++i) {
#if !defined(PERCPU_PLANTED_BUG_HOTPLUG_DROPS_COUNTS)
        acc_[i].Set(acc_[i].Read() + b.items[i].Read());
#endif  // else: planted bug (--config=planted-bug-hotplug), counts are lost
        b.items[i].Set(0);
      }
      b.syncp.UpdateEnd();
      if (was == internal::CpuWriterTable::kToken) {
        return FailedPreconditionError(
            "LcoreStats: a WriterToken of the CPU is still held at Offline "
            "(release it before the CPU goes offline)");
      }
    } else if (event == HotplugEvent::kOnline) {
      // Normally all zero (folded at offline; dead CPUs take no adds).
      FoldBlock(*blocks_.on(cpu));
      writers_.MarkOnline(cpu);
    }
    return Status::Ok();
  }

  Topology& topo_;
  PerCpuAllocator& alloc_;
  // Keeps topo_ and alloc_ alive (shared ownership) until after the
  // destructor body: any declaration order of counter and owners is safe.
  const internal::PerCpuOwners owners_{topo_, alloc_};
  const int num_possible_;
  PerCpuPtr<Block> blocks_;
  U64Stat acc_[N];
  internal::Atomic<uint64_t> shared_[N];  // adds that found the CPU taken
  internal::CpuWriterTable writers_;      // who writes each CPU's block
  uint64_t callback_id_ = 0;
};

// The old name (0.1). Removed in 0.3.
template <size_t N>
using PerCpuMib [[deprecated("use LcoreStats; removed in 0.3")]] =
    LcoreStats<N>;

}  // namespace percpu

#endif  // PERCPU_PRIMITIVES_PERCPU_MIB_H_
