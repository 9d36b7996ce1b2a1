// Relacy's header for rl::dyn_thread, which relacy.hpp declares here (as it
// does rl::thread_local_var): including it is enough, this one is for
// programs that include it by name.
#ifndef PERCPU_VERIFICATION_RELACY_DYN_THREAD_HPP_
#define PERCPU_VERIFICATION_RELACY_DYN_THREAD_HPP_

#include "relacy.hpp"

#endif  // PERCPU_VERIFICATION_RELACY_DYN_THREAD_HPP_
