// Model tests of the (packets, bytes) latch of primitives/percpu_pair.h: the
// real internal::LatchRead / LatchLockedAdd / LatchWriteLocked compiled with
// PERCPU_MODEL_CHECK, every C++20 execution explored.
//
// Proof obligations (docs/writers.md, "The pair protocol"):
//   P1 consistency: every pair a reader returns is the state after a prefix
//      of the updates (bytes == 10 * packets for updates of (1, 10));
//   P2 monotonic: a reader's second pair is >= its first;
//   P3 exact: after all threads the pair is (#updates, 10 * #updates), with
//      several fallback writers on one slot (the lock).
// The rseq asm (x86_64) performs the same stores in the same order and is
// not model-checkable (inline asm, kernel restarts); it relies on TSO for
// obligation (a) and (b), see the header.
// Mutant: a writer without the release fence before the data stores
// (obligation (a)) lets a reader accept a torn pair: must be caught.
#include <cstdint>

#include "doctest/doctest.h"
#include "primitives/percpu_pair.h"
#include "relacy/relacy.hpp"
#include "verification/model_params.h"

namespace percpu {
namespace {

using internal::PairLatch;

void Check(const PacketsBytes& r, uint64_t max_updates) {
  RL_ASSERT(r.bytes == 10 * r.packets);  // P1
  RL_ASSERT(r.packets <= max_updates);
}

// Two fallback writers, one update each, on one slot; a reader reads twice.
struct TwoWritersOneSlot : rl::test_suite<TwoWritersOneSlot, 3> {
  PairLatch s;
  void after() {
    const PacketsBytes r = internal::LatchRead(s);
    RL_ASSERT(r.packets == 2 && r.bytes == 20);  // P3
  }
  void thread(unsigned index) {
    if (index < 2) {
      internal::LatchLockedAdd(s, 1, 10);
      return;
    }
    const PacketsBytes a = internal::LatchRead(s);
    const PacketsBytes b = internal::LatchRead(s);
    Check(a, 2);
    Check(b, 2);
    RL_ASSERT(b.packets >= a.packets);  // P2
  }
};

// One writer, three updates (the third overwrites the copy a slow reader of
// version 1 may be reading); a reader reads once.
template <bool kFence>
struct WriterLapsReader : rl::test_suite<WriterLapsReader<kFence>, 2> {
  PairLatch s;
  void MutantWrite() {
    // LatchWriteLocked WITHOUT the release fence before the data stores.
    const uint64_t v = s.version.load(std::memory_order_relaxed);
    auto* cur = s.copy[v & 1];
    auto* next = s.copy[(v + 1) & 1];
    const uint64_t p = cur[0].load(std::memory_order_relaxed) + 1;
    const uint64_t b = cur[1].load(std::memory_order_relaxed) + 10;
    next[0].store(p, std::memory_order_relaxed);
    next[1].store(b, std::memory_order_relaxed);
    s.version.store(v + 1, std::memory_order_release);  // Pairs with: LatchRead's acquire load.
  }
  void thread(unsigned index) {
    if (index == 0) {
      for (int i = 0; i < 3; ++i) {
        if (kFence) {
          (void)internal::LatchWriteLocked(s, 1, 10, false);
        } else {
          MutantWrite();
        }
      }
      return;
    }
    Check(internal::LatchRead(s), 3);
  }
};

TEST_CASE("pair latch: several fallback writers, consistent and exact") {
  CHECK(model::CheckExhaustive<TwoWritersOneSlot>());
}

TEST_CASE("pair latch: a writer lapping a reader never yields a torn pair") {
  CHECK(model::CheckExhaustive<WriterLapsReader<true>>());
}

TEST_CASE("pair latch: the checker catches a writer without the fence") {
  CHECK(model::CheckFindsFailure<WriterLapsReader<false>>());
}

}  // namespace
}  // namespace percpu
