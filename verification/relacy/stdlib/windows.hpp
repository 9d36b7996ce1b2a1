// Relacy's "relacy/stdlib/windows.hpp" include path: the Win32 shims live in
// relacy/windows.h here.
#ifndef PERCPU_VERIFICATION_RELACY_STDLIB_WINDOWS_HPP_
#define PERCPU_VERIFICATION_RELACY_STDLIB_WINDOWS_HPP_
#include "../windows.h"
#endif  // PERCPU_VERIFICATION_RELACY_STDLIB_WINDOWS_HPP_
