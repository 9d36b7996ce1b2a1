// PerCpuAllocator: dynamic per-CPU memory, the userspace counterpart of the
// kernel's alloc_percpu()/free_percpu() (mm/percpu.c). One allocation gives
// every possible CPU its own zeroed copy of an object; PerCpuPtr<T>::on(cpu)
// finds CPU `cpu`'s copy with one multiply-add, without locks.
//
// Layout (see docs/percpu_alloc.md): memory comes in chunks; a chunk has one
// unit (unit_size bytes, default 64 KiB) per possible CPU, CPU-major:
//   chunk base -> [unit of CPU 0][unit of CPU 1] ... [unit of CPU n-1]
// An allocation occupies the same offset in every unit of one chunk, so
// CPU c's copy is at base + c * unit_size, and all objects of one CPU lie
// contiguously in its units. A chunk is reserved with one mmap (MAP_NORESERVE,
// anonymous): pages are committed on first touch only, so the units of
// possible-but-absent CPUs cost address space, not memory. When a CPU
// becomes absent its units are released (madvise(MADV_DONTNEED)); when it
// becomes present they are (re)zeroed the same way before it can be used.
//
// Alignment: DeriveAlignment() (below) -- objects are aligned to their size
// up to a cache line, and small objects (<= 64 bytes after rounding) are
// additionally never placed across a cache-line boundary.
//
// Object requirements: the allocator hands out zero bytes and never runs
// constructors or destructors, like the kernel. T must be a type for which
// all-zero bytes is a valid initial state and whose destructor may be
// skipped: integers, std::atomic/internal::Atomic of integers, U64Stat,
// arrays and structs of those. Allocate<T>() static_asserts
// ZeroInitializable<T> (trivially destructible and not polymorphic); a
// type that satisfies that but is not valid as zero bytes (e.g. one holding
// a reference-counted handle) must not be allocated here.
//
// Thread safety / memory-ordering contract:
//   * Allocate/Free/stats/ResidentBytesPerCpu may be called concurrently
//     from any threads; they take the allocator's mutex. A small object's
//     slot that is reused is zeroed (every present CPU's copy) by the
//     allocating thread after it releases the mutex, before Allocate
//     returns: the slot is that caller's alone by then. If a CPU goes
//     absent during that zeroing, zeros may land in its released unit:
//     it still reads zero; at most that page stays resident.
//   * The data path (PerCpuPtr::on/At and reading/writing the objects) never
//     touches the allocator or its lock. The allocator publishes nothing
//     through atomics: a PerCpuPtr returned by Allocate is handed to other
//     threads by the caller, whose own synchronization (a release store, a
//     mutex, thread creation) also publishes the zeroed memory.
//   * Free(p) requires that no thread accesses p's objects any more (the
//     allocator cannot detect late accesses; the memory is zeroed and
//     reused). Destroying the allocator unmaps every chunk: all PerCpuPtrs
//     from it become dangling.
//   * Writes to the copy of a CPU that is not present are a contract
//     violation (the memory is released when the CPU goes absent, and
//     zeroed when it comes back).
//   * Ownership: Create returns a std::shared_ptr. The allocator keeps a
//     reference to its Topology, and every counter keeps one to the
//     allocator and the Topology it was created on, so any declaration or
//     destruction order is safe: the chunks are unmapped when the last
//     owner (the caller's pointer or a counter) lets go. Hotplug callbacks
//     (registered at Create) take the allocator's mutex; lock order is
//     hotplug mutex -> allocator mutex.
#ifndef PERCPU_PRIMITIVES_PERCPU_ALLOC_H_
#define PERCPU_PRIMITIVES_PERCPU_ALLOC_H_

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "primitives/internal/mutex.h"
#include "primitives/status.h"
#include "primitives/topology.h"

