// ExtentMap: the free space of all chunks of a PerCpuAllocator, as free
// extents (chunk, offset, length) indexed both by address (for coalescing)
// and by length (for allocation). Used for large objects and for carving
// the slabs of the small size classes. Not thread-safe: the allocator's
// mutex guards it. Offsets are bytes within a unit; an extent stands for
// the same bytes in every CPU's unit of its chunk.
//
// Allocation never scans granules (the kernel's bitmap scan slowed down
// with stricter alignment, tc rule insertion fell from 65k to 43k rules/s).
// All offsets and sizes are multiples of kGranule, so an extent of length
// >= size + (align - kGranule) is guaranteed to hold an aligned object:
// one O(log n) lower_bound on the length index finds the smallest such
// extent. Only if none exists are up to kMaxProbes shorter extents
// (length in [size, size + align - kGranule)) probed for a lucky aligned
// fit, so an allocation is O(log n) whatever the alignment. Free is
// O(log n) with coalescing of neighbours in the same chunk. Tree nodes are
// recycled (C++17 node handles), so steady-state use does not allocate.
#ifndef PERCPU_PRIMITIVES_INTERNAL_EXTENT_MAP_H_
#define PERCPU_PRIMITIVES_INTERNAL_EXTENT_MAP_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <utility>
#include <vector>

namespace percpu {
namespace internal {

class ExtentMap {
 public:
  static constexpr uint32_t kGranule = 8;
  static constexpr int kMaxProbes = 16;

  // unit_size: bytes of one unit (< 2^32).
  explicit ExtentMap(uint32_t unit_size) : unit_size_(unit_size) {}

  // Makes the whole unit range [0, unit_size) of `chunk` free.
  void AddChunk(uint32_t chunk);
  // Finds `size` bytes (a multiple of kGranule) at an offset that is a
  // multiple of `align` (a power of two). Returns false if no extent fits.
  bool Allocate(uint32_t size, uint32_t align, uint32_t* chunk,
                uint32_t* offset);
  // Returns an allocated range to the free space, merging neighbours.
  void Free(uint32_t chunk, uint32_t offset, uint32_t size);

  uint64_t free_bytes() const { return free_bytes_; }
  size_t num_extents() const { return by_addr_.size(); }
  // Largest free extent (0 if none).
  uint32_t LargestExtent() const {
    return by_size_.empty() ? 0 : by_size_.rbegin()->first;
  }

 private:
  static uint64_t Key(uint32_t chunk, uint32_t offset) {
    return uint64_t{chunk} << 32 | offset;
  }
  void Insert(uint64_t key, uint32_t len);
  void Erase(std::map<uint64_t, uint32_t>::iterator it);
  void Carve(std::map<uint64_t, uint32_t>::iterator it, uint32_t start,
             uint32_t size);

  const uint32_t unit_size_;
  uint64_t free_bytes_ = 0;
  using ByAddr = std::map<uint64_t, uint32_t>;
  using BySize = std::set<std::pair<uint32_t, uint64_t>>;
  ByAddr by_addr_;  // key -> length
  BySize by_size_;  // (length, key)
  // Tree nodes of erased extents, reused by Insert: once the trees reached
  // their peak size, allocation and free no longer call the heap.
  std::vector<ByAddr::node_type> spare_addr_;
  std::vector<BySize::node_type> spare_size_;
};

}  // namespace internal
}  // namespace percpu

#endif  // PERCPU_PRIMITIVES_INTERNAL_EXTENT_MAP_H_
