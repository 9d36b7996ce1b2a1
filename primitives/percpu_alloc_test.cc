#include "primitives/percpu_alloc.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "doctest/doctest.h"
#include "primitives/internal/extent_map.h"
#include "primitives/u64_stats.h"

namespace percpu {
namespace {

static_assert(DeriveAlignment(1, 1) == 8, "granule");
static_assert(DeriveAlignment(16, 8) == 16, "pow2 size");
static_assert(DeriveAlignment(24, 8) == 8, "24 is not a multiple of 16");
static_assert(DeriveAlignment(48, 8) == 16, "48");
static_assert(DeriveAlignment(64, 8) == 64, "line");
static_assert(DeriveAlignment(256, 8) == 64, "capped at a line");
static_assert(DeriveAlignment(8, 128) == 128, "type alignment kept");
static_assert(ZeroInitializable<uint64_t>::value, "");
static_assert(ZeroInitializable<U64Stat>::value, "");
static_assert(ZeroInitializable<std::atomic<uint32_t>[4]>::value, "");
static_assert(!ZeroInitializable<std::string>::value, "");
static_assert(!ZeroInitializable<std::vector<int>>::value, "");

struct Counters {
  U64Stat packets;
  U64Stat bytes;
  internal::Atomic<uint32_t> drops;
};

std::shared_ptr<Topology> Sim(int possible, int present, int online) {
  auto t = Topology::Simulated(possible, present, online);
  REQUIRE(t.ok());
  return std::move(t).value();
}

std::shared_ptr<PerCpuAllocator> MakeAlloc(Topology* t,
                                           PerCpuAllocatorOptions o = {}) {
  auto a = PerCpuAllocator::Create(t, o);
  REQUIRE_MESSAGE(a.ok(), a.status().ToString());
  return std::move(a).value();
}

size_t PageSize() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }

bool AllZero(const void* p, size_t n) {
  const unsigned char* c = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < n; ++i) {
    if (c[i] != 0) return false;
  }
  return true;
}

TEST_CASE("DeriveAlignment: table for sizes 1..256") {
  std::string table;
  for (size_t size = 1; size <= 256; ++size) {
    const size_t a = DeriveAlignment(size, 1);
    // The rule's properties.
    CHECK(a >= kMinAllocGranule);
    CHECK((a & (a - 1)) == 0);
    CHECK(a <= kCacheLineSize);
    if (a > kMinAllocGranule) CHECK(size % a == 0);
    if (a < kCacheLineSize && a * 2 <= size) CHECK(size % (a * 2) != 0);
    // Type alignment is a lower bound.
    CHECK(DeriveAlignment(size, 4) == a);
    CHECK(DeriveAlignment(size, 16) >= 16);
    table += std::to_string(size) + ":" + std::to_string(a) +
             (size % 16 == 0 ? "\n" : " ");
  }
  MESSAGE("size:alignment\n" << table);
  // Spot checks of the table.
  const size_t expect[][2] = {{1, 8},   {4, 8},   {7, 8},    {8, 8},
                              {12, 8},  {16, 16}, {24, 8},   {32, 32},
                              {40, 8},  {48, 16}, {56, 8},   {64, 64},
                              {96, 32}, {128, 64}, {160, 32}, {192, 64},
                              {200, 8}, {256, 64}};
  for (const auto& e : expect) {
    CAPTURE(e[0]);
    CHECK(DeriveAlignment(e[0], 1) == e[1]);
  }
}

TEST_CASE("PerCpuAllocator: placement never straddles a line (sizes 1..256)") {
  auto t = Sim(4, 4, 4);
  auto a = MakeAlloc(t.get());
  std::vector<PerCpuPtr<void>> ptrs;
  for (int round = 0; round < 3; ++round) {
    for (size_t size = 1; size <= 256; ++size) {
      CAPTURE(size);
      auto p = a->Allocate(size);
      REQUIRE_MESSAGE(p.ok(), p.status().ToString());
      const uintptr_t addr = p->base_address();
      CHECK(addr % DeriveAlignment(size, 1) == 0);
      if (size <= kCacheLineSize) {
        // Small objects: never across a line boundary.
        CHECK(addr / kCacheLineSize == (addr + size - 1) / kCacheLineSize);
      } else {
        // Larger ones start at a line boundary iff their size is a multiple
        // of the line (DeriveAlignment gives 64 then), and never share a
        // line with less than needed: they span ceil(size/64) (+1) lines.
        const size_t lines = (addr + size - 1) / kCacheLineSize -
                             addr / kCacheLineSize + 1;
        CHECK(lines <= (size + kCacheLineSize - 1) / kCacheLineSize + 1);
        if (size % kCacheLineSize == 0) CHECK(addr % kCacheLineSize == 0);
      }
      ptrs.push_back(*p);
    }
  }
  for (auto& p : ptrs) CHECK(a->Free(p).ok());
  CHECK(a->stats().live_objects == 0);
}