namespace percpu {

// L1 data cache line size assumed for placement. 64 bytes is the line size
// of every x86_64 CPU and of most ARM64 cores (Cortex-A53/A72/Neoverse...;
// Apple M-series use 128 but keep 64-byte coherence granules for most
// purposes). Two CPUs' copies never share a line anyway (they are a unit
// apart); this constant governs how ONE CPU's objects are packed, so that
// a small object is not split over two lines (two misses, and a split-lock
// for atomic read-modify-writes on x86).
inline constexpr size_t kCacheLineSize = 64;

// Allocation granule: every object size is rounded up to a multiple of 8
// bytes and every object is at least 8-aligned. The kernel uses 4
// (PCPU_MIN_ALLOC_SIZE) for its bitmap; we choose 8 because the bulk of
// per-CPU data is 64-bit counters (U64Stat, uint64_t), and on i686/armhf
// alignof(uint64_t) may be 4: with an 8-byte granule a 64-bit counter is
// always 8-aligned and so never straddles a cache line, on every target.
// The cost is at most 4 wasted bytes for a lone 32-bit counter.
inline constexpr size_t kMinAllocGranule = 8;

// The size-derived alignment rule (proposed upstream in the "tc filter
// insertion rate degradation" discussion): start from
// max(type_align, kMinAllocGranule), then double it while it is below
// kCacheLineSize, the doubled value is <= size, and size is a multiple of
// the doubled value. So a 16-byte object is 16-aligned, a 32-byte one
// 32-aligned, 64 and larger multiples of 64 are line-aligned, and odd
// sizes keep the minimum. type_align must be a power of two (it is
// returned unchanged if it is above kCacheLineSize).
constexpr size_t DeriveAlignment(size_t size, size_t type_align) {
  size_t align = type_align > kMinAllocGranule ? type_align : kMinAllocGranule;
  while (align < kCacheLineSize && align * 2 <= size &&
         size % (align * 2) == 0) {
    align *= 2;
  }
  return align;
}

// True for types the allocator may hand out as zero bytes without running
// a constructor or destructor. Specialize to std::false_type to forbid a
// type that passes the check but is not valid as all-zero bytes.
template <typename T>
struct ZeroInitializable
    : std::integral_constant<bool, std::is_trivially_destructible<T>::value &&
                                       !std::is_polymorphic<T>::value &&
                                       !std::is_reference<T>::value> {};

// A handle to one per-CPU allocation: the address of CPU 0's copy and the
// stride between CPUs' copies. Copyable value; does not own the memory.
// 16 bytes on 64-bit targets (the stride, a unit size of at most 1 GiB,
// is kept in 32 bits): callers keep many of these, one per allocation.
template <typename T>
class PerCpuPtr {
 public:
  PerCpuPtr() = default;

  // CPU `cpu`'s copy. Unchecked (hot path): 0 <= cpu < num_cpus() required.
  T* on(int cpu) const {
    return reinterpret_cast<T*>(base_ +
                                static_cast<uintptr_t>(cpu) * stride_);
  }
  // Checked variant: OutOfRange for a bad id, FailedPrecondition if null.
  [[nodiscard]] StatusOr<T*> At(int cpu) const {
    if (base_ == 0) {
      return FailedPreconditionError("PerCpuPtr::At: null PerCpuPtr");
    }
    if (cpu < 0 || cpu >= num_cpus_) {
      return OutOfRangeError("PerCpuPtr::At: CPU id " + std::to_string(cpu) +
                             " is not in [0, " + std::to_string(num_cpus_) +
                             ")");
    }
    return on(cpu);
  }

  explicit operator bool() const { return base_ != 0; }
  uintptr_t base_address() const { return base_; }
  size_t stride() const { return stride_; }
  int num_cpus() const { return num_cpus_; }

  friend bool operator==(const PerCpuPtr& a, const PerCpuPtr& b) {
    return a.base_ == b.base_;
  }
  friend bool operator!=(const PerCpuPtr& a, const PerCpuPtr& b) {
    return a.base_ != b.base_;
  }

 private:
  friend class PerCpuAllocator;
  template <typename U>
  friend class PerCpuPtr;
  // stride <= 1 GiB (PerCpuAllocatorOptions::unit_size).
  PerCpuPtr(uintptr_t base, size_t stride, int num_cpus)
      : base_(base),
        stride_(static_cast<uint32_t>(stride)),
        num_cpus_(num_cpus) {}

