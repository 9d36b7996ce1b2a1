// Helpers shared by the checker's own tests (conformance_test,
// many_threads_test, win32_conformance_test and the *_std_programs
// translation units): run a suite exhaustively and compare verdicts by
// Relacy's result strings. Test-only; not part of the checker.
//
// RunFull<T>() and RunRandom<T>() are always available. Full<T>() and
// VERDICT(R, Suite...) also log the verdict with doctest's MESSAGE and are
// defined only when doctest/doctest.h was included first. Include
// relacy/relacy.hpp (or relacy_std.hpp / relacy_cli.hpp / windows.h) from the
// checker library the test links: //verification:relacy or :relacy_wide, never
// both.
#ifndef PERCPU_VERIFICATION_TEST_SUPPORT_H_
#define PERCPU_VERIFICATION_TEST_SUPPORT_H_

#include <sstream>
#include <string>

#include "relacy/relacy.hpp"

namespace rl_test {

template <typename T>
rl::test_result_e RunWith(rl::test_params p, rl::test_params* out,
                          std::string* trace_out);

// Explores T exhaustively (sched_full) and returns its verdict. The trace
// of a failing execution, and anything else the run prints, is kept out of
// the log (*trace, if given, receives it); *out, if given, receives the
// parameters after the run (executions, stop_iteration, final_state).
// base: the other parameters (stateless_spins, spin_bound, ...).
template <typename T>
rl::test_result_e RunFull(rl::test_params* out = nullptr,
                          std::string* trace_out = nullptr,
                          const rl::test_params& base = rl::test_params()) {
  rl::test_params p = base;
  p.search_type = rl::sched_full;
  return RunWith<T>(p, out, trace_out);
}

// As RunFull, with Relacy's random search of `iterations` executions.
template <typename T>
rl::test_result_e RunRandom(unsigned iterations, rl::test_params* out = nullptr,
                            std::string* trace_out = nullptr,
                            const rl::test_params& base = rl::test_params()) {
  rl::test_params p = base;
  p.search_type = rl::sched_random;
  p.iteration_count = iterations;
  return RunWith<T>(p, out, trace_out);
}

// RunFull's and RunRandom's run of T with parameters p.
template <typename T>
rl::test_result_e RunWith(rl::test_params p, rl::test_params* out,
                          std::string* trace_out) {
  p.print_summary = false;
  std::ostringstream trace;
  p.output_stream = &trace;
  rl::simulate<T>(p);
  if (out != nullptr) {
    *out = p;
    out->output_stream = nullptr;  // the stream is gone
  }
  if (trace_out != nullptr) *trace_out = trace.str();
  return p.test_result;
}

}  // namespace rl_test

#ifdef DOCTEST_VERSION_STR
namespace rl_test {
// RunFull, with the verdict and the execution counts in the test log.
template <typename T>
rl::test_result_e Full(rl::test_params* out = nullptr) {
  rl::test_params p;
  rl::test_result_e r = RunFull<T>(&p);
  MESSAGE(std::string(rl::test_result_str(r))
          << " after " << p.executions << " executions (+"
          << p.blocked_executions << " pruned)");
  if (out != nullptr) *out = p;
  return r;
}
}  // namespace rl_test

// CHECKs that the suite (a type, commas allowed) gets verdict R; compared as
// Relacy's strings so a failure prints both.
#define VERDICT(R, ...)                                                     \
  CHECK(std::string(rl::test_result_str(::rl_test::Full<__VA_ARGS__>())) == \
        std::string(rl::test_result_str(R)))
#endif  // DOCTEST_VERSION_STR

#endif  // PERCPU_VERIFICATION_TEST_SUPPORT_H_
