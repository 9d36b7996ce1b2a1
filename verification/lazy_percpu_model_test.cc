// Model tests of LazyFlowStats (primitives/lazy_percpu.h) compiled with
// PERCPU_MODEL_CHECK: the real lazy slot allocation, publication (release
// store of the slot pointer, release fetch_or of the allocated bitmap) and
// the acquire-loading fold, with every C++20 execution explored.
//
// Proof obligations (docs/fold_and_hotplug.md, section 5):
//   * a reader that finds a slot sees it initialized (the checker reports an
//     access to an atomic whose initialization is not visible), and counts
//     only values that were written;
//   * totals never go backwards for one reader;
//   * an update whose slot cannot be allocated lands in the shared slot 0
//     and is not lost, even while CPU 0 writes slot 0 concurrently.
#include <cstdint>
#include <memory>
#include <new>

#include "doctest/doctest.h"
#include "primitives/lazy_percpu.h"
#include "relacy/relacy.hpp"

namespace percpu {
namespace {

struct PublicationVsRead : rl::test_suite<PublicationVsRead, 2> {
  std::unique_ptr<LazyFlowStats> st;
  void before() { st = std::move(*LazyFlowStats::Create(2)); }
  void after() {
    RL_ASSERT(st->Read().packets == 1);
    st.reset();
  }
  void thread(unsigned index) {
    if (index == 0) {
      st->Update(1, 10, 5, 0x2);  // CPU 1's first write: allocate, publish
      return;
    }
    const FlowStatsValues a = st->Read();
    const FlowStatsValues b = st->Read();
    for (const FlowStatsValues& v : {a, b}) {
      RL_ASSERT(v.packets <= 1);
      RL_ASSERT(v.bytes == 0 || v.bytes == 10);
      RL_ASSERT(v.used == 0 || v.used == 5);
      RL_ASSERT(v.tcp_flags == 0 || v.tcp_flags == 0x2);
    }
    RL_ASSERT(b.packets >= a.packets && b.bytes >= a.bytes);
  }
};

// CPU 1's slot allocation always fails: its update goes to slot 0, which
// CPU 0 updates at the same time. Both RMWs must survive.
struct FallbackSharesSlot0 : rl::test_suite<FallbackSharesSlot0, 2> {
  std::unique_ptr<LazyFlowStats> st;
  void before() {
    LazySlotAllocator a = LazySlotAllocator::Default();
    a.allocate = [](void*, size_t size, size_t align, int cpu) -> void* {
      if (cpu != 0) return nullptr;
      return ::operator new(size, std::align_val_t(align), std::nothrow);
    };
    st = std::move(*LazyFlowStats::Create(2, a));
  }
  void after() {
    const FlowStatsValues v = st->Read();
    RL_ASSERT(v.packets == 2);
    RL_ASSERT(v.bytes == 3);
    RL_ASSERT(v.used == 7);
    RL_ASSERT(v.tcp_flags == 0x3);
    RL_ASSERT(st->fallback_updates() == 1);
    st.reset();
  }
  void thread(unsigned index) {
    if (index == 0) {
      st->Update(0, 1, 7, 0x1);
    } else {
      st->Update(1, 2, 6, 0x2);
    }
  }
};

bool Run(bool (*sim)(rl::test_params&)) {
  rl::test_params p;
  p.search_type = rl::sched_full;
  p.output_history = false;
  const bool ok = sim(p);
  MESSAGE("executions=" << p.executions << " seconds=" << p.seconds);
  return ok;
}

TEST_CASE("lazy per-CPU stats: readers racing slot publication") {
  CHECK(Run(&rl::simulate<PublicationVsRead>));
}

TEST_CASE("lazy per-CPU stats: a failed allocation falls back to slot 0") {
  CHECK(Run(&rl::simulate<FallbackSharesSlot0>));
}

}  // namespace
}  // namespace percpu
