// See examples_std_programs.h. Included as Relacy's examples include
// Relacy: pch.hpp first, then the std dialect and the stdlib forwarding
// headers; only their spellings below.
#include "examples_std_programs.h"

// The order matters (standard headers, pch.hpp, then relacy_std.hpp,
// which must follow every standard header).
// clang-format off
#include "test_support.h"  // before relacy_std.hpp (standard headers first)

#include "relacy/pch.hpp"  // as the examples' stdafx.h: pch.hpp first

#include "relacy/relacy_std.hpp"

#include "relacy/pthread.h"
#include "relacy/stdlib/condition_variable.hpp"
#include "relacy/stdlib/event.hpp"
#include "relacy/stdlib/mutex.hpp"
#include "relacy/stdlib/pthread.hpp"
#include "relacy/stdlib/semaphore.hpp"
#include "relacy/stdlib/windows.hpp"
// clang-format on

namespace {

// base_t::params::thread_count, as Relacy's stack example asserts it.
struct ParamsCount : rl::test_suite<ParamsCount, 3> {
  typedef rl::test_suite<ParamsCount, 3> base_t;
  std::atomic<int> arrived;
  void before() { arrived($) = 0; }
  void thread(unsigned) { arrived($).fetch_add(1, std::memory_order_relaxed); }
  void after() {
    RL_ASSERT(arrived($).load() ==
              static_cast<int>(base_t::params::thread_count));
  }
};
static_assert(ParamsCount::params::static_thread_count == 3 &&
              ParamsCount::params::dynamic_thread_count == 0 &&
              ParamsCount::params::thread_count == 3 &&
              ParamsCount::params::expected_result == rl::test_result_success);

// An atomic value wider than the engine's 8-byte word: a counter and a tag
// pointer, compared and added with its own operators (Relacy's
// proxy_collector anchor has this shape). The counter is 64-bit so the value
// is wider than 8 bytes on 32-bit targets too (12 bytes on i686, 16 on
// x86_64 and armhf).
struct Anchor {
  int64_t count;
  void* tag;
  bool operator==(const Anchor& o) const {
    return count == o.count && tag == o.tag;
  }
  Anchor operator+(const Anchor& o) const {
    return Anchor{count + o.count, tag};
  }
};
static_assert(sizeof(Anchor) > 8);

// Two fetch_adds of a wide value lose nothing.
struct WideAdd : rl::test_suite<WideAdd, 2> {
  std::atomic<Anchor> a;
  void before() { a($) = Anchor{0, nullptr}; }
  void thread(unsigned) {
    a.fetch_add(Anchor{1, nullptr}, std::memory_order_relaxed);
  }
  void after() { RL_ASSERT(a($).load().count == 2); }
};

// Load then store: the second thread may overwrite the first's update.
struct WideLost
    : rl::test_suite<WideLost, 2, rl::test_result_user_assert_failed> {
  std::atomic<Anchor> a;
  void before() { a($) = Anchor{0, nullptr}; }
  void thread(unsigned) {
    Anchor v = a.load(std::memory_order_relaxed);
    v.count += 1;
    a.store(v, std::memory_order_relaxed);
  }
  void after() { RL_ASSERT(a($).load().count == 2); }
};

// A weak-CAS retry loop over the wide value is an atomic increment.
struct WideCas : rl::test_suite<WideCas, 2> {
  std::atomic<Anchor> a;
  void before() { a($) = Anchor{0, nullptr}; }
  void thread(unsigned) {
    Anchor e = a.load(std::memory_order_relaxed);
    while (!a.compare_exchange_weak(e, Anchor{e.count + 1, e.tag},
                                    std::memory_order_relaxed)) {
    }
  }
  void after() { RL_ASSERT(a($).load() == (Anchor{2, nullptr})); }
};

// A plain write published by a relaxed store of a wide value races.
struct WidePublish : rl::test_suite<WidePublish, 2, rl::test_result_data_race> {
  std::atomic<Anchor> a;
  rl::var<int> data;
  void before() {
    a($) = Anchor{0, nullptr};
    data($) = 0;
  }
  void thread(unsigned i) {
    if (i == 0) {
      data($) = 1;
      a.store(Anchor{1, nullptr}, std::memory_order_relaxed);
    } else if (a.load(std::memory_order_relaxed).count == 1) {
      (void)static_cast<int>(data($));
    }
  }
};

// The pthread and Win32 shims reached through the stdlib headers: a
// counter under a pthread mutex and one under a CRITICAL_SECTION.
struct StdlibMutex : rl::test_suite<StdlibMutex, 2> {
  pthread_mutex_t pm;
  CRITICAL_SECTION cs;
  rl::var<int> a, b;
  void before() {
    pthread_mutex_init(&pm, nullptr);
    InitializeCriticalSection(&cs);
    a($) = 0;
    b($) = 0;
  }
  void after() {
    RL_ASSERT(a($) == 2 && b($) == 2);
    pthread_mutex_destroy(&pm);
    DeleteCriticalSection(&cs);
  }
  void thread(unsigned) {
    pthread_mutex_lock(&pm);
    a($) = a($) + 1;
    pthread_mutex_unlock(&pm);
    EnterCriticalSection(&cs);
    b($) = b($) + 1;
    LeaveCriticalSection(&cs);
  }
};

}  // namespace

namespace examples_std_programs {
rl::test_result_e ParamsThreadCount() {
  return rl_test::RunFull<ParamsCount>();
}
rl::test_result_e WideFetchAdd() { return rl_test::RunFull<WideAdd>(); }
rl::test_result_e WideLostUpdate() { return rl_test::RunFull<WideLost>(); }
rl::test_result_e WideCasLoop() { return rl_test::RunFull<WideCas>(); }
rl::test_result_e WideRelaxedPublish() {
  return rl_test::RunFull<WidePublish>();
}
rl::test_result_e StdlibHeadersMutex() {
  return rl_test::RunFull<StdlibMutex>();
}
}  // namespace examples_std_programs
