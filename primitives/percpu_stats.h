// Per-CPU 64-bit statistics counters written on "this CPU", hotplug-aware:
//
//   PerCpuU64Mib<N>  N counters per CPU (an SNMP-MIB-like block): Add(item,
//                    delta) on the calling thread's CPU, Read(item), FoldAll
//                    (cpu-major, into a caller's std::array, never the heap).
//   PerCpuU64        a single counter: Add(delta)/Inc(), Sum().
//
// (PerCpuPacketsBytes, the pair with a consistent read, is in
// primitives/percpu_pair.h.)
//
// Layer: these are the building blocks under the job types of counter.h --
// PerCpuU64Mib<N> runs under CounterSet<N>, PerCpuU64 under Counter -- for
// callers that want explicit control (their own Topology and
// PerCpuAllocator, StatusOr errors); new code wants counter.h. Not to be
// confused with LcoreStats<N> (percpu_mib.h), whose writer is pinned and
// passes its own CPU id: here writers run on any thread and pass none.
//
// Memory: one contiguous block of N internal::Atomic<uint64_t> per possible
// CPU from a PerCpuAllocator (cpu-major: CPU c's block is at CPU 0's block +
// c * unit stride), plus per-object accumulators and overflow counters.
//
// Writers (docs/writers.md, "Counter families"). Each object picks its writer
// once, at Create:
//   * rseq: when CurrentWriterMode() == kRseq AND the topology describes the
//     real CPUs (Topology::FromSysfs) -- or the caller sets
//     PerCpuStatsOptions::rseq_with_simulated_topology -- AND the hotplug
//     fence (membarrier MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ, Linux >= 5.10)
//     registered. Add() is ONE restartable sequence (internal::
//     RseqTryAddU64Present): read the CPU id, test the CPU's bit in the
//     topology's present mask (clear: the add goes to the overflow counter),
//     then add to the item's word (x86_64: one unlocked addq; aarch64:
//     load/add/store): no lock prefix, single writer per slot. Bounded by the mask readers visit, no rseq add ever lands where
//     readers do not look (a lagging sysfs folder that does not list the
//     real CPU yet sends its adds to the overflow counter).
//   * fallback (everything else, in particular every simulated topology):
//     cpu = sched_getcpu(); if cpu is a present CPU of the topology, a relaxed
//     fetch_add on its slot; else the per-item overflow counter. Several
//     threads may hit one slot (the id is stale at once); the RMW makes that
//     exact. A thread may add to a CPU that went offline after it read the
//     id: see "Hotplug".
//   An out-of-range CPU id (a topology smaller than the machine, a thread
//   without a CPU id) goes to the overflow counter (atomic fetch_add) in both
//   modes: nothing is lost, nothing indexed out of bounds. The two modes never
//   meet on one object's slots.
//
// Hotplug (docs/fold_and_hotplug.md): readers compute acc + overflow + sum
// over the PRESENT CPUs inside a hotplug_seq() read section. The fold
// callback (inside the topology's hotplug write section) moves a CPU's
// slots into the accumulator with an atomic exchange(0):
//   * kOffline: fallback mode only. In rseq mode nothing moves: the slot
//     stays visited, and a fold could race an rseq store (the real CPU may
//     still be running writers while a lagging sysfs folder says offline).
//   * kAbsent: the topology clears the present bit, runs the rseq fence
//     (every rseq section that read the old bit has committed or aborted),
//     then folds; the teardown phase folds once more right before the
//     allocator releases the unit (a fallback add delayed across Offline and
//     SetAbsent).
//   * kPresent: before the bit is set and before the allocator prepares the
//     unit, whatever it holds is folded: nothing is discarded.
// Visiting present (not only online) CPUs makes the fallback offline race
// harmless: a writer that read cpu == c before c went offline and adds after
// c's fold leaves its delta in c's still-visited slot. The exchange moves
// each value exactly once, so totals are exact and monotonic
// (verification/percpu_stats_model_test.cc checks it).
//
// Memory-ordering contract: adds are relaxed RMWs (or the rseq store); no
// ordering with other data. Read/FoldAll return, per CPU, a value its slot
// held during the read, plus the accumulator consistent with the CPU set;
// for increasing counters a reader's totals never decrease, across hotplug
// events. A read that happens after an Add() includes it.
//
// Usage constraints:
//   * Add/Inc from any thread, any time; async-signal-safe in both modes
//     (rseq: the interrupted section restarts; fallback: atomic RMW) once
//     CurrentWriterMode() was called outside a handler (Create does).
//   * Readers anywhere except inside a hotplug callback of the same topology
//     or a handler interrupting that topology's hotplug event (they spin).
//   * Known limit of the fallback: a writer delayed between its present-bit
//     test and its fetch_add across BOTH the Offline and the SetAbsent of
//     its CPU, whose fetch_add lands between the kAbsent teardown fold and
//     the allocator's madvise (a few instructions and one syscall), loses
//     that update; one landing after the madvise is folded at the CPU's next
//     kPresent (until then it is not counted). In rseq mode nothing is lost.
//   * The object keeps its topology and allocator alive (shared
//     ownership: any declaration order is safe); no access during or
//     after destruction (debug builds catch a late Add/Read through a
//     poisoned magic word, reported via contract.h).
#ifndef PERCPU_PRIMITIVES_PERCPU_STATS_H_
#define PERCPU_PRIMITIVES_PERCPU_STATS_H_

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
#include "primitives/internal/rseq_asm.h"
#include "primitives/percpu_alloc.h"
#include "primitives/rseq.h"
#include "primitives/status.h"
#include "primitives/topology.h"

