// Model tests of FlowStats (primitives/lazy_percpu.h) compiled with
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
//
// Mutants (BasicFlowStats with a weakened internal::FlowStatsRecipe):
// a publication or a read without any release/acquire pair lets a reader
// access a slot whose construction does not happen before it, which the
// checker reports as a data race. Each order alone is covered by its partner
// (the bitmap's release/acquire orders the slot pointer too), so weakening
// one of them is not a bug, and the checker must not report one.
#include <cstdint>
#include <memory>
#include <new>

#include "doctest/doctest.h"
#include "primitives/lazy_percpu.h"
#include "relacy/relacy.hpp"
#include "verification/model_params.h"

namespace percpu {
namespace {

using internal::FlowStatsRecipe;

constexpr std::memory_order kRelaxed = std::memory_order_relaxed;

// The mutations of the recipe.
struct RelaxedPublication : FlowStatsRecipe {  // no release at all
  static constexpr std::memory_order kSlotStore = kRelaxed;
  static constexpr std::memory_order kBitmapRmw = kRelaxed;
};
struct RelaxedReads : FlowStatsRecipe {  // no acquire at all
  static constexpr std::memory_order kBitmapLoad = kRelaxed;
  static constexpr std::memory_order kSlotLoad = kRelaxed;
};
// Single weakenings: still correct (see the header comment).
struct RelaxedSlotStore : FlowStatsRecipe {
  static constexpr std::memory_order kSlotStore = kRelaxed;
};
struct RelaxedBitmapRmw : FlowStatsRecipe {
  static constexpr std::memory_order kBitmapRmw = kRelaxed;
};
struct RelaxedBitmapLoad : FlowStatsRecipe {
  static constexpr std::memory_order kBitmapLoad = kRelaxed;
};
struct RelaxedSlotLoad : FlowStatsRecipe {
  static constexpr std::memory_order kSlotLoad = kRelaxed;
};

template <typename Recipe>
struct PublicationVsRead : rl::test_suite<PublicationVsRead<Recipe>, 2> {
  std::unique_ptr<BasicFlowStats<Recipe>> st;
  void before() { st = std::move(*BasicFlowStats<Recipe>::Create(2)); }
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
  std::unique_ptr<FlowStats> st;
  void before() {
    LazySlotAllocator a = LazySlotAllocator::Default();
    a.allocate = [](void*, size_t size, size_t align, int cpu) -> void* {
      if (cpu != 0) return nullptr;
      return ::operator new(size, std::align_val_t(align), std::nothrow);
    };
    st = std::move(*FlowStats::Create(2, a));
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

TEST_CASE("lazy per-CPU stats: readers racing slot publication") {
  CHECK(model::CheckExhaustive<PublicationVsRead<FlowStatsRecipe>>());
}

TEST_CASE("lazy per-CPU stats: unordered publication is caught") {
  CHECK(model::CheckFindsFailure<PublicationVsRead<RelaxedPublication>>(
      rl::test_result_data_race));
  CHECK(model::CheckFindsFailure<PublicationVsRead<RelaxedReads>>(
      rl::test_result_data_race));
}

TEST_CASE("lazy per-CPU stats: each publication order alone suffices") {
  CHECK(model::CheckExhaustive<PublicationVsRead<RelaxedSlotStore>>());
  CHECK(model::CheckExhaustive<PublicationVsRead<RelaxedBitmapRmw>>());
  CHECK(model::CheckExhaustive<PublicationVsRead<RelaxedBitmapLoad>>());
  CHECK(model::CheckExhaustive<PublicationVsRead<RelaxedSlotLoad>>());
}

TEST_CASE("lazy per-CPU stats: a failed allocation falls back to slot 0") {
  CHECK(model::CheckExhaustive<FallbackSharesSlot0>());
}

}  // namespace
}  // namespace percpu
