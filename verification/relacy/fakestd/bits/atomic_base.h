// fakestd mode: shadows libstdc++'s <bits/atomic_base.h>, which every
// header needing atomics pulls in and which defines std::atomic_flag and
// std::atomic_thread_fence (they would clash with the checker's). Keeps
// only what is not an atomic object: std::memory_order (the same C++20
// type as libstdc++'s, which the checker's engine is compiled with),
// kill_dependency and the initializer / lock-free macros.
// Only for the include path of a program using relacy_std.hpp.
#ifndef PERCPU_VERIFICATION_RELACY_FAKESTD_BITS_ATOMIC_BASE_H_
#define PERCPU_VERIFICATION_RELACY_FAKESTD_BITS_ATOMIC_BASE_H_

#include <bits/atomic_lockfree_defines.h>  // ATOMIC_INT_LOCK_FREE, ...

#include "../mode.hpp"

namespace std {

enum class memory_order : int {
  relaxed,
  consume,
  acquire,
  release,
  acq_rel,
  seq_cst
};
inline constexpr memory_order memory_order_relaxed = memory_order::relaxed;
inline constexpr memory_order memory_order_consume = memory_order::consume;
inline constexpr memory_order memory_order_acquire = memory_order::acquire;
inline constexpr memory_order memory_order_release = memory_order::release;
inline constexpr memory_order memory_order_acq_rel = memory_order::acq_rel;
inline constexpr memory_order memory_order_seq_cst = memory_order::seq_cst;

template <typename T>
inline T kill_dependency(T y) noexcept {
  return y;
}

}  // namespace std

// Initializers of rl::atomic / rl::atomic_flag (a clear flag is the
// default-constructed one).
#define ATOMIC_VAR_INIT(v) \
  { v }
#define ATOMIC_FLAG_INIT \
  {}

#endif  // PERCPU_VERIFICATION_RELACY_FAKESTD_BITS_ATOMIC_BASE_H_