  uintptr_t base_ = 0;
  uint32_t stride_ = 0;
  int num_cpus_ = 0;
};

// Where chunks come from. The default maps anonymous memory; tests inject
// failures through their own implementation. All methods are called with
// the allocator's mutex held, or from a hotplug callback.
class MemorySource {
 public:
  virtual ~MemorySource() = default;
  // Reserves `bytes` (a multiple of the page size) of zero-filled,
  // page-aligned, read-write memory that is not yet committed.
  [[nodiscard]] virtual StatusOr<void*> Map(size_t bytes) = 0;
  [[nodiscard]] virtual Status Unmap(void* addr, size_t bytes) = 0;
  // Called for each unit of a CPU about to become present (its pages were
  // released by Decommit at the CPU's kAbsent; the unit is not discarded
  // again, see PerCpuAllocator::OnHotplug). The default does nothing (pages
  // are committed on first touch); a failure vetoes the CPU's hot-add.
  [[nodiscard]] virtual Status Commit(void* addr, size_t bytes) = 0;
  // Releases the pages; later reads return zeros.
  [[nodiscard]] virtual Status Decommit(void* addr, size_t bytes) = 0;
};

// mmap(PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS|MAP_NORESERVE),
// munmap, no-op, madvise(MADV_DONTNEED). A process-wide singleton.
MemorySource* DefaultMemorySource();

struct PerCpuAllocatorOptions {
  // Bytes per CPU per chunk: a power of two, a multiple of the page size,
  // at most 1 GiB. Also the largest allocation.
  size_t unit_size = 64 * 1024;
  // Upper bound on the address space reserved for chunks (all units of all
  // chunks: chunks * unit_size * num_possible). Allocations that would need
  // a chunk beyond it fail with ResourceExhausted.
  size_t max_total_bytes = std::numeric_limits<size_t>::max();
  // nullptr = DefaultMemorySource(). Must outlive the allocator.
  MemorySource* memory = nullptr;
};

struct PerCpuAllocatorStats {
  size_t unit_size = 0;
  int num_possible = 0;
  int num_present = 0;
  size_t chunks = 0;
  // Address space reserved: chunks * unit_size * num_possible.
  size_t bytes_reserved = 0;
  // Units that may hold data: chunks * unit_size * num_present. Units of
  // absent CPUs are never touched and hold no memory (see
  // ResidentBytesPerCpu for the precise resident count).
  size_t bytes_committed = 0;
  // One CPU's share of live objects, as requested and as placed (rounded to
  // the granule / size class).
  size_t bytes_requested_per_cpu = 0;
  size_t bytes_in_use_per_cpu = 0;
  // Per-CPU bytes held by small-class slabs (used or free slots).
  size_t slab_bytes_per_cpu = 0;
  size_t live_objects = 0;
  uint64_t allocations = 0;  // successful Allocate calls so far
  uint64_t frees = 0;        // successful Free calls so far
};

class PerCpuAllocator : public std::enable_shared_from_this<PerCpuAllocator> {
 public:
  // Registers hotplug callbacks on *topology, which the allocator keeps
  // alive (shared ownership). InvalidArgument for bad options or a null
  // topology.
  [[nodiscard]] static StatusOr<std::shared_ptr<PerCpuAllocator>> Create(
      Topology* topology, PerCpuAllocatorOptions options = {});
  ~PerCpuAllocator();
  PerCpuAllocator(const PerCpuAllocator&) = delete;
  PerCpuAllocator& operator=(const PerCpuAllocator&) = delete;

  // One zeroed T per possible CPU, aligned to
  // DeriveAlignment(sizeof(T), alignof(T)).
  template <typename T>
  [[nodiscard]] StatusOr<PerCpuPtr<T>> Allocate() {
    static_assert(ZeroInitializable<T>::value,
                  "PerCpuAllocator hands out zero bytes and never runs "
                  "destructors: T must be trivially destructible and not "
                  "polymorphic (integers, atomics, U64Stat, arrays/structs "
                  "of those)");
    StatusOr<PerCpuPtr<void>> p =
        AllocateImpl("Allocate", sizeof(T), alignof(T));
    if (!p.ok()) return p.status();
    return PerCpuPtr<T>(p->base_, p->stride_, p->num_cpus_);
  }

  // n consecutive zeroed Ts per possible CPU; on(cpu) points at element 0.
  template <typename T>
  [[nodiscard]] StatusOr<PerCpuPtr<T>> AllocateArray(size_t n) {
    static_assert(ZeroInitializable<T>::value,
                  "PerCpuAllocator hands out zero bytes and never runs "
                  "destructors: T must be trivially destructible and not "
                  "polymorphic");
    if (n > std::numeric_limits<size_t>::max() / sizeof(T)) {
      return InvalidArgumentError(
          "PerCpuAllocator::AllocateArray: " + std::to_string(n) +
          " elements of " + std::to_string(sizeof(T)) +
          " bytes overflow size_t");
    }
    StatusOr<PerCpuPtr<void>> p =
        AllocateImpl("AllocateArray", n * sizeof(T), alignof(T));
    if (!p.ok()) return p.status();
    return PerCpuPtr<T>(p->base_, p->stride_, p->num_cpus_);
  }

