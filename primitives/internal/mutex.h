// internal::Mutex: the mutex of the primitives' slow paths (registration,
// allocation, hotplug events), kept out of the writer-side headers' include
// graph.
//
// A normal build wraps pthread_mutex_t, so a header that declares a Mutex
// member needs only <pthread.h>, not <mutex> (~32k preprocessed lines; see
// docs/header_cost.md). The type is BasicLockable and Lockable (lock,
// unlock, try_lock): a .cc file that includes <mutex> itself keeps using
// std::lock_guard / std::unique_lock on it. A model-check build
// (PERCPU_MODEL_CHECK, see //verification) maps it to the checker's
// rl::mutex, whose lock() synchronizes-with the previous unlock() and whose
// deadlocks and misuse are reported.
//
// Memory ordering: lock() acquires and unlock() releases (POSIX 4.12,
// "Memory Synchronization"); a lock() synchronizes-with the unlock() that
// released the mutex before it, exactly as std::mutex.
//
// Usage constraints: not recursive; unlock() only by the owning thread
// (asserted by an error-checking mutex in no build: a violation is a
// programmer-contract error, undefined as for std::mutex). Not copyable or
// movable. Constant-initialized, so it is usable from static initializers.
#ifndef PERCPU_PRIMITIVES_INTERNAL_MUTEX_H_
#define PERCPU_PRIMITIVES_INTERNAL_MUTEX_H_

#include <pthread.h>

#if defined(PERCPU_MODEL_CHECK)
#include "relacy/relacy.hpp"
#endif

namespace percpu {
namespace internal {

// A real mutex in every build, also under the model checker, where it is
// not modelled: for slow-path state (Topology's and PerCpuAllocator's
// registration and allocation locks) that the model tests drive from
// before()/after() or from one thread, exactly as std::mutex was there.
class SystemMutex {
 public:
  constexpr SystemMutex() noexcept = default;
  ~SystemMutex() { pthread_mutex_destroy(&mu_); }
  SystemMutex(const SystemMutex&) = delete;
  SystemMutex& operator=(const SystemMutex&) = delete;

  // A default (non-error-checking) mutex fails only on contract
  // violations (EDEADLK is not reported for it), so the result is ignored,
  // as std::mutex::lock would throw only for those.
  void lock() noexcept { pthread_mutex_lock(&mu_); }
  bool try_lock() noexcept { return pthread_mutex_trylock(&mu_) == 0; }
  void unlock() noexcept { pthread_mutex_unlock(&mu_); }

  pthread_mutex_t* native_handle() noexcept { return &mu_; }

 private:
  pthread_mutex_t mu_ = PTHREAD_MUTEX_INITIALIZER;
};

#if defined(PERCPU_MODEL_CHECK)
using Mutex = rl::mutex;
#else
using Mutex = SystemMutex;
#endif

}  // namespace internal
}  // namespace percpu

#endif  // PERCPU_PRIMITIVES_INTERNAL_MUTEX_H_
