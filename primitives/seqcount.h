// SeqCount: a sequence counter that lets readers take a consistent snapshot
// of data that one writer updates, without the readers ever writing shared
// memory (the kernel's seqcount_t, used by u64_stats_sync on 32-bit).
//
// Usage constraints (as in the kernel):
//   * Exactly one writer at a time. Writers must be serialized by the caller
//     (one thread per object, a per-CPU slot, or an external lock). Debug
//     builds report two overlapping write sections through contract.h.
//   * Write sections must not nest and must be short: readers spin while a
//     write section is open. A writer must not block inside one. A writer
//     must never be interrupted by a reader of the same object on the same
//     thread (for example a signal handler that reads): that reader would
//     spin forever.
//   * The protected data must be atomics accessed with relaxed order
//     (internal::Atomic<T>), never plain memory: a reader's loads race with
//     the writer's stores by design, and only atomics make that race defined
//     (Boehm, "Can seqlocks get along with programming language memory
//     models?", MSPC 2012). The seqcount orders them.
//
// Memory-ordering contract:
//   * Every value a reader obtains between ReadBegin() and a ReadRetry()
//     that returns false was written by write sections that completed before
//     the reader's ReadBegin() load, and by no section that began later.
//   * The writer pays no lock-prefixed instruction: the count is advanced by
//     a relaxed load and store (it has one writer), one release fence and one
//     release store. On x86 all of them compile to plain movs.
//
// Writer:                          Reader:
//   seq.WriteBegin();                uint32_t start;
//   a.store(x, relaxed);             do {
//   b.store(y, relaxed);               start = seq.ReadBegin();
//   seq.WriteEnd();                    x = a.load(relaxed);
//                                      y = b.load(relaxed);
//                                    } while (seq.ReadRetry(start));
//
// See docs/u64_stats.md for the ordering table and the model tests that
// check it (verification/seqcount_model_test.cc).
#ifndef PERCPU_PRIMITIVES_SEQCOUNT_H_
#define PERCPU_PRIMITIVES_SEQCOUNT_H_

#include <atomic>
#include <cstdint>

#include "primitives/contract.h"
#include "primitives/internal/atomic.h"

namespace percpu {
namespace internal {

// The orders of the correct recipe. Only the model checker's mutation tests
// instantiate BasicSeqCount with anything else, to prove that the checker
// catches each weakened variant of this very source.
struct SeqCountRecipe {
  // Orders the odd count before the section's data stores.
  static constexpr std::memory_order kWriteBeginFence =
      std::memory_order_release;  // Pairs with: kReadRetryFence.
  // Publishes the section's data stores with the even count.
  static constexpr std::memory_order kWriteEndStore =
      std::memory_order_release;  // Pairs with: kReadBeginLoad.
  // Makes data stored before the observed even count visible.
  static constexpr std::memory_order kReadBeginLoad =
      std::memory_order_acquire;  // Pairs with: kWriteEndStore.
  // Orders the reader's data loads before its re-check of the count.
  static constexpr std::memory_order kReadRetryFence =
      std::memory_order_acquire;  // Pairs with: kWriteBeginFence.
  // A reader that starts inside a write section waits for it to end.
#if defined(PERCPU_PLANTED_BUG_SEQCOUNT_READER_IGNORES_ODD)
  // Planted bug (--config=planted-bug): proves the stress suite can fail.
  static constexpr bool kReaderWaitsForEven = false;
#else
  static constexpr bool kReaderWaitsForEven = true;
#endif
};

}  // namespace internal

template <typename Recipe = internal::SeqCountRecipe>
class BasicSeqCount {
 public:
  BasicSeqCount() = default;
  BasicSeqCount(const BasicSeqCount&) = delete;
  BasicSeqCount& operator=(const BasicSeqCount&) = delete;

  // Opens a write section: the count becomes odd.
  void WriteBegin() {
#if PERCPU_CONTRACT_CHECKS
    // Relaxed suffices: the RMW's atomicity alone tells overlapping writers
    // apart; nothing is published through this counter.
    if (writers_.fetch_add(1, std::memory_order_relaxed) != 0) {
      internal::ReportContractViolation(
          "SeqCount::WriteBegin: two writers in one write section "
          "(the seqcount has a single-writer contract)");
    }
#endif
    // Relaxed load suffices: this thread is the only writer of seq_, so it
    // reads its own latest store.
    const uint32_t seq = seq_.load(std::memory_order_relaxed);
    // Relaxed store: ordered before the data stores by the fence below.
    seq_.store(seq + 1, std::memory_order_relaxed);
    // Orders the odd count before the data stores that follow.
    // Pairs with: acquire fence in ReadRetry(). A reader whose data load
    // observes one of this section's stores then sees the odd count (or a
    // later one) when it re-reads seq_, and retries.
    internal::ThreadFence(Recipe::kWriteBeginFence);
  }

  // Closes the write section: the count becomes even again.
  void WriteEnd() {
    // Relaxed load suffices: single writer, see WriteBegin().
    const uint32_t seq = seq_.load(std::memory_order_relaxed);
    // Release: publishes the section's data stores with the even count.
    // Pairs with: acquire load of seq_ in ReadBegin().
    seq_.store(seq + 1, Recipe::kWriteEndStore);
#if PERCPU_CONTRACT_CHECKS
    // Relaxed: see WriteBegin().
    writers_.fetch_sub(1, std::memory_order_relaxed);
#endif
  }

  // Starts a read section and returns the count to hand to ReadRetry().
  // Spins while a write section is open.
  uint32_t ReadBegin() const {
    for (;;) {
      // Acquire: data stored by every section that ended before this count
      // is visible to the loads that follow.
      // Pairs with: release store of seq_ in WriteEnd().
      const uint32_t seq = seq_.load(Recipe::kReadBeginLoad);
      if (!Recipe::kReaderWaitsForEven || (seq & 1) == 0) return seq;
      internal::SpinPause();
    }
  }

  // Ends a read section. Returns true if a write section overlapped it, in
  // which case the values read must be discarded and the read repeated.
  bool ReadRetry(uint32_t start) const {
    // Acquire fence: orders the section's data loads before the re-read of
    // seq_ below. Pairs with: release fence in WriteBegin().
    internal::ThreadFence(Recipe::kReadRetryFence);
    // Relaxed suffices: ordered after the data loads by the fence above.
    return seq_.load(std::memory_order_relaxed) != start;
  }

  // The raw count, for tests and diagnostics (relaxed: no ordering implied).
  uint32_t RawCount() const { return seq_.load(std::memory_order_relaxed); }

 private:
  internal::Atomic<uint32_t> seq_{0};
  // Open write sections, counted by debug builds only. Present in every
  // build so that the layout does not depend on PERCPU_CONTRACT_CHECKS: a
  // debug translation unit and a release one agree on sizeof(SeqCount) and
  // on every struct that embeds one (ODR). A release writer leaves it 0, so
  // a debug writer of the same object never sees a false second writer.
  mutable internal::Atomic<uint32_t> writers_{0};
};

using SeqCount = BasicSeqCount<>;

}  // namespace percpu

#endif  // PERCPU_PRIMITIVES_SEQCOUNT_H_