  // `size` zeroed bytes per possible CPU. align == 0: DeriveAlignment(size,
  // 1); otherwise DeriveAlignment(size, align), so an explicit alignment is
  // a lower bound. Errors (InvalidArgument): size 0 or above unit_size,
  // align not a power of two or above the page size. ResourceExhausted:
  // max_total_bytes reached or the memory source failed.
  [[nodiscard]] StatusOr<PerCpuPtr<void>> Allocate(size_t size,
                                                   size_t align = 0);

  // Frees an allocation. A null pointer is a no-op. FailedPrecondition for
  // a pointer into this allocator's memory that is not a live allocation
  // (double free, or not the start of one); NotFound for a pointer this
  // allocator never handed out. Never crashes on a bad pointer.
  template <typename T>
  [[nodiscard]] Status Free(PerCpuPtr<T> p) {
    return FreeAddress(p.base_address());
  }
  [[nodiscard]] Status FreeAddress(uintptr_t cpu0_address);

  PerCpuAllocatorStats stats() const;
  // Resident bytes of each possible CPU's units over all chunks, measured
  // with mincore(2) (Internal error if it fails). Index = CPU id.
  [[nodiscard]] StatusOr<std::vector<size_t>> ResidentBytesPerCpu() const;

  size_t unit_size() const { return unit_size_; }
  int num_possible() const { return num_possible_; }
  const Topology& topology() const { return *topology_; }

 private:
  // A slab id: (chunk index << slab_id_shift_) | (offset / kSlabBytes),
  // so the chunk and the slab's record follow by shifts, or kNoSlab.
  static constexpr uint32_t kNoSlab = 0xffffffffu;
  // One slab of a small size class: kSlabBytes at the same offset of every
  // unit of one chunk, cut into at most 64 slots that never cross a line.
  // Every object of a slab was requested with the same size, so the record
  // needs no per-object bytes: 16 bytes, four records per cache line (a
  // free reads one record; at 1M live 16-byte objects all records take
  // 0.5 MB, not the 2.8 MB of a record with a per-slot size table).
  struct Slab {
    uint64_t free_bits;  // bit s set = slot s free
    uint32_t next;       // next slab id of the class with a free slot
    uint8_t size;        // bytes requested per object, 1..64; 0 = no slab
    uint8_t class_size;  // bytes per slot
    uint8_t per_line;    // slots per cache line
    uint8_t high_water;  // slots >= this were never handed out (zero)
  };
  static_assert(sizeof(Slab) == 16, "four slab records per cache line");
  struct Chunk {
    char* base;
    // slabs[offset / kSlabBytes]: the slab at that offset of every unit
    // (size 0: large objects / free space). Grown when a slab is placed
    // beyond its end (slab creation only).
    std::vector<Slab> slabs;
  };
  struct Slot {
    uint32_t chunk;
    uint32_t offset;
  };
  struct Large {
    uint32_t placed;     // bytes taken in each unit
    uint32_t requested;  // bytes asked for
  };

  // Small classes: one per (requested size 1..64, slot size 8..64) pair,
  // ClassIndex(); most pairs are never used. Keying by the requested size
  // costs at most one partly used slab per pair in use.
  static constexpr int kNumSlotSizes =
      static_cast<int>(kCacheLineSize / kMinAllocGranule);
  static constexpr int kNumClasses =
      static_cast<int>(kCacheLineSize) * kNumSlotSizes;
  static constexpr size_t ClassIndex(size_t size, size_t class_size) {
    return (size - 1) * kNumSlotSizes + (class_size / kMinAllocGranule - 1);
  }
  // Bytes of one slab of a small size class in each unit. At most 64 slots
  // (8-byte class), so one word of free bits covers a slab.
  static constexpr uint32_t kSlabBytes = 8 * kCacheLineSize;

  PerCpuAllocator(Topology* topology, const PerCpuAllocatorOptions& options,
                  size_t page_size);

