// Test-only helper: a simulated topology with a per-CPU allocator on it.
#ifndef PERCPU_PRIMITIVES_INTERNAL_TEST_ENV_H_
#define PERCPU_PRIMITIVES_INTERNAL_TEST_ENV_H_

#include <memory>
#include <utility>

#include "doctest/doctest.h"
#include "primitives/percpu_alloc.h"
#include "primitives/topology.h"

namespace percpu {
namespace testing {

struct Env {
  std::shared_ptr<Topology> topo;
  std::shared_ptr<PerCpuAllocator> alloc;
};

// Topology::Simulated(possible, present, online) and an allocator on it;
// fails the calling test case if either cannot be created.
inline Env MakeEnv(int possible, int present, int online) {
  Env env;
  auto topo = Topology::Simulated(possible, present, online);
  REQUIRE(topo.ok());
  env.topo = std::move(*topo);
  auto alloc = PerCpuAllocator::Create(env.topo.get());
  REQUIRE(alloc.ok());
  env.alloc = std::move(*alloc);
  return env;
}

}  // namespace testing
}  // namespace percpu

#endif  // PERCPU_PRIMITIVES_INTERNAL_TEST_ENV_H_
