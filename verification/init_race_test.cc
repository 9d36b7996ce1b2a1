// An atomic's initialization is a non-atomic write (C++20
// [atomics.types.operations]/3): an access to an rl::atomic constructed
// during the execution that is not ordered after its construction by
// happens-before is a data race. These tests publish a freshly constructed
// atomic through a pointer in every way that does and does not order it.
#include <new>
#include <sstream>
#include <string>

#include "doctest/doctest.h"
#include "relacy/relacy.hpp"

namespace {

using Obj = rl::atomic<int>;

// How the pointer to the new object travels from thread 0 to thread 1.
enum class Via {
  kRelaxed,         // relaxed store, relaxed load: a race
  kReleaseRelaxed,  // release store, relaxed load: a race
  kRelaxedAcquire,  // relaxed store, acquire load: a race
  kReleaseAcquire,  // release store, acquire load: ordered
  kFences,          // release fence + relaxed store, relaxed load + acquire
                    // fence: ordered
  kSeqCst,          // seq_cst store and load: ordered
};

constexpr int kConstructLine = __LINE__ + 10;  // the placement new below
constexpr int kAccessLine = __LINE__ + 39;     // the reader's obj->load below
template <Via kVia, rl::test_result_e kRes, bool kReaderWrites = false>
struct PublishNew
    : rl::test_suite<PublishNew<kVia, kRes, kReaderWrites>, 2, kRes> {
  alignas(Obj) unsigned char storage[sizeof(Obj)];
  rl::atomic<Obj*> ptr{nullptr};

  void thread(unsigned i) {
    if (i == 0) {
      Obj* obj = new (storage) Obj(42);
      switch (kVia) {
        case Via::kRelaxed:
        case Via::kRelaxedAcquire:
          ptr.store(obj, rl::mo_relaxed);
          break;
        case Via::kReleaseRelaxed:
        case Via::kReleaseAcquire:
          ptr.store(obj, rl::mo_release);
          break;
        case Via::kFences:
          rl::atomic_thread_fence(rl::mo_release);
          ptr.store(obj, rl::mo_relaxed);
          break;
        case Via::kSeqCst:
          ptr.store(obj);
          break;
      }
      return;
    }
    const bool acquire = kVia == Via::kRelaxedAcquire ||
                         kVia == Via::kReleaseAcquire || kVia == Via::kSeqCst;
    Obj* obj = ptr.load(acquire ? kVia == Via::kSeqCst ? rl::mo_seq_cst
                                                       : rl::mo_acquire
                                : rl::mo_relaxed);
    if (obj == nullptr) return;
    if (kVia == Via::kFences) rl::atomic_thread_fence(rl::mo_acquire);
    if (kReaderWrites) {
      obj->fetch_add(1, rl::mo_relaxed);
    } else {
      RL_ASSERT(obj->load(rl::mo_relaxed) == 42);
    }
  }
};

template <typename T>
rl::test_params Explore(bool lazy = true) {
  rl::test_params p;
  p.search_type = rl::sched_full;  // exhaustive
  p.print_summary = false;
  p.output_history = false;
  p.lazy_deferral = lazy;
  const bool matched = rl::simulate<T>(p);
  CHECK(matched);
  MESSAGE("result " << std::string(rl::test_result_str(p.test_result))
                    << " after " << p.executions << " executions");
  return p;
}

TEST_CASE("init race: relaxed publication of a new atomic is caught") {
  using T = PublishNew<Via::kRelaxed, rl::test_result_data_race>;
  std::ostringstream out;
  rl::test_params p;
  p.search_type = rl::sched_full;  // exhaustive
  p.output_stream = &out;
  CHECK(rl::simulate<T>(p));
  CHECK(p.test_result == rl::test_result_data_race);
  const std::string s = out.str();
  // The trace holds the construction; the report names both positions.
  CHECK(s.find("init atomic#") != std::string::npos);
  CHECK(s.find("its initialization") != std::string::npos);
  CHECK(s.find("init_race_test.cc:" + std::to_string(kConstructLine)) !=
        std::string::npos);
  CHECK(s.find("init_race_test.cc:" + std::to_string(kAccessLine)) !=
        std::string::npos);
  MESSAGE(s);

  // The replay string reproduces the same report.
  std::ostringstream replay_out;
  rl::test_params r;
  r.search_type = rl::sched_full;  // exhaustive
  r.output_stream = &replay_out;
  r.initial_state = p.final_state;
  CHECK(rl::simulate<T>(r));
  CHECK(r.test_result == rl::test_result_data_race);
  CHECK(replay_out.str().find("its initialization") != std::string::npos);
}

TEST_CASE("init race: a one-sided release or acquire is still caught") {
  Explore<PublishNew<Via::kReleaseRelaxed, rl::test_result_data_race>>();
  Explore<PublishNew<Via::kRelaxedAcquire, rl::test_result_data_race>>();
}

TEST_CASE("init race: an RMW of the unordered atomic is caught") {
  Explore<PublishNew<Via::kRelaxed, rl::test_result_data_race, true>>();
}

TEST_CASE("init race: release/acquire, fences and seq_cst are race free") {
  for (bool lazy : {true, false}) {
    // 2 graphs each: the reader sees null, or the object.
    CHECK(
        Explore<PublishNew<Via::kReleaseAcquire, rl::test_result_success>>(lazy)
            .executions == 2);
    CHECK(Explore<PublishNew<Via::kFences, rl::test_result_success>>(lazy)
              .executions == 2);
    CHECK(Explore<PublishNew<Via::kSeqCst, rl::test_result_success>>(lazy)
              .executions == 2);
    CHECK(Explore<
              PublishNew<Via::kReleaseAcquire, rl::test_result_success, true>>(
              lazy)
              .executions == 2);
  }
}

// Objects constructed in before() (or as suite members) happen before every
// thread, so even a relaxed publication of them is fine.
struct BeforeConstructed : rl::test_suite<BeforeConstructed, 2> {
  alignas(Obj) unsigned char storage[sizeof(Obj)];
  Obj* made = nullptr;  // set in before(), read only after the spawn
  rl::atomic<Obj*> ptr{nullptr};
  Obj member{5};

