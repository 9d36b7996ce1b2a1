// Relacy's std spellings for the checker: a test written for Relacy's
// relacy_std.hpp (std::atomic<T>, std::mutex, std::condition_variable,
// std::atomic_thread_fence, the POSIX pthread_mutex_t / pthread_cond_t /
// sem_t / pthread_create shims, malloc / free) compiles unchanged and runs
// on the checker's objects. See docs/verification.md, "The dialect".
//
// How: Relacy injects its types into namespace std, which clashes with the
// standard library's own std::atomic (every libstdc++ container header
// declares it). Here `std` is a macro naming rl::std_shim, a namespace that
// re-exports all of ::std and declares the checker's types under the std
// names, so qualified lookup (std::atomic) finds the checker's type first.
// Consequences (tested in conformance_test):
//  * Include this header after every standard header the test uses. It
//    includes the common ones itself; a standard header included after it
//    would be compiled into the wrong namespace.
//  * `::std::atomic` (with the leading ::) is not rewritten; neither is an
//    unqualified `atomic<T>` after `using namespace std;` (ambiguous with
//    the real std::atomic): write std::atomic<T> or rl::atomic<T>.
//
// fakestd mode (Relacy's -I relacy/fakestd): with verification/relacy/
// fakestd on the include path before the standard library's (Bazel:
// //verification:relacy_fakestd), the standard <atomic>, <mutex>,
// <condition_variable>, <thread> are that directory's and declare no
// atomics or mutexes of their own. Then the same names go into the real
// namespace std, `std` is no macro, and `using namespace std;` with
// unqualified atomic<T>, mutex, memory_order_relaxed works. Standard
// headers may come before or after this one (tested in
// fakestd_conformance_test); see docs/verification.md, "fakestd mode".
#ifndef PERCPU_VERIFICATION_RELACY_RELACY_STD_HPP_
#define PERCPU_VERIFICATION_RELACY_RELACY_STD_HPP_

// Standard and POSIX headers first: after `#define std` below they could
// no longer be included (their include guards make later includes no-ops).
#include <pthread.h>
#include <semaphore.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cassert>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <iostream>
#include <limits>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <queue>
#include <set>
#include <sstream>
#include <stack>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "relacy.hpp"

namespace rl {

// Relacy's typedefs.
using atomic_bool = atomic<bool>;
using atomic_char = atomic<char>;
using atomic_schar = atomic<signed char>;
using atomic_uchar = atomic<unsigned char>;
using atomic_short = atomic<short>;                // NOLINT
using atomic_ushort = atomic<unsigned short>;      // NOLINT
using atomic_int = atomic<int>;
using atomic_uint = atomic<unsigned>;
using atomic_long = atomic<long>;                  // NOLINT
using atomic_ulong = atomic<unsigned long>;        // NOLINT
using atomic_llong = atomic<long long>;            // NOLINT
using atomic_ullong = atomic<unsigned long long>;  // NOLINT
using atomic_wchar_t = atomic<wchar_t>;
using atomic_intptr_t = atomic<intptr_t>;
using atomic_uintptr_t = atomic<uintptr_t>;
using atomic_size_t = atomic<size_t>;
using atomic_ptrdiff_t = atomic<ptrdiff_t>;
using atomic_address = atomic<void*>;

}  // namespace rl

