// FlowStats: per-flow packet statistics whose per-CPU slots are
// allocated lazily, on a CPU's first write (the Open vSwitch datapath's
// sw_flow stats scheme, our own code). Formerly LazyFlowStats, now a
// deprecated alias (removed in 0.3).
//
// A flow table may hold millions of flows, most of them touched by one or two
// CPUs. Allocating a full per-CPU object per flow would cost num_possible
// slots per flow; instead slot 0 is allocated with the flow and slot c (c > 0)
// only when CPU c first updates the flow. A slot that cannot be allocated
// (allocation failure on the fast path) is not an error: the update goes to
// slot 0, which is the shared fallback slot, so no packet is ever lost.
//
// Slot 0 is therefore written by several CPUs (CPU 0 and every CPU whose slot
// is missing) and is updated with atomic read-modify-write operations. Slot c
// (c > 0) has exactly one writer, CPU c, and is updated with a relaxed load
// and a relaxed store (no lock prefix, as the kernel's this_cpu ops).
//
// Memory-ordering contract:
//   * A new slot is fully initialized, then published with a release store
//     of its pointer, then its CPU's bit is set in the allocated-CPU bitmap
//     with a release RMW. Readers load the bitmap words and the slot pointers
//     with acquire, so they never see an uninitialized slot.
//   * The counters are relaxed: a reader's Read() returns, per slot, values
//     that each slot held at some moment of the read; packets and bytes of
//     one slot are not a consistent pair (as with OVS's per-slot counters read
//     without the slot lock). Totals are monotonic for one reader.
//   * Read() visits only CPUs in the allocated bitmap, never all possible
//     CPUs. It is independent of CPU hotplug: a slot of a CPU that went
//     offline stays allocated and is still read, so nothing is lost.
//
// Usage constraints:
//   * Update(cpu, ...) may be called from any thread with any id (e.g.
//     sched_getcpu()): it claims slot c > 0 for the one update with a CAS
//     (a second concurrent writer of the same id goes to slot 0), so no
//     count is lost or gained (issue 12 item 4). Two first writers of one id
//     race to publish the slot with a CAS; the loser frees its allocation.
//     UpdateChecked() validates the id's range.
//   * Read() may run on any thread concurrently with updates.
//   * The destructor frees every slot; as OVS frees a flow after an RCU grace
//     period, the caller guarantees no update or read runs concurrently with
//     or after destruction.
#ifndef PERCPU_PRIMITIVES_LAZY_PERCPU_H_
#define PERCPU_PRIMITIVES_LAZY_PERCPU_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <string>

#include "primitives/contract.h"
#include "primitives/internal/atomic.h"
#include "primitives/status.h"

namespace percpu {

// One per-CPU slot. Cache-line aligned so two CPUs' slots never share a line.
struct alignas(64) FlowStatsSlot {
  internal::Atomic<uint64_t> packets{0};
  internal::Atomic<uint64_t> bytes{0};
  internal::Atomic<uint64_t> used{0};       // last-use timestamp (max)
  internal::Atomic<uint32_t> tcp_flags{0};  // OR of the TCP flags seen
  // 1 while an Update() owns the slot (claimed with a CAS): a second writer
  // of the same CPU id goes to the shared slot 0 instead. Always present
  // (the slot is one cache line either way), whatever the build flags.
  internal::Atomic<uint32_t> writer{0};
};

// A folded view of a flow's statistics.
struct FlowStatsValues {
  uint64_t packets = 0;
  uint64_t bytes = 0;
  uint64_t used = 0;       // maximum over slots
  uint32_t tcp_flags = 0;  // OR over slots
};

// How slots are obtained. Allocate returns nullptr on failure (it must not
// throw); the default uses the aligned nothrow operator new. Tests install a
// failing allocator to exercise the slot-0 fallback.
struct LazySlotAllocator {
  void* (*allocate)(void* ctx, size_t size, size_t align, int cpu) = nullptr;
  void (*free)(void* ctx, void* p, size_t size, size_t align) = nullptr;
  void* ctx = nullptr;

