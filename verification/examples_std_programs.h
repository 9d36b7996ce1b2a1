// Programs in the layout of Relacy's own examples (relacy/pch.hpp, then
// relacy/relacy_std.hpp, relacy/stdlib/*.hpp, relacy/pthread.h), compiled
// in their own translation unit (examples_std_programs.cc) and run by
// examples_conformance_test. Each returns the verdict of an exhaustive
// search; the comment gives Relacy's verdict for the same program
// (dvyukov/relacy 9f25438, checked side by side).
#ifndef PERCPU_VERIFICATION_EXAMPLES_STD_PROGRAMS_H_
#define PERCPU_VERIFICATION_EXAMPLES_STD_PROGRAMS_H_

#include "relacy/relacy.hpp"

namespace examples_std_programs {

rl::test_result_e ParamsThreadCount();   // SUCCESS
rl::test_result_e WideFetchAdd();        // SUCCESS
rl::test_result_e WideLostUpdate();      // USER ASSERT FAILED
rl::test_result_e WideCasLoop();         // SUCCESS
rl::test_result_e WideRelaxedPublish();  // DATA RACE
rl::test_result_e StdlibHeadersMutex();  // SUCCESS (pthread + Win32 shims)

}  // namespace examples_std_programs

#endif  // PERCPU_VERIFICATION_EXAMPLES_STD_PROGRAMS_H_
