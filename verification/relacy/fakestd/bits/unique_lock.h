// fakestd mode: shadows libstdc++'s <bits/unique_lock.h>, whose
// std::unique_lock would clash with the checker's (relacy_std.hpp puts
// rl::unique_lock into std; it takes Relacy's trailing `$`). Declares
// nothing: the lock tags come with <bits/std_mutex.h>.
// Only for the include path of a program using relacy_std.hpp.
#ifndef PERCPU_VERIFICATION_RELACY_FAKESTD_BITS_UNIQUE_LOCK_H_
#define PERCPU_VERIFICATION_RELACY_FAKESTD_BITS_UNIQUE_LOCK_H_

#include <bits/std_mutex.h>  // this directory's: the lock tags

#include "../mode.hpp"

#endif  // PERCPU_VERIFICATION_RELACY_FAKESTD_BITS_UNIQUE_LOCK_H_