TEST_CASE("PerCpuAllocator: errors for bad input have exact messages") {
  auto t = Sim(4, 2, 2);
  auto a = MakeAlloc(t.get());
  const std::string page = std::to_string(PageSize());
  struct Case {
    size_t size, align;
    std::string msg;
  } cases[] = {
      {0, 0, "PerCpuAllocator::Allocate: size 0 is not in [1, 65536]"},
      {65537, 0, "PerCpuAllocator::Allocate: size 65537 is not in [1, 65536]"},
      {8, 24, "PerCpuAllocator::Allocate: alignment 24 is not a power of two"},
      {8, 3, "PerCpuAllocator::Allocate: alignment 3 is not a power of two"},
      {8, PageSize() * 2, "PerCpuAllocator::Allocate: alignment " +
                              std::to_string(PageSize() * 2) +
                              " exceeds the page size " + page},
  };
  for (const Case& c : cases) {
    CAPTURE(c.msg);
    auto p = a->Allocate(c.size, c.align);
    REQUIRE_FALSE(p.ok());
    CHECK(p.status().code() == StatusCode::kInvalidArgument);
    CHECK(p.status().message() == c.msg);
  }
  auto arr0 = a->AllocateArray<uint64_t>(0);
  CHECK(arr0.status().message() ==
        "PerCpuAllocator::AllocateArray: size 0 is not in [1, 65536]");
  auto huge = a->AllocateArray<uint64_t>(std::numeric_limits<size_t>::max() / 4);
  CHECK(huge.status().code() == StatusCode::kInvalidArgument);
  CHECK(huge.status().message() ==
        "PerCpuAllocator::AllocateArray: " +
            std::to_string(std::numeric_limits<size_t>::max() / 4) +
            " elements of 8 bytes overflow size_t");
  // The largest allocation is a whole unit; page alignment is allowed.
  auto whole = a->Allocate(65536, PageSize());
  REQUIRE(whole.ok());
  CHECK(whole->base_address() % PageSize() == 0);
  CHECK(a->Free(*whole).ok());

  // Bad options.
  PerCpuAllocatorOptions o;
  o.unit_size = 3 * PageSize();
  auto bad = PerCpuAllocator::Create(t.get(), o);
  CHECK(bad.status().code() == StatusCode::kInvalidArgument);
  CHECK(bad.status().message() ==
        "PerCpuAllocator::Create: unit_size " + std::to_string(3 * PageSize()) +
            " is not a power of two that is a multiple of the page size " +
            page + " and at most 1073741824");
  o.unit_size = PageSize() / 2;
  CHECK(PerCpuAllocator::Create(t.get(), o).status().code() ==
        StatusCode::kInvalidArgument);
  CHECK(PerCpuAllocator::Create(nullptr).status().message() ==
        "PerCpuAllocator::Create: null topology");

  // Checked accessor.
  auto p = a->Allocate<uint64_t>();
  REQUIRE(p.ok());
  CHECK(p->At(3).ok());
  CHECK(*p->At(3) == p->on(3));
  CHECK(p->At(4).status().code() == StatusCode::kOutOfRange);
  CHECK(p->At(4).status().message() ==
        "PerCpuPtr::At: CPU id 4 is not in [0, 4)");
  CHECK(p->At(-1).status().code() == StatusCode::kOutOfRange);
  CHECK(PerCpuPtr<int>().At(0).status().code() ==
        StatusCode::kFailedPrecondition);
}

