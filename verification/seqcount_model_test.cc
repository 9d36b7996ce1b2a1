// Model tests of the project's SeqCount and U64Stat: the real primitive
// source (primitives/seqcount.h, primitives/u64_stats.h) compiled with
// PERCPU_MODEL_CHECK, so internal::Atomic is rl::atomic and every execution
// the C++20 memory model allows is explored.
//
// Proof obligations (docs/u64_stats.md): a reader whose retry check passes
// with count 2k has read exactly the data of write section k (no stale data,
// no data of a later section, no half-written section); and each weakened
// order of the recipe breaks that, so the checker must find a failure for
// each mutation of BasicSeqCount's recipe.
#include <cstdint>

#include "doctest/doctest.h"
#include "primitives/seqcount.h"
#include "primitives/u64_stats.h"
#include "relacy/relacy.hpp"
#include "verification/model_params.h"

namespace percpu {
namespace {

using internal::Atomic;
using internal::SeqCountRecipe;

// The mutations of the recipe; each must be caught.
struct NoWriterReleaseFence : SeqCountRecipe {
  static constexpr std::memory_order kWriteBeginFence =
      std::memory_order_relaxed;
};
struct NoReaderAcquireFence : SeqCountRecipe {
  static constexpr std::memory_order kReadRetryFence =
      std::memory_order_relaxed;
};
struct RelaxedClosingStore : SeqCountRecipe {
  static constexpr std::memory_order kWriteEndStore = std::memory_order_relaxed;
};
struct NoReaderAcquireLoad : SeqCountRecipe {
  static constexpr std::memory_order kReadBeginLoad = std::memory_order_relaxed;
};
struct ReaderIgnoresOdd : SeqCountRecipe {
  static constexpr bool kReaderWaitsForEven = false;
};

// One writer runs two sections; section k stores k into both halves. A
// reader accepted with count 2k must see exactly (k, k).
template <typename Recipe, unsigned kSections = 2>
struct SeqCountSections
    : rl::test_suite<SeqCountSections<Recipe, kSections>, 2> {
  BasicSeqCount<Recipe> seq;
  Atomic<uint32_t> lo{0};
  Atomic<uint32_t> hi{0};

  void thread(unsigned index) {
    if (index == 0) {
      for (uint32_t k = 1; k <= kSections; ++k) {
        seq.WriteBegin();
        lo.store(k, std::memory_order_relaxed);
        hi.store(k, std::memory_order_relaxed);
        seq.WriteEnd();
      }
      return;
    }
    for (;;) {
      const uint32_t start = seq.ReadBegin();
      const uint32_t l = lo.load(std::memory_order_relaxed);
      const uint32_t h = hi.load(std::memory_order_relaxed);
      if (!seq.ReadRetry(start)) {
        RL_ASSERT(l == h);
        RL_ASSERT(l == start / 2);
        return;
      }
      internal::SpinPause();
    }
  }
};

TEST_CASE("SeqCount: the recipe passes exhaustively") {
  CHECK(model::CheckExhaustive<SeqCountSections<SeqCountRecipe>>());
}

TEST_CASE("SeqCount: every weakened order is caught") {
  CHECK(model::CheckFindsFailure<SeqCountSections<NoWriterReleaseFence>>());
  CHECK(model::CheckFindsFailure<SeqCountSections<NoReaderAcquireFence>>());
  CHECK(model::CheckFindsFailure<SeqCountSections<RelaxedClosingStore>>());
  CHECK(model::CheckFindsFailure<SeqCountSections<NoReaderAcquireLoad>>());
  CHECK(model::CheckFindsFailure<SeqCountSections<ReaderIgnoresOdd>>());
}

// Three sections. The reader's retry loop recomputes all it uses (start,
// l, h) on each try, so it carries nothing into the next one and
// test_params::stateless_spins applies: a failed try is redundant
// (docs/verification.md, "Stateless retry loops"). 1,120 executions
// (+1,236 pruned) with it, 3,786 (+2,682) without; each mutation is still
// caught.
TEST_CASE("SeqCount: three sections, stateless retries") {
  constexpr auto kAssert = rl::test_result_user_assert_failed;
  CHECK(model::CheckExhaustive<SeqCountSections<SeqCountRecipe, 3>>(true));
  CHECK(model::CheckFindsFailure<SeqCountSections<NoWriterReleaseFence, 3>>(
      kAssert, true));
  CHECK(model::CheckFindsFailure<SeqCountSections<NoReaderAcquireFence, 3>>(
      kAssert, true));
  CHECK(model::CheckFindsFailure<SeqCountSections<RelaxedClosingStore, 3>>(
      kAssert, true));
  CHECK(model::CheckFindsFailure<SeqCountSections<NoReaderAcquireLoad, 3>>(
      kAssert, true));
  CHECK(model::CheckFindsFailure<SeqCountSections<ReaderIgnoresOdd, 3>>(kAssert,
                                                                        true));
}

// U64Stat on the path this build selected (the BUILD file compiles this test
// once as-is and once with PERCPU_FORCE_SEQCOUNT): a writer carries the
// counter across 2^32; a reader's two consistent fetches never see a value
// that was not written, nor go backwards.
struct U64StatCarry : rl::test_suite<U64StatCarry, 2> {
  U64StatsSync sync;
  U64Stat stat{0xffffffffull};

  void thread(unsigned index) {
    if (index == 0) {
      sync.UpdateBegin();
      stat.Inc();  // 0x1'0000'0000: both halves change
      sync.UpdateEnd();
      sync.UpdateBegin();
      stat.Add(0xffffffffull);  // 0x1'ffff'ffff
      sync.UpdateEnd();
      return;
    }
    const uint64_t first = FetchConsistent(sync, [&] { return stat.Read(); });
    const uint64_t second = FetchConsistent(sync, [&] { return stat.Read(); });
    for (uint64_t v : {first, second}) {
      RL_ASSERT(v == 0xffffffffull || v == 0x100000000ull ||
                v == 0x1ffffffffull);
    }
    RL_ASSERT(second >= first);
  }
};

TEST_CASE("U64Stat: no torn or backwards value across the carry") {
  MESSAGE("seqcount path: " << kU64StatsUseSeqcount);
  CHECK(model::CheckExhaustive<U64StatCarry>());
}

// Packets and bytes under a group sync: every snapshot has bytes == 100 *
// packets, on every path.
struct GroupPair : rl::test_suite<GroupPair, 2> {
  U64StatsGroupSync sync;
  U64Stat packets;
  U64Stat bytes;

  void thread(unsigned index) {
    if (index == 0) {
      for (int i = 0; i < 2; ++i) {
        sync.UpdateBegin();
        packets.Inc();
        bytes.Add(100);
        sync.UpdateEnd();
      }
      return;
    }
    uint64_t p, b;
    uint32_t start;
    do {
      start = sync.FetchBegin();
      p = packets.Read();
      b = bytes.Read();
    } while (sync.FetchRetry(start));
    RL_ASSERT(b == 100 * p);
    RL_ASSERT(p <= 2);
  }
};

TEST_CASE("U64StatsGroupSync: a consistent packets/bytes pair") {
  CHECK(model::CheckExhaustive<GroupPair>());
}

}  // namespace
}  // namespace percpu
