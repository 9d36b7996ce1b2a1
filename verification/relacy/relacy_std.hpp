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
using ::rl::rl_free;
using ::rl::rl_malloc;
}  // namespace std / rl::std_shim

namespace rl {

// ------------------------------------------------------------ POSIX shims
// Checker objects behind the POSIX names (macros below). Each is
// constructed with the suite, so it is fresh in every execution;
// *_init re-initializes it, *_destroy of a held mutex is reported.

struct rl_pthread_mutex_t {
  rl_pthread_mutex_t(debug_info info = RL_CURRENT_INFO)  // NOLINT
      : rm(detail::NoResource{}, info), m(detail::NoResource{}, info) {}
  recursive_mutex rm;
  mutex m;
  bool recursive = false;
  // Set by pthread_mutex_init, released by pthread_mutex_destroy: left
  // behind, Relacy's RESOURCE LEAK (a PTHREAD_MUTEX_INITIALIZER mutex
  // needs no destroy and has none).
  void* resource = nullptr;
};

struct rl_pthread_cond_t {
  condition_variable cv;
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
// The checker's objects are rebuilt in place by *_init (a re-initialized
// object starts over, like the real one).
template <typename T, typename... A>
void Reinit(T* p, A&&... a) {
  p->~T();
  new (p) T(static_cast<A&&>(a)...);
}

// The resource token of an initialized object (see rl_pthread_mutex_t):
// taken by *_init (a re-init keeps one token), given back by *_destroy.
inline void* TakeResource(void* held) {
  return held != nullptr ? held : HeapAlloc(1, 0, kHeapResource);
}
inline void GiveResource(void*& held, const debug_info& info) {
  if (held == nullptr) return;
  HeapFree(held, kHeapResource, info);
  held = nullptr;
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
  void* const resource = rl::detail::TakeResource(m->resource);
  rl::detail::Reinit(m, info);
  m->recursive = type == PTHREAD_MUTEX_RECURSIVE;
  m->resource = resource;
  return 0;
}
inline int pthread_mutex_destroy(rl::rl_pthread_mutex_t* m,
                                 rl::debug_info info = RL_CURRENT_INFO) {
  rl::detail::GiveResource(m->resource, info);
  return 0;
}
inline int pthread_mutex_lock(rl::rl_pthread_mutex_t* m,
                              rl::debug_info info = RL_CURRENT_INFO) {
  if (m->recursive)
    m->rm.lock(info);
  else
    m->m.lock(info);
  return 0;
}
inline int pthread_mutex_trylock(rl::rl_pthread_mutex_t* m,
                                 rl::debug_info info = RL_CURRENT_INFO) {
  bool ok = m->recursive ? m->rm.try_lock(info) : m->m.try_lock(info);
  return ok ? 0 : EBUSY;
}
inline int pthread_mutex_unlock(rl::rl_pthread_mutex_t* m,
                                rl::debug_info info = RL_CURRENT_INFO) {
  if (m->recursive)
    m->rm.unlock(info);
  else
    m->m.unlock(info);
  return 0;
}

inline int pthread_cond_init(rl::rl_pthread_cond_t* c, const pthread_condattr_t*,
                             rl::debug_info info = RL_CURRENT_INFO) {
  c->resource = rl::detail::TakeResource(c->resource);
  rl::detail::Reinit(&c->cv, info);
  return 0;
}
inline int pthread_cond_destroy(rl::rl_pthread_cond_t* c,
                                rl::debug_info info = RL_CURRENT_INFO) {
  rl::detail::GiveResource(c->resource, info);
  return 0;
}
inline int pthread_cond_wait(rl::rl_pthread_cond_t* c,
                             rl::rl_pthread_mutex_t* m,
                             rl::debug_info info = RL_CURRENT_INFO) {
  if (m->recursive)
    c->cv.wait(m->rm, info);
  else
    c->cv.wait(m->m, info);
  return 0;
}
inline int pthread_cond_signal(rl::rl_pthread_cond_t* c,
                               rl::debug_info info = RL_CURRENT_INFO) {
  c->cv.notify_one(info);
  return 0;
}
inline int pthread_cond_broadcast(rl::rl_pthread_cond_t* c,
                                  rl::debug_info info = RL_CURRENT_INFO) {
  c->cv.notify_all(info);
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
  void* const resource = rl::detail::TakeResource(s->resource);
  rl::detail::Reinit(s, value, info);
  s->resource = resource;
  return 0;
}
inline int sem_destroy(rl::rl_sem_t* s, rl::debug_info info = RL_CURRENT_INFO) {
  rl::detail::GiveResource(s->resource, info);
  return 0;
}
inline int sem_post(rl::rl_sem_t* s, rl::debug_info info = RL_CURRENT_INFO) {
  // Pairs with: the acquire CAS in sem_wait/sem_trywait that takes it.
  s->count.fetch_add(1, rl::mo_release, info);
  return 0;
}
inline int sem_trywait(rl::rl_sem_t* s, rl::debug_info info = RL_CURRENT_INFO) {
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
  for (;;) {
    unsigned v = s->count.load(rl::mo_relaxed, info);
    if (v == 0) {
      // Until a thread posts (or deadlock); unwinding: give up.
      if (!rl::detail::WaitBlocked(info)) return 0;
      continue;
    }
    // Pairs with: the release increment in sem_post.
    if (s->count.compare_exchange_strong(v, v - 1, rl::mo_acquire,
                                         rl::mo_relaxed, info))
      return 0;
  }
}
inline int sem_getvalue(rl::rl_sem_t* s, int* value,
                        rl::debug_info info = RL_CURRENT_INFO) {
  *value = static_cast<int>(s->count.load(rl::mo_relaxed, info));
  return 0;
}

// Relacy's Win32 shims (its relacy.hpp includes them; here after the
// POSIX shims above, whose rl::detail::CreateThread call the CreateThread
// macro would otherwise capture).
#include "windows.h"

// The heap model's malloc/free under the C names (Relacy's spelling).
using rl::rl_free;
using rl::rl_malloc;

#ifndef PERCPU_RL_FAKESTD
#define std ::rl::std_shim
#endif
#define pthread_mutex_t ::rl::rl_pthread_mutex_t
#define pthread_cond_t ::rl::rl_pthread_cond_t
#define pthread_t ::rl::rl_pthread_t
#define sem_t ::rl::rl_sem_t
#undef PTHREAD_MUTEX_INITIALIZER
#define PTHREAD_MUTEX_INITIALIZER {}
#undef PTHREAD_COND_INITIALIZER
#define PTHREAD_COND_INITIALIZER {}
#define malloc(size) rl_malloc((size), RL_INFO)
#define free(p) rl_free((p), RL_INFO)

#endif  // PERCPU_VERIFICATION_RELACY_RELACY_STD_HPP_