  StatusOr<PerCpuPtr<void>> AllocateImpl(const char* op, size_t size,
                                         size_t align);
  // Validates, places under mu_ and sets *out. *zero_bytes > 0: a reused
  // small slot whose present copies the caller zeroes (after the unlock).
  Status AllocateUnzeroed(const char* op, size_t size, size_t align,
                          PerCpuPtr<void>* out, uint32_t* zero_bytes);
  // Places `size` bytes aligned to `align` in some chunk (new one if
  // needed). Requires mu_.
  Status PlaceExtentLocked(const char* op, uint32_t size, uint32_t align,
                           Slot* out);
  // Carves a new slab for objects of `size` bytes in `class_size` slots and
  // makes it the class's partial head. Requires mu_.
  Status NewSlabLocked(const char* op, uint32_t size, uint32_t class_size);
  Slab& SlabOf(uint32_t id) {
    return chunks_[id >> slab_id_shift_]
        .slabs[id & ((uint32_t{1} << slab_id_shift_) - 1)];
  }
  Status AddChunkLocked(const char* op);
  // The chunk whose CPU-0 unit holds addr, or -1. O(1). Requires mu_.
  int FindChunkOfCpu0Locked(uintptr_t addr) const;
  Status OnHotplug(HotplugEvent event, int cpu);
  PerCpuPtr<void> MakePtr(uint32_t chunk, uint32_t offset) const;
  static uint64_t LargeKey(uint32_t chunk, uint32_t offset) {
    return uint64_t{chunk} << 32 | offset;
  }

  Topology* const topology_;
  // Shared ownership of *topology_ (see the contract).
  const std::shared_ptr<Topology> topology_ref_;
  const size_t unit_size_;
  const int unit_shift_;  // log2(unit_size_)
  const int slab_id_shift_;  // log2(unit_size_ / kSlabBytes)
  const int num_possible_;
  const size_t chunk_bytes_;
  const size_t max_total_bytes_;
  const size_t page_size_;
  MemorySource* const memory_;
  uint64_t callback_id_ = 0;

  // internal::Mutex is a pthread mutex in normal builds and the checker's
  // rl::mutex under PERCPU_MODEL_CHECK (percpu_alloc_model_test).
  mutable internal::Mutex mu_;
  std::vector<Chunk> chunks_;                       // guarded by mu_
  // CPU-0 unit lookup: an open-addressed hash table (power-of-two size,
  // at most half full, linear probing) from a unit-sized address window
  // (address >> unit_shift_) to the up to two chunks whose unit 0 meets it
  // (chunk index + 1, 0 = none). Grown only when a chunk is added.
  struct WindowEntry {
    uintptr_t window = 0;
    uint32_t chunk_a = 0;  // 0 = empty entry
    uint32_t chunk_b = 0;
  };
  void IndexWindowLocked(uintptr_t window, uint32_t chunk_plus_one);
  size_t WindowSlot(uintptr_t window) const {
    // Fibonacci hashing: the top bits of window * 2^64/phi.
    return static_cast<size_t>((uint64_t{window} * 0x9e3779b97f4a7c15ull) >>
                               window_shift_);
  }
  std::vector<WindowEntry> cpu0_index_;             // guarded by mu_
  int window_shift_ = 64;                           // 64 - log2(size)
  size_t windows_used_ = 0;                         // guarded by mu_
  uint32_t partial_[kNumClasses];                   // slab with a free slot
  // The free-space extent map and the live large objects (their
  // containers pull <map>, <set> and <unordered_map>), defined in
  // percpu_alloc.cc so that this header stays light for the writer-side
  // headers that include it. Never null; guarded by mu_.
  struct Heavy;
  const std::unique_ptr<Heavy> heavy_;
  PerCpuAllocatorStats stats_;                      // guarded by mu_
};

namespace internal {

// Shared ownership of the Topology and PerCpuAllocator a per-CPU object
// was created on: the object keeps them alive until it is destroyed, so
// declaring it before (destroying it after) the caller's pointers is safe.
// Both are always owned by a shared_ptr (their factories are the only way
// to make one); an object not owned that way (impossible through the public
// API) is simply not kept.
struct PerCpuOwners {
  PerCpuOwners(Topology& t, PerCpuAllocator& a)
      : topology(t.weak_from_this().lock()),
        allocator(a.weak_from_this().lock()) {}
  std::shared_ptr<Topology> topology;
  std::shared_ptr<PerCpuAllocator> allocator;
};

}  // namespace internal
}  // namespace percpu

#endif  // PERCPU_PRIMITIVES_PERCPU_ALLOC_H_
