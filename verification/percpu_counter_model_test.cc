// Model tests of ApproxCounter (primitives/percpu_counter.{h,cc}) compiled
// with PERCPU_MODEL_CHECK: the real flush protocol, Sum() and the offline
// fold callback, with every C++20 execution explored.
//
// Proof obligations (docs/fold_and_hotplug.md, section 4):
//   * Sum() is exact over a per-CPU prefix of the Adds: a flush (delta moved
//     into the shared count) is never seen twice (count after + delta
//     before) nor missed (count before + delta after);
//   * a reader's Sums never decrease (non-negative amounts);
//   * the offline fold of a dead CPU's delta is seen atomically with the
//     online-mask update.
#include <cstdint>
#include <memory>
#include <new>

#include "doctest/doctest.h"
#include "primitives/percpu_alloc.h"
#include "primitives/percpu_counter.h"
#include "primitives/topology.h"
#include "relacy/relacy.hpp"

namespace percpu {
namespace {

// The allocator runs no constructors; the checker's atomics must be
// constructed to be tracked (zero values, as the bytes were).
template <typename T>
void ConstructInPlace(const PerCpuPtr<T>& p, int cpus) {
  for (int cpu = 0; cpu < cpus; ++cpu) new (p.on(cpu)) T();
}

struct Fixture {
  std::shared_ptr<Topology> topo;
  std::shared_ptr<PerCpuAllocator> alloc;
  std::unique_ptr<ApproxCounter> counter;

  void Make(int cpus, int32_t batch) {
    topo = std::move(*Topology::Simulated(cpus, cpus, cpus));
    alloc = std::move(*PerCpuAllocator::Create(topo.get()));
    counter = std::move(*ApproxCounter::Create(*topo, *alloc, 0, batch));
    // Nothing has touched the slots yet: construct the checker's atomics.
    ConstructInPlace(counter->slots(), cpus);
  }
  void Reset() {
    counter.reset();
    alloc.reset();
    topo.reset();
  }
};

// CPU 0's writer: Add(3) (delta 3), Add(1) (flush: count 4, delta 0),
// Add(2) (delta 2). Consistent totals: 0, 3, 4, 6. A double-counted flush
// gives 7 (count 4 + delta 3); a missed one gives 2 (count 0 + delta 2).
// kMutant: the reader sums count + deltas without the flush_seq check (what
// dropping the kernel's spinlock without a replacement would do); the
// checker must find the double count or the loss.
template <bool kMutant>
struct FlushVsSum : rl::test_suite<FlushVsSum<kMutant>, 2,
                                   kMutant ? rl::test_result_user_assert_failed
                                           : rl::test_result_success> {
  Fixture f;
  void before() { f.Make(2, 4); }
  void after() { f.Reset(); }
  int64_t Sum() {
    if (!kMutant) return f.counter->Sum();
    int64_t sum = f.counter->Read();
    for (int cpu = 0; cpu < 2; ++cpu) {
      // Relaxed: the mutant has no ordering at all.
      sum += f.counter->slots().on(cpu)->delta.load(std::memory_order_relaxed);
    }
    return sum;
  }
  void thread(unsigned index) {
    if (index == 0) {
      f.counter->Add(0, 3);
      f.counter->Add(0, 1);
      f.counter->Add(0, 2);
      return;
    }
    const int64_t first = Sum();
    const int64_t second = Sum();
    for (int64_t v : {first, second}) {
      RL_ASSERT(v == 0 || v == 3 || v == 4 || v == 6);
    }
    RL_ASSERT(second >= first);
  }
};

// Two CPUs flushing concurrently into the shared count while a reader sums.
// CPU 0: Add(2) (flush with batch 2). CPU 1: Add(1), Add(1) (flush).
// Per-CPU prefixes {0,2} x {0,1,2}: totals 0..4, never a double count.
struct TwoFlushersVsSum : rl::test_suite<TwoFlushersVsSum, 3> {
  Fixture f;
  void before() { f.Make(2, 2); }
  void after() { f.Reset(); }
  void thread(unsigned index) {
    if (index == 0) {
      f.counter->Add(0, 2);
    } else if (index == 1) {
      f.counter->Add(1, 1);
      f.counter->Add(1, 1);
    } else {
      const int64_t v = f.counter->Sum();
      RL_ASSERT(v >= 0 && v <= 4);
    }
  }
};

// CPU 1's writer adds 3 (delta), then CPU 1 goes offline (the fold moves
// the delta into the count). A reader sees 0 or 3, never 6 or a decrease.
struct OfflineFoldVsSum : rl::test_suite<OfflineFoldVsSum, 2> {
  Fixture f;
  void before() { f.Make(2, 8); }
  void after() { f.Reset(); }
  void thread(unsigned index) {
    if (index == 0) {
      f.counter->Add(1, 3);
      RL_ASSERT(f.topo->Offline(1).ok());
      return;
    }
    const int64_t first = f.counter->Sum();
    const int64_t second = f.counter->Sum();
    RL_ASSERT(first == 0 || first == 3);
    RL_ASSERT(second == 0 || second == 3);
    RL_ASSERT(second >= first);
  }
};

bool Run(bool (*sim)(rl::test_params&)) {
  rl::test_params p;
  p.search_type = rl::sched_full;
  p.output_history = false;
  p.execution_depth_limit = 20000;
  const bool ok = sim(p);
  MESSAGE("executions=" << p.executions << " seconds=" << p.seconds);
  return ok;
}

TEST_CASE("percpu_counter: Sum() racing a flush is exact and monotonic") {
  CHECK(Run(&rl::simulate<FlushVsSum<false>>));
}

TEST_CASE("percpu_counter: the checker catches a sum without the flush check") {
  CHECK(Run(&rl::simulate<FlushVsSum<true>>));
}

TEST_CASE("percpu_counter: concurrent flushes of two CPUs") {
  CHECK(Run(&rl::simulate<TwoFlushersVsSum>));
}

TEST_CASE("percpu_counter: the offline fold is seen atomically") {
  CHECK(Run(&rl::simulate<OfflineFoldVsSum>));
}

}  // namespace
}  // namespace percpu
