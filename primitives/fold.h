// Fold routines: sum per-CPU statistics over a set of CPUs (the kernel's
// snmp_fold_field / snmp_get_cpu_field64_batch, our own code).
//
// Two item types are folded:
//   * U64StatMib<N>: N U64Stat counters of one CPU plus the U64StatsSync that
//     covers them (an SNMP-MIB-like block). One block per CPU, reached
//     through a per-CPU pointer (anything with `const T* on(int cpu) const`,
//     e.g. PerCpuPtr<U64StatMib<N>> from percpu_alloc.h).
//   * Plain atomics: `n` internal::Atomic<uint64_t> per CPU, contiguous
//     (PerCpuPtr<internal::Atomic<uint64_t>> from AllocateArray(n)).
//
// Two loop orders, with equal results:
//   * FoldField (item-major reference): one item, summed across the CPUs.
//     N items cost N passes over the CPUs (N x cpus cache misses).
//   * FoldAll (cpu-major bulk): for each CPU, its N items read contiguously
//     and added into a caller-provided buffer (or std::array). It never
//     allocates: temporaries are bounded stack arrays (kFoldChunk items).
//     A heap allocation in a stats fold can fail under memory pressure
//     exactly when the statistics are wanted; the fold has no way to report
//     it (the kernel once shipped a SNMP fold that dereferenced a failed
//     kcalloc). So: no heap, ever, in this file.
//
// Reading one CPU's values:
//   * 64-bit targets: each U64Stat is one relaxed 64-bit load (READ_ONCE).
//   * 32-bit targets and PERCPU_FORCE_SEQCOUNT (kU64StatsUseSeqcount): the
//     loads of one CPU run inside that CPU's syncp FetchBegin()/FetchRetry()
//     loop, so no value is torn. FoldAll reads a chunk of up to kFoldChunk
//     items per fetch loop; items of one CPU are then untorn but not
//     necessarily of one instant (U64StatsSync promises no cross-item
//     consistency on 64-bit targets either; use U64StatsGroupSync for that).
//
// Which CPUs to fold. The routines fold exactly the set they are given; a
// set is any object with `template <F> void ForEach(F&&) const` calling
// f(int cpu) (CpuMask, OnlineCpus, PresentCpus, PossibleCpusBaseline).
//   * Hotplug-aware objects (LcoreStats, ApproxCounter) fold ONLINE CPUs plus
//     their offline accumulator, inside a Topology::hotplug_seq() read
//     section: a dying CPU's counts are moved into the accumulator by a fold
//     callback in the same write section that clears its online bit (see
//     docs/fold_and_hotplug.md), so an offline CPU holds nothing.
//   * Objects without a hotplug callback must fold PRESENT CPUs: a present
//     but offline CPU may still hold counts written before it went offline.
//     Not-present CPUs never hold data (the allocator backs and zeroes a
//     CPU's memory when it becomes present).
//   * All POSSIBLE CPUs: only PossibleCpusBaseline, an explicitly named
//     baseline for benchmarks and cross-checks. With kMaxCpus-sized distro
//     kernels most possible CPUs do not exist; visiting them is the cost the
//     kernel's for_each_possible_cpu folds pay. Only use it when the per-CPU
//     memory of every possible CPU is readable.
//
// Memory-ordering contract: relaxed loads only (plus the seqcount recipe on
// the seqcount path); a fold imposes no order on other memory. Each item of
// the result is, per CPU, a value that CPU's slot held during the fold; for
// monotonically increasing counters the folded total is >= any total folded
// earlier by the same thread, provided the CPU set and accumulators did not
// change in between (hotplug-aware objects ensure that with hotplug_seq()).
//
// Usage constraints: readers may run on any thread concurrently with the
// writers. Do not fold from a signal handler that interrupts a writer of the
// same data on the seqcount path (it would spin forever).
#ifndef PERCPU_PRIMITIVES_FOLD_H_
#define PERCPU_PRIMITIVES_FOLD_H_

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "primitives/contract.h"
#include "primitives/internal/atomic.h"
#include "primitives/topology.h"
#include "primitives/u64_stats.h"

