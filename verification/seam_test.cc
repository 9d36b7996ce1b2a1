// The project's atomics seam compiles against the checker and behaves:
// percpu::internal::Atomic / ThreadFence / SpinPause under PERCPU_MODEL_CHECK.
#ifndef PERCPU_MODEL_CHECK
#define PERCPU_MODEL_CHECK 1
#endif
#include <cstdint>
#include <mutex>  // std::lock_guard

#include "doctest/doctest.h"
#include "primitives/internal/atomic.h"
#include "primitives/internal/mutex.h"

namespace {

using percpu::internal::Atomic;

// A class shaped like the primitives: atomics initialized by constructor.
class Published {
 public:
  void Publish(uint64_t v) {
    value_.store(v, std::memory_order_relaxed);
    percpu::internal::ThreadFence(std::memory_order_release);
    ready_.store(true, std::memory_order_relaxed);
  }
  uint64_t Wait() {
    while (!ready_.load(std::memory_order_relaxed))
      percpu::internal::SpinPause();
    percpu::internal::ThreadFence(std::memory_order_acquire);
    return value_.load(std::memory_order_relaxed);
  }

 private:
  Atomic<uint64_t> value_{0};
  Atomic<bool> ready_{false};
};

struct SeamTest : rl::test_suite<SeamTest, 2> {
  Published p;
  Atomic<uint32_t> counter{0};
  void thread(unsigned i) {
    if (i == 0) {
      p.Publish(42);
    } else {
      RL_ASSERT(p.Wait() == 42);
    }
    counter.fetch_add(1, std::memory_order_relaxed);
  }
  void after() { RL_ASSERT(counter.load(std::memory_order_relaxed) == 2); }
};

TEST_CASE("seam: primitives' Atomic maps onto rl::atomic") {
  rl::test_params p;
  p.search_type = rl::sched_full;  // exhaustive
  CHECK(rl::simulate<SeamTest>(p));
  CHECK(p.executions > 0);
}

// internal::Mutex is the checker's mutex: the counter under it is race
// free, and the same counter with one thread skipping the lock races.
template <bool kBothLock>
struct MutexSeam : rl::test_suite<MutexSeam<kBothLock>, 2> {
  percpu::internal::Mutex mu;
  rl::var<int> n;
  void before() { n($) = 0; }
  void thread(unsigned i) {
    if (kBothLock || i == 0) {
      std::lock_guard<percpu::internal::Mutex> lock(mu);
      n($) = n($) + 1;
    } else {
      n($) = n($) + 1;
    }
  }
  void after() { RL_ASSERT(n($) == 2); }
};

TEST_CASE("seam: internal::Mutex maps onto rl::mutex") {
  rl::test_params p;
  p.search_type = rl::sched_full;  // exhaustive
  CHECK(rl::simulate<MutexSeam<true>>(p));
  rl::test_params bad;
  bad.search_type = rl::sched_full;  // exhaustive
  bad.output_history = false;
  CHECK_FALSE(rl::simulate<MutexSeam<false>>(bad));
  CHECK(bad.test_result == rl::test_result_data_race);
}

}  // namespace