TEST_CASE("PerCpuAllocator: double free and foreign pointers never crash") {
  auto t = Sim(4, 4, 4);
  auto a = MakeAlloc(t.get());
  auto p = a->Allocate<uint64_t>();
  REQUIRE(p.ok());
  CHECK(a->Free(*p).ok());
  Status s = a->Free(*p);
  CHECK(s.code() == StatusCode::kFailedPrecondition);
  CHECK(s.message().find("is not a live allocation (double free") !=
        std::string::npos);
  // CPU 1's address of a live allocation is not a handle.
  auto q = a->Allocate<uint64_t>();
  REQUIRE(q.ok());
  CHECK(a->FreeAddress(reinterpret_cast<uintptr_t>(q->on(1))).code() ==
        StatusCode::kFailedPrecondition);
  // Interior pointer.
  CHECK(a->FreeAddress(q->base_address() + 4).code() ==
        StatusCode::kFailedPrecondition);
  // Foreign pointer.
  uint64_t local = 0;
  s = a->FreeAddress(reinterpret_cast<uintptr_t>(&local));
  CHECK(s.code() == StatusCode::kNotFound);
  CHECK(s.message().find("was not allocated by this allocator") !=
        std::string::npos);
  // From another allocator.
  auto a2 = MakeAlloc(t.get());
  CHECK(a2->Free(*q).code() == StatusCode::kNotFound);
  // Null is a no-op.
  CHECK(a->Free(PerCpuPtr<int>()).ok());
  CHECK(a->Free(*q).ok());
  const auto st = a->stats();
  CHECK(st.allocations == 2);
  CHECK(st.frees == 2);
  CHECK(st.live_objects == 0);
}

TEST_CASE("PerCpuAllocator: cpu-major layout and contiguity") {
  auto t = Sim(8, 8, 8);
  auto a = MakeAlloc(t.get());
  auto p = a->Allocate<Counters>();
  REQUIRE(p.ok());
  CHECK(p->stride() == a->unit_size());
  CHECK(p->num_cpus() == 8);
  for (int cpu = 0; cpu < 8; ++cpu) {
    CHECK(reinterpret_cast<uintptr_t>(p->on(cpu)) ==
          p->base_address() + static_cast<uintptr_t>(cpu) * a->unit_size());
  }
  // Successive small objects of one class are adjacent in each CPU's unit.
  std::vector<PerCpuPtr<uint64_t>> v;
  for (int i = 0; i < 64; ++i) {
    auto q = a->Allocate<uint64_t>();
    REQUIRE(q.ok());
    v.push_back(*q);
  }
  int adjacent = 0;
  for (size_t i = 1; i < v.size(); ++i) {
    if (v[i].base_address() == v[i - 1].base_address() + 8) ++adjacent;
  }
  CHECK(adjacent >= 60);
  // Every CPU's objects lie in that CPU's unit of the chunk.
  for (const auto& q : v) {
    for (int cpu = 0; cpu < 8; ++cpu) {
      const uintptr_t unit0 = q.base_address() & ~uintptr_t(a->unit_size() - 1);
      // Chunks are page- not unit-aligned, so compare via offsets instead.
      (void)unit0;
      CHECK(reinterpret_cast<uintptr_t>(q.on(cpu)) - q.base_address() ==
            static_cast<uintptr_t>(cpu) * a->unit_size());
    }
  }
  // Writes through on(cpu) are independent per CPU.
  for (int cpu = 0; cpu < 8; ++cpu) p->on(cpu)->packets.Set(100 + cpu);
  for (int cpu = 0; cpu < 8; ++cpu) CHECK(p->on(cpu)->packets.Read() == 100u + cpu);
  // Arrays.
  auto arr = a->AllocateArray<uint32_t>(100);
  REQUIRE(arr.ok());
  for (int cpu = 0; cpu < 8; ++cpu) {
    for (int i = 0; i < 100; ++i) arr->on(cpu)[i] = cpu * 1000 + i;
  }
  for (int cpu = 0; cpu < 8; ++cpu) CHECK(arr->on(cpu)[99] == cpu * 1000u + 99);
  CHECK(p->on(7)->packets.Read() == 107);
}

