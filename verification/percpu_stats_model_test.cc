// Model tests of the counter families' fallback hotplug protocol: the real
// PerCpuU64Mib (primitives/percpu_stats.h), Topology and fold routines
// compiled with PERCPU_MODEL_CHECK, so the slots, accumulators, mask words
// and the hotplug seqcount are rl::atomic and every C++20 execution is
// explored.
//
// Scenario: a fallback writer that read cpu == 1 from sched_getcpu() (the
// test names the id: AddOnCpu) races Offline(1), whose fold callback moves
// slot 1 into the accumulator with exchange(0) inside the hotplug write
// section; a reader reads twice. Proof obligations (docs/writers.md,
// "Fallback writers and hotplug"):
//   F1 no loss: after all threads, the total is exactly what was added,
//      whether the add landed before or after the fold;
//   F2 no double count: every total a reader obtains is <= what was added
//      (the value is moved by exactly one exchange);
//   F3 monotonic: a reader's second total is >= its first.
// Mutant: readers that visit only the ONLINE CPUs (the protocol the
// writer-quiescing LcoreStats uses) lose the late add: must be caught.
#include <cstdint>
#include <memory>
#include <new>

#include "doctest/doctest.h"
#include "primitives/fold.h"
#include "primitives/percpu_alloc.h"
#include "primitives/percpu_stats.h"
#include "primitives/topology.h"
#include "relacy/relacy.hpp"
#include "verification/model_params.h"

namespace percpu {
namespace {

template <typename T>
void ConstructInPlace(const PerCpuPtr<T>& p, int cpus, size_t n) {
  for (int cpu = 0; cpu < cpus; ++cpu) {
    for (size_t i = 0; i < n; ++i) new (p.on(cpu) + i) T(0);
  }
}

template <bool kPresentReader>
struct LateAddVsOffline
    : rl::test_suite<LateAddVsOffline<kPresentReader>, 3> {
  std::shared_ptr<Topology> topo;
  std::shared_ptr<PerCpuAllocator> alloc;
  std::unique_ptr<PerCpuU64Mib<1>> mib;

  void before() {
    topo = std::move(*Topology::Simulated(2, 2, 2));
    alloc = std::move(*PerCpuAllocator::Create(topo.get()));
    mib = std::move(*PerCpuU64Mib<1>::Create(*topo, *alloc));
    ConstructInPlace(mib->slots(), 2, 1);
  }
  void after() {
    // F1: nothing lost, whichever side of the fold the add landed on.
    RL_ASSERT(Total() == 7);
    mib.reset();
    alloc.reset();
    topo.reset();
  }

  uint64_t Total() {
    if (kPresentReader) return mib->Read(0);
    return mib->ReadOver(OnlineCpus(*topo), 0);  // mutant
  }

  void thread(unsigned index) {
    if (index == 0) {
      // Two fallback writers' adds with the (possibly stale) id 1.
      RL_ASSERT(mib->AddOnCpu(1, 0, 5).ok());
      RL_ASSERT(mib->AddOnCpu(1, 0, 2).ok());
    } else if (index == 1) {
      RL_ASSERT(topo->Offline(1).ok());
    } else {
      const uint64_t first = Total();
      const uint64_t second = Total();
      for (uint64_t v : {first, second}) {
        RL_ASSERT(v == 0 || v == 5 || v == 7);  // F2: a prefix, never more
      }
      RL_ASSERT(second >= first);  // F3
    }
  }
};

TEST_CASE("fallback writer racing offline: nothing lost or counted twice") {
  CHECK(model::CheckExhaustive<LateAddVsOffline<true>>());
}

TEST_CASE("the checker catches readers that skip offline slots") {
  CHECK(model::CheckFindsFailure<LateAddVsOffline<false>>());
}

}  // namespace
}  // namespace percpu
