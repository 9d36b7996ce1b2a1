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

}  // namespace
