// Data-race detection on rl::var: unordered conflicting accesses are
// reported with both positions; happens-before-ordered ones are not.
#include <sstream>
#include <string>

#include "doctest/doctest.h"
#include "relacy/relacy.hpp"

namespace {

constexpr int kWriteLine = __LINE__ + 8;  // the VAR(data) = 1 line below
constexpr int kReadLine = __LINE__ + 12;  // the int v = VAR(data) line below
template <rl::memory_order kW, rl::memory_order kR, rl::test_result_e kRes>
struct Publish : rl::test_suite<Publish<kW, kR, kRes>, 2, kRes> {
  rl::var<int> data{0};
  rl::atomic<int> flag{0};
  void thread(unsigned i) {
    if (i == 0) {
      VAR(data) = 1;
      flag.store(1, kW);
    } else {
      if (flag.load(kR) == 1) {
        // Only reached after seeing the flag; a race unless it synchronizes.
        int v = VAR(data);
        RL_ASSERT(v == 1 || kRes == rl::test_result_data_race);
      }
    }
  }
};

TEST_CASE("race: relaxed publication of a non-atomic is a data race") {
  std::ostringstream out;
  rl::test_params p;
  p.search_type = rl::sched_full;  // exhaustive
  p.output_stream = &out;
  CHECK(rl::simulate<
        Publish<rl::mo_relaxed, rl::mo_relaxed, rl::test_result_data_race>>(p));
  CHECK(p.test_result == rl::test_result_data_race);
  std::string s = out.str();
  // Both accesses are reported with file:line.
  CHECK(s.find("race_test.cc:" + std::to_string(kWriteLine)) !=
        std::string::npos);
  CHECK(s.find("race_test.cc:" + std::to_string(kReadLine)) !=
        std::string::npos);
  CHECK(!p.final_state.empty());
  MESSAGE(s);
}

TEST_CASE("race: release/acquire publication is race free") {
  rl::test_params p;
  p.search_type = rl::sched_full;  // exhaustive
  CHECK(rl::simulate<
        Publish<rl::mo_release, rl::mo_acquire, rl::test_result_success>>(p));
  CHECK(p.test_result == rl::test_result_success);
}

TEST_CASE("race: release store, relaxed load is still a race") {
  rl::test_params p;
  p.search_type = rl::sched_full;  // exhaustive
  p.output_history = false;
  CHECK(rl::simulate<
        Publish<rl::mo_release, rl::mo_relaxed, rl::test_result_data_race>>(p));
}

// Two unsynchronized writers.
struct WriteWrite : rl::test_suite<WriteWrite, 2, rl::test_result_data_race> {
  rl::var<int> v{0};
  void thread(unsigned i) { VAR(v) = static_cast<int>(i); }
};
TEST_CASE("race: two plain writes") {
  rl::test_params p;
  p.search_type = rl::sched_full;  // exhaustive
  p.output_history = false;
  CHECK(rl::simulate<WriteWrite>(p));
}

// Fence-based publication and before()/after() accesses are ordered.
struct FencePublish : rl::test_suite<FencePublish, 2> {
  VAR_T(int) data;
  rl::atomic<bool> flag{false};
  void before() { VAR(data) = 7; }
  void thread(unsigned i) {
    if (i == 0) {
      VAR(data) = 1;
      rl::atomic_thread_fence(rl::mo_release);
      flag.store(true, rl::mo_relaxed);
    } else {
      while (!flag.load(rl::mo_relaxed)) rl::yield(1, $);
      rl::atomic_thread_fence(rl::mo_acquire);
      RL_ASSERT(VAR(data) == 1);
      VAR(data) = 2;
    }
  }
  void after() { RL_ASSERT(VAR(data) == 2); }
};
TEST_CASE("race: fence publication with a spin-wait is race free") {
  rl::test_params p;
  p.search_type = rl::sched_full;  // exhaustive
  CHECK(rl::simulate<FencePublish>(p));
  CHECK(p.executions >= 1);
}

// Lock built from an atomic exchange protects a plain counter.
struct SpinLockCounter : rl::test_suite<SpinLockCounter, 3> {
  rl::atomic<bool> locked{false};
  rl::var<int> counter{0};
  void thread(unsigned) {
    while (locked.exchange(true, rl::mo_acquire)) rl::yield(1);
    VAR(counter) = VAR(counter) + 1;
    locked.store(false, rl::mo_release);
  }
  void after() { RL_ASSERT(VAR(counter) == 3); }
};
TEST_CASE("race: spinlock-protected counter is race free") {
  rl::test_params p;
  p.search_type = rl::sched_full;  // exhaustive
  CHECK(rl::simulate<SpinLockCounter>(p));
}

template <rl::memory_order kAcquireOrder>
struct BrokenLock
    : rl::test_suite<BrokenLock<kAcquireOrder>, 2, rl::test_result_data_race> {
  rl::atomic<bool> locked{false};
  rl::var<int> counter{0};
  void thread(unsigned) {
    while (locked.exchange(true, kAcquireOrder)) rl::yield(1);
    VAR(counter) = VAR(counter) + 1;
    locked.store(false, rl::mo_relaxed);  // bug: must be release
  }
};
TEST_CASE("race: spinlock with a relaxed unlock races") {
  rl::test_params p;
  p.search_type = rl::sched_full;  // exhaustive
  p.output_history = false;
  CHECK(rl::simulate<BrokenLock<rl::mo_acquire>>(p));
}

struct Uninit : rl::test_suite<Uninit, 1, rl::test_result_unitialized_access> {
  rl::var<int> v;
  void thread(unsigned) {
    int x = VAR(v);
    (void)x;
  }
};
TEST_CASE("uninitialized rl::var read is reported") {
  rl::test_params p;
  p.search_type = rl::sched_full;  // exhaustive
  p.output_history = false;
  CHECK(rl::simulate<Uninit>(p));
}

// Peterson's lock: correct with seq_cst, broken with release/acquire (the
// SB shape lets both threads enter). Checked with lazy and eager deferral.
template <rl::memory_order kStore, rl::memory_order kLoad,
          rl::test_result_e kRes>
struct Peterson : rl::test_suite<Peterson<kStore, kLoad, kRes>, 2, kRes> {
  rl::atomic<bool> flag[2] = {false, false};
  rl::atomic<int> victim{0};
  rl::var<int> data{0};
  void thread(unsigned i) {
    int other = 1 - static_cast<int>(i);
    flag[i].store(true, kStore);
    victim.store(static_cast<int>(i), kStore);
    while (flag[other].load(kLoad) && victim.load(kLoad) == static_cast<int>(i))
      rl::yield(1);
    VAR(data) = VAR(data) + 1;
    flag[i].store(false, rl::mo_release);
  }
  void after() { RL_ASSERT(VAR(data) == 2); }
};
TEST_CASE("Peterson: seq_cst correct, release/acquire races (both modes)") {
  for (bool lazy : {true, false}) {
    rl::test_params ok;
    ok.search_type = rl::sched_full;  // exhaustive
    ok.lazy_deferral = lazy;
    CHECK(rl::simulate<
          Peterson<rl::mo_seq_cst, rl::mo_seq_cst, rl::test_result_success>>(
        ok));
    rl::test_params bad;
    bad.search_type = rl::sched_full;  // exhaustive
    bad.lazy_deferral = lazy;
    bad.output_history = false;
    CHECK(rl::simulate<
          Peterson<rl::mo_release, rl::mo_acquire, rl::test_result_data_race>>(
        bad));
  }
}

TEST_CASE("spinlock counter: lazy and eager agree on the verdict") {
  rl::test_params eager;
  eager.search_type = rl::sched_full;  // exhaustive
  eager.lazy_deferral = false;
  CHECK(rl::simulate<SpinLockCounter>(eager));
  rl::test_params bad;
  bad.lazy_deferral = false;
  bad.output_history = false;
  CHECK(rl::simulate<BrokenLock<rl::mo_acquire>>(bad));
}

}  // namespace
