// The example test of docs/verification.md ("Writing a test"), verbatim:
// //examples:doc_snippets_test checks that the doc still shows this code,
// and //examples:relacy_example_test runs it under the model checker.
#include "relacy/relacy.hpp"
#include "doctest/doctest.h"

struct MessagePassing : rl::test_suite<MessagePassing, 2> {
  rl::atomic<int> flag{0};
  rl::var<int> data{0};           // non-atomic: every access race-checked
  void before() {}                // optional, runs before the threads
  void thread(unsigned i) {
    if (i == 0) {
      VAR(data) = 42;
      flag.store(1, rl::mo_release);
    } else {
      while (flag.load(rl::mo_acquire) == 0) rl::yield(1);  // spin: yield!
      RL_ASSERT(VAR(data) == 42);
    }
  }
  void after() {}                 // optional, runs after all threads joined
  void invariant() {}             // optional, runs after every step
};

TEST_CASE("mp") {
  rl::test_params p;              // default: 1000 random executions
  p.search_type = rl::sched_full; // every execution: say so explicitly
  CHECK(rl::simulate<MessagePassing>(p));
}
