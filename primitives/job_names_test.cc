// Each job name of the README's "Which type for which job" table compiles
// and works on the default domain (Domain::Default()'s topology and
// allocator for the types that take them explicitly).
#include <cstdint>

#include "doctest/doctest.h"
#include "primitives/counter.h"
#include "primitives/domain.h"
#include "primitives/lazy_percpu.h"
#include "primitives/per_thread.h"
#include "primitives/percpu_counter.h"
#include "primitives/percpu_mib.h"

namespace percpu {
namespace {

TEST_CASE("the job-named types work on the default domain") {
  Domain& d = Domain::Default();
  REQUIRE(d.status().ok());
  Topology& topo = *d.topology();
  PerCpuAllocator& alloc = *d.allocator();

  auto lcore = LcoreStats<2>::Create(topo, alloc);  // pinned threads
  REQUIRE(lcore.ok());
  (*lcore)->Add(0, 1, 5);
  CHECK((*lcore)->Read(1) == 5);

  auto approx = ApproxCounter::Create(topo, alloc);  // approximate, O(1) read
  REQUIRE(approx.ok());
  (*approx)->Add(0, 3);
  CHECK((*approx)->Sum() == 3);

  auto flow = FlowStats::Create(topo.num_possible());  // per flow, lazy
  REQUIRE(flow.ok());
  (*flow)->Update(0, 100, 1, 0);
  CHECK((*flow)->Read().packets == 1);
  CHECK((*flow)->Read().bytes == 100);

  ThreadCounter per_thread;  // per thread
  per_thread.Add(2);
  CHECK(per_thread.Sum() == 2);

  PacketCounter pair("job_pair");  // packets + bytes, unpinned workers
  pair.Add(1, 64);
  CHECK(pair.Read().bytes == 64);
  Counter plain("job_plain");  // one counter
  plain.Inc();
  CHECK(plain.Read() == 1);
}

}  // namespace
}  // namespace percpu
