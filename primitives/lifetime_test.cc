// Lifetimes (issue 12 item 8): a counter declared before its Topology and
// PerCpuAllocator (so destroyed after them) used to read a destroyed
// allocator in its destructor (ASan heap-use-after-free in
// ~PerCpuAllocator, silent in release builds). Counters now keep their
// Topology and allocator alive: both declaration orders are safe, the
// counter keeps working after the caller dropped its pointers, and the
// allocator and topology are released exactly when the last counter goes.
// Run under --config=asan for the use-after-free and leak checks.
#include <cstdint>
#include <memory>
#include <utility>

#include "doctest/doctest.h"
#include "primitives/percpu_alloc.h"
#include "primitives/percpu_counter.h"
#include "primitives/percpu_mib.h"
#include "primitives/percpu_pair.h"
#include "primitives/percpu_stats.h"
#include "primitives/topology.h"

namespace percpu {
namespace {

std::shared_ptr<Topology> MakeTopology() {
  auto t = Topology::Simulated(4, 4, 4);
  REQUIRE(t.ok());
  return std::move(*t);
}

std::shared_ptr<PerCpuAllocator> MakeAllocator(Topology& t) {
  auto a = PerCpuAllocator::Create(&t);
  REQUIRE(a.ok());
  return std::move(*a);
}

// Creates a counter of each kind on (topo, alloc).
struct Counters {
  std::unique_ptr<ApproxCounter> counter;
  std::unique_ptr<LcoreStats<2>> mib;
  std::unique_ptr<PerCpuU64Mib<2>> u64mib;
  std::unique_ptr<PerCpuPacketsBytes> pair;

  void Make(Topology& topo, PerCpuAllocator& alloc) {
    auto c = ApproxCounter::Create(topo, alloc, 0, 8);
    REQUIRE(c.ok());
    counter = std::move(*c);
    auto m = LcoreStats<2>::Create(topo, alloc);
    REQUIRE(m.ok());
    mib = std::move(*m);
    auto u = PerCpuU64Mib<2>::Create(topo, alloc);
    REQUIRE(u.ok());
    u64mib = std::move(*u);
    auto p = PerCpuPacketsBytes::Create(topo, alloc);
    REQUIRE(p.ok());
    pair = std::move(*p);
  }
  void AddAll(int n) {
    for (int i = 0; i < n; ++i) {
      counter->Add(i % 4, 3);
      mib->Add(i % 4, 1, 2);
      u64mib->Add(0, 5);
      pair->Add(1, 100);
    }
  }
  void Check(int n) {
    CHECK(counter->Sum() == 3 * n);
    CHECK(mib->Read(1) == 2u * n);
    CHECK(u64mib->Read(0) == 5u * n);
    const PacketsBytes pb = pair->Sum();
    CHECK(pb.packets == static_cast<uint64_t>(n));
    CHECK(pb.bytes == 100u * n);
  }
};

TEST_CASE("counters declared BEFORE their topology and allocator") {
  std::weak_ptr<Topology> topo_seen;
  std::weak_ptr<PerCpuAllocator> alloc_seen;
  {
    Counters cs;  // declared first: destroyed last
    std::shared_ptr<Topology> topo = MakeTopology();
    std::shared_ptr<PerCpuAllocator> alloc = MakeAllocator(*topo);
    topo_seen = topo;
    alloc_seen = alloc;
    cs.Make(*topo, *alloc);
    cs.AddAll(100);
    cs.Check(100);
  }  // alloc and topo pointers go first, then the counters: no UAF, no leak
  CHECK(alloc_seen.expired());
  CHECK(topo_seen.expired());
}

TEST_CASE("counters declared AFTER their topology and allocator") {
  std::weak_ptr<Topology> topo_seen;
  std::weak_ptr<PerCpuAllocator> alloc_seen;
  {
    std::shared_ptr<Topology> topo = MakeTopology();
    std::shared_ptr<PerCpuAllocator> alloc = MakeAllocator(*topo);
    topo_seen = topo;
    alloc_seen = alloc;
    Counters cs;
    cs.Make(*topo, *alloc);
    cs.AddAll(50);
    cs.Check(50);
  }
  CHECK(alloc_seen.expired());
  CHECK(topo_seen.expired());
}

TEST_CASE("a counter keeps working after the caller dropped its owners") {
  Counters cs;
  std::weak_ptr<Topology> topo_seen;
  std::weak_ptr<PerCpuAllocator> alloc_seen;
  {
    std::shared_ptr<Topology> topo = MakeTopology();
    std::shared_ptr<PerCpuAllocator> alloc = MakeAllocator(*topo);
    topo_seen = topo;
    alloc_seen = alloc;
    cs.Make(*topo, *alloc);
  }
  // Kept alive by the counters.
  REQUIRE_FALSE(topo_seen.expired());
  REQUIRE_FALSE(alloc_seen.expired());
  cs.AddAll(10);
  // Hotplug still folds through the kept topology and allocator.
  std::shared_ptr<Topology> topo = topo_seen.lock();
  REQUIRE(topo->Offline(2).ok());
  REQUIRE(topo->SetAbsent(2).ok());
  cs.Check(10);
  REQUIRE(topo->SetPresent(2).ok());
  REQUIRE(topo->Online(2).ok());
  topo.reset();
  cs.AddAll(10);
  cs.Check(20);
  // The last counter releases them, in any order of the counters.
  cs.pair.reset();
  cs.counter.reset();
  CHECK_FALSE(alloc_seen.expired());
  cs.mib.reset();
  cs.u64mib.reset();
  CHECK(alloc_seen.expired());
  CHECK(topo_seen.expired());
}

TEST_CASE("an allocator alone keeps its topology alive") {
  std::shared_ptr<PerCpuAllocator> alloc;
  std::weak_ptr<Topology> topo_seen;
  {
    std::shared_ptr<Topology> topo = MakeTopology();
    topo_seen = topo;
    alloc = MakeAllocator(*topo);
  }
  REQUIRE_FALSE(topo_seen.expired());
  auto p = alloc->Allocate<uint64_t>();
  REQUIRE(p.ok());
  CHECK(alloc->Free(*p).ok());
  alloc.reset();
  CHECK(topo_seen.expired());
}

}  // namespace
}  // namespace percpu