namespace percpu {

// N counters of one CPU and the sync covering them. Zero-filled memory is a
// valid all-zero block (atomics of value 0, seqcount 0).
template <size_t N>
struct U64StatMib {
  static_assert(N > 0, "a MIB has at least one item");
  static constexpr size_t kItems = N;
  U64Stat items[N];
  U64StatsSync syncp;
};

// Largest number of items read per fetch loop (bounds the stack use of
// FoldAll on the seqcount path: kFoldChunk * 8 bytes).
inline constexpr size_t kFoldChunk = 32;

// ---------------------------------------------------------------------------
// CPU sets.

// The online CPUs of a topology, from its atomic mask words. Consistent only
// inside a hotplug_seq() read section (see ReadHotplugConsistent).
class OnlineCpus {
 public:
  explicit OnlineCpus(const Topology& topo) : topo_(topo) {}
  template <typename F>
  void ForEach(F&& f) const {
    topo_.ForEachOnline(f);
  }

 private:
  const Topology& topo_;
};

// The present CPUs of a topology (for objects without a hotplug callback).
class PresentCpus {
 public:
  explicit PresentCpus(const Topology& topo) : topo_(topo) {}
  template <typename F>
  void ForEach(F&& f) const {
    topo_.ForEachPresent(f);
  }

 private:
  const Topology& topo_;
};

// BASELINE ONLY: every possible CPU id 0..num_possible-1. For benchmarks and
// cross-checks; never the right set for production folds (see above).
class PossibleCpusBaseline {
 public:
  explicit PossibleCpusBaseline(int num_possible)
      : num_possible_(num_possible) {}
  template <typename F>
  void ForEach(F&& f) const {
    for (int cpu = 0; cpu < num_possible_; ++cpu) f(cpu);
  }