TEST_CASE("PerCpuAllocator: allocations are zero, also after reuse") {
  auto t = Sim(6, 4, 2);
  auto a = MakeAlloc(t.get());
  std::mt19937 rng(7);
  for (int iter = 0; iter < 2000; ++iter) {
    const size_t size = 1 + rng() % 300;
    auto p = a->Allocate(size);
    REQUIRE(p.ok());
    for (int cpu = 0; cpu < 4; ++cpu) {  // present CPUs
      REQUIRE(AllZero(p->on(cpu), size));
      std::memset(p->on(cpu), 0xab, size);
    }
    CHECK(a->Free(*p).ok());
  }
  // Explicit alignments.
  for (size_t align : {1u, 2u, 8u, 64u, 128u, 1024u, 4096u}) {
    auto p = a->Allocate(24, align);
    REQUIRE(p.ok());
    CHECK(p->base_address() % align == 0);
    CHECK(AllZero(p->on(3), 24));
    CHECK(a->Free(*p).ok());
  }
}

// A handle is what callers keep per allocation: base, 32-bit stride, CPUs.
static_assert(sizeof(PerCpuPtr<int>) <= sizeof(uintptr_t) + 8,
              "PerCpuPtr stays two words on 64-bit targets");

TEST_CASE("PerCpuAllocator: reused small slots are zeroed at allocation only") {
  // Sizes 9..16 share the 16-byte slot size; slabs are kept per requested
  // size, so the exact requested bytes survive without a per-slot table.
  auto t = Sim(6, 4, 4);
  auto a = MakeAlloc(t.get());
  std::vector<std::pair<PerCpuPtr<void>, size_t>> live;
  size_t requested = 0;
  for (int i = 0; i < 400; ++i) {
    const size_t size = 9 + i % 8;
    auto p = a->Allocate(size);
    REQUIRE(p.ok());
    CHECK(p->base_address() % 16 == 0);
    for (int cpu = 0; cpu < 4; ++cpu) {
      REQUIRE(AllZero(p->on(cpu), 16));
      std::memset(p->on(cpu), 0xcd, size);
    }
    live.push_back({*p, size});
    requested += size;
  }
  CHECK(a->stats().bytes_requested_per_cpu == requested);
  CHECK(a->stats().bytes_in_use_per_cpu == 400 * 16);
  // Free every other object: their slots lie below their slabs' high-water
  // marks and still hold 0xcd until they are handed out again.
  std::vector<std::pair<PerCpuPtr<void>, size_t>> kept;
  for (size_t i = 0; i < live.size(); ++i) {
    if (i % 2 == 0) {
      REQUIRE(a->Free(live[i].first).ok());
      requested -= live[i].second;
    } else {
      kept.push_back(live[i]);
    }
  }
  CHECK(a->stats().bytes_requested_per_cpu == requested);
  // A CPU comes present meanwhile: its copies were never written (zero).
  REQUIRE(t->SetPresent(4).ok());
  for (int i = 0; i < 200; ++i) {
    const size_t size = 9 + i % 8;
    auto p = a->Allocate(size);
    REQUIRE(p.ok());
    for (int cpu = 0; cpu < 5; ++cpu) {
      // The whole 16-byte slot, also the bytes past the requested size.
      REQUIRE(AllZero(p->on(cpu), 16));
    }
    kept.push_back({*p, size});
    requested += size;
  }
  CHECK(a->stats().bytes_requested_per_cpu == requested);
  // Zeroing a reused slot never touched its neighbours.
  for (size_t i = 0; i < 200; ++i) {
    for (int cpu = 0; cpu < 4; ++cpu) {
      const unsigned char* c =
          static_cast<const unsigned char*>(kept[i].first.on(cpu));
      for (size_t b = 0; b < kept[i].second; ++b) REQUIRE(c[b] == 0xcd);
    }
  }
  // A slot freed while written on a CPU that then goes absent and comes
  // back: zero there too (the unit was released at kAbsent).
  std::memset(kept[0].first.on(3), 0xee, kept[0].second);
  REQUIRE(a->Free(kept[0].first).ok());
  REQUIRE(t->Offline(3).ok());
  REQUIRE(t->SetAbsent(3).ok());
  auto p = a->Allocate(kept[0].second);
  REQUIRE(p.ok());
  CHECK(*p == kept[0].first);  // the slot just freed is reused first
  REQUIRE(t->SetPresent(3).ok());
  for (int cpu = 0; cpu < 5; ++cpu) CHECK(AllZero(p->on(cpu), 16));
  CHECK(a->Free(*p).ok());
  CHECK(a->Free(*p).code() == StatusCode::kFailedPrecondition);
  for (size_t i = 1; i < kept.size(); ++i) CHECK(a->Free(kept[i].first).ok());
  CHECK(a->stats().live_objects == 0);
  CHECK(a->stats().bytes_requested_per_cpu == 0);
}

