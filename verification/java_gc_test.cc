// Relacy's Java (and CLI) mode is garbage collected: a Java-mode test that
// never deletes what it allocates (Relacy's java_ws_deque and cli_ws_deque
// examples grow their arrays with new and never free them) gets SUCCESS
// from Relacy, and here. The mode is the translation unit's, selected by
// including relacy_java.hpp (or relacy_cli.hpp) before relacy.hpp, as in
// Relacy; the same program with relacy.hpp first is a MEMORY LEAK
// (conformance_test's heap cases).
#include "relacy/relacy_java.hpp"
#include "doctest/doctest.h"
#include "relacy/relacy.hpp"
#include "test_support.h"
namespace {

struct JavaGrow : rl::test_suite<JavaGrow, 2> {
  rl::jvar<rl::jvar<int>*> array;
  void thread(unsigned i) {
    if (i == 0) array($) = new rl::jvar<int>[4];
  }
};

TEST_CASE("java: memory a Java-mode test drops is collected (no LEAK)") {
  VERDICT(rl::test_result_success, JavaGrow);
}

// Collection is not a licence for C++ heap errors the mode still has: a
// double delete is still reported.
struct JavaDoubleDelete : rl::test_suite<JavaDoubleDelete, 1> {
  void thread(unsigned) {
    rl::jvar<int>* p = new rl::jvar<int>(1);
    delete p;
    delete p;
  }
};
TEST_CASE("java: a double delete is still DOUBLE FREE") {
  VERDICT(rl::test_result_double_free, JavaDoubleDelete);
}

// Managed memory is zeroed before any thread reaches an object: a field
// read through a racy publication is no DATA RACE in this mode (Relacy's
// jtest test_unitialized_var<1>: some execution reads the 1).
struct JavaRacyPublication
    : rl::test_suite<JavaRacyPublication, 2,
                     rl::test_result_until_condition_hit> {
  rl::jvar<rl::jvar<int>*> published;
  void thread(unsigned i) {
    if (i == 0) {
      published($) = new rl::jvar<int>(1);
    } else {
      rl::jvar<int>* p;
      while ((p = published($)) == nullptr) rl::yield(1, $);
      RL_UNTIL((*p)($) == 1);
    }
  }
};
TEST_CASE("java: a racily published field is read, not a DATA RACE") {
  VERDICT(rl::test_result_until_condition_hit, JavaRacyPublication);
}

// Relacy's constructors: AtomicInteger (jatomic<int>) and jvolatile from
// another one or its x($), by a load of it.
struct JavaCopies : rl::test_suite<JavaCopies, 1> {
  void thread(unsigned) {
    rl::AtomicInteger a(5), b(a), c(a($));
    rl::jvolatile<int> v(7), w(v);
    RL_ASSERT(b($).get() == 5 && c($).addAndGet(1) == 6);
    RL_ASSERT(w($) == 7);
  }
};
TEST_CASE("java: AtomicInteger and jvolatile copies read the original") {
  VERDICT(rl::test_result_success, JavaCopies);
}

}  // namespace