namespace percpu {

struct PerCpuStatsOptions {
  // Use the rseq writer although the topology is simulated. Safe under
  // simulated hotplug too: the rseq section tests the simulated present
  // bit, kOffline moves no rseq slot, and kAbsent fences rseq writers
  // before its fold (docs/fold_and_hotplug.md, section 3a). Off by default
  // so that simulations exercise the fallback writer.
  bool rseq_with_simulated_topology = false;
};

namespace internal {

#if !defined(PERCPU_MODEL_CHECK)
// Fallback writers must never see a torn 64-bit word on 32-bit targets:
// fetch_add must be a real lock-free RMW (cmpxchg8b on i686, ldrexd/strexd
// on armv7).
static_assert(std::atomic<uint64_t>::is_always_lock_free,
              "64-bit atomics must be lock-free on this target");
#endif

// Whether an object on `topo` uses the rseq writer.
// The rseq writer also needs the hotplug fence (membarrier RSEQ, Linux >=
// 5.10): without it a kAbsent fold could race an rseq store, so such a
// process uses the fallback writer (docs/fold_and_hotplug.md).
inline bool StatsUseRseq(const Topology& topo,
                         const PerCpuStatsOptions& options) {
#if PERCPU_HAVE_RSEQ_ASM
  return CurrentWriterMode() == WriterMode::kRseq &&
         (!topo.sysfs_dir().empty() || options.rseq_with_simulated_topology) &&
         EnableRseqHotplugFence();
#else
  (void)topo;
  (void)options;
  return false;
#endif
}

// The fallback's CPU id: sched_getcpu(), or -1 (no id) under the model
// checker, whose tests name the CPU explicitly (AddOnCpu).
inline int FallbackCpuId() {
#if defined(PERCPU_MODEL_CHECK)
  return -1;
#else
  return sched_getcpu();
#endif
}

// The fold of one slot word into its accumulator, inside the hotplug write
// section (single writer of acc: callbacks are serialized). Relaxed
// suffices: readers read slot and acc inside a hotplug read section, whose
// seqcount orders them (a reader that sees the exchange's 0, or a later
// fetch_add in its release sequence, retries); the exchange's atomicity
// guarantees a concurrent fallback fetch_add lands either before (moved
// now) or after (stays in the slot, still visited) -- never lost or moved
// twice.
inline void FoldSlotIntoAcc(Atomic<uint64_t>& slot, Atomic<uint64_t>& acc) {
  // Relaxed suffices: see above (atomicity is what matters).
  const uint64_t v = slot.exchange(0, std::memory_order_relaxed);
  // Relaxed suffices: acc's only writer is this callback (hotplug mutex).
  acc.store(acc.load(std::memory_order_relaxed) + v,
            std::memory_order_relaxed);
}

}  // namespace internal

template <size_t N>
class PerCpuU64Mib {
 public:
  static_assert(N > 0, "a MIB has at least one item");
  static constexpr size_t kItems = N;
  using Word = internal::Atomic<uint64_t>;

