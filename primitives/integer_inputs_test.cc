// Every public integer input at its extremes (issue 12 item 10): CPU ids,
// counts, sizes, alignments, items, batch sizes, strides and initial
// values get INT_MIN, -1, 0, the first invalid value, INT_MAX, SIZE_MAX...
// Each call must return a clear error (or the documented value), never
// overflow (UBSan), read or write out of bounds (ASan), crash or lose
// counts. Unchecked single-writer methods with an out-of-range index are a
// documented contract violation: reported in debug builds, ignored
// otherwise; the test counts the reports through the handler.
#include <climits>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "doctest/doctest.h"
#include "primitives/contract.h"
#include "primitives/cpu_slot.h"
#include "primitives/cpumask.h"
#include "primitives/lazy_percpu.h"
#include "primitives/percpu_alloc.h"
#include "primitives/percpu_counter.h"
#include "primitives/percpu_mib.h"
#include "primitives/percpu_pair.h"
#include "primitives/percpu_stats.h"
#include "primitives/topology.h"

namespace percpu {
namespace {

const std::vector<int> kInts = {INT_MIN, INT_MIN + 1, -2, -1, 0, 1, 3, 4,
                                kMaxCpus - 1, kMaxCpus, kMaxCpus + 1,
                                INT_MAX - 1, INT_MAX};
const std::vector<size_t> kSizes = {
    0, 1, 7, 8, 63, 64, 65, 4095, 4096, 65535, 65536, 65537,
    size_t{1} << 30, (size_t{1} << 30) + 1, SIZE_MAX / 2, SIZE_MAX - 1,
    SIZE_MAX};

int g_reports = 0;
void CountReport(const char*) { ++g_reports; }

struct HandlerScope {
  ContractViolationHandler old;
  HandlerScope() : old(SetContractViolationHandler(&CountReport)) {
    g_reports = 0;
  }
  ~HandlerScope() { SetContractViolationHandler(old); }
};

std::shared_ptr<Topology> Topo4() {
  auto t = Topology::Simulated(4, 4, 4);
  REQUIRE(t.ok());
  return std::move(*t);
}

TEST_CASE("Topology: ids and counts at the extremes") {
  for (int a : kInts) {
    for (int b : {INT_MIN, -1, 0, 1, 4, INT_MAX}) {
      CAPTURE(a);
      CAPTURE(b);
      auto t = Topology::Simulated(a, b, 1);
      const bool valid = 1 <= b && b <= a && a <= kMaxCpus;
      CHECK(t.ok() == valid);
      if (!t.ok()) CHECK(t.status().code() == StatusCode::kInvalidArgument);
    }
  }
  auto topo = Topo4();
  for (int cpu : kInts) {
    CAPTURE(cpu);
    const bool in = cpu >= 0 && cpu < 4;
    CHECK(topo->ValidateCpu(cpu).ok() == in);
    CHECK(topo->IsPresent(cpu) == in);
    CHECK(topo->IsOnline(cpu) == in);
    if (!in) {
      CHECK(topo->Offline(cpu).code() == StatusCode::kOutOfRange);
      CHECK(topo->Online(cpu).code() == StatusCode::kOutOfRange);
      CHECK(topo->SetAbsent(cpu).code() == StatusCode::kOutOfRange);
      CHECK(topo->SetPresent(cpu).code() == StatusCode::kOutOfRange);
    }
  }
  for (uint64_t id : {uint64_t{0}, uint64_t{1}, ~uint64_t{0}}) {
    CHECK(topo->UnregisterHotplugCallbacks(id).code() ==
          StatusCode::kNotFound);
  }
  CHECK(topo->online().Count() == 4);
}

TEST_CASE("PerCpuAllocator: sizes, alignments, counts and addresses") {
  auto topo = Topo4();
  for (size_t unit : kSizes) {
    CAPTURE(unit);
    PerCpuAllocatorOptions o;
    o.unit_size = unit;
    auto a = PerCpuAllocator::Create(topo.get(), o);
    const bool valid = unit >= 4096 && (unit & (unit - 1)) == 0 &&
                       unit <= (size_t{1} << 30);
    if (!valid) CHECK(a.status().code() == StatusCode::kInvalidArgument);
  }
  auto made = PerCpuAllocator::Create(topo.get());
  REQUIRE(made.ok());
  PerCpuAllocator& alloc = **made;
  for (size_t size : kSizes) {
    for (size_t align : kSizes) {
      CAPTURE(size);
      CAPTURE(align);
      auto p = alloc.Allocate(size, align);
      if (p.ok()) {
        CHECK(size >= 1);
        CHECK(size <= alloc.unit_size());
        CHECK(p->base_address() % (align == 0 ? 1 : align) == 0);
        CHECK(alloc.Free(*p).ok());
      } else {
        CHECK((p.status().code() == StatusCode::kInvalidArgument ||
               p.status().code() == StatusCode::kResourceExhausted));
      }
    }
    auto arr = alloc.AllocateArray<uint64_t>(size);
    if (arr.ok()) {
      CHECK(size * 8 <= alloc.unit_size());
      CHECK(alloc.Free(*arr).ok());
    } else {
      CHECK(arr.status().code() == StatusCode::kInvalidArgument);
    }
  }
  for (uintptr_t addr : {uintptr_t{1}, uintptr_t{8}, UINTPTR_MAX,
                         UINTPTR_MAX - 7, UINTPTR_MAX / 2}) {
    CAPTURE(addr);
    const Status s = alloc.FreeAddress(addr);
    CHECK_FALSE(s.ok());
  }
  CHECK(alloc.FreeAddress(0).ok());  // null: documented no-op
  auto p = alloc.Allocate<uint64_t>();
  REQUIRE(p.ok());
  for (int cpu : kInts) {
    CAPTURE(cpu);
    auto at = p->At(cpu);
    CHECK(at.ok() == (cpu >= 0 && cpu < 4));
    if (!at.ok()) CHECK(at.status().code() == StatusCode::kOutOfRange);
  }
  CHECK(PerCpuPtr<uint64_t>().At(0).status().code() ==
        StatusCode::kFailedPrecondition);
  CHECK(alloc.stats().live_objects == 1);
  CHECK(alloc.Free(*p).ok());
  CHECK(alloc.Free(*p).code() == StatusCode::kFailedPrecondition);
}

TEST_CASE("CpuSlots and CpuSlotCounter: counts, strides and ids") {
  alignas(64) static internal::Atomic<uint64_t> buf[64];
  for (int n : kInts) {
    for (size_t stride : kSizes) {
      CAPTURE(n);
      CAPTURE(stride);
      auto s = CpuSlots::Create(&buf[0], stride, n);
      if (s.ok()) {
        CHECK(n >= 1);
        CHECK(stride >= 8);
        for (int cpu : kInts) {
          auto at = s->At(cpu);
          CHECK(at.ok() == (cpu >= 0 && cpu < n));
        }
      }
    }
// CpuSlotCounter is deprecated (removed in 0.3) but still shipped: test it.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    auto c = CpuSlotCounter::Create(n);
#pragma GCC diagnostic pop
    if (c.ok()) {
      for (int cpu : kInts) {
        auto v = (*c)->OnCpu(cpu);
        CHECK(v.ok() == (cpu >= 0 && cpu < n));
        if (v.ok()) CHECK(*v == 0);
      }
    } else {
      CHECK((n < 1 || n > 65536));
    }
  }
}

TEST_CASE("ApproxCounter: initial values, batches, amounts and ids") {
  HandlerScope h;
  auto topo = Topo4();
  auto alloc = PerCpuAllocator::Create(topo.get());
  REQUIRE(alloc.ok());
  for (int32_t batch : {INT32_MIN, -1}) {
    CHECK(ApproxCounter::Create(*topo, **alloc, 0, batch).status().code() ==
          StatusCode::kInvalidArgument);
  }
  for (int64_t initial : {INT64_MIN, int64_t{-1}, int64_t{0}, INT64_MAX}) {
    for (int32_t batch : {0, 1, 2, INT32_MAX - 1, INT32_MAX}) {
      CAPTURE(initial);
      CAPTURE(batch);
      auto c = ApproxCounter::Create(*topo, **alloc, initial, batch);
      REQUIRE(c.ok());
      CHECK((*c)->Sum() == initial);
      // Amounts that overflow a 32-bit delta flush instead of wrapping it;
      // values wrap modulo 2^64 (checked with unsigned arithmetic).
      uint64_t expect = static_cast<uint64_t>(initial);
      for (int64_t amount : {INT64_MAX, int64_t{1}, INT64_MIN, int64_t{-1},
                             int64_t{INT32_MAX}, int64_t{INT32_MIN}}) {
        for (int cpu : {0, 3}) {
          REQUIRE((*c)->AddChecked(cpu, amount).ok());
          expect += static_cast<uint64_t>(amount);
        }
      }
      CHECK(static_cast<uint64_t>((*c)->Sum()) == expect);
      for (int cpu : kInts) {
        if (cpu >= 0 && cpu < 4) continue;
        CHECK((*c)->AddChecked(cpu, 1).code() == StatusCode::kOutOfRange);
      }
      CHECK(static_cast<uint64_t>((*c)->Sum()) == expect);
      for (int64_t rhs : {INT64_MIN, int64_t{0}, INT64_MAX}) {
        const int r = (*c)->Compare(rhs);
        CHECK((r >= -1 && r <= 1));
      }
    }
  }
}

TEST_CASE("MIBs, pairs and lazy stats: items and ids at the extremes") {
  HandlerScope h;
  auto topo = Topo4();
  auto alloc = PerCpuAllocator::Create(topo.get());
  REQUIRE(alloc.ok());
  const size_t kItems[] = {2, 3, SIZE_MAX / 2, SIZE_MAX - 1, SIZE_MAX};

  auto mib = LcoreStats<2>::Create(*topo, **alloc);
  REQUIRE(mib.ok());
  auto u64 = PerCpuU64Mib<2>::Create(*topo, **alloc);
  REQUIRE(u64.ok());
  auto pair = PerCpuPacketsBytes::Create(*topo, **alloc);
  REQUIRE(pair.ok());
  auto lazy = FlowStats::Create(4);
  REQUIRE(lazy.ok());

  uint64_t valid = 0;
  for (int cpu : kInts) {
    CAPTURE(cpu);
    const bool in = cpu >= 0 && cpu < 4;
    valid += in ? 1 : 0;
    CHECK((*mib)->AddChecked(cpu, 1, 1).ok() == in);
    CHECK((*u64)->AddOnCpu(cpu, 1, 1).ok() == in);
    CHECK((*u64)->OnCpu(cpu, 1).ok() == in);
    CHECK((*pair)->AddOnCpu(cpu, 1, 10).ok() == in);
    CHECK((*pair)->OnCpu(cpu).ok() == in);
    CHECK((*lazy)->UpdateChecked(cpu, 10, 1, 0).ok() == in);
    for (size_t item : kItems) {
      CAPTURE(item);
      CHECK_FALSE((*mib)->AddChecked(cpu, item, 1).ok());
      CHECK_FALSE((*u64)->AddOnCpu(cpu, item, 1).ok());
      CHECK_FALSE((*u64)->OnCpu(cpu, item).ok());
    }
  }
  for (size_t item : kItems) {
    CAPTURE(item);
    CHECK_FALSE((*u64)->AddChecked(item, 1).ok());
    CHECK_FALSE((*u64)->ReadChecked(item).ok());
    // Unchecked forms: documented contract violations, answered with 0 and
    // reported in debug builds; nothing is written.
    CHECK((*mib)->Read(item) == 0);
    CHECK((*u64)->Read(item) == 0);
  }
  // Nothing counted twice or lost: exactly the valid calls above.
  REQUIRE(valid == 3);  // 0, 1 and 3 of kInts
  CHECK((*mib)->Read(1) == valid);
  CHECK((*u64)->Read(1) == valid);
  CHECK((*pair)->Sum().packets == valid);
  CHECK((*pair)->Sum().bytes == 10 * valid);
  CHECK((*lazy)->Read().bytes == 10 * valid);
#if PERCPU_CONTRACT_CHECKS
  CHECK(g_reports == 2 * 5);
#else
  CHECK(g_reports == 0);
#endif
  for (int n : kInts) {
    auto l = FlowStats::Create(n);
    CHECK(l.ok() == (n >= 1 && n <= kMaxCpus));
  }
}

}  // namespace
}  // namespace percpu
