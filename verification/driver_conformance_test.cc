// Conformance of what a Relacy test driver and Relacy's own test programs
// (dvyukov/relacy test/) use besides the memory model: the driver's
// spellings (rl::simulate_f arrays, rl::format, rl::ostringstream,
// params.test_name), rl::debug_info_param, RL_VERIFY, assert(),
// rl::hash_ptr, lock holders taking `$`, timed condition-variable waits,
// mutexes as resources, and condition variables whose notify wakes only
// the threads already waiting. Each case has the verdict Relacy gives
// (docs/verification.md, "Relacy's own tests side by side").
#include <set>
#include <string>
#include <tuple>

#include "doctest/doctest.h"
#include "relacy/relacy_std.hpp"
#include "test_support.h"

namespace {

using rl_test::Full;

// ------------------------------------------------------------- driver

struct Trivial : rl::test_suite<Trivial, 1> {
  void thread(unsigned) {}
};
struct AssertFails : rl::test_suite<AssertFails, 1,
                                    rl::test_result_user_assert_failed> {
  void thread(unsigned) {
    int x = 1;
    assert(x == 2);  // Relacy's assert: a verdict, not an abort
  }
};

TEST_CASE("driver: an array of &rl::simulate<T> runs each suite") {
  rl::simulate_f tests[] = {&rl::simulate<Trivial>,
                            &rl::simulate<AssertFails>};
  for (rl::simulate_f run : tests) {
    for (unsigned sched = 0; sched != rl::sched_count; ++sched) {
      rl::ostringstream out;
      rl::test_params p;
      p.search_type = static_cast<rl::scheduler_type_e>(sched);
      p.output_stream = &out;
      p.progress_stream = &out;
      CHECK(std::string(rl::format(p.search_type)).size() > 0);
      // True when the verdict is the suite's expected one.
      CHECK(run(p));
      CHECK(!p.test_name.empty());  // filled in, as Relacy does
    }
  }
}

TEST_CASE("driver: $ is noexcept and debug_info_param names it") {
  static_assert(noexcept($));
  auto line = [](rl::debug_info_param info) { return info.line_; };
  CHECK(line($) == __LINE__);
}

struct VerifyCompiledOut : rl::test_suite<VerifyCompiledOut, 1> {
  int Pick(int i) {
    switch (i) {
      default:
        RL_VERIFY(false);  // Relacy's own check: no verdict by default
        [[fallthrough]];
      case 0:
        return 1;
    }
  }
  void thread(unsigned) { RL_ASSERT(Pick(5) == 1); }
};
TEST_CASE("driver: RL_VERIFY is compiled out, as in Relacy") {
  VERDICT(rl::test_result_success, VerifyCompiledOut);
}

// rl::hash_ptr numbers addresses by first use within an execution: five
// fresh blocks in a table of 4 collide (Relacy's test_addr_hash2).
struct HashCollides
    : rl::test_suite<HashCollides, 1, rl::test_result_until_condition_hit> {
  std::atomic<int> table[4];
  void before() {
    for (auto& t : table) t.store(0, std::memory_order_relaxed);
  }
  void thread(unsigned) {
    for (int i = 0; i != 5; ++i) {
      void* p = malloc(1);
      const size_t idx = rl::hash_ptr(p, 4);
      RL_ASSERT(idx == rl::hash_ptr(p, 4));  // stable within the execution
      free(p);
      RL_UNTIL(table[idx].exchange(1, std::memory_order_relaxed));
    }
  }
};
TEST_CASE("driver: rl::hash_ptr is stable and numbers fresh blocks") {
  VERDICT(rl::test_result_until_condition_hit, HashCollides);
}

// ------------------------------------------------------------ lock holders

struct LocksWithInfo : rl::test_suite<LocksWithInfo, 3> {
  std::mutex a, b;
  rl::var<int> n;
  void before() { n($) = 0; }
  void thread(unsigned i) {
    if (i == 0) {
      std::unique_lock<std::mutex> lock(a, $);
      std::lock_guard<std::mutex> guard(b, $);
      n($) += 1;
    } else if (i == 1) {
      std::scoped_lock<std::mutex, std::mutex> both(b, a);  // other order
      n($) += 1;
    } else {
      std::unique_lock<std::mutex> lock(a, std::defer_lock);
      while (!lock.try_lock($)) rl::yield(1, $);
      std::lock_guard<std::mutex> guard(b);
      n($) += 1;
    }
  }
  void after() { RL_ASSERT(n($) == 3); }
};
TEST_CASE("locks: unique_lock/lock_guard take $, scoped_lock avoids deadlock") {
  VERDICT(rl::test_result_success, LocksWithInfo);
}

// ------------------------------------------------------- mutex resources

struct DestroyHeld : rl::test_suite<DestroyHeld, 1,
                                    rl::test_result_destroying_owned_mutex> {
  void thread(unsigned) {
    std::mutex* m = new std::mutex;
    m->lock($);
    delete m;
  }
};
TEST_CASE("mutex: destroying a held mutex is DESTROYING OWNED MUTEX") {
  VERDICT(rl::test_result_destroying_owned_mutex, DestroyHeld);
}

struct MutexNeverDestroyed
    : rl::test_suite<MutexNeverDestroyed, 1, rl::test_result_resource_leak> {
  void thread(unsigned) {
    char* buf = new char[sizeof(std::mutex)];
    new (buf) std::mutex();
    delete[] buf;  // the mutex's destructor never ran
  }
};
TEST_CASE("mutex: freeing a mutex never destroyed is a RESOURCE LEAK") {
  VERDICT(rl::test_result_resource_leak, MutexNeverDestroyed);
}

// C code: a pthread mutex in malloc'd memory, initialized, destroyed and
// freed without a C++ destructor. Its resource is *_init / *_destroy's.
struct CMutexInMalloc : rl::test_suite<CMutexInMalloc, 1> {
  void thread(unsigned) {
    pthread_mutex_t* m =
        static_cast<pthread_mutex_t*>(malloc(sizeof(pthread_mutex_t)));
    pthread_mutex_init(m, nullptr);
    pthread_mutex_lock(m);
    pthread_mutex_unlock(m);
    pthread_mutex_destroy(m);
    free(m);
  }
};
TEST_CASE("mutex: a malloc'd pthread mutex destroyed and freed is no leak") {
  VERDICT(rl::test_result_success, CMutexInMalloc);
}

// ---------------------------------------------------- condition variables

// Relacy's test_condvar2 shape: thread 2 waits again after a wake-up; the
// notify_all meant for thread 1, which was already waiting, must not be
// taken by it. Until 0.2.0 it was (a count of wake-ups): a false DEADLOCK
// within the first random executions.
struct NotifyAllWakesWaiters : rl::test_suite<NotifyAllWakesWaiters, 3> {
  rl::var<int> stage;
  std::mutex mtx;
  std::condition_variable cv;
  void before() { stage($) = 0; }
  void thread(unsigned i) {
    mtx.lock($);
    if (i == 0) {
      stage($) += 1;
      cv.notify_all($);
      while (stage($) != 2) cv.wait(mtx, $);
    } else if (i == 1) {
      while (stage($) != 1) cv.wait(mtx, $);
      stage($) += 1;
      cv.notify_all($);
    } else {
      while (stage($) != 2) cv.wait(mtx, $);
    }
    mtx.unlock($);
  }
};
TEST_CASE("condvar: notify_all wakes the threads waiting, not later ones") {
  rl::test_params p;
  p.search_type = rl::sched_random;
  p.iteration_count = 20000;
  p.seed = 42;
  p.print_summary = false;
  std::ostringstream trace;
  p.output_stream = &trace;
  CHECK(rl::simulate<NotifyAllWakesWaiters>(p));
  CHECK(std::string(rl::test_result_str(p.test_result)) == "SUCCESS");
}

TEST_CASE("condvar: test_condvar2's exhaustive search ends, with SUCCESS") {
  // Relacy's own full search of this suite takes 596,203 iterations
  // (dvyukov/relacy 9f25438). Before waits made no events (0.2.0) this
  // checker had not ended after 2,000,000 executions: each failed lock try
  // and each look at the wake-up mask was an event of its own graphs.
  rl::test_params p;
  CHECK(Full<NotifyAllWakesWaiters>(&p) == rl::test_result_success);
  CHECK(p.executions == 2589);
  CHECK(p.blocked_executions == 0);
}

// ---------------------------------------------------- waits make no event

// kThreads threads, each entering a critical section kRounds times. A
// thread that finds the mutex held waits with no event, so the graphs are
// the acquisition orders alone: (kThreads * kRounds)! / (kRounds!)^kThreads
// executions. Failed tries as events (before 0.2.0) gave 3, 17 and 111 for
// two threads, where 2, 6 and 20 are the orders.
template <unsigned kThreads, int kRounds>
struct CriticalSections
    : rl::test_suite<CriticalSections<kThreads, kRounds>, kThreads> {
  std::mutex mtx;
  rl::var<int> count;
  void before() { count($) = 0; }
  void thread(unsigned) {
    for (int i = 0; i < kRounds; ++i) {
      std::lock_guard<std::mutex> lock(mtx, $);
      count($) += 1;
    }
  }
  void after() { RL_ASSERT(count($) == static_cast<int>(kThreads) * kRounds); }
};
TEST_CASE("mutex: the search explores acquisition orders, not failed tries") {
  auto orders = [](rl::test_params p) {
    CHECK(p.test_result == rl::test_result_success);
    CHECK(p.blocked_executions == 0);
    return p.executions;
  };
  rl::test_params p;
  Full<CriticalSections<2, 1>>(&p);
  CHECK(orders(p) == 2);
  Full<CriticalSections<2, 2>>(&p);
  CHECK(orders(p) == 6);
  Full<CriticalSections<2, 3>>(&p);
  CHECK(orders(p) == 20);
  Full<CriticalSections<3, 1>>(&p);
  CHECK(orders(p) == 6);
  Full<CriticalSections<3, 2>>(&p);
  CHECK(orders(p) == 90);
}

// The same outcomes as failed tries made as events. TryMutex is rl::mutex
// before 0.2.0: a failed acquire CAS (an event), then a wait for a write
// of the lock word. Under each, three threads mix a critical section with
// relaxed accesses outside it; the sets of outcomes must be equal, and
// the wait with no event must explore fewer executions.
struct TryMutex {
  std::atomic<int> state{0};
  void lock(rl::debug_info info) {
    for (;;) {
      int expected = 0;
      // Pairs with: the release store in unlock().
      if (state.compare_exchange_strong(expected, 1, std::memory_order_acquire,
                                        std::memory_order_relaxed, info))
        return;
      if (!rl::detail::WaitBlocked(info, /*on_last_read=*/true)) return;
    }
  }
  void unlock(rl::debug_info info) {
    // Pairs with: the acquire CAS of the next lock().
    state.store(0, std::memory_order_release, info);
  }
};
struct AwaitMutex {
  std::mutex m;
  void lock(rl::debug_info info) { m.lock(info); }
  void unlock(rl::debug_info info) { m.unlock(info); }
};
std::set<std::tuple<int, int, int>> g_outcomes;
template <typename Mutex>
struct MixedOutcomes : rl::test_suite<MixedOutcomes<Mutex>, 3> {
  Mutex m;
  std::atomic<int> x{0}, y{0};
  rl::var<int> data;
  int r0 = -1, r1 = -1;
  void before() { data($) = 0; }
  void thread(unsigned i) {
    if (i == 0) {
      m.lock($);
      data($) += 1;
      x.store(1, std::memory_order_relaxed);
      m.unlock($);
      r0 = y.load(std::memory_order_relaxed);
    } else if (i == 1) {
      y.store(1, std::memory_order_relaxed);
      m.lock($);
      data($) = data($) * 2;
      data($) ^= 64;  // Relacy's bitwise compound assignments
      data($) |= 128;
      data($) &= ~128;
      r1 = x.load(std::memory_order_relaxed);
      m.unlock($);
    } else {
      m.lock($);
      data($) += 10;
      m.unlock($);
    }
  }
  void after() { g_outcomes.insert({data($), r0, r1}); }
};
TEST_CASE("mutex: waiting with no event keeps every outcome of failed tries") {
  rl::test_params tries, awaits;
  g_outcomes.clear();
  CHECK(Full<MixedOutcomes<TryMutex>>(&tries) == rl::test_result_success);
  const auto with_tries = g_outcomes;
  g_outcomes.clear();
  CHECK(Full<MixedOutcomes<AwaitMutex>>(&awaits) == rl::test_result_success);
  CHECK(g_outcomes == with_tries);
  // Each of the 3! orders of the critical sections leaves its own data.
  CHECK(g_outcomes.size() >= 6);
  CHECK(awaits.executions < tries.executions);
}

// A mutex a finished thread still holds: the other thread's lock waits
// forever (DEADLOCK), or, if the other thread took it first, the mutex is
// still held when the suite is destroyed (DESTROYING OWNED MUTEX). Real
// Relacy reports DEADLOCK under sched_bound and sched_full and DESTROYING
// OWNED MUTEX in its first random run; the search modes here find the
// deadlock, the random one either (until 0.2.0 it never reported the
// second).
template <rl::test_result_e kExpected>
struct LockNeverReleased
    : rl::test_suite<LockNeverReleased<kExpected>, 2, kExpected> {
  std::mutex mtx;
  void thread(unsigned i) {
    mtx.lock($);
    if (i == 1) mtx.unlock($);
  }
};
// after() (the main thread) locks a mutex a finished thread holds.
struct MainLocksHeld
    : rl::test_suite<MainLocksHeld, 1, rl::test_result_deadlock> {
  std::mutex mtx;
  void thread(unsigned) { mtx.lock($); }
  void after() { mtx.lock($); }
};
TEST_CASE("mutex: a lock nobody releases is a DEADLOCK in every search mode") {
  for (unsigned sched = 0; sched != rl::sched_count; ++sched) {
    rl::test_params p;
    p.search_type = static_cast<rl::scheduler_type_e>(sched);
    p.context_bound = 0;
    p.print_summary = false;
    std::ostringstream trace;
    p.output_stream = &trace;
    if (p.search_type == rl::sched_random) {
      rl::simulate<LockNeverReleased<rl::test_result_deadlock>>(p);
      CHECK((p.test_result == rl::test_result_deadlock ||
             p.test_result == rl::test_result_destroying_owned_mutex));
    } else {
      // The expected verdict.
      CHECK(rl::simulate<LockNeverReleased<rl::test_result_deadlock>>(p));
    }
    CHECK(rl::simulate<MainLocksHeld>(p));
  }
}

// With no deferral allowed (sched_bound 0), a thread waiting for a held
// mutex is no deferral: the holder's release and the waiter's acquisition
// are still reached, in the one acquisition order bound 0 allows.
TEST_CASE("mutex: sched_bound 0 lets a waiting lock acquisition be passed") {
  rl::test_params p;
  p.search_type = rl::sched_bound;
  p.context_bound = 0;
  p.print_summary = false;
  std::ostringstream trace;
  p.output_stream = &trace;
  CHECK(rl::simulate<CriticalSections<2, 2>>(p));
  CHECK(p.test_result == rl::test_result_success);
  CHECK(p.executions >= 1);
}

// A timed wait ends by a notify (true) or by a timeout (false): each is
// reached in some execution (RL_UNTIL stops the search at the first).
template <bool kWantNotified>
struct TimedWait : rl::test_suite<TimedWait<kWantNotified>, 2> {
  std::mutex mtx;
  std::condition_variable cv;
  rl::var<int> ready;
  int notified = 0, timeouts = 0;  // thread 0's own
  void before() { ready($) = 0; }
  void thread(unsigned i) {
    std::unique_lock<std::mutex> lock(mtx, $);
    if (i == 0) {
      while (ready($) == 0) (cv.wait_for(lock, 1, $) ? notified : timeouts)++;
    } else {
      ready($) = 1;
      cv.notify_one($);
    }
  }
  void after() { RL_UNTIL(kWantNotified ? notified > 0 : timeouts > 0); }
};
TEST_CASE("condvar: a timed wait is explored ending by timeout and by notify") {
  VERDICT(rl::test_result_until_condition_hit, TimedWait<false>);
  VERDICT(rl::test_result_until_condition_hit, TimedWait<true>);
}

}  // namespace