  void before() { made = new (storage) Obj(7); }
  void thread(unsigned i) {
    if (i == 0) {
      ptr.store(made, rl::mo_relaxed);
      member.store(6, rl::mo_relaxed);
      return;
    }
    Obj* obj = ptr.load(rl::mo_relaxed);
    if (obj != nullptr) RL_ASSERT(obj->load(rl::mo_relaxed) == 7);
    const int m = member.load(rl::mo_relaxed);
    RL_ASSERT(m == 5 || m == 6);
  }
  void after() { RL_ASSERT(made->load(rl::mo_relaxed) == 7); }
};

TEST_CASE("init race: construction in before() is visible to all threads") {
  CHECK(Explore<BeforeConstructed>().executions == 4);
}

// A thread's own atomics, and after()'s accesses to atomics built by the
// threads (ordered by the join), are not races.
struct JoinOrders : rl::test_suite<JoinOrders, 2> {
  alignas(Obj) unsigned char storage[2][sizeof(Obj)];
  Obj* made[2] = {nullptr, nullptr};

  void thread(unsigned i) {
    Obj* obj = new (storage[i]) Obj(static_cast<int>(i));
    obj->fetch_add(10, rl::mo_relaxed);
    rl::atomic<int> local{3};
    local.store(4, rl::mo_relaxed);
    RL_ASSERT(local.load(rl::mo_relaxed) == 4);
    made[i] = obj;  // plain member: each thread writes its own element
  }
  void after() {
    RL_ASSERT(made[0]->load(rl::mo_relaxed) == 10);
    RL_ASSERT(made[1]->load(rl::mo_relaxed) == 11);
  }
};

TEST_CASE("init race: own-thread and after()-joined accesses are ordered") {
  CHECK(Explore<JoinOrders>().executions == 1);
}

// hb is transitive: thread 0 builds and releases to thread 1, which passes
// the pointer on to thread 2. The hand-off must synchronize too.
template <rl::memory_order kHandOffStore, rl::memory_order kHandOffLoad,
          rl::test_result_e kRes>
struct Relay
    : rl::test_suite<Relay<kHandOffStore, kHandOffLoad, kRes>, 3, kRes> {
  alignas(Obj) unsigned char storage[sizeof(Obj)];
  rl::atomic<Obj*> first{nullptr};
  rl::atomic<Obj*> second{nullptr};

  void thread(unsigned i) {
    if (i == 0) {
      first.store(new (storage) Obj(1), rl::mo_release);
    } else if (i == 1) {
      Obj* obj = first.load(rl::mo_acquire);
      if (obj != nullptr) second.store(obj, kHandOffStore);
    } else {
      Obj* obj = second.load(kHandOffLoad);
      if (obj != nullptr) RL_ASSERT(obj->load(rl::mo_relaxed) == 1);
    }
  }
};

TEST_CASE("init race: happens-before through a relay") {
  Explore<Relay<rl::mo_release, rl::mo_acquire, rl::test_result_success>>();
  Explore<Relay<rl::mo_relaxed, rl::mo_relaxed, rl::test_result_data_race>>();
  Explore<Relay<rl::mo_release, rl::mo_relaxed, rl::test_result_data_race>>();
}

}  // namespace
