#include "primitives/percpu_alloc.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>  // std::lock_guard
#include <unordered_map>
#include <utility>
#include <vector>

#include "primitives/internal/extent_map.h"

namespace percpu {
namespace {

std::string Hex(uintptr_t v) {
  char buf[2 + 2 * sizeof(uintptr_t) + 1];
  std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string Errno(int err) { return std::strerror(err); }

class MmapMemorySource final : public MemorySource {
 public:
  StatusOr<void*> Map(size_t bytes) override {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
      return ResourceExhaustedError("mmap of " + std::to_string(bytes) +
                                    " bytes failed: " + Errno(errno));
    }
    return p;
  }
  Status Unmap(void* addr, size_t bytes) override {
    if (munmap(addr, bytes) != 0) {
      return InternalError("munmap(" + Hex(reinterpret_cast<uintptr_t>(addr)) +
                           ", " + std::to_string(bytes) +
                           ") failed: " + Errno(errno));
    }
    return Status::Ok();
  }
  Status Commit(void*, size_t) override { return Status::Ok(); }
  Status Decommit(void* addr, size_t bytes) override {
    if (madvise(addr, bytes, MADV_DONTNEED) != 0) {
      return InternalError("madvise(" +
                           Hex(reinterpret_cast<uintptr_t>(addr)) + ", " +
                           std::to_string(bytes) +
                           ", MADV_DONTNEED) failed: " + Errno(errno));
    }
    return Status::Ok();
  }
};

// `to` is a power of two.
size_t RoundUp(size_t v, size_t to) { return (v + to - 1) & ~(to - 1); }
bool IsPowerOfTwo(size_t v) { return v != 0 && (v & (v - 1)) == 0; }

// Zeroes `bytes` (a multiple of 8, at most 64) at the 8-aligned `p`:
// straight-line 8-byte stores, one jump in, no loop and no memset call.
inline void ZeroSmall(char* p, uint32_t bytes) {
  const uint64_t zero = 0;
  switch (bytes / 8) {
    case 8: std::memcpy(p + 56, &zero, 8); [[fallthrough]];
    case 7: std::memcpy(p + 48, &zero, 8); [[fallthrough]];
    case 6: std::memcpy(p + 40, &zero, 8); [[fallthrough]];
    case 5: std::memcpy(p + 32, &zero, 8); [[fallthrough]];
    case 4: std::memcpy(p + 24, &zero, 8); [[fallthrough]];
    case 3: std::memcpy(p + 16, &zero, 8); [[fallthrough]];
    case 2: std::memcpy(p + 8, &zero, 8); [[fallthrough]];
    case 1: std::memcpy(p, &zero, 8); [[fallthrough]];
    default: break;
  }
}

}  // namespace

MemorySource* DefaultMemorySource() {
  static MmapMemorySource* const source = new MmapMemorySource();
  return source;
}

struct PerCpuAllocator::Heavy {
  explicit Heavy(uint32_t unit_size) : extents(unit_size) {}
  internal::ExtentMap extents;  // free space
  // Live large objects by LargeKey(chunk, offset). Nodes of erased entries
  // are kept in spare_large and reused, so steady-state churn does not
  // allocate.
  using LargeMap = std::unordered_map<uint64_t, Large>;
  LargeMap large;
  std::vector<LargeMap::node_type> spare_large;
};

PerCpuAllocator::PerCpuAllocator(Topology* topology,
                                 const PerCpuAllocatorOptions& options,
                                 size_t page_size)
    : topology_(topology),
      topology_ref_(topology->weak_from_this().lock()),
      unit_size_(options.unit_size),
      unit_shift_(__builtin_ctzll(options.unit_size)),
      slab_id_shift_(__builtin_ctzll(options.unit_size / kSlabBytes)),
      num_possible_(topology->num_possible()),
      chunk_bytes_(options.unit_size *
                   static_cast<size_t>(topology->num_possible())),
      max_total_bytes_(options.max_total_bytes),
      page_size_(page_size),
      memory_(options.memory != nullptr ? options.memory
                                        : DefaultMemorySource()),
      heavy_(new Heavy(static_cast<uint32_t>(options.unit_size))) {
  stats_.unit_size = unit_size_;
  stats_.num_possible = num_possible_;
  for (uint32_t& head : partial_) head = kNoSlab;
}

StatusOr<std::shared_ptr<PerCpuAllocator>> PerCpuAllocator::Create(
    Topology* topology, PerCpuAllocatorOptions options) {
  if (topology == nullptr) {
    return InvalidArgumentError("PerCpuAllocator::Create: null topology");
  }
  const long page = sysconf(_SC_PAGESIZE);
  const size_t page_size = page > 0 ? static_cast<size_t>(page) : 4096;
  const size_t u = options.unit_size;
  if (!IsPowerOfTwo(u) || u % page_size != 0 || u > (size_t{1} << 30)) {
    return InvalidArgumentError(
        "PerCpuAllocator::Create: unit_size " + std::to_string(u) +
        " is not a power of two that is a multiple of the page size " +
        std::to_string(page_size) + " and at most 1073741824");
  }
  const size_t n = static_cast<size_t>(topology->num_possible());
  if (u > std::numeric_limits<size_t>::max() / n) {
    return InvalidArgumentError(
        "PerCpuAllocator::Create: unit_size " + std::to_string(u) + " * " +
        std::to_string(n) + " possible CPUs overflows size_t");
  }
  std::shared_ptr<PerCpuAllocator> a(
      new PerCpuAllocator(topology, options, page_size));
  PerCpuAllocator* raw = a.get();
  StatusOr<uint64_t> id = topology->RegisterHotplugCallbacks(
      [raw](HotplugEvent e, int cpu) { return raw->OnHotplug(e, cpu); },
      nullptr);
  if (!id.ok()) return id.status();
  a->callback_id_ = *id;
  return a;
}

PerCpuAllocator::~PerCpuAllocator() {
  if (callback_id_ != 0) {
    // (void): a destructor cannot report; the only failure (called from a
    // hotplug callback of the same topology) is a documented misuse.
    (void)topology_->UnregisterHotplugCallbacks(callback_id_);
  }
  std::lock_guard<internal::Mutex> lock(mu_);
  // (void): a destructor cannot report; a failed munmap leaks address
  // space only.
  for (Chunk& c : chunks_) (void)memory_->Unmap(c.base, chunk_bytes_);
  chunks_.clear();
}

PerCpuPtr<void> PerCpuAllocator::MakePtr(uint32_t chunk,
                                         uint32_t offset) const {
  return PerCpuPtr<void>(
      reinterpret_cast<uintptr_t>(chunks_[chunk].base) + offset, unit_size_,
      num_possible_);
}

Status PerCpuAllocator::AddChunkLocked(const char* op) {
  const size_t reserved = chunks_.size() * chunk_bytes_;
  // Slab ids are 32 bits: (chunk << slab_id_shift_) | region, kNoSlab
  // excluded. Reached only past 2 TiB of units per CPU.
  if ((uint64_t{chunks_.size()} + 1) << slab_id_shift_ > kNoSlab) {
    return ResourceExhaustedError(
        std::string("PerCpuAllocator::") + op + ": " +
        std::to_string(chunks_.size()) +
        " chunks is the most whose slabs 32-bit ids can name");
  }
  if (chunk_bytes_ > max_total_bytes_ ||
      reserved > max_total_bytes_ - chunk_bytes_) {
    return ResourceExhaustedError(
        std::string("PerCpuAllocator::") + op + ": a new chunk of " +
        std::to_string(chunk_bytes_) + " bytes would exceed max_total_bytes " +
        std::to_string(max_total_bytes_) + " (reserved: " +
        std::to_string(reserved) + ")");
  }
  StatusOr<void*> p = memory_->Map(chunk_bytes_);
  if (!p.ok() || *p == nullptr) {
    return ResourceExhaustedError(
        std::string("PerCpuAllocator::") + op + ": mapping a chunk of " +
        std::to_string(chunk_bytes_) + " bytes failed: " +
        (p.ok() ? std::string("null mapping") : p.status().ToString()));
  }
  const uint32_t index = static_cast<uint32_t>(chunks_.size());
  chunks_.push_back(Chunk{static_cast<char*>(*p), {}});
  // Unit 0 spans [base, base + unit): the unit-sized windows it meets are
  // base >> shift and (base + unit - 1) >> shift (equal if unit-aligned).
  const uintptr_t base = reinterpret_cast<uintptr_t>(*p);
  const uintptr_t first = base >> unit_shift_;
  const uintptr_t last = (base + unit_size_ - 1) >> unit_shift_;
  for (uintptr_t w = first; w <= last; ++w) IndexWindowLocked(w, index + 1);
  heavy_->extents.AddChunk(index);
  return Status::Ok();
}

void PerCpuAllocator::IndexWindowLocked(uintptr_t window,
                                        uint32_t chunk_plus_one) {
  if (2 * (windows_used_ + 1) > cpu0_index_.size()) {
    // Rehash into twice the size (at least 16 entries).
    std::vector<WindowEntry> old = std::move(cpu0_index_);
    const size_t size = old.size() < 8 ? 16 : 2 * old.size();
    cpu0_index_.assign(size, WindowEntry{});
    window_shift_ = 64 - __builtin_ctzll(size);
    for (const WindowEntry& e : old) {
      if (e.chunk_a == 0) continue;
      size_t i = WindowSlot(e.window);
      while (cpu0_index_[i].chunk_a != 0) i = (i + 1) & (size - 1);
      cpu0_index_[i] = e;
    }
  }
  const size_t mask = cpu0_index_.size() - 1;
  for (size_t i = WindowSlot(window);; i = (i + 1) & mask) {
    WindowEntry& e = cpu0_index_[i];
    if (e.chunk_a == 0) {
      e = WindowEntry{window, chunk_plus_one, 0};
      ++windows_used_;
      return;
    }
    if (e.window == window) {
      e.chunk_b = chunk_plus_one;  // the second chunk meeting this window
      return;
    }
  }
}

// Inline: called once per Free, the only caller.
inline int PerCpuAllocator::FindChunkOfCpu0Locked(uintptr_t addr) const {
  if (cpu0_index_.empty()) return -1;
  const uintptr_t window = addr >> unit_shift_;
  const size_t mask = cpu0_index_.size() - 1;
  for (size_t i = WindowSlot(window);; i = (i + 1) & mask) {
    const WindowEntry& e = cpu0_index_[i];
    if (e.chunk_a == 0) return -1;
    if (e.window != window) continue;
    const uintptr_t a = reinterpret_cast<uintptr_t>(chunks_[e.chunk_a - 1].base);
    if (addr - a < unit_size_) return static_cast<int>(e.chunk_a - 1);
    if (e.chunk_b == 0) return -1;
    const uintptr_t b = reinterpret_cast<uintptr_t>(chunks_[e.chunk_b - 1].base);
    if (addr - b < unit_size_) return static_cast<int>(e.chunk_b - 1);
    return -1;
  }
}

Status PerCpuAllocator::PlaceExtentLocked(const char* op, uint32_t size,
                                          uint32_t align, Slot* out) {
  if (heavy_->extents.Allocate(size, align, &out->chunk, &out->offset)) {
    return Status::Ok();
  }
  Status s = AddChunkLocked(op);
  if (!s.ok()) return s;
  if (!heavy_->extents.Allocate(size, align, &out->chunk, &out->offset)) {
    // Cannot happen: size <= unit_size and align <= page size divides it.
    return InternalError(std::string("PerCpuAllocator::") + op +
                         ": a fresh chunk cannot hold " +
                         std::to_string(size) + " bytes");
  }
  return Status::Ok();
}

Status PerCpuAllocator::NewSlabLocked(const char* op, uint32_t size,
                                      uint32_t class_size) {
  // kSlabBytes-aligned, so offset / kSlabBytes names the slab in its chunk
  // (unit_size is a power of two >= the page size, so it is a multiple).
  Slot where;
  Status s = PlaceExtentLocked(op, kSlabBytes, kSlabBytes, &where);
  if (!s.ok()) return s;
  const uint32_t per_line = static_cast<uint32_t>(kCacheLineSize) / class_size;
  const uint32_t capacity = (kSlabBytes / kCacheLineSize) * per_line;
  const size_t cls = ClassIndex(size, class_size);
  Slab slab{};
  slab.free_bits = capacity == 64 ? ~uint64_t{0} : (uint64_t{1} << capacity) - 1;
  slab.next = partial_[cls];
  slab.size = static_cast<uint8_t>(size);
  slab.class_size = static_cast<uint8_t>(class_size);
  slab.per_line = static_cast<uint8_t>(per_line);
  std::vector<Slab>& slabs = chunks_[where.chunk].slabs;
  const size_t region = where.offset / kSlabBytes;
  if (region >= slabs.size()) slabs.resize(region + 1, Slab{});
  slabs[region] = slab;
  partial_[cls] = where.chunk << slab_id_shift_ | static_cast<uint32_t>(region);
  stats_.slab_bytes_per_cpu += kSlabBytes;
  return Status::Ok();
}

StatusOr<PerCpuPtr<void>> PerCpuAllocator::Allocate(size_t size,
                                                    size_t align) {
  return AllocateImpl("Allocate", size, align == 0 ? 1 : align);
}

StatusOr<PerCpuPtr<void>> PerCpuAllocator::AllocateImpl(const char* op,
                                                        size_t size,
                                                        size_t align) {
  PerCpuPtr<void> p;
  uint32_t zero_bytes = 0;
  Status s = AllocateUnzeroed(op, size, align, &p, &zero_bytes);
  // The result is stored (in the caller's frame) before the zeroing below:
  // stores commit in program order, so a caller reading it back does not
  // wait behind the zeroing's misses. One named return object (no copy).
  StatusOr<PerCpuPtr<void>> out = s.ok() ? StatusOr<PerCpuPtr<void>>(p)
                                         : StatusOr<PerCpuPtr<void>>(s);
  if (zero_bytes != 0) {
    // A reused small slot: zero each present CPU's copy after the unlock,
    // as librseq's percpu_zmalloc does. The slot is this caller's alone
    // now, so no lock is needed, and the stores (a miss per CPU at large
    // working sets) drain while the caller goes on instead of stalling the
    // mutex's release. Absent CPUs' copies are zero already (their units
    // were released at kAbsent). A CPU going absent during this loop may
    // get zeros written after its release: the unit still reads zero, and
    // at most the object's page stays resident.
    char* const obj = reinterpret_cast<char*>(p.base_address());
    topology_->ForEachPresent([&](int cpu) {
      ZeroSmall(obj + static_cast<size_t>(cpu) * unit_size_, zero_bytes);
    });
  }
  return out;
}

Status PerCpuAllocator::AllocateUnzeroed(const char* op, size_t size,
                                         size_t align, PerCpuPtr<void>* out,
                                         uint32_t* zero_bytes) {
  // Error messages are built only on the error paths: the success path
  // neither builds strings nor allocates (see docs/percpu_alloc.md).
  if (__builtin_expect(size == 0 || size > unit_size_, 0)) {
    return InvalidArgumentError(std::string("PerCpuAllocator::") + op +
                                ": size " + std::to_string(size) +
                                " is not in [1, " + std::to_string(unit_size_) +
                                "]");
  }
  if (__builtin_expect(!IsPowerOfTwo(align), 0)) {
    return InvalidArgumentError(std::string("PerCpuAllocator::") + op +
                                ": alignment " + std::to_string(align) +
                                " is not a power of two");
  }
  if (__builtin_expect(align > page_size_, 0)) {
    return InvalidArgumentError(std::string("PerCpuAllocator::") + op +
                                ": alignment " + std::to_string(align) +
                                " exceeds the page size " +
                                std::to_string(page_size_));
  }
  const size_t eff_align = DeriveAlignment(size, align);
  const size_t rounded = RoundUp(size, kMinAllocGranule);
  const size_t class_size = RoundUp(rounded, eff_align);

  std::lock_guard<internal::Mutex> lock(mu_);
  uint32_t chunk = 0;
  uint32_t offset = 0;
  uint32_t placed = 0;
  if (class_size <= kCacheLineSize) {
    // Small: O(1). The class's first slab with a free slot, its lowest free
    // slot (one count-trailing-zeros). Slots never cross a cache line.
    const size_t cls = ClassIndex(size, class_size);
    if (partial_[cls] == kNoSlab) {
      Status s = NewSlabLocked(op, static_cast<uint32_t>(size),
                               static_cast<uint32_t>(class_size));
      if (!s.ok()) return s;
    }
    const uint32_t id = partial_[cls];
    Slab& slab = SlabOf(id);
    const int slot = __builtin_ctzll(slab.free_bits);
    slab.free_bits &= slab.free_bits - 1;
    if (slab.free_bits == 0) {
      partial_[cls] = slab.next;  // full: leaves the partial list
      slab.next = kNoSlab;
    }
    // Slots at or above the high-water mark were never handed out: still
    // zero since the slab was carved (free extents are zero). A slot below
    // it may hold a freed object's bytes and is zeroed below.
    if (slot >= slab.high_water) {
      slab.high_water = static_cast<uint8_t>(slot + 1);
    } else {
      *zero_bytes = static_cast<uint32_t>(class_size);
    }
    chunk = id >> slab_id_shift_;
    offset = (id & ((uint32_t{1} << slab_id_shift_) - 1)) * kSlabBytes +
             static_cast<uint32_t>(slot / slab.per_line * kCacheLineSize +
                                   slot % slab.per_line * slab.class_size);
    placed = static_cast<uint32_t>(class_size);
  } else {
    // Large: first fit over free extents, at cache-line granularity
    // whatever alignment up to a line was asked for. Then no alignment
    // padding is ever left behind as a small free hole: the extent map, and
    // so the cost of every later placement, does not depend on the
    // alignments requested (measured: 200-byte objects at alignment 64 ran
    // at 0.43x the rate of alignment 8 when holes were kept). Costs at most
    // 63 bytes per large object.
    placed = static_cast<uint32_t>(RoundUp(rounded, kCacheLineSize));
    const size_t place_align =
        eff_align > kCacheLineSize ? eff_align : kCacheLineSize;
    Slot slot;
    Status s = PlaceExtentLocked(op, placed,
                                 static_cast<uint32_t>(place_align), &slot);
    if (!s.ok()) return s;
    chunk = slot.chunk;
    offset = slot.offset;
    const Large info{placed, static_cast<uint32_t>(size)};
    if (!heavy_->spare_large.empty()) {
      // Reuse a node of an earlier free: no heap allocation.
      Heavy::LargeMap::node_type node = std::move(heavy_->spare_large.back());
      heavy_->spare_large.pop_back();
      node.key() = LargeKey(chunk, offset);
      node.mapped() = info;
      heavy_->large.insert(std::move(node));
    } else {
      heavy_->large.emplace(LargeKey(chunk, offset), info);
    }
  }
  stats_.bytes_requested_per_cpu += size;
  stats_.bytes_in_use_per_cpu += placed;
  stats_.live_objects++;
  stats_.allocations++;
  *out = MakePtr(chunk, offset);
  return Status::Ok();
}

Status PerCpuAllocator::FreeAddress(uintptr_t addr) {
  if (addr == 0) return Status::Ok();
  std::lock_guard<internal::Mutex> lock(mu_);
  // O(1): the chunk from a hash of the address's unit-sized window, then
  // the slab from the chunk's slab table (or the large object's entry).
  const int c = FindChunkOfCpu0Locked(addr);
  Slab* slab = nullptr;
  int slot = -1;
  uint32_t region = 0;
  Heavy::LargeMap::iterator large_it = heavy_->large.end();
  bool live = false;
  if (c >= 0) {
    const uint32_t off = static_cast<uint32_t>(
        addr - reinterpret_cast<uintptr_t>(chunks_[c].base));
    std::vector<Slab>& slabs = chunks_[c].slabs;
    region = off / kSlabBytes;
    if (region < slabs.size() && slabs[region].size != 0) {
      slab = &slabs[region];
      const uint32_t within = off % kSlabBytes;
      const uint32_t in_line = within % kCacheLineSize;
      const uint32_t k = in_line / slab->class_size;
      if (in_line % slab->class_size == 0 && k < slab->per_line) {
        slot = static_cast<int>(within / kCacheLineSize * slab->per_line + k);
        live = (slab->free_bits >> slot & 1) == 0;
      }
    } else {
      large_it = heavy_->large.find(LargeKey(static_cast<uint32_t>(c), off));
      live = large_it != heavy_->large.end();
    }
  }
  if (!live) {
    for (const Chunk& ch : chunks_) {
      const uintptr_t base = reinterpret_cast<uintptr_t>(ch.base);
      if (addr >= base && addr - base < chunk_bytes_) {
        return FailedPreconditionError(
            "PerCpuAllocator::Free: " + Hex(addr) +
            " is not a live allocation (double free, or not the CPU-0 "
            "address of an allocation)");
      }
    }
    return NotFoundError("PerCpuAllocator::Free: " + Hex(addr) +
                         " was not allocated by this allocator");
  }
  uint32_t placed;
  uint32_t requested;
  if (slab != nullptr) {
    placed = slab->class_size;
    requested = slab->size;
  } else {
    placed = large_it->second.placed;
    requested = large_it->second.requested;
  }
  // A large object's copies are zeroed now, under mu_, so that free
  // extents are always zero (a new slab or large object placed there needs
  // no zeroing); mu_ keeps this ordered with the hotplug callbacks. Absent
  // CPUs' units are zero already (released at kAbsent). A small slot is
  // zeroed when it is handed out again (AllocateImpl), outside the lock.
  if (slab == nullptr) {
    char* const obj = reinterpret_cast<char*>(addr);
    topology_->ForEachPresent([&](int cpu) {
      std::memset(obj + static_cast<size_t>(cpu) * unit_size_, 0, placed);
    });
  }
  if (slab != nullptr) {
    if (slab->free_bits == 0) {
      // Was full: back on its class's partial list, at the head, so the
      // next allocation of the class reuses this (cache-hot) slot.
      const size_t cls = ClassIndex(slab->size, slab->class_size);
      slab->next = partial_[cls];
      partial_[cls] = static_cast<uint32_t>(c) << slab_id_shift_ | region;
    }
    slab->free_bits |= uint64_t{1} << slot;
  } else {
    const uint64_t key = large_it->first;
    heavy_->spare_large.push_back(heavy_->large.extract(large_it));
    heavy_->extents.Free(static_cast<uint32_t>(key >> 32),
                  static_cast<uint32_t>(key), placed);
  }
  stats_.bytes_requested_per_cpu -= requested;
  stats_.bytes_in_use_per_cpu -= placed;
  stats_.live_objects--;
  stats_.frees++;
  return Status::Ok();
}

Status PerCpuAllocator::OnHotplug(HotplugEvent event, int cpu) {
  if (event != HotplugEvent::kPresent && event != HotplugEvent::kAbsent) {
    return Status::Ok();
  }
  std::lock_guard<internal::Mutex> lock(mu_);
  Status first;
  int failures = 0;
  for (Chunk& c : chunks_) {
    char* unit = c.base + static_cast<size_t>(cpu) * unit_size_;
    // kAbsent releases the unit's pages (later reads return zeros).
    // kPresent only commits them and never discards what the unit holds: a
    // fallback add delayed across the CPU's removal may have landed there
    // after the madvise, and the owning object's kPresent fold (which runs
    // after this prepare, before the present bit is set) moves it into its
    // accumulator. At kAbsent the objects' teardown folds run before this
    // callback (teardown runs in reverse registration order).
    Status s;
    if (event == HotplugEvent::kAbsent) {
      s = memory_->Decommit(unit, unit_size_);
      // Absent units must read zero (Allocate hands out zeros; kPresent no
      // longer re-zeroes): if the release failed, zero it by hand (the
      // memory stays committed; the failure is still reported).
      if (!s.ok()) std::memset(unit, 0, unit_size_);
    } else {
      s = memory_->Commit(unit, unit_size_);
    }
    if (!s.ok() && failures++ == 0) first = s;
  }
  if (failures == 0) return Status::Ok();
  return Status(first.code(),
                std::string("PerCpuAllocator: ") + HotplugEventName(event) +
                    " of CPU " + std::to_string(cpu) + ": " +
                    std::to_string(failures) + " of " +
                    std::to_string(chunks_.size()) +
                    " chunk unit(s) failed, first: " + first.message());
}

PerCpuAllocatorStats PerCpuAllocator::stats() const {
  int present = 0;
  topology_->ForEachPresent([&](int) { ++present; });
  std::lock_guard<internal::Mutex> lock(mu_);
  PerCpuAllocatorStats s = stats_;
  s.num_present = present;
  s.chunks = chunks_.size();
  s.bytes_reserved = chunks_.size() * chunk_bytes_;
  s.bytes_committed = chunks_.size() * unit_size_ * static_cast<size_t>(present);
  return s;
}

StatusOr<std::vector<size_t>> PerCpuAllocator::ResidentBytesPerCpu() const {
  std::vector<size_t> out(static_cast<size_t>(num_possible_), 0);
  std::vector<unsigned char> vec(unit_size_ / page_size_);
  std::lock_guard<internal::Mutex> lock(mu_);
  for (const Chunk& c : chunks_) {
    for (int cpu = 0; cpu < num_possible_; ++cpu) {
      char* unit = c.base + static_cast<size_t>(cpu) * unit_size_;
      if (mincore(unit, unit_size_, vec.data()) != 0) {
        return InternalError("PerCpuAllocator::ResidentBytesPerCpu: mincore "
                             "failed: " + Errno(errno));
      }
      for (const unsigned char v : vec) {
        if (v & 1) out[static_cast<size_t>(cpu)] += page_size_;
      }
    }
  }
  return out;
}

}  // namespace percpu
