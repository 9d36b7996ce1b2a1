// Relacy-style Win32 programs compiled against relacy/relacy_std.hpp alone
// (which, as Relacy's relacy.hpp, brings the Win32 shims), run by
// win32_conformance_test. Each returns the verdict of an exhaustive search.
#include "test_support.h"  // before relacy_std.hpp (standard headers first)

#include "relacy/relacy_std.hpp"

namespace win32_std_programs {
namespace {

template <typename T>
rl::test_result_e Full() {
  return rl_test::RunFull<T>();
}

// Relacy's test_win_condvar shape: a stage counter under a critical
// section, each thread waiting (CONDITION_VARIABLE) for its turn.
// kRecheck == false: the waiter sleeps without re-checking its predicate
// after the wake-up it may miss (the signal comes before it sleeps).
template <bool kRecheck>
struct CondvarStages : rl::test_suite<CondvarStages<kRecheck>, 2> {
  CONDITION_VARIABLE cv;
  CRITICAL_SECTION cs;
  std::atomic<int> hits;
  VAR_T(int) stage;
  void before() {
    InitializeConditionVariable(&cv);
    InitializeCriticalSection(&cs);
    hits($) = 0;
    VAR(stage) = 0;
  }
  void after() {
    DeleteConditionVariable(&cv);  // Relacy's own spelling
    DeleteCriticalSection(&cs);
  }
  void thread(unsigned i) {
    EnterCriticalSection(&cs);
    if (i == 0) {
      VAR(stage) = 1;
      WakeAllConditionVariable(&cv);
    } else if (kRecheck) {
      while (VAR(stage) != 1) SleepConditionVariableCS(&cv, &cs, INFINITE);
    } else {
      SleepConditionVariableCS(&cv, &cs, INFINITE);
      RL_ASSERT(VAR(stage) == 1);
    }
    hits($).fetch_add(1, std::memory_order_relaxed);
    LeaveCriticalSection(&cs);
  }
};

}  // namespace

rl::test_result_e CondvarStagesRecheck() { return Full<CondvarStages<true>>(); }
rl::test_result_e CondvarStagesNoRecheck() {
  return Full<CondvarStages<false>>();
}

}  // namespace win32_std_programs
