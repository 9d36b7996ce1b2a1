// Conformance of relacy_std.hpp's fakestd mode (Relacy's -I relacy/fakestd):
// Relacy-style programs written with `using namespace std;` and unqualified
// atomic<T>, mutex, condition_variable, atomic_thread_fence, memory_order_*
// (as Relacy's example/ws_deque is), built with relacy/fakestd on the
// include path (//verification:relacy_fakestd), each run with the verdict
// Relacy gives. Also pins that the names are the checker's and that
// standard headers may come after relacy_std.hpp in this mode.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "doctest/doctest.h"
#include "relacy/relacy_std.hpp"
#include "test_support.h"

// After relacy_std.hpp: fine in this mode (std is no macro).
#include <optional>
#include <unordered_map>

#ifndef PERCPU_RL_FAKESTD
#error "fakestd headers not on the include path: this test checks that mode"
#endif
#ifdef std
#error "fakestd mode must not define std as a macro"
#endif

using namespace std;  // NOLINT: the point of this mode
using rl::var;

// ---------------------------------------- the names are the checker's
// The same set rl::std_shim declares in the default mode (one list in
// relacy_std.hpp); a standard-library definition winning would be a bug
// the checker cannot see.
static_assert(is_same_v<atomic<int>, rl::atomic<int>>);
static_assert(is_same_v<atomic<void*>, rl::atomic<void*>>);
static_assert(is_same_v<atomic_flag, rl::atomic_flag>);
static_assert(is_same_v<mutex, rl::mutex>);
static_assert(is_same_v<recursive_mutex, rl::recursive_mutex>);
static_assert(is_same_v<condition_variable, rl::condition_variable>);
static_assert(is_same_v<condition_variable_any, rl::condition_variable_any>);
static_assert(is_same_v<atomic_int, rl::atomic<int>>);
static_assert(is_same_v<atomic_bool, rl::atomic<bool>>);
static_assert(is_same_v<atomic_size_t, rl::atomic<size_t>>);
static_assert(is_same_v<atomic_uintptr_t, rl::atomic<uintptr_t>>);
static_assert(is_same_v<atomic_address, rl::atomic<void*>>);
// memory_order is the type the engine was compiled with (libstdc++'s).
static_assert(is_same_v<memory_order, rl::memory_order>);
static_assert(memory_order_relaxed == rl::mo_relaxed);
static_assert(memory_order_seq_cst == rl::mo_seq_cst);
static_assert(is_same_v<decltype(&std::rl_malloc), decltype(&rl::rl_malloc)>);
static_assert(is_same_v<lock_guard<mutex>, rl::lock_guard<rl::mutex>>);