// Hands out address ranges that are never touched: Map reserves nothing.
// Only for allocations the allocator never writes (large objects that are
// not freed).
class AddressOnlySource : public MemorySource {
 public:
  StatusOr<void*> Map(size_t bytes) override {
    void* p = reinterpret_cast<void*>(next_);
    next_ += bytes;
    ++maps_;
    return p;
  }
  Status Unmap(void*, size_t) override { return Status::Ok(); }
  Status Commit(void*, size_t) override { return Status::Ok(); }
  Status Decommit(void*, size_t) override { return Status::Ok(); }
  // 1 TiB; the case is skipped on 32-bit targets, where the cast keeps
  // the constant from overflowing (-Wshift-count-overflow).
  uintptr_t next_ = static_cast<uintptr_t>(uint64_t{1} << 40);
  int maps_ = 0;
};

TEST_CASE("PerCpuAllocator: slab ids run out only past 2 TiB per CPU, "
          "with ResourceExhausted" *
          doctest::skip(sizeof(void*) < 8)) {
  // 1 GiB units: 2^21 slab ids per chunk; 32-bit ids, 0xffffffff reserved
  // (kNoSlab), name 2047 whole chunks. Each unit-sized object takes a
  // whole chunk; nothing is written.
  auto t = Sim(1, 1, 1);
  AddressOnlySource src;
  PerCpuAllocatorOptions o;
  o.unit_size = size_t{1} << 30;
  o.memory = &src;
  auto a = MakeAlloc(t.get(), o);
  int ok = 0;
  Status last;
  for (int i = 0; i < 3000; ++i) {
    auto p = a->Allocate(o.unit_size, 64);
    if (!p.ok()) {
      last = p.status();
      break;
    }
    ++ok;
  }
  CHECK(ok == 2047);
  CHECK(src.maps_ == 2047);
  CHECK(last.code() == StatusCode::kResourceExhausted);
  CHECK(last.message().find("32-bit ids") != std::string::npos);
  CHECK(a->stats().chunks == 2047);
  CHECK(a->stats().live_objects == 2047);
}

class FaultySource : public MemorySource {
 public:
  StatusOr<void*> Map(size_t bytes) override {
    if (fail_every_ > 0 && ++maps_ % fail_every_ == 0) {
      return ResourceExhaustedError("injected map failure");
    }
    auto p = DefaultMemorySource()->Map(bytes);
    if (p.ok()) ++live_maps_;
    return p;
  }
  Status Unmap(void* addr, size_t bytes) override {
    --live_maps_;
    return DefaultMemorySource()->Unmap(addr, bytes);
  }
  Status Commit(void* addr, size_t bytes) override {
    if (fail_commit_) return InternalError("injected commit failure");
    return DefaultMemorySource()->Commit(addr, bytes);
  }
  Status Decommit(void* addr, size_t bytes) override {
    ++decommits_;
    return DefaultMemorySource()->Decommit(addr, bytes);
  }
  int fail_every_ = 0;
  int maps_ = 0;
  int live_maps_ = 0;
  int decommits_ = 0;
  bool fail_commit_ = false;
};

