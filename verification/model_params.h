// Shared helpers of the project's model tests: run a suite exhaustively and
// report what was explored, or run a deliberately broken variant and check
// that the checker finds its failure.
#ifndef PERCPU_VERIFICATION_MODEL_PARAMS_H_
#define PERCPU_VERIFICATION_MODEL_PARAMS_H_

#include <sstream>
#include <string>

#include "doctest/doctest.h"
#include "relacy/relacy.hpp"

namespace percpu {
namespace model {

// Explores every execution of T (sched_full) and returns whether all of them
// passed. Prints the number of executions explored.
// stateless_spins: the suite's retry loops carry nothing from one try into
// the next (test_params::stateless_spins).
template <typename T>
bool CheckExhaustive(bool stateless_spins = false) {
  rl::test_params params;
  params.search_type = rl::sched_full;
  params.stateless_spins = stateless_spins;
  params.quiet_progress = true;
  params.print_summary = false;
  const bool ok = rl::simulate<T>(params);
  MESSAGE(
      "exhaustive: " << params.executions << " executions (+"
                     << params.blocked_executions << " pruned) in "
                     << params.seconds << " s: "
                     << std::string(rl::test_result_str(params.test_result)));
  return ok && params.test_result == rl::test_result_success;
}

// Explores T, a suite whose ExpectedResult is success but which contains a
// planted bug, and returns whether the checker found a failure of kind
// `expected` (an assertion failure unless told otherwise; a data race for
// a bug that only breaks the ordering of an atomic's initialization).
// The counterexample's trace is kept out of the log unless it is missing.
template <typename T>
bool CheckFindsFailure(
    rl::test_result_e expected = rl::test_result_user_assert_failed,
    bool stateless_spins = false) {
  rl::test_params params;
  params.search_type = rl::sched_full;
  params.stateless_spins = stateless_spins;
  params.quiet_progress = true;
  params.print_summary = false;
  std::ostringstream trace;
  params.output_stream = &trace;
  const bool matched_expectation = rl::simulate<T>(params);
  const bool caught = !matched_expectation && params.test_result == expected;
  MESSAGE("mutant " << std::string(caught ? "caught" : "NOT caught")
                    << " after " << params.executions << " executions: "
                    << std::string(rl::test_result_str(params.test_result)));
  return caught;
}

}  // namespace model
}  // namespace percpu

#endif  // PERCPU_VERIFICATION_MODEL_PARAMS_H_
