// Suites with more than 15 threads, linked against //verification:relacy_wide
// (the checker built with RL_MAX_THREADS=64, Relacy-style: the maximum is
// fixed when the checker is built). The default build rejects them as
// INCONSISTENT TEST SUITE (conformance_test).
#include <sstream>
#include <string>

#include "doctest/doctest.h"
#include "relacy/relacy.hpp"
#include "test_support.h"

namespace {

// 20 threads: a release/acquire hand-off between threads 17 and 18 orders a
// plain variable (a relaxed one races), and thread 0 and 19 add.
template <bool kRelease>
struct ManyThreads : rl::test_suite<ManyThreads<kRelease>, 20> {
  rl::atomic<int> own[20];
  rl::atomic<int> flag{0};
  rl::atomic<int> n{0};
  rl::var<int> data{0};
  void thread(unsigned i) {
    own[i].store(1, rl::mo_relaxed);  // independent work of every thread
    if (i == 17) {
      data($) = 1;
      flag.store(1, kRelease ? rl::mo_release : rl::mo_relaxed);
    } else if (i == 18) {
      if (flag.load(kRelease ? rl::mo_acquire : rl::mo_relaxed) == 1)
        RL_ASSERT(data($) == 1);
    } else if (i == 0 || i == 19) {
      n.fetch_add(1, rl::mo_relaxed);
    }
  }
  void after() { RL_ASSERT(n.load(rl::mo_relaxed) == 2); }
};
TEST_CASE("threads: 20 threads, release/acquire between threads 17 and 18") {
  VERDICT(rl::test_result_success, ManyThreads<true>);
  VERDICT(rl::test_result_data_race, ManyThreads<false>);
}

struct ManyThreadsLostUpdate : rl::test_suite<ManyThreadsLostUpdate, 20> {
  rl::atomic<int> n{0};
  void thread(unsigned i) {
    if (i == 0 || i == 19) n.store(n.load(rl::mo_relaxed) + 1, rl::mo_relaxed);
  }
  void after() { RL_ASSERT(n.load(rl::mo_relaxed) == 2); }
};
TEST_CASE("threads: a lost update between threads 0 and 19 is found") {
  VERDICT(rl::test_result_user_assert_failed, ManyThreadsLostUpdate);
}

// Dynamic threads count against the same maximum.
struct WideDynamic : rl::test_suite<WideDynamic, 1> {
  static constexpr unsigned dynamic_thread_count = 40;
  rl::atomic<int> n{0};
  static void* Inc(void* p) {
    static_cast<WideDynamic*>(p)->n.fetch_add(1, rl::mo_relaxed);
    return nullptr;
  }
  void thread(unsigned) {
    rl::dyn_thread t[40];
    for (auto& x : t) x.start(&Inc, this);
    for (auto& x : t) x.join();
    RL_ASSERT(n.load(rl::mo_relaxed) == 40);
  }
};
TEST_CASE("threads: 40 dynamic threads joined") {
  rl::test_params p;
  p.search_type = rl::sched_random;  // 40! orders: sample them
  p.iteration_count = 200;
  p.print_summary = false;
  CHECK(rl::simulate<WideDynamic>(p));
  CHECK(p.test_result == rl::test_result_success);
}

struct TooManyThreads : rl::test_suite<TooManyThreads, 64> {
  void thread(unsigned) {}
};
TEST_CASE("threads: more than 63 is INCONSISTENT TEST SUITE") {
  VERDICT(rl::test_result_inconsistent_test_suite, TooManyThreads);
}

}  // namespace
