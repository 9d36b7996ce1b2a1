// The single seam between the primitives and the atomics they run on.
//
// Every concurrent algorithm in primitives/ names its atomics through this
// header only. A normal build maps them to std::atomic; a model-check build
// (PERCPU_MODEL_CHECK, see //verification) maps them to the checker's
// rl::atomic, so the very same primitive source is explored by the model
// checker. No algorithm is ever copied into a test.
//
// Both mappings take std::memory_order, so primitive code is written once:
//   internal::Atomic<uint32_t> seq{0};
//   seq.load(std::memory_order_acquire);
//   internal::ThreadFence(std::memory_order_release);
#ifndef PERCPU_PRIMITIVES_INTERNAL_ATOMIC_H_
#define PERCPU_PRIMITIVES_INTERNAL_ATOMIC_H_

#include <atomic>

#if defined(PERCPU_MODEL_CHECK)
#include "relacy/relacy.hpp"
#endif

// internal::Mutex lives in primitives/internal/mutex.h (kept out of this
// header so the writer-side headers stay light).

namespace percpu {
namespace internal {

#if defined(PERCPU_MODEL_CHECK)

// The checker's atomic without lifetime tracking: trivially destructible,
// as PerCpuAllocator requires of what it hands out (it never runs
// destructors); otherwise rl::atomic itself.
template <typename T>
using Atomic = rl::detail::basic_atomic<T>;

inline void ThreadFence(std::memory_order order) {
  rl::atomic_thread_fence(order);
}

// Lets a spin loop tell the checker it is waiting, so a spinning reader is
// not explored forever (livelock detection, fairness).
inline void SpinPause() { rl::yield(1); }

#else

template <typename T>
using Atomic = std::atomic<T>;

inline void ThreadFence(std::memory_order order) {
  std::atomic_thread_fence(order);
}

inline void SpinPause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__) || (defined(__arm__) && __ARM_ARCH >= 7)
  __asm__ __volatile__("yield" ::: "memory");
#endif
}

#endif

}  // namespace internal
}  // namespace percpu

#endif  // PERCPU_PRIMITIVES_INTERNAL_ATOMIC_H_
