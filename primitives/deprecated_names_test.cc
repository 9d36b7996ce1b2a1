// The old (0.1) type names still compile, as deprecated aliases of the
// job-named types, until they are removed in 0.3. This is the ONE place in
// the repository that uses them: it is built with
// -Wno-deprecated-declarations (BUILD), and deprecated_names_warn_test
// proves each old name does warn everywhere else.
#include <cstdint>
#include <memory>
#include <type_traits>

#include "doctest/doctest.h"
#include "primitives/cpu_slot.h"
#include "primitives/domain.h"
#include "primitives/lazy_percpu.h"
#include "primitives/per_thread.h"
#include "primitives/percpu_counter.h"
#include "primitives/percpu_mib.h"

namespace percpu {
namespace {

// Each old name is the very same type as its new one (not a copy, not a
// subclass), so old and new code can pass objects to each other.
static_assert(std::is_same<PerCpuMib<1>, LcoreStats<1>>::value, "");
static_assert(std::is_same<PerCpuMib<7>, LcoreStats<7>>::value, "");
static_assert(std::is_same<PerCpuCounter, ApproxCounter>::value, "");
static_assert(std::is_same<PerCpuCounterSlot, ApproxCounterSlot>::value, "");
static_assert(std::is_same<LazyFlowStats, FlowStats>::value, "");
static_assert(std::is_same<BasicLazyFlowStats<>, FlowStats>::value, "");
static_assert(std::is_same<BasicLazyFlowStats<internal::FlowStatsRecipe>,
                           BasicFlowStats<internal::FlowStatsRecipe>>::value,
              "");
static_assert(std::is_same<LazyFlowStatsSlot, FlowStatsSlot>::value, "");
static_assert(std::is_same<PerThreadCounter, ThreadCounter>::value, "");

TEST_CASE("the deprecated names are the new types, at run time too") {
  CHECK(std::is_same<PerCpuMib<3>, LcoreStats<3>>::value);
  CHECK(std::is_same<PerCpuCounter, ApproxCounter>::value);
  CHECK(std::is_same<LazyFlowStats, FlowStats>::value);
  CHECK(std::is_same<PerThreadCounter, ThreadCounter>::value);
}

TEST_CASE("each deprecated name still works") {
  Domain& d = Domain::Default();
  REQUIRE(d.status().ok());
  Topology& topo = *d.topology();
  PerCpuAllocator& alloc = *d.allocator();

  StatusOr<std::unique_ptr<PerCpuMib<2>>> mib =
      PerCpuMib<2>::Create(topo, alloc);
  REQUIRE(mib.ok());
  (*mib)->Add(0, 1, 5);
  LcoreStats<2>& as_new = **mib;  // binds: same type
  CHECK(as_new.Read(1) == 5);
  CHECK(as_new.Read(0) == 0);

  StatusOr<std::unique_ptr<PerCpuCounter>> approx =
      PerCpuCounter::Create(topo, alloc);
  REQUIRE(approx.ok());
  (*approx)->Add(0, 3);
  (*approx)->Add(0, 4);
  CHECK((*approx)->Sum() == 7);

  StatusOr<std::unique_ptr<LazyFlowStats>> flow =
      LazyFlowStats::Create(topo.num_possible());
  REQUIRE(flow.ok());
  (*flow)->Update(0, 100, 1, 0);
  CHECK((*flow)->Read().packets == 1);
  CHECK((*flow)->Read().bytes == 100);

  PerThreadCounter per_thread;
  per_thread.Add(2);
  per_thread.Inc();
  CHECK(per_thread.Sum() == 3);
}

TEST_CASE("CpuSlotCounter (deprecated for Counter / PerCpuU64) still works") {
  StatusOr<std::unique_ptr<CpuSlotCounter>> c = CpuSlotCounter::Create(4);
  REQUIRE(c.ok());
  (*c)->Add(5);
  (*c)->Inc();
  CHECK((*c)->Sum() == 6);
  CHECK(CpuSlotCounter::Create(0).status().code() == StatusCode::kOutOfRange);
}

}  // namespace
}  // namespace percpu