TEST_CASE("PerCpuAllocator: fault injection leaves state consistent") {
  auto t = Sim(4, 2, 2);
  FaultySource src;
  src.fail_every_ = 3;  // every 3rd chunk mapping fails
  PerCpuAllocatorOptions o;
  o.unit_size = PageSize();  // small units: many chunks
  o.memory = &src;
  {
    auto a = MakeAlloc(t.get(), o);
    std::vector<PerCpuPtr<void>> live;
    int failures = 0;
    for (int i = 0; i < 200; ++i) {
      auto p = a->Allocate(PageSize() / 2);
      if (!p.ok()) {
        ++failures;
        CHECK(p.status().code() == StatusCode::kResourceExhausted);
        CHECK(p.status().message().find(
                  "PerCpuAllocator::Allocate: mapping a chunk of " +
                  std::to_string(4 * PageSize()) +
                  " bytes failed: RESOURCE_EXHAUSTED: injected map failure") ==
              0);
        continue;
      }
      live.push_back(*p);
      std::memset(p->on(1), 0x5a, PageSize() / 2);
    }
    CHECK(failures > 0);
    const auto st = a->stats();
    CHECK(st.live_objects == live.size());
    CHECK(st.chunks == static_cast<size_t>(src.live_maps_));
    CHECK(st.bytes_reserved == st.chunks * 4 * PageSize());
    for (auto& p : live) CHECK(a->Free(p).ok());
    // After the failures everything is reusable without new mappings.
    const int maps_before = src.maps_;
    for (size_t i = 0; i < live.size(); ++i) {
      auto p = a->Allocate(PageSize() / 2);
      REQUIRE(p.ok());
      CHECK(AllZero(p->on(1), PageSize() / 2));
    }
    CHECK(src.maps_ == maps_before);
  }
  CHECK(src.live_maps_ == 0);  // destructor unmapped everything

  // Limit on total bytes.
  o.memory = nullptr;
  o.max_total_bytes = 3 * 4 * PageSize();  // three chunks
  auto a = MakeAlloc(t.get(), o);
  int ok = 0;
  Status last;
  for (int i = 0; i < 10; ++i) {
    auto p = a->Allocate(PageSize());
    if (p.ok()) {
      ++ok;
    } else {
      last = p.status();
    }
  }
  CHECK(ok == 3);
  CHECK(last.code() == StatusCode::kResourceExhausted);
  CHECK(last.message() ==
        "PerCpuAllocator::Allocate: a new chunk of " +
            std::to_string(4 * PageSize()) + " bytes would exceed "
            "max_total_bytes " + std::to_string(3 * 4 * PageSize()) +
            " (reserved: " + std::to_string(3 * 4 * PageSize()) + ")");
  // Commit failure vetoes a hot-add.
  FaultySource src2;
  PerCpuAllocatorOptions o2;
  o2.memory = &src2;
  auto b = MakeAlloc(t.get(), o2);
  REQUIRE(b->Allocate<uint64_t>().ok());
  src2.fail_commit_ = true;
  Status s = t->SetPresent(3);
  CHECK(s.code() == StatusCode::kInternal);
  CHECK(s.message().find("PerCpuAllocator: kPresent of CPU 3: 1 of 1 chunk "
                         "unit(s) failed, first: injected commit failure") !=
        std::string::npos);
  CHECK_FALSE(t->IsPresent(3));
  src2.fail_commit_ = false;
  CHECK(t->SetPresent(3).ok());
  CHECK(t->IsPresent(3));
}

// With 192 possible but 32 present CPUs, only the present CPUs' units hold
// memory; hot-adding a CPU adds its units only when touched, and removing
// it releases them.
TEST_CASE("PerCpuAllocator: only present CPUs commit memory (mincore)") {
  auto t = Sim(192, 32, 32);
  auto a = MakeAlloc(t.get());
  std::vector<PerCpuPtr<uint64_t>> objs;
  for (int i = 0; i < 20000; ++i) {  // 160 000 bytes per CPU: 3 chunks
    auto p = a->Allocate<uint64_t>();
    REQUIRE(p.ok());
    objs.push_back(*p);
  }
  auto write_all = [&](int cpu, uint64_t tag) {
    for (size_t i = 0; i < objs.size(); ++i) *objs[i].on(cpu) = tag + i;
  };
  t->ForEachPresent([&](int cpu) { write_all(cpu, uint64_t(cpu) << 32); });
  const auto st = a->stats();
  CHECK(st.chunks == 3);
  CHECK(st.bytes_reserved == 3 * 192 * 65536);
  CHECK(st.bytes_committed == 3 * 32 * 65536);
  auto res = a->ResidentBytesPerCpu();
  REQUIRE(res.ok());
  size_t total = 0;
  for (int cpu = 0; cpu < 192; ++cpu) {
    CAPTURE(cpu);
    if (cpu < 32) {
      CHECK((*res)[cpu] >= 20000 * 8);
    } else {
      CHECK((*res)[cpu] == 0);
    }
    total += (*res)[cpu];
  }
  MESSAGE("resident " << total << " bytes of " << st.bytes_reserved
                      << " reserved (" << total * 100 / st.bytes_reserved
                      << "%)");
  CHECK(total <= st.bytes_committed);

  // Hot-add CPU 100: zero, and memory appears when written.
  REQUIRE(t->SetPresent(100).ok());
  REQUIRE(t->Online(100).ok());
  for (const auto& p : objs) REQUIRE(*p.on(100) == 0);
  write_all(100, 0x77);
  res = a->ResidentBytesPerCpu();
  REQUIRE(res.ok());
  CHECK((*res)[100] >= 20000 * 8);
  // Hot-remove: released, and zero on the next hot-add.
  REQUIRE(t->Offline(100).ok());
  REQUIRE(t->SetAbsent(100).ok());
  res = a->ResidentBytesPerCpu();
  REQUIRE(res.ok());
  CHECK((*res)[100] == 0);
  REQUIRE(t->SetPresent(100).ok());
  bool all_zero = true;
  for (const auto& p : objs) all_zero = all_zero && *p.on(100) == 0;
  CHECK(all_zero);
  // Values of the other CPUs survived all of this.
  bool intact = true;
  for (int cpu = 0; cpu < 32; ++cpu) {
    for (size_t i = 0; i < objs.size(); ++i) {
      intact = intact && *objs[i].on(cpu) == (uint64_t(cpu) << 32) + i;
    }
  }
  CHECK(intact);
  for (const auto& p : objs) REQUIRE(a->Free(p).ok());
}