  static LazySlotAllocator Default() {
    LazySlotAllocator a;
    a.allocate = [](void*, size_t size, size_t align, int) -> void* {
      return ::operator new(size, std::align_val_t(align), std::nothrow);
    };
    a.free = [](void*, void* p, size_t, size_t align) {
      ::operator delete(p, std::align_val_t(align));
    };
    return a;
  }
};

namespace internal {

// The publication orders of the correct recipe. Only the model checker's
// mutation tests instantiate BasicFlowStats with anything else, to prove
// that the checker catches a weakened variant of this very source.
struct FlowStatsRecipe {
  // Publish(): the slot pointer, then the allocated bit. Either release
  // alone orders the slot's construction before a reader of ForEachAllocated
  // (which acquires both); both are kept so each load pairs on its own.
  static constexpr std::memory_order kSlotStore =
      std::memory_order_release;  // Pairs with: kSlotLoad.
  static constexpr std::memory_order kBitmapRmw =
      std::memory_order_release;  // Pairs with: kBitmapLoad.
  // ForEachAllocated() and HasSlot(): the readers' side of the same pairs.
  static constexpr std::memory_order kBitmapLoad =
      std::memory_order_acquire;  // Pairs with: kBitmapRmw.
  static constexpr std::memory_order kSlotLoad =
      std::memory_order_acquire;  // Pairs with: kSlotStore.
};

}  // namespace internal

template <typename Recipe = internal::FlowStatsRecipe>
class BasicFlowStats {
 public:
  // Creates the stats of one flow for CPUs 0..num_possible-1 and allocates
  // slot 0. Fails with InvalidArgument for num_possible outside [1, 8192],
  // ResourceExhausted if slot 0 cannot be allocated.
  static StatusOr<std::unique_ptr<BasicFlowStats>> Create(
      int num_possible,
      LazySlotAllocator allocator = LazySlotAllocator::Default()) {
    if (num_possible < 1 || num_possible > kMaxPossible) {
      return InvalidArgumentError("FlowStats::Create: num_possible " +
                                  std::to_string(num_possible) +
                                  " is not in [1, " +
                                  std::to_string(kMaxPossible) + "]");
    }
    if (allocator.allocate == nullptr || allocator.free == nullptr) {
      return InvalidArgumentError(
          "FlowStats::Create: allocator has a null function");
    }
    std::unique_ptr<BasicFlowStats> stats(
        new (std::nothrow) BasicFlowStats(num_possible, allocator));
    if (stats == nullptr || stats->slots_ == nullptr ||
        stats->allocated_ == nullptr) {
      return ResourceExhaustedError(
          "FlowStats::Create: out of memory for " +
          std::to_string(num_possible) + " slot pointers");
    }
    FlowStatsSlot* slot0 = stats->NewSlot(0);
    if (slot0 == nullptr) {
      return ResourceExhaustedError(
          "FlowStats::Create: cannot allocate slot 0");
    }
    stats->Publish(0, slot0);
    return stats;
  }

  ~BasicFlowStats() {
    if (slots_ != nullptr) {
      for (int cpu = 0; cpu < num_possible_; ++cpu) {
        // Relaxed suffices: the caller guarantees no concurrent access.
        FlowStatsSlot* s = slots_[cpu].load(std::memory_order_relaxed);
        if (s != nullptr) {
          s->~FlowStatsSlot();
          allocator_.free(allocator_.ctx, s, sizeof(FlowStatsSlot),
                          alignof(FlowStatsSlot));
        }
      }
    }
  }

  BasicFlowStats(const BasicFlowStats&) = delete;
  BasicFlowStats& operator=(const BasicFlowStats&) = delete;

  int num_possible() const { return num_possible_; }

  // Accounts one packet of `bytes` bytes seen on `cpu` at time `now`. Safe
  // from any thread with any id (e.g. sched_getcpu()): the update claims
  // cpu's slot with a CAS; if another writer holds it, the packet goes to
  // the shared slot 0 (atomic RMWs). Exact either way (issue 12 item 4).
  // An id outside [0, num_possible()) also goes to slot 0 (debug builds
  // report it).
  void Update(int cpu, uint64_t bytes, uint64_t now, uint32_t tcp_flags) {
    if (cpu < 0 || cpu >= num_possible_) {
#if PERCPU_CONTRACT_CHECKS
      internal::ReportContractViolation(
          "FlowStats::Update: cpu id out of range");
#endif
      cpu = 0;
    }
    if (cpu != 0) {
      FlowStatsSlot* s = SlotOf(cpu);
      if (s != nullptr) {
        uint32_t expected = 0;
        // Acquire: pairs with the previous owner's release store below, so
        // its relaxed stores are visible to this owner's loads.
        if (s->writer.compare_exchange_strong(expected, 1,
                                              std::memory_order_acquire,  // Pairs with: release store of writer below.
                                              std::memory_order_relaxed)) {
          UpdateOwnSlot(*s, bytes, now, tcp_flags);
          // Release: this owner's stores happen-before the next owner's.
          // Pairs with: the acquire CAS above.
          s->writer.store(0, std::memory_order_release);  // Pairs with: the acquire CAS above.
          return;
        }
        // Another writer holds the slot: slot 0 below.
      } else {
        // Allocation failed: fall back to the shared slot 0, as OVS does.
        // Relaxed suffices: a diagnostic count, publishes nothing.
        fallback_updates_.fetch_add(1, std::memory_order_relaxed);
      }
    }
    // Relaxed suffices: slot 0 was published before the object was shared.
    UpdateSharedSlot(*slots_[0].load(std::memory_order_relaxed), bytes, now,
                     tcp_flags);
  }