// The checker's std names: one list for both modes, so they declare the
// same set.
#ifdef PERCPU_RL_FAKESTD
namespace std {
#else
namespace rl::std_shim {
using namespace ::std;  // NOLINT: everything else stays the real std
#endif
using ::rl::atomic;
using ::rl::atomic_flag;
using ::rl::atomic_signal_fence;
using ::rl::atomic_thread_fence;
using ::rl::condition_variable;
using ::rl::condition_variable_any;
using ::rl::lock_guard;
using ::rl::mutex;
using ::rl::recursive_mutex;
using ::rl::scoped_lock;
using ::rl::unique_lock;
// Relacy's short order names are in its std as well (std::mo_release).
using ::rl::mo_acq_rel;
using ::rl::mo_acquire;
using ::rl::mo_consume;
using ::rl::mo_relaxed;
using ::rl::mo_release;
using ::rl::mo_seq_cst;
using ::rl::atomic_address;
using ::rl::atomic_bool;
using ::rl::atomic_char;
using ::rl::atomic_int;
using ::rl::atomic_intptr_t;
using ::rl::atomic_llong;
using ::rl::atomic_long;
using ::rl::atomic_ptrdiff_t;
using ::rl::atomic_schar;
using ::rl::atomic_short;
using ::rl::atomic_size_t;
using ::rl::atomic_uchar;
using ::rl::atomic_uint;
using ::rl::atomic_uintptr_t;
using ::rl::atomic_ullong;
using ::rl::atomic_ulong;
using ::rl::atomic_ushort;
using ::rl::atomic_wchar_t;
using ::rl::rl_calloc;
using ::rl::rl_free;
using ::rl::rl_malloc;
using ::rl::rl_realloc;
}  // namespace std / rl::std_shim

namespace rl {

// ------------------------------------------------------------ POSIX shims
// Checker objects behind the POSIX names (macros below). Each is
// constructed with the suite, so it is fresh in every execution;
// *_init re-initializes it, *_destroy of a held mutex is reported.

namespace detail {
// What the *_INITIALIZER macros build: an object live from its
// construction (detail::ShimUse's statically_live), where a
// default-constructed one must be set up by *_init first.
struct StaticInit {};
}  // namespace detail

struct rl_pthread_mutex_t {
  rl_pthread_mutex_t(debug_info info = RL_CURRENT_INFO)  // NOLINT
      : rm(detail::NoResource{}, info), m(detail::NoResource{}, info) {}
  rl_pthread_mutex_t(detail::StaticInit,  // NOLINT: PTHREAD_MUTEX_INITIALIZER
                     debug_info info = RL_CURRENT_INFO)
      : rl_pthread_mutex_t(info) {
    static_init = true;
  }
  recursive_mutex rm;
  mutex m;
  bool recursive = false;
  bool static_init = false;  // PTHREAD_MUTEX_INITIALIZER
  // Set by pthread_mutex_init, released by pthread_mutex_destroy: left
  // behind, Relacy's RESOURCE LEAK (a PTHREAD_MUTEX_INITIALIZER mutex
  // needs no destroy and has none).
  void* resource = nullptr;
};

// A condition variable: the threads waiting on it are a wait queue
// (detail::WaitQueue). A waiter registers while it still holds the mutex,
// so a signal from a thread that takes the mutex after it is never lost;
// a signal with nobody registered is (DEADLOCK if the waiter then sleeps
// forever). The mutex orders the data: the woken waiter relocks it.
struct rl_pthread_cond_t {
  rl_pthread_cond_t() = default;
  rl_pthread_cond_t(detail::StaticInit)  // NOLINT: PTHREAD_COND_INITIALIZER
      : static_init(true) {}
  bool static_init = false;  // PTHREAD_COND_INITIALIZER
  detail::WaitQueue waiters;
  // Threads whose last wait woke spuriously: the next one does not (or a
  // predicate loop would never end), as rl::condition_variable.
  uint64_t spurious = 0;
  uint64_t gen = 0;
  void* resource = nullptr;  // as rl_pthread_mutex_t::resource
};

// A reader-writer lock: a detail::RwWord (its protocol and orders are
// there; a reader's holds may nest, as POSIX allows).
struct rl_pthread_rwlock_t {
  rl_pthread_rwlock_t(debug_info info = RL_CURRENT_INFO)  // NOLINT
      : word(info) {}
  rl_pthread_rwlock_t(detail::StaticInit,  // NOLINT: ..._INITIALIZER
                      debug_info info = RL_CURRENT_INFO)
      : word(info), static_init(true) {}
  detail::RwWord word;
  bool static_init = false;  // PTHREAD_RWLOCK_INITIALIZER
  void* resource = nullptr;  // as rl_pthread_mutex_t::resource
};

struct rl_pthread_t {
  int handle = -1;
};

// A counting semaphore: sem_post is a release increment, sem_wait an
// acquire decrement of a positive count that waits (deadlock-detected)
// while the count is 0, so a post synchronizes-with the wait it satisfies.
struct rl_sem_t {
  rl_sem_t(unsigned value = 0,                    // NOLINT
           debug_info info = RL_CURRENT_INFO)  // NOLINT
      : count(value, info) {}
  atomic<unsigned> count;
  void* resource = nullptr;  // as rl_pthread_mutex_t::resource
};

namespace detail {
// *_init builds the checker's object in place. Its memory may be
// uninitialized (C code: malloc, then *_init), so the old contents are
// neither read nor destroyed: initializing an object that is already
// initialized is undefined in POSIX. (Destroying them first read garbage
// under ASan's malloc, a false DOUBLE FREE.)
template <typename T, typename... A>
void Reinit(T* p, A&&... a) {
  new (p) T(static_cast<A&&>(a)...);
}

// The resource token of an initialized object (see rl_pthread_mutex_t):
// taken by *_init, given back by *_destroy.
inline void* NewResource() { return HeapAlloc(1, 0, kHeapResource); }
// Relacy's lifecycle checks (detail::ShimUse): a mutex, rwlock, condition
// variable or semaphore used before *_init (unless built by its
// initializer) or after *_destroy.
inline void UseMutex(const rl_pthread_mutex_t* m, const debug_info& info) {
  ShimUse(m, ShimKind::kMutex, m->static_init, info);
}
inline void UseRwlock(const rl_pthread_rwlock_t* l, const debug_info& info) {
  ShimUse(l, ShimKind::kMutex, l->static_init, info);
}
inline void UseCond(const rl_pthread_cond_t* c, const debug_info& info) {
  ShimUse(c, ShimKind::kCondvar, c->static_init, info);
}
inline void UseSem(const rl_sem_t* s, const debug_info& info) {
  ShimUse(s, ShimKind::kSemaphore, false, info);
}
inline void GiveResource(void*& held, const debug_info& info) {
  if (held == nullptr) return;
  HeapFree(held, kHeapResource, info);
  held = nullptr;
}
// Threads whose last wait of a kind ended early, with no wake (EINTR from
// a signal, a deadline passed at once), a bit per thread (MayEndEarly).
// Reset by every execution.
struct EndedEarly {
  uint64_t futex = 0, sem = 0, timedlock = 0;
  uint64_t gen = 0;
};
inline EndedEarly& EarlyEnds() {
  static EndedEarly w;
  if (w.gen != Generation()) w = EndedEarly{0, 0, 0, Generation()};
  return w;
}
}  // namespace detail

}  // namespace rl

// Overloads next to the C library's functions: the shim types differ from
// glibc's, so overload resolution picks these.
inline int pthread_mutex_init(rl::rl_pthread_mutex_t* m,
                              const pthread_mutexattr_t* attr,
                              rl::debug_info info = RL_CURRENT_INFO) {
  int type = PTHREAD_MUTEX_DEFAULT;
  if (attr != nullptr) pthread_mutexattr_gettype(attr, &type);
  rl::detail::ShimInit(m, rl::detail::ShimKind::kMutex, info);
  void* const resource = rl::detail::NewResource();
  rl::detail::Reinit(m, info);
  m->recursive = type == PTHREAD_MUTEX_RECURSIVE;
  m->resource = resource;
  return 0;
}
inline int pthread_mutex_destroy(rl::rl_pthread_mutex_t* m,
                                 rl::debug_info info = RL_CURRENT_INFO) {
  rl::detail::ShimDestroy(m, rl::detail::ShimKind::kMutex, m->static_init,
                          info);
  if (m->recursive ? rl::detail::Held(m->rm) : rl::detail::Held(m->m))
    rl::detail::Fail(rl::test_result_destroying_owned_mutex,
                     "pthread_mutex_destroy of a held mutex", info);
  rl::detail::GiveResource(m->resource, info);
  return 0;
}
inline int pthread_mutex_lock(rl::rl_pthread_mutex_t* m,
                              rl::debug_info info = RL_CURRENT_INFO) {
  rl::detail::UseMutex(m, info);
  if (m->recursive)
    m->rm.lock(info);
  else
    m->m.lock(info);
  return 0;
}
inline int pthread_mutex_trylock(rl::rl_pthread_mutex_t* m,
                                 rl::debug_info info = RL_CURRENT_INFO) {
  rl::detail::UseMutex(m, info);
  bool ok = m->recursive ? m->rm.try_lock(info) : m->m.try_lock(info);
  return ok ? 0 : EBUSY;
}
// Relacy's spelling of pthread_mutex_trylock.
inline int pthread_mutex_try_lock(rl::rl_pthread_mutex_t* m,
                                  rl::debug_info info = RL_CURRENT_INFO) {
  return pthread_mutex_trylock(m, info);
}
// Takes a free mutex. A held one: the deadline passes at once (explored,
// not twice in a row for a thread), or the thread sleeps until an unlock
// lets it take it, timing out once every thread waits, as a Relacy timed
// lock parks. The deadline is not read: the checker has no clock.
inline int pthread_mutex_timedlock(rl::rl_pthread_mutex_t* m,
                                   const void* /*abstime*/,
                                   rl::debug_info info = RL_CURRENT_INFO) {
  if (pthread_mutex_trylock(m, info) == 0) return 0;
  if (!m->recursive) m->m.CheckRecursion(info);
  if (rl::detail::EndsEarly(&rl::detail::EarlyEnds().timedlock, info))
    return ETIMEDOUT;
  bool ok = m->recursive ? m->rm.timed_lock(info) : m->m.timed_lock(info);
  return ok ? 0 : ETIMEDOUT;
}
inline int pthread_mutex_unlock(rl::rl_pthread_mutex_t* m,
                                rl::debug_info info = RL_CURRENT_INFO) {
  rl::detail::UseMutex(m, info);
  if (m->recursive)
    m->rm.unlock(info);
  else
    m->m.unlock(info);
  return 0;
}

inline int pthread_cond_init(rl::rl_pthread_cond_t* c, const pthread_condattr_t*,
                             rl::debug_info info = RL_CURRENT_INFO) {
  rl::detail::ShimInit(c, rl::detail::ShimKind::kCondvar, info);
  rl::detail::Reinit(c);
  c->resource = rl::detail::NewResource();
  return 0;
}
inline int pthread_cond_destroy(rl::rl_pthread_cond_t* c,
                                rl::debug_info info = RL_CURRENT_INFO) {
  rl::detail::ShimDestroy(c, rl::detail::ShimKind::kCondvar, c->static_init,
                          info);
  rl::detail::GiveResource(c->resource, info);
  return 0;
}

namespace rl::detail {
// pthread_cond_wait / timedwait (timed: a deadline is given). Returns 0
// (signalled, or a spurious wake-up, which POSIX allows) or ETIMEDOUT.
inline int CondWait(rl_pthread_cond_t* c, rl_pthread_mutex_t* m, bool timed,
                    const debug_info& info);
}  // namespace rl::detail

inline int pthread_cond_wait(rl::rl_pthread_cond_t* c,
                             rl::rl_pthread_mutex_t* m,
                             rl::debug_info info = RL_CURRENT_INFO) {
  return rl::detail::CondWait(c, m, /*timed=*/false, info);
}
// Relacy's programs pass any pointer as the deadline; it is not read.
inline int pthread_cond_timedwait(rl::rl_pthread_cond_t* c,
                                  rl::rl_pthread_mutex_t* m,
                                  const void* /*abstime*/,
                                  rl::debug_info info = RL_CURRENT_INFO) {
  return rl::detail::CondWait(c, m, /*timed=*/true, info);
}
inline int pthread_cond_signal(rl::rl_pthread_cond_t* c,
                               rl::debug_info info = RL_CURRENT_INFO) {
  rl::detail::UseCond(c, info);
  // Relaxed: the mutex orders the data, not the signal.
  c->waiters.Wake(1, rl::mo_relaxed, info);
  return 0;
}
inline int pthread_cond_broadcast(rl::rl_pthread_cond_t* c,
                                  rl::debug_info info = RL_CURRENT_INFO) {
  rl::detail::UseCond(c, info);
  // Relaxed: as pthread_cond_signal.
  c->waiters.Wake(~0u, rl::mo_relaxed, info);
  return 0;
}

namespace rl::detail {
inline int CondWait(rl_pthread_cond_t* c, rl_pthread_mutex_t* m, bool timed,
                    const debug_info& info) {
  UseCond(c, info);
  UseMutex(m, info);
  if (c->gen != Generation()) {
    c->gen = Generation();
    c->spurious = 0;
  }
  c->waiters.Register(info);  // still under the mutex (see the struct)
  pthread_mutex_unlock(m, info);
  int result = 0;
  if (EndsEarly(&c->spurious, info)) {
    // A spurious wake-up, or for a timed wait the deadline passing at
    // once (explored; not twice in a row for a thread, so a predicate
    // loop ends). A signal that picked the thread meanwhile is consumed
    // all the same.
    if (c->waiters.Leave(info) && timed) result = ETIMEDOUT;
  } else {
    // Relaxed: the mutex orders the data. A timed sleep no signal ends
    // times out once every thread waits (AwaitCond::timed), and leaves
    // the queue (unless a signal picked it meanwhile: then it was woken).
    if (!c->waiters.SleepUntilPicked(mo_relaxed, info, timed) && timed &&
        !Abandoning() && c->waiters.Leave(info))
      result = ETIMEDOUT;
  }
  pthread_mutex_lock(m, info);
  return result;
}
}  // namespace rl::detail

// Reader-writer locks.
inline int pthread_rwlock_init(rl::rl_pthread_rwlock_t* l,
                               const void* /*attr: Relacy's take any*/,
                               rl::debug_info info = RL_CURRENT_INFO) {
  rl::detail::ShimInit(l, rl::detail::ShimKind::kMutex, info);
  void* const resource = rl::detail::NewResource();
  rl::detail::Reinit(l, info);
  l->resource = resource;
  return 0;
}
inline int pthread_rwlock_destroy(rl::rl_pthread_rwlock_t* l,
                                  rl::debug_info info = RL_CURRENT_INFO) {
  rl::detail::ShimDestroy(l, rl::detail::ShimKind::kMutex, l->static_init,
                          info);
  if (l->word.Held())
    rl::detail::Fail(rl::test_result_destroying_owned_mutex,
                     "pthread_rwlock_destroy of a held lock", info);
  rl::detail::GiveResource(l->resource, info);
  return 0;
}

namespace rl::detail {
// False if the calling thread holds l in a way the request conflicts
// with: a try fails, a lock (blocking) never ends (reported, as Relacy
// reports it).
inline bool RwMayWait(rl_pthread_rwlock_t* l, bool write, bool blocking,
                      const debug_info& info) {
  UseRwlock(l, info);
  const test_result_e conflict = l->word.Conflict(write);
  if (conflict == test_result_success) return true;
  if (blocking)
    Fail(conflict, "a thread waits for a pthread_rwlock_t it holds itself",
         info);
  return false;
}
inline void RwLock(rl_pthread_rwlock_t* l, bool write,
                   const debug_info& info) {
  if (RwMayWait(l, write, /*blocking=*/true, info)) l->word.Lock(write, info);
}
inline bool RwTryLock(rl_pthread_rwlock_t* l, bool write,
                      const debug_info& info) {
  return RwMayWait(l, write, /*blocking=*/false, info) &&
         l->word.TryLock(write, info);
}
}  // namespace rl::detail

inline int pthread_rwlock_rdlock(rl::rl_pthread_rwlock_t* l,
                                 rl::debug_info info = RL_CURRENT_INFO) {
  rl::detail::RwLock(l, /*write=*/false, info);
  return 0;
}
inline int pthread_rwlock_wrlock(rl::rl_pthread_rwlock_t* l,
                                 rl::debug_info info = RL_CURRENT_INFO) {
  rl::detail::RwLock(l, /*write=*/true, info);
  return 0;
}
inline int pthread_rwlock_tryrdlock(rl::rl_pthread_rwlock_t* l,
                                    rl::debug_info info = RL_CURRENT_INFO) {
  return rl::detail::RwTryLock(l, /*write=*/false, info) ? 0 : EBUSY;
}
inline int pthread_rwlock_trywrlock(rl::rl_pthread_rwlock_t* l,
                                    rl::debug_info info = RL_CURRENT_INFO) {
  return rl::detail::RwTryLock(l, /*write=*/true, info) ? 0 : EBUSY;
}
inline int pthread_rwlock_unlock(rl::rl_pthread_rwlock_t* l,
                                 rl::debug_info info = RL_CURRENT_INFO) {
  rl::detail::UseRwlock(l, info);
  rl::detail::NoAbortScope no_abort;  // may be called from a destructor
  if (!l->word.Unlock(l->word.HoldsExclusive(), info))
    rl::detail::Fail(rl::test_result_unlocking_mutex_wo_ownership,
                     "pthread_rwlock_unlock of a lock the thread does not hold",
                     info);
  return 0;
}

// Threads: checker threads (the suite declares dynamic_thread_count).
inline int pthread_create(rl::rl_pthread_t* t, const pthread_attr_t*,
                          void* (*fn)(void*), void* arg,
                          rl::debug_info info = RL_CURRENT_INFO) {
  t->handle = rl::detail::CreateThread(fn, arg, info);
  return t->handle >= 0 ? 0 : EAGAIN;
}
inline int pthread_join(rl::rl_pthread_t t, void** ret,
                        rl::debug_info info = RL_CURRENT_INFO) {
  void* r = rl::detail::JoinThread(t.handle, info);
  if (ret != nullptr) *ret = r;
  return 0;
}

inline int sem_init(rl::rl_sem_t* s, int /*pshared*/, unsigned value,
                    rl::debug_info info = RL_CURRENT_INFO) {
  // The initial count is the location's initial value.
  rl::detail::ShimInit(s, rl::detail::ShimKind::kSemaphore, info);
  void* const resource = rl::detail::NewResource();
  rl::detail::Reinit(s, value, info);
  s->resource = resource;
  return 0;
}
inline int sem_destroy(rl::rl_sem_t* s, rl::debug_info info = RL_CURRENT_INFO) {
  rl::detail::ShimDestroy(s, rl::detail::ShimKind::kSemaphore, false, info);
  rl::detail::GiveResource(s->resource, info);
  return 0;
}
inline int sem_post(rl::rl_sem_t* s, rl::debug_info info = RL_CURRENT_INFO) {
  rl::detail::UseSem(s, info);
  // Pairs with: the acquire CAS in sem_wait/sem_trywait that takes it,
  // and the acquire load of a sem_wait that a signal interrupts.
  s->count.fetch_add(1, rl::mo_release, info);
  return 0;
}
inline int sem_trywait(rl::rl_sem_t* s, rl::debug_info info = RL_CURRENT_INFO) {
  rl::detail::UseSem(s, info);
  unsigned v = s->count.load(rl::mo_relaxed, info);
  while (v != 0) {
    // Pairs with: the release increment in sem_post.
    if (s->count.compare_exchange_strong(v, v - 1, rl::mo_acquire,
                                         rl::mo_relaxed, info))
      return 0;
  }
  errno = EAGAIN;
  return -1;
}
inline int sem_wait(rl::rl_sem_t* s, rl::debug_info info = RL_CURRENT_INFO) {
  rl::detail::UseSem(s, info);
  // A signal may end a wait that finds the count 0 (POSIX: -1, EINTR), as
  // a Relacy sem_wait wakes spuriously: explored, not twice in a row for a
  // thread (a retry loop ends). A caller that ignores the result is then
  // caught using what it did not get.
  uint64_t& interrupted = rl::detail::EarlyEnds().sem;
  if (rl::detail::MayEndEarly(interrupted, info)) {
    // Acquire, as Relacy's interrupted wait acquires the semaphore's
    // clock. Pairs with: the release increment in sem_post (the 0 read is
    // the end of a release sequence when a taker's decrement wrote it).
    if (s->count.load(rl::mo_acquire, info) == 0) {
      rl::detail::SetEndedEarly(&interrupted, true);
      errno = EINTR;
      return -1;
    }
  }
  rl::detail::SetEndedEarly(&interrupted, false);
  // Takes a unit once the count is not 0, with no event while it waits
  // (or DEADLOCK). Pairs with: the release increment in sem_post.
  s->count.await_fetch_sub(1, ~0u, 0, /*equal=*/false, rl::mo_acquire, info);
  return 0;
}
inline int sem_getvalue(rl::rl_sem_t* s, int* value,
                        rl::debug_info info = RL_CURRENT_INFO) {
  rl::detail::UseSem(s, info);
  *value = static_cast<int>(s->count.load(rl::mo_relaxed, info));
  return 0;
}

// Linux futex(2) in Relacy's spelling: futex(&word, FUTEX_WAIT / FUTEX_WAKE,
// val, timeout, uaddr2, val3) on an rl::atomic<int>. As Relacy, it returns
// the error number itself (0, EWOULDBLOCK, EINTR, ETIMEDOUT) or, for
// FUTEX_WAKE, how many threads it woke; not -1 and errno as the system
// call. Modelled on the kernel: each call is a full barrier (the kernel's
// smp_mb; a seq_cst fence here), FUTEX_WAIT compares the word and queues
// the thread in one step (the hash-bucket lock), a wake that wakes a
// thread synchronizes-with it (the lock and the scheduler's barrier), and
// a wait may return EINTR without a wake (a signal; explored, not twice
// in a row for a thread) or, with a timeout, ETIMEDOUT.
#ifndef FUTEX_WAIT
#define FUTEX_WAIT 0
#endif
#ifndef FUTEX_WAKE
#define FUTEX_WAKE 1
#endif
#ifndef FUTEX_PRIVATE_FLAG
#define FUTEX_PRIVATE_FLAG 128
#endif
#ifndef FUTEX_WAIT_PRIVATE
#define FUTEX_WAIT_PRIVATE (FUTEX_WAIT | FUTEX_PRIVATE_FLAG)
#endif
#ifndef FUTEX_WAKE_PRIVATE
#define FUTEX_WAKE_PRIVATE (FUTEX_WAKE | FUTEX_PRIVATE_FLAG)
#endif

inline int futex(rl::atomic<int>* uaddr, int op, int val,
                 const struct timespec* timeout, rl::atomic<int>* /*uaddr2*/,
                 int /*val3*/, rl::debug_info info = RL_CURRENT_INFO) {
  rl::detail::WaitQueue& q = uaddr->wait_queue();
  op &= ~FUTEX_PRIVATE_FLAG;
  if (op == FUTEX_WAKE) {
    if (val <= 0) return 0;
    // The kernel's full barrier before it looks at the queue (pairs with
    // the waiter's below).
    rl::atomic_thread_fence(rl::mo_seq_cst, info);
    // Acq_rel: the bucket lock's (pairs with Lock / Unlock of the waiters
    // before), and a woken waiter sees what this thread did (pairs with
    // the acquire look in SleepUntilPicked below, or the acquire fence of
    // a timed-out waiter whose Leave found it picked).
    return static_cast<int>(
        q.Wake(static_cast<unsigned>(val), rl::mo_acq_rel, info));
  }
  if (op != FUTEX_WAIT) return EINVAL;
  q.Lock(info);
  // The kernel's full barrier between queueing and reading the word: with
  // the waker's (between its store and its look at the queue), a waker
  // that saw no waiter stored before a read that sees its value.
  rl::atomic_thread_fence(rl::mo_seq_cst, info);
  // Acquire (as Relacy): a waiter that finds the word changed sees what
  // its writer did before a release store of it.
  if (uaddr->load(rl::mo_acquire, info) != val) {
    q.Unlock(/*enqueue=*/false, info);
    return EWOULDBLOCK;
  }
  uint64_t& interrupted = rl::detail::EarlyEnds().futex;
  // A signal (EINTR) or the deadline may end the wait before any wake:
  // explored, EINTR not twice in a row for a thread (a retry loop ends).
  const bool may_interrupt = (interrupted & rl::detail::ThreadBit()) == 0;
  const unsigned ends = 1 + (may_interrupt ? 1 : 0) + (timeout ? 1 : 0);
  const unsigned r = rl::rand(ends, info);
  if (r != 0) {
    q.Unlock(/*enqueue=*/false, info);
    if (r == 1 && may_interrupt) {
      rl::detail::SetEndedEarly(&interrupted, true);
      return EINTR;
    }
    return ETIMEDOUT;
  }
  rl::detail::SetEndedEarly(&interrupted, false);
  q.Unlock(/*enqueue=*/true, info);
  // Acquire: pairs with the waker's acq_rel CAS that picked this thread.
  // With a timeout, a sleep no wake ends times out once every thread
  // waits (as the kernel's timer would end it): the waiter leaves the
  // queue (unless a wake picked it meanwhile: then it was woken).
  if (!q.SleepUntilPicked(rl::mo_acquire, info, timeout != nullptr)) {
    if (rl::detail::Abandoning()) return EINTR;  // unwinding
    if (q.Leave(info)) return ETIMEDOUT;
    // Picked: the relaxed Leave read the waker's CAS (or an RMW after it,
    // in its release sequence). Pairs with that acq_rel CAS in Wake.
    rl::atomic_thread_fence(rl::mo_acquire, info);
  }
  return 0;
}

// Relacy's Win32 shims (its relacy.hpp includes them; here after the
// POSIX shims above, whose rl::detail::CreateThread call the CreateThread
// macro would otherwise capture).
#include "windows.h"

// The heap model's malloc/calloc/realloc/free under the C names (Relacy's
// spelling).
using rl::rl_calloc;
using rl::rl_free;
using rl::rl_malloc;
using rl::rl_realloc;

#ifndef PERCPU_RL_FAKESTD
#define std ::rl::std_shim
#endif
#define pthread_mutex_t ::rl::rl_pthread_mutex_t
#define pthread_cond_t ::rl::rl_pthread_cond_t
#define pthread_t ::rl::rl_pthread_t
#define sem_t ::rl::rl_sem_t
#define pthread_rwlock_t ::rl::rl_pthread_rwlock_t
#undef PTHREAD_RWLOCK_INITIALIZER
#define PTHREAD_RWLOCK_INITIALIZER \
  {                                \
    ::rl::detail::StaticInit {}    \
  }
// A yield in a spin loop is the checker's (Relacy's spelling).
#define sched_yield() ::rl::yield(1, RL_INFO)
#define pthread_yield() ::rl::yield(1, RL_INFO)
#undef PTHREAD_MUTEX_INITIALIZER
#define PTHREAD_MUTEX_INITIALIZER \
  {                               \
    ::rl::detail::StaticInit {}   \
  }
#undef PTHREAD_COND_INITIALIZER
#define PTHREAD_COND_INITIALIZER \
  {                              \
    ::rl::detail::StaticInit {}  \
  }
#define malloc(size) rl_malloc((size), RL_INFO)
#define calloc(count, size) rl_calloc((count), (size), RL_INFO)
#define realloc(p, size) rl_realloc((p), (size), RL_INFO)
#define free(p) rl_free((p), RL_INFO)

#endif  // PERCPU_VERIFICATION_RELACY_RELACY_STD_HPP_