TEST_CASE("PerCpuAllocator: present/absent cycles lose nothing") {
  auto t = Sim(16, 4, 4);
  auto a = MakeAlloc(t.get());
  std::vector<PerCpuPtr<Counters>> objs;
  for (int i = 0; i < 500; ++i) {
    auto p = a->Allocate<Counters>();
    REQUIRE(p.ok());
    objs.push_back(*p);
    for (int cpu = 0; cpu < 4; ++cpu) p->on(cpu)->packets.Set(i * 16 + cpu);
  }
  for (int cycle = 0; cycle < 20; ++cycle) {
    const int cpu = 4 + cycle % 12;
    REQUIRE(t->SetPresent(cpu).ok());
    REQUIRE(t->Online(cpu).ok());
    for (auto& p : objs) {
      REQUIRE(p.on(cpu)->packets.Read() == 0);
      p.on(cpu)->packets.Set(999);
    }
    // Allocation and free while the CPU is present: zeroed on it too.
    auto extra = a->Allocate<Counters>();
    REQUIRE(extra.ok());
    extra->on(cpu)->bytes.Set(5);
    REQUIRE(a->Free(*extra).ok());
    REQUIRE(t->Offline(cpu).ok());
    REQUIRE(t->SetAbsent(cpu).ok());
  }
  bool intact = true;
  for (size_t i = 0; i < objs.size(); ++i) {
    for (int cpu = 0; cpu < 4; ++cpu) {
      intact = intact && objs[i].on(cpu)->packets.Read() == i * 16 + cpu;
    }
  }
  CHECK(intact);
  auto again = a->Allocate<Counters>();
  REQUIRE(again.ok());
  REQUIRE(t->SetPresent(9).ok());
  CHECK(again->on(9)->bytes.Read() == 0);
  CHECK(again->on(0)->bytes.Read() == 0);
}