namespace {

// ------------------------------------------------------ message passing
// Relacy's introductory example: a plain write published by a relaxed
// store is a data race; release/acquire, or relaxed accesses between
// release and acquire fences, make it correct.
template <memory_order kStore, memory_order kLoad, bool kFences>
struct Publication : rl::test_suite<Publication<kStore, kLoad, kFences>, 2> {
  atomic<int> flag;
  var<int> data;
  void before() {
    flag($) = 0;
    data($) = 0;
  }
  void thread(unsigned index) {
    if (index == 0) {
      data($) = 1;
      // Pairs with: the acquire fence after the flag load (thread 1).
      if (kFences) atomic_thread_fence(memory_order_release);
      flag.store(1, kStore);
    } else if (flag.load(kLoad) == 1) {
      // Pairs with: the release fence before the flag store (thread 0).
      if (kFences) atomic_thread_fence(memory_order_acquire);
      RL_ASSERT(data($) == 1);
    }
  }
};

TEST_CASE("fakestd: relaxed message passing is a DATA RACE") {
  VERDICT(rl::test_result_data_race,
          Publication<memory_order_relaxed, memory_order_relaxed, false>);
}
TEST_CASE("fakestd: release/acquire message passing is correct") {
  VERDICT(rl::test_result_success,
          Publication<memory_order_release, memory_order_acquire, false>);
}
TEST_CASE("fakestd: relaxed accesses between fences are correct") {
  VERDICT(rl::test_result_success,
          Publication<memory_order_relaxed, memory_order_relaxed, true>);
}

// --------------------------------------------------- store buffering
// Both loads may read 0 unless all four accesses are seq_cst.
template <memory_order kOrder>
struct StoreBuffering : rl::test_suite<StoreBuffering<kOrder>, 2> {
  atomic_int x{0}, y{0};
  int r[2] = {-1, -1};
  void thread(unsigned index) {
    (index == 0 ? x : y).store(1, kOrder);
    r[index] = (index == 0 ? y : x).load(kOrder);
  }
  void after() { RL_ASSERT(r[0] == 1 || r[1] == 1); }
};

TEST_CASE("fakestd: relaxed store buffering fails the assertion") {
  VERDICT(rl::test_result_user_assert_failed,
          StoreBuffering<memory_order_relaxed>);
}
TEST_CASE("fakestd: seq_cst store buffering is correct") {
  VERDICT(rl::test_result_success, StoreBuffering<memory_order_seq_cst>);
}

// ------------------------------------------------------------- mutexes
template <bool kLocked>
struct Counter : rl::test_suite<Counter<kLocked>, 3> {
  mutex m;
  var<int> n;
  void before() { n($) = 0; }
  void thread(unsigned) {
    if (kLocked) {
      lock_guard<mutex> lock(m);
      n($) = n($) + 1;
    } else {
      n($) = n($) + 1;
    }
  }
  void after() { RL_ASSERT(n($) == 3); }
};

TEST_CASE("fakestd: a mutex-protected counter is correct") {
  VERDICT(rl::test_result_success, Counter<true>);
}
TEST_CASE("fakestd: the same counter without the mutex is a DATA RACE") {
  VERDICT(rl::test_result_data_race, Counter<false>);
}

// A spin lock on atomic_flag: acquire/release make it a lock, relaxed not.
template <memory_order kAcquire, memory_order kRelease>
struct SpinLock : rl::test_suite<SpinLock<kAcquire, kRelease>, 2> {
  atomic_flag busy = ATOMIC_FLAG_INIT;
  var<int> n;
  void before() { n($) = 0; }
  void thread(unsigned) {
    // kAcquire pairs with the other thread's kRelease clear (hand-over).
    while (busy.test_and_set(kAcquire)) rl::yield();
    n($) = n($) + 1;
    busy.clear(kRelease);
  }
};

TEST_CASE("fakestd: an atomic_flag spin lock is correct") {
  VERDICT(rl::test_result_success,
          SpinLock<memory_order_acquire, memory_order_release>);
}
TEST_CASE("fakestd: the spin lock with relaxed orders is a DATA RACE") {
  VERDICT(rl::test_result_data_race,
          SpinLock<memory_order_relaxed, memory_order_relaxed>);
}

// -------------------------------------------------- condition variables
// A hand-off: waiting in a loop on the predicate is correct; waiting once
// without it loses the wake-up when the notify comes first (DEADLOCK).
template <bool kPredicate>
struct HandOff : rl::test_suite<HandOff<kPredicate>, 2> {
  mutex m;
  condition_variable cv;
  var<bool> ready;
  void before() { ready($) = false; }
  void thread(unsigned index) {
    unique_lock<mutex> lock(m);
    if (index == 0) {
      ready($) = true;
      cv.notify_one();
    } else if (kPredicate) {
      while (!ready($)) cv.wait(lock);
    } else {
      cv.wait(lock);
    }
  }
};

TEST_CASE("fakestd: a condition_variable hand-off is correct") {
  VERDICT(rl::test_result_success, HandOff<true>);
}
TEST_CASE("fakestd: waiting without the predicate is a DEADLOCK") {
  VERDICT(rl::test_result_deadlock, HandOff<false>);
}

// ------------------------------------------------------------- threads
// std::thread is a checker thread (the suite reserves it as a dynamic
// thread); construction and join synchronize like the real ones.
template <bool kJoinFirst>
struct Spawn : rl::test_suite<Spawn<kJoinFirst>, 1> {
  static constexpr unsigned dynamic_thread_count = 2;
  var<int> n;
  void before() { n($) = 0; }
  void thread(unsigned) {
    n($) = 1;  // before the spawn: visible to the new threads
    auto add = [this](int k) { n($) = n($) + k; };
    std::thread a(add, 1);
    if (kJoinFirst) a.join();
    std::thread b(add, 2);
    if (!kJoinFirst) a.join();
    b.join();
    RL_ASSERT(n($) == 4);  // after the joins: their writes are visible
  }
};

TEST_CASE("fakestd: threads joined one after the other are correct") {
  VERDICT(rl::test_result_success, Spawn<true>);
}
TEST_CASE("fakestd: two threads writing one var at once are a DATA RACE") {
  VERDICT(rl::test_result_data_race, Spawn<false>);
}

// Relacy's spelling `std::thread t{f, $}`: the trailing $ names the
// creation; a callable that takes a debug_info still gets it.
struct SpawnWithInfo : rl::test_suite<SpawnWithInfo, 1> {
  static constexpr unsigned dynamic_thread_count = 2;
  atomic<int> n{0};
  void thread(unsigned) {
    std::thread a{[&] { n.fetch_add(1, memory_order_relaxed); }, $};
    std::thread b{[&](rl::debug_info) { n.fetch_add(2, memory_order_relaxed); },
                  rl::debug_info($)};
    a.join();
    b.join();
    RL_ASSERT(n.load(memory_order_relaxed) == 3);
  }
};
TEST_CASE("fakestd: std::thread takes Relacy's trailing $") {
  VERDICT(rl::test_result_success, SpawnWithInfo);
}

// A joinable std::thread destroyed calls std::terminate: reported as the
// execution's failure (the verdict of an exception escaping a thread),
// not as an abort of the whole run. Relacy's std::thread lets it pass.
struct DestroyJoinable : rl::test_suite<DestroyJoinable, 1,
                                        rl::test_result_unhandled_exception> {
  static constexpr unsigned dynamic_thread_count = 1;
  void thread(unsigned) { std::thread t{[] {}, $}; }
};
TEST_CASE("fakestd: a joinable std::thread destroyed is std::terminate") {
  VERDICT(rl::test_result_unhandled_exception, DestroyJoinable);
}

// Standard containers work next to the checker's types in this mode.
struct Containers : rl::test_suite<Containers, 2> {
  atomic<int> hits{0};
  void thread(unsigned index) {
    vector<int> v{1, 2, 3};
    map<string, int> m{{"a", 1}};
    unordered_map<int, int> u{{1, 2}};
    optional<int> o = index;
    auto p = make_shared<int>(4);
    hits.fetch_add(v[1] + m["a"] + u[1] + *o + *p - 9, memory_order_relaxed);
  }
  void after() { RL_ASSERT(hits.load(memory_order_relaxed) == 1); }
};

TEST_CASE("fakestd: standard containers alongside are fine") {
  VERDICT(rl::test_result_success, Containers);
}

}  // namespace
