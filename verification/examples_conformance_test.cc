// The dialect items Relacy's own example programs use (see
// tools/relacy_examples.sh and docs/verification.md, "Relacy's examples
// side by side"): each a small program in our words with the verdict real
// Relacy (dvyukov/relacy 9f25438) gives for the same program, so the
// dialect cannot regress.
#include <sstream>
#include <string>

#include "doctest/doctest.h"
#include "examples_std_programs.h"
#include "relacy/relacy.hpp"
#include "relacy/relacy_java.hpp"
#include "test_support.h"

namespace {

namespace esp = examples_std_programs;

std::string Str(rl::test_result_e r) { return rl::test_result_str(r); }

// --------------------------------------------------- test_suite::params

TEST_CASE("params: base_t::params::thread_count counts the threads") {
  CHECK(Str(esp::ParamsThreadCount()) == Str(rl::test_result_success));
}

struct WithDynamic : rl::test_suite<WithDynamic, 2> {
  static constexpr unsigned dynamic_thread_count = 1;
  void thread(unsigned) {}
};
TEST_CASE("params: dynamic threads count in params::thread_count") {
  CHECK(WithDynamic::params::static_thread_count == 2);
  CHECK(WithDynamic::params::dynamic_thread_count == 1);
  CHECK(WithDynamic::params::thread_count == 3);
}

// ------------------------------------------------------------- rl::ctx()

// Each thread writes its own slot, found through rl::ctx().
struct CtxIndex : rl::test_suite<CtxIndex, 2> {
  rl::atomic<int> seen[2];
  void thread(unsigned i) {
    seen[rl::ctx().threadx_->index_]($).store(static_cast<int>(i) + 1);
  }
  void after() { RL_ASSERT(seen[0]($).load() == 1 && seen[1]($).load() == 2); }
};
TEST_CASE("ctx: rl::ctx().threadx_->index_ is the running thread") {
  VERDICT(rl::test_result_success, CtxIndex);
}

// A user history event and a log line in each thread do not hide the race
// on x (nor change anything else).
struct HistEvent {
  int value;
  void output(std::ostream& s) const { s << "event " << value; }
};
template <rl::test_result_e kExpected>
struct HistRace : rl::test_suite<HistRace<kExpected>, 2, kExpected> {
  rl::var<int> x{0};
  void thread(unsigned i) {
    RL_HIST_IMPL(rl::ctx(), $, HistEvent){static_cast<int>(i)} RL_HIST_END();
    RL_LOG("writing x");
    x($) = static_cast<int>(i);
  }
};
TEST_CASE("ctx: RL_HIST_IMPL / RL_LOG are accepted; the race is found") {
  VERDICT(rl::test_result_data_race, HistRace<rl::test_result_data_race>);
}

// The failing execution's trace shows each history event (its output())
// and log line under its thread, in execution order with the rest.
// Expecting success, so that the race is reported with its trace.
using HistTrace = HistRace<rl::test_result_success>;
TEST_CASE("ctx: history events and log lines are in the failure's trace") {
  rl::test_params p;
  p.search_type = rl::sched_full;
  std::ostringstream out;
  p.output_stream = &out;
  CHECK_FALSE(rl::simulate<HistTrace>(p));
  CHECK(p.test_result == rl::test_result_data_race);
  const std::string t = out.str();
  // Logging in the replay changes nothing in it (its memory is the
  // checker's, not a heap-model block of the test).
  CHECK(t.find("=> DATA RACE") != std::string::npos);
  CHECK(t.find("thread 0: event 0") != std::string::npos);
  CHECK(t.find("thread 1: event 1") != std::string::npos);
  CHECK(t.find(": writing x  [examples_conformance_test.cc:") !=
        std::string::npos);
  // Before the accesses it precedes: thread 0's event, then its var write.
  const size_t ev = t.find("thread 0: event 0");
  const size_t wr = t.find("thread 0: var write");
  CHECK(ev < wr);
}

// Outside the failure's trace an event is not even built: a passing search
// never calls output() and collecting_history() is false.
int g_hist_outputs = 0;
bool g_collecting_seen = false;
struct CountedEvent {
  void output(std::ostream& s) const {
    ++g_hist_outputs;
    s << "counted";
  }
};
struct HistQuiet : rl::test_suite<HistQuiet, 2> {
  rl::atomic<int> x{0};
  void thread(unsigned) {
    if (rl::ctx().collecting_history()) g_collecting_seen = true;
    RL_HIST_IMPL(rl::ctx(), $, CountedEvent){} RL_HIST_END();
    x($).fetch_add(1);
  }
};
TEST_CASE("ctx: no history is built while nothing failed") {
  g_hist_outputs = 0;
  VERDICT(rl::test_result_success, HistQuiet);
  CHECK(g_hist_outputs == 0);
  CHECK_FALSE(g_collecting_seen);
}

// ------------------------------------------------------- const x($)

struct ConstRead : rl::test_suite<ConstRead, 2, rl::test_result_data_race> {
  rl::var<int> x{0};
  rl::atomic<int> a{0};
  int Peek() const { return x($) + a($).load(rl::mo_relaxed); }
  void thread(unsigned i) {
    if (i == 0)
      x($) = 1;
    else
      (void)Peek();
  }
};
TEST_CASE("const: x($) in a const member reads, and races are seen") {
  VERDICT(rl::test_result_data_race, ConstRead);
}

// ------------------------------------------------ atomics wider than 8 bytes

TEST_CASE("wide atomic: fetch_add with T's operator+ loses nothing") {
  CHECK(Str(esp::WideFetchAdd()) == Str(rl::test_result_success));
}
TEST_CASE("wide atomic: load-then-store loses an update") {
  CHECK(Str(esp::WideLostUpdate()) == Str(rl::test_result_user_assert_failed));
}
TEST_CASE("wide atomic: a weak CAS loop compares with T's operator==") {
  CHECK(Str(esp::WideCasLoop()) == Str(rl::test_result_success));
}
TEST_CASE("wide atomic: a relaxed publication is a DATA RACE") {
  CHECK(Str(esp::WideRelaxedPublish()) == Str(rl::test_result_data_race));
}

// No operator==: values compare as C++20's compare_exchange does, by
// their bytes without padding (here 4 padding bytes after `tag`).
struct NoEq {
  char tag;
  long long value;
};
struct WideNoEq : rl::test_suite<WideNoEq, 2> {
  rl::atomic<NoEq> a{NoEq{'x', 0}};
  void thread(unsigned) {
    NoEq e = a.load(rl::mo_relaxed);
    while (
        !a.compare_exchange_strong(e, NoEq{'x', e.value + 1}, rl::mo_relaxed)) {
    }
  }
  void after() { RL_ASSERT(a.load().value == 2); }
};
TEST_CASE("wide atomic: a T without operator== compares without padding") {
  VERDICT(rl::test_result_success, WideNoEq);
}

TEST_CASE("wide atomic: usable outside an execution (plain value)") {
  rl::atomic<NoEq> a{NoEq{'a', 1}};
  NoEq e{'a', 1};
  CHECK(a.compare_exchange_strong(e, NoEq{'b', 2}));
  CHECK(a.load().value == 2);
  CHECK(a.exchange(NoEq{'c', 3}).tag == 'b');
  NoEq wrong{'z', 9};
  CHECK_FALSE(a.compare_exchange_strong(wrong, NoEq{'d', 4}));
  CHECK(wrong.tag == 'c');
}

// ------------------------------------------------------------ Java dialect

// A Java flag publishing a plain field: plain (jvar) fields are relaxed, so
// a jvar flag does not publish the data; a jvolatile flag does. The suite
// also states its expected result, as a Relacy suite may.
template <typename Flag, rl::test_result_e kExpected>
struct JavaPublish
    : rl::test_suite<JavaPublish<Flag, kExpected>, 2, kExpected> {
  rl::jvar<int> data;
  Flag flag;
  void thread(unsigned i) {
    if (i == 0) {
      data($) = 1;
      flag($) = 1;
    } else if (flag($) == 1) {
      RL_ASSERT(data($) == 1);
    }
  }
};
TEST_CASE("java: a jvar flag does not publish a jvar (no DATA RACE either)") {
  VERDICT(rl::test_result_user_assert_failed,
          JavaPublish<rl::jvar<int>, rl::test_result_user_assert_failed>);
}
TEST_CASE("java: a jvolatile flag publishes") {
  VERDICT(rl::test_result_success,
          JavaPublish<rl::jvolatile<int>, rl::test_result_success>);
}

// Store then load of the other's volatile (Dekker): sequentially
// consistent, so both cannot read 0.
struct JvolatileDekker : rl::test_suite<JvolatileDekker, 2> {
  rl::jvolatile<int> x, y;
  rl::jvar<int> r0, r1;
  void thread(unsigned i) {
    if (i == 0) {
      x($) = 1;
      r0($) = y($);
    } else {
      y($) = 1;
      r1($) = x($);
    }
  }
  void after() { RL_ASSERT(r0($) == 1 || r1($) == 1); }
};
TEST_CASE("java: jvolatile accesses are sequentially consistent") {
  VERDICT(rl::test_result_success, JvolatileDekker);
}

struct JvolatileIncrement : rl::test_suite<JvolatileIncrement, 2,
                                           rl::test_result_user_assert_failed> {
  rl::jvolatile<int> n;
  void thread(unsigned) { n($)++; }
  void after() { RL_ASSERT(n($) == 2); }
};
TEST_CASE("java: volatile ++ is not atomic") {
  VERDICT(rl::test_result_user_assert_failed, JvolatileIncrement);
}

struct JatomicIncrement : rl::test_suite<JatomicIncrement, 2> {
  rl::jatomic<int> n;
  void thread(unsigned) { n($).incrementAndGet(); }
  void after() {
    RL_ASSERT(n($).get() == 2);
    RL_ASSERT(n($).compareAndSet(2, 5) && !n($).compareAndSet(2, 6));
    RL_ASSERT(n($).getAndSet(7) == 5 && n($).addAndGet(1) == 8);
  }
};
TEST_CASE("java: jatomic incrementAndGet is atomic") {
  VERDICT(rl::test_result_success, JatomicIncrement);
}

}  // namespace