  // As Update(), validating the CPU id.
  Status UpdateChecked(int cpu, uint64_t bytes, uint64_t now,
                       uint32_t tcp_flags) {
    if (cpu < 0 || cpu >= num_possible_) {
      return OutOfRangeError("FlowStats::Update: cpu " +
                             std::to_string(cpu) + " is not in [0, " +
                             std::to_string(num_possible_) + ")");
    }
    Update(cpu, bytes, now, tcp_flags);
    return Status::Ok();
  }

  // Folds the allocated slots. Never allocates; visits only CPUs whose bit
  // is set in the allocated bitmap.
  FlowStatsValues Read() const {
    FlowStatsValues v;
    ForEachAllocated([&](int, const FlowStatsSlot& s) {
      // Relaxed suffices: the slot's initialization is ordered by the
      // acquire loads in ForEachAllocated(); the counters publish nothing.
      v.packets += s.packets.load(std::memory_order_relaxed);
      v.bytes += s.bytes.load(std::memory_order_relaxed);
      const uint64_t used = s.used.load(std::memory_order_relaxed);
      if (used > v.used) v.used = used;
      v.tcp_flags |= s.tcp_flags.load(std::memory_order_relaxed);
    });
    return v;
  }

  // Whether `cpu` has its own slot (false for out-of-range ids).
  bool HasSlot(int cpu) const {
    if (cpu < 0 || cpu >= num_possible_) return false;
    // Acquire pairs with: release store of slots_[cpu] in Publish().
    return slots_[cpu].load(Recipe::kSlotLoad) != nullptr;  // Pairs with: Publish().
  }

  // Number of CPUs with a slot (slot 0 included).
  int AllocatedCount() const {
    int n = 0;
    ForEachAllocated([&](int, const FlowStatsSlot&) { ++n; });
    return n;
  }

  // Updates that went to slot 0 because their CPU's slot could not be
  // allocated.
  uint64_t fallback_updates() const {
    // Relaxed suffices: a diagnostic count.
    return fallback_updates_.load(std::memory_order_relaxed);
  }

  // Calls f(cpu, slot) for every CPU with a published slot, ascending.
  template <typename F>
  void ForEachAllocated(F&& f) const {
    const int words = Words(num_possible_);
    for (int w = 0; w < words; ++w) {
      // Acquire: a set bit implies the slot pointer stored before it is
      // visible. Pairs with: release fetch_or of allocated_ in Publish().
      uint64_t bits = allocated_[w].load(Recipe::kBitmapLoad);  // Pairs with: Publish().
      while (bits != 0) {
        const int bit = __builtin_ctzll(bits);
        bits &= bits - 1;
        const int cpu = w * 64 + bit;
        // Acquire: the slot's initialization is visible.
        // Pairs with: release store of slots_[cpu] in Publish().
        const FlowStatsSlot* s = slots_[cpu].load(Recipe::kSlotLoad);  // Pairs with: Publish().
        if (s != nullptr) f(cpu, *s);
      }
    }
  }

 private:
  // The kernel's largest NR_CPUS (MAXSMP), as kMaxCpus (cpumask.h).
  static constexpr int kMaxPossible = 8192;
  static int Words(int n) { return (n + 63) / 64; }

  BasicFlowStats(int num_possible, LazySlotAllocator allocator)
      : num_possible_(num_possible), allocator_(allocator) {
    slots_.reset(new (std::nothrow)
                     internal::Atomic<FlowStatsSlot*>[num_possible]);
    allocated_.reset(new (std::nothrow)
                         internal::Atomic<uint64_t>[Words(num_possible)]);
    if (slots_ != nullptr) {
      for (int i = 0; i < num_possible; ++i) {
        // Relaxed suffices: the object is not shared yet.
        slots_[i].store(nullptr, std::memory_order_relaxed);
      }
    }
    if (allocated_ != nullptr) {
      for (int i = 0; i < Words(num_possible); ++i) {
        // Relaxed suffices: the object is not shared yet.
        allocated_[i].store(0, std::memory_order_relaxed);
      }
    }
  }

  FlowStatsSlot* NewSlot(int cpu) {
    void* p = allocator_.allocate(allocator_.ctx, sizeof(FlowStatsSlot),
                                  alignof(FlowStatsSlot), cpu);
    if (p == nullptr) return nullptr;
    return new (p) FlowStatsSlot();  // all counters explicitly zero
  }