  // Allocates the zeroed per-CPU blocks and registers the fold callback.
  static StatusOr<std::unique_ptr<PerCpuU64Mib>> Create(
      Topology& topo, PerCpuAllocator& alloc, PerCpuStatsOptions options = {}) {
#if !defined(PERCPU_MODEL_CHECK)
    (void)CurrentWriterMode();  // choose the mode outside any signal handler
#endif
    StatusOr<PerCpuPtr<Word>> slots = alloc.AllocateArray<Word>(N);
    if (!slots.ok()) return slots.status();
    std::unique_ptr<PerCpuU64Mib> mib(new (std::nothrow) PerCpuU64Mib(
        topo, alloc, *slots, internal::StatsUseRseq(topo, options)));
    if (mib == nullptr) {
      (void)alloc.Free(*slots);
      return ResourceExhaustedError("PerCpuU64Mib::Create: out of memory");
    }
    // Registered before any writer can see the object.
    PerCpuU64Mib* self = mib.get();
    StatusOr<uint64_t> id = topo.RegisterHotplugCallbacks(
        [self](HotplugEvent event, int cpu) {
          return self->TeardownCallback(event, cpu);
        },
        [self](HotplugEvent event, int cpu) {
          return self->FoldCallback(event, cpu);
        });
    if (!id.ok()) return id.status();  // the destructor frees the slots
    mib->callback_id_ = *id;
    return mib;
  }

  ~PerCpuU64Mib() {
    magic_ = kDeadMagic;
    // Unregister first: afterwards the callback never runs again.
    if (callback_id_ != 0) (void)topo_.UnregisterHotplugCallbacks(callback_id_);
    (void)alloc_.Free(slots_);
  }
  PerCpuU64Mib(const PerCpuU64Mib&) = delete;
  PerCpuU64Mib& operator=(const PerCpuU64Mib&) = delete;

  // Adds delta (mod 2^64) to `item` of the calling thread's CPU. An item
  // >= N is dropped (debug builds report it); use AddChecked to get a Status.
  void Add(size_t item, uint64_t delta) {
    if (!CheckAlive() || __builtin_expect(item >= N, 0)) {
#if PERCPU_CONTRACT_CHECKS
      if (item >= N) {
        internal::ReportContractViolation(
            "PerCpuU64Mib::Add: item out of range");
      }
#endif
      return;
    }
#if PERCPU_HAVE_RSEQ_ASM
    // Bounded by the present mask readers visit (see "Writers" above).
    // rseq_n_ is 0 unless use_rseq_: one compare is the mode test and the
    // bound; every other case leaves through AddSlow().
    if (__builtin_expect(internal::RseqTryAddU64Present(
                             slots_.base_address() + item * sizeof(Word),
                             slots_.stride(), rseq_n_, present_mask_, delta),
                         1)) {
      return;
    }
#endif
    AddSlow(item, delta);
  }
  void Inc(size_t item) { Add(item, 1); }

