// Relacy's "relacy/stdlib/condition_variable.hpp" include path: the checker's
// mutexes, condition variables and POSIX shims live in relacy.hpp and
// relacy_std.hpp here.
#ifndef PERCPU_VERIFICATION_RELACY_STDLIB_CONDITION_VARIABLE_HPP_
#define PERCPU_VERIFICATION_RELACY_STDLIB_CONDITION_VARIABLE_HPP_
#include "../relacy_std.hpp"
#endif  // PERCPU_VERIFICATION_RELACY_STDLIB_CONDITION_VARIABLE_HPP_
