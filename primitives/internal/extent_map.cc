#include "primitives/internal/extent_map.h"

#include <iterator>

namespace percpu {
namespace internal {

void ExtentMap::Insert(uint64_t key, uint32_t len) {
  if (!spare_addr_.empty()) {
    ByAddr::node_type node = std::move(spare_addr_.back());
    spare_addr_.pop_back();
    node.key() = key;
    node.mapped() = len;
    by_addr_.insert(std::move(node));
  } else {
    by_addr_.emplace(key, len);
  }
  if (!spare_size_.empty()) {
    BySize::node_type node = std::move(spare_size_.back());
    spare_size_.pop_back();
    node.value() = {len, key};
    by_size_.insert(std::move(node));
  } else {
    by_size_.emplace(len, key);
  }
}

void ExtentMap::Erase(std::map<uint64_t, uint32_t>::iterator it) {
  spare_size_.push_back(by_size_.extract({it->second, it->first}));
  spare_addr_.push_back(by_addr_.extract(it));
}

void ExtentMap::AddChunk(uint32_t chunk) {
  Insert(Key(chunk, 0), unit_size_);
  free_bytes_ += unit_size_;
}

void ExtentMap::Carve(std::map<uint64_t, uint32_t>::iterator it,
                      uint32_t start, uint32_t size) {
  const uint64_t key = it->first;
  const uint32_t offset = static_cast<uint32_t>(key);
  const uint32_t end = offset + it->second;
  const uint64_t chunk_key = key & ~uint64_t{0xffffffffu};
  Erase(it);
  if (start > offset) Insert(key, start - offset);
  if (start + size < end) Insert(chunk_key | (start + size), end - start - size);
  free_bytes_ -= size;
}

bool ExtentMap::Allocate(uint32_t size, uint32_t align, uint32_t* chunk,
                         uint32_t* offset) {
  if (size == 0 || size > unit_size_) return false;
  const uint64_t slack = align > kGranule ? align - kGranule : 0;
  const auto fits = [&](uint64_t key, uint32_t len, uint32_t* start) {
    const uint64_t off = static_cast<uint32_t>(key);
    const uint64_t aligned = (off + align - 1) & ~uint64_t{align - 1};
    if (aligned + size > off + len) return false;
    *start = static_cast<uint32_t>(aligned);
    return true;
  };
  uint32_t start = 0;
  // 1. The smallest extent that surely fits.
  if (size + slack <= unit_size_) {
    auto it = by_size_.lower_bound({static_cast<uint32_t>(size + slack), 0});
    if (it != by_size_.end()) {
      const uint64_t key = it->second;
      const bool ok = fits(key, it->first, &start);
      (void)ok;  // guaranteed by the length
      *chunk = static_cast<uint32_t>(key >> 32);
      *offset = start;
      Carve(by_addr_.find(key), start, size);
      return true;
    }
  }
  // 2. A few shorter extents that may fit if their offset is lucky.
  int probes = 0;
  for (auto it = by_size_.lower_bound({size, 0});
       it != by_size_.end() && probes < kMaxProbes; ++it, ++probes) {
    if (fits(it->second, it->first, &start)) {
      const uint64_t key = it->second;
      *chunk = static_cast<uint32_t>(key >> 32);
      *offset = start;
      Carve(by_addr_.find(key), start, size);
      return true;
    }
  }
  // 3. A whole free unit starts at offset 0, aligned to any alignment up to
  // the unit size: it takes any request (step 1 skips requests whose
  // size + slack exceeds the unit, step 2 may run out of probes first).
  {
    auto it = by_size_.lower_bound({unit_size_, 0});
    if (it != by_size_.end() && fits(it->second, it->first, &start)) {
      const uint64_t key = it->second;
      *chunk = static_cast<uint32_t>(key >> 32);
      *offset = start;
      Carve(by_addr_.find(key), start, size);
      return true;
    }
  }
  return false;
}

void ExtentMap::Free(uint32_t chunk, uint32_t offset, uint32_t size) {
  uint64_t key = Key(chunk, offset);
  uint32_t len = size;
  auto next = by_addr_.lower_bound(key);
  if (next != by_addr_.end() && next->first == key + size) {
    len += next->second;
    auto after = std::next(next);
    Erase(next);
    next = after;
  }
  if (next != by_addr_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == key) {
      key = prev->first;
      len += prev->second;
      Erase(prev);
    }
  }
  Insert(key, len);
  free_bytes_ += size;
}

}  // namespace internal
}  // namespace percpu