  // As Add(); OutOfRange naming the item if item >= N.
  Status AddChecked(size_t item, uint64_t delta) {
    if (item >= N) {
      return OutOfRangeError("PerCpuU64Mib::Add: item " +
                             std::to_string(item) + " is not in [0, " +
                             std::to_string(N) + ")");
    }
    Add(item, delta);
    return Status::Ok();
  }

  // The fallback writer with an explicit CPU id (what Add() does after
  // sched_getcpu(); tests and simulations use it to write "on" a simulated
  // CPU, including a stale id racing that CPU's offline). OutOfRange for a
  // bad cpu/item; FailedPrecondition if this object uses the rseq writer
  // (rseq stores and atomic RMWs must never meet on one slot).
  Status AddOnCpu(int cpu, size_t item, uint64_t delta) {
    if (use_rseq_) {
      return FailedPreconditionError(
          "PerCpuU64Mib::AddOnCpu: the object uses the rseq writer");
    }
    Status valid = topo_.ValidateCpu(cpu);
    if (!valid.ok()) {
      return OutOfRangeError("PerCpuU64Mib::AddOnCpu: " + valid.message());
    }
    if (item >= N) {
      return OutOfRangeError("PerCpuU64Mib::AddOnCpu: item " +
                             std::to_string(item) + " is not in [0, " +
                             std::to_string(N) + ")");
    }
    if (!CheckAlive()) return FailedPreconditionError("destroyed object");
    FallbackAdd(cpu, item, delta);
    return Status::Ok();
  }

  // acc + overflow + the sum over present CPUs of `item`, in one hotplug
  // read section. 0 for item >= N (debug builds report it).
  uint64_t Read(size_t item) const {
    if (!CheckAlive()) return 0;
    if (item >= N) {
#if PERCPU_CONTRACT_CHECKS
      internal::ReportContractViolation("PerCpuU64Mib::Read: item out of range");
#endif
      return 0;
    }
    return ReadOver(PresentCpus(topo_), item);
  }
  StatusOr<uint64_t> ReadChecked(size_t item) const {
    if (item >= N) {
      return OutOfRangeError("PerCpuU64Mib::Read: item " +
                             std::to_string(item) + " is not in [0, " +
                             std::to_string(N) + ")");
    }
    return Read(item);
  }

  // Cpu-major fold of all items into out (overwritten), in one hotplug read
  // section. Never allocates.
  void FoldAll(std::array<uint64_t, N>& out) const {
    if (!CheckAlive()) {
      out.fill(0);
      return;
    }
    FoldAllOver(PresentCpus(topo_), out);
  }

  // The same over an explicit CPU set (cross-checks; the model test's
  // mutant folds only the online CPUs and must be caught losing counts).
  template <typename CpuSet>
  void FoldAllOver(const CpuSet& cpus, std::array<uint64_t, N>& out) const {
    const SeqCount& seq = topo_.hotplug_seq();
    for (;;) {
      // Pairs with: WriteEnd()/WriteBegin() of Topology's event path (the
      // acquire load / acquire fence are inside ReadBegin/ReadRetry).
      const uint32_t start = seq.ReadBegin();
      for (size_t i = 0; i < N; ++i) {
        // Relaxed suffices: acc is ordered by the hotplug seqcount; overflow
        // only grows (pure fetch_adds, never moved).
        out[i] = acc_[i].load(std::memory_order_relaxed) +
                 overflow_[i].load(std::memory_order_relaxed);
      }
      FoldAllAtomic(slots_, N, cpus, out.data());
      if (!seq.ReadRetry(start)) return;
    }
  }
  template <typename CpuSet>
  uint64_t ReadOver(const CpuSet& cpus, size_t item) const {
    return ReadHotplugConsistent(topo_, [&] {
      // Relaxed suffices: as in FoldAllOver().
      return acc_[item].load(std::memory_order_relaxed) +
             overflow_[item].load(std::memory_order_relaxed) +
             FoldFieldAtomic(slots_, cpus, item);
    });
  }

