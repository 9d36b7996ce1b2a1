#include "primitives/seqcount.h"

#include <atomic>
#include <cstdint>
#include <thread>

#include "doctest/doctest.h"
#include "primitives/contract.h"
#include "primitives/internal/atomic.h"
#include "primitives/internal/test_work.h"

namespace percpu {
namespace {

TEST_CASE("write sections make the count odd, then even") {
  SeqCount seq;
  CHECK(seq.RawCount() == 0);
  seq.WriteBegin();
  CHECK(seq.RawCount() % 2 == 1);
  seq.WriteEnd();
  CHECK(seq.RawCount() == 2);
}

TEST_CASE("a read with no overlapping write does not retry") {
  SeqCount seq;
  const uint32_t start = seq.ReadBegin();
  CHECK_FALSE(seq.ReadRetry(start));
}

TEST_CASE("a write between begin and retry forces a retry") {
  SeqCount seq;
  const uint32_t start = seq.ReadBegin();
  seq.WriteBegin();
  seq.WriteEnd();
  CHECK(seq.ReadRetry(start));
  CHECK_FALSE(seq.ReadRetry(seq.ReadBegin()));
}

// Two data words that the writer always keeps equal; a reader that ever
// accepts unequal words saw a torn snapshot.
TEST_CASE("readers never accept a torn pair while a writer runs") {
  SeqCount seq;
  internal::Atomic<uint32_t> a{0};
  internal::Atomic<uint32_t> b{0};
  std::atomic<bool> stop{false};
  const uint32_t kWrites = testing::Work(uint32_t{200000});

  std::thread writer([&] {
    for (uint32_t i = 1; i <= kWrites; ++i) {
      seq.WriteBegin();
      a.store(i, std::memory_order_relaxed);
      b.store(i, std::memory_order_relaxed);
      seq.WriteEnd();
    }
    stop.store(true, std::memory_order_relaxed);
  });

  uint64_t torn = 0;
  uint64_t reads = 0;
  uint32_t last = 0;
  uint64_t backwards = 0;
  while (!stop.load(std::memory_order_relaxed)) {
    uint32_t start, x, y;
    do {
      start = seq.ReadBegin();
      x = a.load(std::memory_order_relaxed);
      y = b.load(std::memory_order_relaxed);
    } while (seq.ReadRetry(start));
    ++reads;
    if (x != y) ++torn;
    if (x < last) ++backwards;
    last = x;
  }
  writer.join();
  CHECK(torn == 0);
  CHECK(backwards == 0);
  CHECK(reads > 0);
  CHECK(seq.RawCount() == 2 * kWrites);
}

int g_violations = 0;
void CountViolation(const char*) { ++g_violations; }

TEST_CASE("debug builds report two overlapping writers") {
  g_violations = 0;
  ContractViolationHandler previous = SetContractViolationHandler(&CountViolation);
  SeqCount seq;
  seq.WriteBegin();
  seq.WriteBegin();  // a second writer enters while the first is inside
  seq.WriteEnd();
  seq.WriteEnd();
  SetContractViolationHandler(previous);
#if PERCPU_CONTRACT_CHECKS
  CHECK(g_violations == 1);
#else
  // Release builds compile the check away (documented in seqcount.h).
  CHECK(g_violations == 0);
#endif
}

}  // namespace
}  // namespace percpu
