// Model tests of ThreadCounter's exit fold: the real protocol functions
// of primitives/per_thread.h (PerThreadOwnerAdd, PerThreadExitFold,
// PerThreadSum) compiled with PERCPU_MODEL_CHECK, so their atomics and the
// SeqCount they use are rl::atomic and every C++20 execution is explored.
//
// Proof obligations (docs/writers.md, "The exit fold"):
//   * no loss, no double count: every Sum() returns a value the counter had
//     at some point -- acc + slot of one consistent state of the owner --
//     never acc_new + slot_old (double count) or acc_old + slot_new (loss);
//   * a Sum() that starts after the fold completed (observed through a
//     release/acquire flag) sees the whole count;
//   * sums by one reader never go backwards.
// And a mutation: the same fold and sum WITHOUT the seqcount must be caught.
//
// The rseq asm cannot be model-checked (inline asm and kernel restarts are
// outside the C++ memory model); see docs/writers.md.
#include <cstdint>

#include "doctest/doctest.h"
#include "primitives/per_thread.h"
#include "relacy/relacy.hpp"

namespace percpu {
namespace {

using internal::Atomic;

// Thread 0 owns a slot: adds 1, adds 2, exits (folds). Thread 1 owns a
// second slot and adds 4 (a live thread, never folds). Thread 2 sums twice.
// Consistent totals are sums of {0,1,3} (owner 0) and {0,4} (owner 1).
template <bool kUseSeqcount>
struct ExitFoldVsSum : rl::test_suite<ExitFoldVsSum<kUseSeqcount>, 3> {
  SeqCount seq;
  Atomic<uint64_t> acc{0};
  Atomic<uint64_t> slot0{0};
  Atomic<uint64_t> slot1{0};
  Atomic<int> folded{0};

  static bool Consistent(uint64_t s) {
    const uint64_t own0 = s & 3;             // 0, 1 or 3 from thread 0
    const uint64_t own1 = s & ~uint64_t{3};  // 0 or 4 from thread 1
    return (own0 == 0 || own0 == 1 || own0 == 3) && (own1 == 0 || own1 == 4);
  }

  uint64_t Sum() {
    if (kUseSeqcount) {
      return internal::PerThreadSum(seq, acc, [this](auto&& f) {
        f(slot0);
        f(slot1);
      });
    }
    // Mutant: no read section.
    return acc.load(std::memory_order_relaxed) +
           slot0.load(std::memory_order_relaxed) +
           slot1.load(std::memory_order_relaxed);
  }

  void thread(unsigned index) {
    if (index == 0) {
      internal::PerThreadOwnerAdd(slot0, 1);
      internal::PerThreadOwnerAdd(slot0, 2);
      if (kUseSeqcount) {
        internal::PerThreadExitFold(seq, acc, slot0);
      } else {
        // Mutant: the same moves without a write section.
        const uint64_t v = slot0.load(std::memory_order_relaxed);
        acc.store(acc.load(std::memory_order_relaxed) + v,
                  std::memory_order_relaxed);
        slot0.store(0, std::memory_order_relaxed);
      }
      // Pairs with: acquire load of folded by the reader.
      folded.store(
          1, std::memory_order_release);  // Pairs with: reader's acquire load.
    } else if (index == 1) {
      internal::PerThreadOwnerAdd(slot1, 4);
    } else {
      // Pairs with: release store of folded by the owner.
      const int done = folded.load(
          std::memory_order_acquire);  // Pairs with: owner's release store.
      const uint64_t s1 = Sum();
      RL_ASSERT(Consistent(s1));
      if (done) RL_ASSERT((s1 & 3) == 3);  // fold completed: nothing lost
      const uint64_t s2 = Sum();
      RL_ASSERT(Consistent(s2));
      RL_ASSERT(s2 >= s1);
    }
  }

  void after() {
    RL_ASSERT(acc.load(std::memory_order_relaxed) == 3);
    RL_ASSERT(slot0.load(std::memory_order_relaxed) == 0);
    RL_ASSERT(Sum() == 7);
  }
};

// Slot reuse across threads (issue 12 item 1): T0 owns the slot, adds 1
// and exits (exit fold), then releases the registry mutex; T1 takes the
// SAME slot (mutex acquired after T0's release: modelled as release/acquire
// on an atomic, the checker has no mutex model) and adds 4; T2 sums twice.
// Consistent totals: {0, 1, 5}. The mutant drops the take-slot fence: a
// reader can then see acc_old + slot_new == 4. Failed on main at 4257396
// (no fence existed then).
template <bool kTakeFence>
struct SlotReuseAcrossThreads
    : rl::test_suite<SlotReuseAcrossThreads<kTakeFence>, 3> {
  SeqCount seq;
  Atomic<uint64_t> acc{0};
  Atomic<uint64_t> slot{0};
  Atomic<int> registry_mutex{0};  // 1 = released by T0 after its exit fold

  uint64_t Sum() {
    return internal::PerThreadSum(seq, acc, [this](auto&& f) { f(slot); });
  }

  void thread(unsigned index) {
    if (index == 0) {
      internal::PerThreadOwnerAdd(slot, 1);
      internal::PerThreadExitFold(seq, acc, slot);
      // The registry mutex's unlock. Pairs with: T1's acquire load.
      registry_mutex.store(1, std::memory_order_release);  // Pairs with: T1's acquire load.
    } else if (index == 1) {
      // The registry mutex's lock. Pairs with: T0's release store.
      if (registry_mutex.load(std::memory_order_acquire) == 1) {  // Pairs with: T0's release store.
        if (kTakeFence) internal::PerThreadTakeSlot();
        internal::PerThreadOwnerAdd(slot, 4);
      }
    } else {
      const uint64_t s1 = Sum();
      const uint64_t s2 = Sum();
      for (uint64_t s : {s1, s2}) RL_ASSERT(s == 0 || s == 1 || s == 5);
      RL_ASSERT(s2 >= s1);
    }
  }
};

TEST_CASE("PerThread slot reuse across threads: exact, exhaustively") {
  rl::test_params p;
  p.search_type = rl::sched_full;
  p.print_summary = false;
  CHECK(rl::simulate<SlotReuseAcrossThreads<true>>(p));
  CHECK(p.test_result == rl::test_result_success);
  MESSAGE(p.executions << " executions explored");
  CHECK(p.executions > 0);
}

TEST_CASE("mutation: slot reuse without the take-slot fence is caught") {
  rl::test_params p;
  p.search_type = rl::sched_full;
  p.print_summary = false;
  p.output_history = false;
  p.output_stream = nullptr;
  CHECK_FALSE(rl::simulate<SlotReuseAcrossThreads<false>>(p));
  CHECK(p.test_result == rl::test_result_user_assert_failed);
}

TEST_CASE("PerThread exit fold vs concurrent Sum: exact, exhaustively") {
  rl::test_params p;
  p.search_type = rl::sched_full;
  p.print_summary = false;
  CHECK(rl::simulate<ExitFoldVsSum<true>>(p));
  CHECK(p.test_result == rl::test_result_success);
  MESSAGE(p.executions << " executions explored");
  CHECK(p.executions > 0);
}

TEST_CASE("mutation: the fold without the seqcount is caught") {
  rl::test_params p;
  p.search_type = rl::sched_full;
  p.print_summary = false;
  p.output_history = false;
  p.output_stream = nullptr;
  CHECK_FALSE(rl::simulate<ExitFoldVsSum<false>>(p));
  CHECK(p.test_result == rl::test_result_user_assert_failed);
}

}  // namespace
}  // namespace percpu