  // One CPU's slot of `item` (relaxed; diagnostics). OutOfRange for bad ids.
  StatusOr<uint64_t> OnCpu(int cpu, size_t item) const {
    Status valid = topo_.ValidateCpu(cpu);
    if (!valid.ok()) {
      return OutOfRangeError("PerCpuU64Mib::OnCpu: " + valid.message());
    }
    if (item >= N) {
      return OutOfRangeError("PerCpuU64Mib::OnCpu: item " +
                             std::to_string(item) + " is not in [0, " +
                             std::to_string(N) + ")");
    }
    // Relaxed suffices: one statistics value.
    return slots_.on(cpu)[item].load(std::memory_order_relaxed);
  }
  // Adds of `item` that found no present/in-range CPU id.
  uint64_t overflow(size_t item) const {
    // Relaxed suffices: one statistics value.
    return item < N ? overflow_[item].load(std::memory_order_relaxed) : 0;
  }
  bool uses_rseq() const { return use_rseq_; }
  // The per-CPU words (model tests construct them in place).
  const PerCpuPtr<Word>& slots() const { return slots_; }

 private:
  static constexpr uint32_t kAliveMagic = 0x57a75u;
  static constexpr uint32_t kDeadMagic = 0xdeadc0deu;

  PerCpuU64Mib(Topology& topo, PerCpuAllocator& alloc, PerCpuPtr<Word> slots,
               bool use_rseq)
      : topo_(topo),
        alloc_(alloc),
        slots_(slots),
        n_(static_cast<uint32_t>(topo.num_possible())),
        present_mask_(topo.present_words()),
        use_rseq_(use_rseq),
        rseq_n_(use_rseq ? n_ : 0) {
    for (size_t i = 0; i < N; ++i) {
      // Relaxed suffices: not yet published (Create returns it).
      acc_[i].store(0, std::memory_order_relaxed);
      overflow_[i].store(0, std::memory_order_relaxed);
    }
  }

  bool CheckAlive() const {
#if PERCPU_CONTRACT_CHECKS
    if (magic_ != kAliveMagic) {
      internal::ReportContractViolation(
          "PerCpuU64Mib: used after destruction (or corrupted)");
      return false;
    }
#endif
    return true;
  }

  void FallbackAdd(int cpu, size_t item, uint64_t delta) {
    // IsPresent: never write a non-present CPU's memory (the allocator
    // releases it); such adds go to the overflow counter.
    if (__builtin_expect(static_cast<uint32_t>(cpu) < n_, 1) &&
        topo_.IsPresent(cpu)) {
      // Relaxed suffices: atomicity alone makes concurrent adds and the
      // fold's exchange exact; nothing else is published.
      slots_.on(cpu)[item].fetch_add(delta, std::memory_order_relaxed);
      return;
    }
    AddOverflow(item, delta);
  }

  // rseq: the CPU id was out of range or not present (nothing written);
  // otherwise the fallback writer.
  [[gnu::noinline]] void AddSlow(size_t item, uint64_t delta) {
    if (use_rseq_) {
      AddOverflow(item, delta);
    } else {
      FallbackAdd(internal::FallbackCpuId(), item, delta);
    }
  }

  void AddOverflow(size_t item, uint64_t delta) {
    // Relaxed suffices: many writers, atomicity alone is needed.
    overflow_[item].fetch_add(delta, std::memory_order_relaxed);
  }

  void FoldCpu(int cpu) {
    Word* words = slots_.on(cpu);
    for (size_t i = 0; i < N; ++i) {
      internal::FoldSlotIntoAcc(words[i], acc_[i]);
    }
  }