  // cpu's slot, allocated and published on first use; nullptr if the
  // allocation failed. Two first writers of one id may race: the CAS picks
  // one slot, the loser frees its own.
  FlowStatsSlot* SlotOf(int cpu) {
    // Acquire: another thread may have published the slot; its
    // initialization must be visible before this thread writes it.
    // Pairs with: the release CAS/store of slots_[cpu] in Publish().
    FlowStatsSlot* s = slots_[cpu].load(Recipe::kSlotLoad);  // Pairs with: Publish().
    if (s != nullptr) return s;
    s = NewSlot(cpu);
    if (s == nullptr) return nullptr;
    FlowStatsSlot* expected = nullptr;
    // Release on success: as Publish(). Acquire on failure: the winner's
    // initialization is visible. Pairs with: ForEachAllocated()/SlotOf()
    // acquire loads, and the winner's release CAS.
    if (!slots_[cpu].compare_exchange_strong(expected, s, Recipe::kSlotStore,  // Pairs with: ForEachAllocated()/SlotOf().
                                             std::memory_order_acquire)) {  // Pairs with: the winner's release CAS.
      s->~FlowStatsSlot();
      allocator_.free(allocator_.ctx, s, sizeof(FlowStatsSlot),
                      alignof(FlowStatsSlot));
      return expected;
    }
    SetAllocatedBit(cpu);
    return s;
  }

  void Publish(int cpu, FlowStatsSlot* s) {
    // Release: the slot's zero-initialization happens-before any reader that
    // sees the pointer. Pairs with: acquire loads of slots_ in
    // ForEachAllocated() and HasSlot().
    slots_[cpu].store(s, Recipe::kSlotStore);  // Pairs with: ForEachAllocated().
    SetAllocatedBit(cpu);
  }

  void SetAllocatedBit(int cpu) {
    // Release RMW: a reader that sees the bit also sees the pointer store
    // above. Pairs with: acquire load of allocated_ in ForEachAllocated().
    allocated_[cpu / 64].fetch_or(uint64_t{1} << (cpu % 64), Recipe::kBitmapRmw);  // Pairs with: ForEachAllocated().
  }

  static void UpdateOwnSlot(FlowStatsSlot& s, uint64_t bytes,
                            uint64_t now, uint32_t tcp_flags) {
    // Relaxed load + store suffice: slot c > 0 has a single writer at a
    // time (the claim in Update), which sees the previous owner's stores
    // (claim's acquire); the counters publish nothing.
    s.packets.store(s.packets.load(std::memory_order_relaxed) + 1,
                    std::memory_order_relaxed);
    s.bytes.store(s.bytes.load(std::memory_order_relaxed) + bytes,
                  std::memory_order_relaxed);
    if (now > s.used.load(std::memory_order_relaxed)) {
      s.used.store(now, std::memory_order_relaxed);
    }
    s.tcp_flags.store(s.tcp_flags.load(std::memory_order_relaxed) | tcp_flags,
                      std::memory_order_relaxed);
  }

  static void UpdateSharedSlot(FlowStatsSlot& s, uint64_t bytes,
                               uint64_t now, uint32_t tcp_flags) {
    // Relaxed RMWs suffice: slot 0 has several writers, and atomicity alone
    // keeps their increments; the counters publish nothing.
    s.packets.fetch_add(1, std::memory_order_relaxed);
    s.bytes.fetch_add(bytes, std::memory_order_relaxed);
    uint64_t used = s.used.load(std::memory_order_relaxed);
    while (now > used &&
           !s.used.compare_exchange_weak(used, now, std::memory_order_relaxed,
                                         std::memory_order_relaxed)) {
    }
    s.tcp_flags.fetch_or(tcp_flags, std::memory_order_relaxed);
  }

  const int num_possible_;
  const LazySlotAllocator allocator_;
  std::unique_ptr<internal::Atomic<FlowStatsSlot*>[]> slots_;
  std::unique_ptr<internal::Atomic<uint64_t>[]> allocated_;
  internal::Atomic<uint64_t> fallback_updates_{0};
};

// The production type: the correct publication orders.
using FlowStats = BasicFlowStats<>;

// The old names (0.1). Removed in 0.3.
using LazyFlowStats [[deprecated("use FlowStats; removed in 0.3")]] = FlowStats;
template <typename Recipe = internal::FlowStatsRecipe>
using BasicLazyFlowStats [[deprecated("use BasicFlowStats; removed in 0.3")]] =
    BasicFlowStats<Recipe>;
using LazyFlowStatsSlot [[deprecated("use FlowStatsSlot; removed in 0.3")]] =
    FlowStatsSlot;

}  // namespace percpu

#endif  // PERCPU_PRIMITIVES_LAZY_PERCPU_H_