 private:
  int num_possible_;
};

// Runs `read` inside a read section of topo.hotplug_seq() until no hotplug
// event overlapped it, and returns its last result. `read` must compute its
// result from scratch each time (it may run several times). Nested per-CPU
// fetch loops inside `read` are fine: both are read sections, and neither
// waits for the other's writers. Must not be called from inside a hotplug
// callback of the same topology (the hotplug write section is open: it would
// spin forever).
template <typename ReadFn>
auto ReadHotplugConsistent(const Topology& topo, ReadFn&& read)
    -> decltype(read()) {
  const SeqCount& seq = topo.hotplug_seq();
  for (;;) {
    // ReadBegin/ReadRetry carry the acquire load / acquire fence.
    // Pairs with: WriteEnd()/WriteBegin() around the fold callbacks and the
    // mask update in Topology's event path.
    const uint32_t start = seq.ReadBegin();
    auto result = read();
    if (!seq.ReadRetry(start)) return result;
  }
}

namespace internal {

template <typename Ptr>
using PerCpuElement =
    std::remove_cv_t<std::remove_pointer_t<decltype(std::declval<const Ptr&>().on(0))>>;

// Reads items [first, first+count) of one CPU's MIB into tmp, untorn.
template <size_t N>
void ReadMibRange(const U64StatMib<N>& mib, size_t first, size_t count,
                  uint64_t* tmp) {
  for (;;) {
    const uint32_t start = mib.syncp.FetchBegin();
    for (size_t k = 0; k < count; ++k) tmp[k] = mib.items[first + k].Read();
    if (!mib.syncp.FetchRetry(start)) return;
  }
}

}  // namespace internal

// ---------------------------------------------------------------------------
// U64StatMib folds.

// Item-major reference: the sum of item `item` over `cpus`. Precondition:
// item < kItems (debug builds report a violation; returns 0 then).
template <typename MibPtr, typename CpuSet>
uint64_t FoldField(const MibPtr& mibs, const CpuSet& cpus, size_t item) {
  using Mib = internal::PerCpuElement<MibPtr>;
  if (item >= Mib::kItems) {
#if PERCPU_CONTRACT_CHECKS
    internal::ReportContractViolation("FoldField: item index out of range");
#endif
    return 0;
  }
  uint64_t sum = 0;
  cpus.ForEach([&](int cpu) {
    const auto& mib = *mibs.on(cpu);
    sum += FetchConsistent(mib.syncp, [&] { return mib.items[item].Read(); });
  });
  return sum;
}

// Cpu-major bulk fold: adds, for each CPU of `cpus`, its kItems values into
// out[0..kItems). `out` is NOT cleared first (accumulate several objects or
// an accumulator into one buffer). Never allocates.
template <typename MibPtr, typename CpuSet>
void FoldAll(const MibPtr& mibs, const CpuSet& cpus, uint64_t* out) {
  using Mib = internal::PerCpuElement<MibPtr>;
  constexpr size_t kN = Mib::kItems;
  cpus.ForEach([&](int cpu) {
    const Mib& mib = *mibs.on(cpu);
    if constexpr (!kU64StatsUseSeqcount) {
      // 64-bit: relaxed untorn loads, no temporaries.
      for (size_t i = 0; i < kN; ++i) out[i] += mib.items[i].Read();
    } else {
      uint64_t tmp[kFoldChunk < kN ? kFoldChunk : kN];
      for (size_t first = 0; first < kN; first += kFoldChunk) {
        const size_t count = kN - first < kFoldChunk ? kN - first : kFoldChunk;
        internal::ReadMibRange(mib, first, count, tmp);
        for (size_t k = 0; k < count; ++k) out[first + k] += tmp[k];
      }
    }
  });
}

template <typename MibPtr, typename CpuSet, size_t N>
void FoldAll(const MibPtr& mibs, const CpuSet& cpus,
             std::array<uint64_t, N>& out) {
  static_assert(N == internal::PerCpuElement<MibPtr>::kItems,
                "FoldAll: the array must have one slot per MIB item");
  FoldAll(mibs, cpus, out.data());
}

// BASELINE ONLY: FoldAll over every possible CPU (what a
// for_each_possible_cpu fold costs). Requires the memory of every possible
// CPU to be readable.
template <typename MibPtr, size_t N>
void FoldAllPossibleBaseline(const MibPtr& mibs, int num_possible,
                             std::array<uint64_t, N>& out) {
  FoldAll(mibs, PossibleCpusBaseline(num_possible), out);
}

// ---------------------------------------------------------------------------
// Plain atomic folds: per CPU, `n` internal::Atomic<uint64_t> starting at
// ptr.on(cpu). Atomics are never torn (on 32-bit targets they are 8-byte
// atomics), so no seqcount is involved.

// The sum of element `item` over `cpus`. Precondition: item < the array
// length the pointer was allocated with (unchecked: the pointer does not
// know it).
template <typename AtomicPtr, typename CpuSet>
uint64_t FoldFieldAtomic(const AtomicPtr& ptr, const CpuSet& cpus,
                         size_t item) {
  uint64_t sum = 0;
  cpus.ForEach([&](int cpu) {
    // Relaxed suffices: READ_ONCE of a counter that publishes nothing.
    sum += ptr.on(cpu)[item].load(std::memory_order_relaxed);
  });
  return sum;
}

// Adds, for each CPU, items [0, n) into out[0..n). Never allocates.
template <typename AtomicPtr, typename CpuSet>
void FoldAllAtomic(const AtomicPtr& ptr, size_t n, const CpuSet& cpus,
                   uint64_t* out) {
  cpus.ForEach([&](int cpu) {
    const auto* items = ptr.on(cpu);
    for (size_t i = 0; i < n; ++i) {
      // Relaxed suffices: READ_ONCE of a counter that publishes nothing.
      out[i] += items[i].load(std::memory_order_relaxed);
    }
  });
}

}  // namespace percpu

#endif  // PERCPU_PRIMITIVES_FOLD_H_
