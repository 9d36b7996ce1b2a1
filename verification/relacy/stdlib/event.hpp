// Relacy's "relacy/stdlib/event.hpp" include path: the Win32 shims live in
// relacy/windows.h here.
#ifndef PERCPU_VERIFICATION_RELACY_STDLIB_EVENT_HPP_
#define PERCPU_VERIFICATION_RELACY_STDLIB_EVENT_HPP_
#include "../windows.h"
#endif  // PERCPU_VERIFICATION_RELACY_STDLIB_EVENT_HPP_