TEST_CASE("PerCpuAllocator: concurrent allocate/free from many threads") {
  // CPUs 0-7 stay present; 8-11 are hot-added and removed concurrently.
  auto t = Sim(12, 8, 8);
  auto a = MakeAlloc(t.get());
  constexpr int kThreads = 4;
  constexpr int kIters = 3000;
  std::atomic<int> corrupt{0};
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int th = 0; th < kThreads; ++th) {
    threads.emplace_back([&, th] {
      std::mt19937 rng(th);
      std::vector<std::pair<PerCpuPtr<void>, size_t>> mine;
      for (int i = 0; i < kIters; ++i) {
        if (mine.size() < 50 && (rng() % 3 != 0 || mine.empty())) {
          const size_t size = 1 + rng() % 200;
          auto p = a->Allocate(size);
          if (!p.ok()) {
            errors.fetch_add(1);
            continue;
          }
          for (int cpu = 0; cpu < 8; ++cpu) {
            if (!AllZero(p->on(cpu), size)) corrupt.fetch_add(1);
            std::memset(p->on(cpu), 0x10 + th, size);
          }
          mine.emplace_back(*p, size);
        } else {
          const size_t k = rng() % mine.size();
          auto [p, size] = mine[k];
          for (int cpu = 0; cpu < 8; ++cpu) {
            const unsigned char* c = static_cast<unsigned char*>(p.on(cpu));
            for (size_t b = 0; b < size; ++b) {
              if (c[b] != 0x10 + th) {
                corrupt.fetch_add(1);
                break;
              }
            }
          }
          if (!a->Free(p).ok()) errors.fetch_add(1);
          mine[k] = mine.back();
          mine.pop_back();
        }
      }
      for (auto& m : mine) {
        if (!a->Free(m.first).ok()) errors.fetch_add(1);
      }
    });
  }
  // Hotplug of other CPUs meanwhile (decommit/recommit of their units)
  // does not disturb the present CPUs' objects.
  std::atomic<bool> done{false};
  std::thread hotplug([&] {
    int i = 0;
    while (!done.load(std::memory_order_relaxed) || i < 40) {
      const int cpu = 8 + i++ % 4;
      CHECK(t->SetPresent(cpu).ok());
      CHECK(t->SetAbsent(cpu).ok());
    }
  });
  for (auto& th : threads) th.join();
  done.store(true);
  hotplug.join();
  CHECK(corrupt.load() == 0);
  CHECK(errors.load() == 0);
  CHECK(a->stats().live_objects == 0);
  CHECK(a->stats().bytes_in_use_per_cpu == 0);
}

TEST_CASE("PerCpuAllocator: on this machine's sysfs topology") {
  auto t = Topology::FromSysfs();
  if (!t.ok()) {
    MESSAGE("no sysfs topology: " << t.status().ToString());
    CHECK(t.status().code() == StatusCode::kNotFound);
    return;
  }
  auto a = MakeAlloc(t->get());
  auto p = a->Allocate<Counters>();
  REQUIRE(p.ok());
  uint64_t expect = 0;
  (*t)->ForEachOnline([&](int cpu) {
    p->on(cpu)->packets.Set(cpu + 1);
    expect += cpu + 1;
  });
  uint64_t sum = 0;
  (*t)->ForEachOnline([&](int cpu) { sum += p->on(cpu)->packets.Read(); });
  CHECK(expect > 0);
  CHECK(sum == expect);
  CHECK(p->num_cpus() == (*t)->num_possible());
  CHECK(a->Free(*p).ok());
}

TEST_CASE("ExtentMap: fit, alignment, coalescing, chunk boundaries") {
  internal::ExtentMap m(1024);
  m.AddChunk(0);
  uint32_t chunk, a, b, c;
  REQUIRE(m.Allocate(8, 8, &chunk, &a));
  CHECK(chunk == 0);
  CHECK(a == 0);
  REQUIRE(m.Allocate(64, 64, &chunk, &b));
  CHECK(b == 64);
  CHECK(m.num_extents() == 2);  // [8,64) and [128,1024)
  REQUIRE(m.Allocate(56, 8, &chunk, &c));
  CHECK(c == 8);  // best fit: the 56-byte gap
  CHECK(m.free_bytes() == 1024 - 128);
  m.Free(0, b, 64);
  m.Free(0, a, 8);
  m.Free(0, c, 56);
  CHECK(m.num_extents() == 1);
  CHECK(m.LargestExtent() == 1024);
  uint32_t d;
  CHECK_FALSE(m.Allocate(2048, 8, &chunk, &d));
  REQUIRE(m.Allocate(1024, 1024, &chunk, &d));
  CHECK_FALSE(m.Allocate(8, 8, &chunk, &d));
  // Two chunks never merge into one extent.
  m.AddChunk(1);
  m.Free(0, 0, 1024);
  CHECK(m.num_extents() == 2);
  CHECK(m.LargestExtent() == 1024);
  REQUIRE(m.Allocate(1024, 8, &chunk, &d));
  REQUIRE(m.Allocate(1024, 8, &chunk, &d));
  CHECK_FALSE(m.Allocate(8, 8, &chunk, &d));
  // A lucky probe: an extent shorter than size + align - 8 that is aligned.
  internal::ExtentMap p(4096);
  p.AddChunk(0);
  uint32_t x, y;
  REQUIRE(p.Allocate(4096 - 256, 8, &chunk, &x));  // leaves [3840, 4096)
  REQUIRE(p.Allocate(256, 256, &chunk, &y));
  CHECK(y == 3840);
}

}  // namespace
}  // namespace percpu