  // Inside the hotplug write section (docs/fold_and_hotplug.md):
  //   kOffline  fallback: move the slot (exchange) -- a late add stays in
  //             the still-visited slot. rseq: nothing (the slot stays where
  //             readers look; a real CPU may still be running a writer
  //             when a lagging sysfs folder says "offline").
  //   kAbsent   the present bit is already clear and, in rseq mode, the
  //             membarrier fence ran: no rseq store can reach the slot, so
  //             the exchange moves it exactly.
  //   kPresent  (before the bit is set, before the allocator's prepare)
  //             move whatever the unit holds (a fallback add delayed across
  //             the CPU's removal) so the allocator discards nothing.
  Status FoldCallback(HotplugEvent event, int cpu) {
    if (static_cast<uint32_t>(cpu) >= n_) {
      return OutOfRangeError("PerCpuU64Mib::FoldCallback: cpu " +
                             std::to_string(cpu));
    }
    if ((event == HotplugEvent::kOffline && !use_rseq_) ||
        event == HotplugEvent::kAbsent || event == HotplugEvent::kPresent) {
      FoldCpu(cpu);
    }
    return Status::Ok();
  }

  // Teardown phase of kAbsent, outside the write section and just before
  // the allocator's teardown releases the unit (teardown runs in reverse
  // registration order; the allocator registered before this object): a
  // fallback add delayed across Offline and SetAbsent that landed after
  // the write-section fold is moved now. The unit is no longer visited,
  // so moving it into acc only makes totals grow. What is left is the
  // window from this exchange to the allocator's madvise (documented).
  Status TeardownCallback(HotplugEvent event, int cpu) {
    if (event == HotplugEvent::kAbsent && static_cast<uint32_t>(cpu) < n_) {
      FoldCpu(cpu);
    }
    return Status::Ok();
  }

  Topology& topo_;
  PerCpuAllocator& alloc_;
  // Keeps topo_ and alloc_ alive (shared ownership) until after the
  // destructor body: any declaration order of counter and owners is safe.
  const internal::PerCpuOwners owners_{topo_, alloc_};
  PerCpuPtr<Word> slots_;
  const uint32_t n_;
  const Word* const present_mask_;  // topo_.present_words()
  const bool use_rseq_;
  const uint32_t rseq_n_;  // n_ if use_rseq_, else 0 (no rseq write)
  uint32_t magic_ = kAliveMagic;
  uint64_t callback_id_ = 0;
  Word acc_[N];       // written only by the hotplug callbacks
  Word overflow_[N];  // fetch_add by writers without a usable CPU id
};

// A single per-CPU u64 statistics counter (PerCpuU64Mib<1>).
class PerCpuU64 {
 public:
  static StatusOr<std::unique_ptr<PerCpuU64>> Create(
      Topology& topo, PerCpuAllocator& alloc, PerCpuStatsOptions options = {}) {
    StatusOr<std::unique_ptr<PerCpuU64Mib<1>>> mib =
        PerCpuU64Mib<1>::Create(topo, alloc, options);
    if (!mib.ok()) return mib.status();
    std::unique_ptr<PerCpuU64> c(new (std::nothrow) PerCpuU64());
    if (c == nullptr) {
      return ResourceExhaustedError("PerCpuU64::Create: out of memory");
    }
    c->mib_ = std::move(*mib);
    return c;
  }

  void Add(uint64_t delta) { mib_->Add(0, delta); }
  void Inc() { mib_->Add(0, 1); }
  Status AddOnCpu(int cpu, uint64_t delta) {
    return mib_->AddOnCpu(cpu, 0, delta);
  }
  uint64_t Sum() const { return mib_->Read(0); }
  StatusOr<uint64_t> OnCpu(int cpu) const { return mib_->OnCpu(cpu, 0); }
  uint64_t overflow() const { return mib_->overflow(0); }
  bool uses_rseq() const { return mib_->uses_rseq(); }
  const PerCpuU64Mib<1>& mib() const { return *mib_; }

 private:
  PerCpuU64() = default;
  std::unique_ptr<PerCpuU64Mib<1>> mib_;
};

}  // namespace percpu

#endif  // PERCPU_PRIMITIVES_PERCPU_STATS_H_
