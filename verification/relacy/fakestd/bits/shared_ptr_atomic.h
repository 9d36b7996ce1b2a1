// fakestd mode: shadows libstdc++'s <bits/shared_ptr_atomic.h> (included by
// <memory>) with nothing. The real one builds std::atomic<shared_ptr<T>>
// and the atomic_load(shared_ptr*) family on libstdc++'s own atomics,
// which this mode replaces; a checked program has no use for them (their
// accesses would be invisible to the checker anyway).
// Only for the include path of a program using relacy_std.hpp.
#ifndef PERCPU_VERIFICATION_RELACY_FAKESTD_BITS_SHARED_PTR_ATOMIC_H_
#define PERCPU_VERIFICATION_RELACY_FAKESTD_BITS_SHARED_PTR_ATOMIC_H_

#include "../mode.hpp"

#endif  // PERCPU_VERIFICATION_RELACY_FAKESTD_BITS_SHARED_PTR_ATOMIC_H_
