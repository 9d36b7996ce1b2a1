// Relacy's Win32 spellings for the checker (Relacy's include path:
// "relacy/windows.h"): CRITICAL_SECTION, SRWLOCK, HANDLE events,
// semaphores and mutexes, CreateThread + WaitForSingleObject on the thread
// handle, CloseHandle, Sleep / SwitchToThread, and the objects behind them
// under Relacy's public names rl::generic_event, rl::semaphore<Tag>,
// rl::generic_mutex<Tag>. A test written for Relacy's Win32 shims compiles
// unchanged and runs on the checker's objects. See docs/verification.md,
// "The dialect".
//
// Memory-ordering contract (every object is a checker object over
// rl::atomic, so the search explores every order):
//  * SetEvent / ReleaseSemaphore / LeaveCriticalSection / ReleaseMutex are
//    release operations; the wait (or Enter) they satisfy is an acquire
//    operation that reads from them, so they synchronize-with it.
//  * A wait no thread can ever satisfy (an event never set, a semaphore
//    never released, a thread that never ends) is a DEADLOCK.
//  * Finite, non-zero timeouts are explored as "times out now": the wait
//    is tried once and returns WAIT_TIMEOUT if it cannot be satisfied at
//    that point (always a legal Win32 outcome); a signal arriving later
//    within the timeout is not explored.
// Handles are allocated with the tracked `new`: a handle not closed with
// CloseHandle is a MEMORY LEAK, as in Relacy.
//
// Unlike Relacy, relacy/relacy.hpp does not include this header (its
// object-like macros HANDLE, INFINITE, CRITICAL_SECTION... would leak into
// every primitive compiled for the checker): include relacy/windows.h, or
// relacy/relacy_std.hpp or relacy/relacy_cli.hpp, which include it.
// Not provided: WaitForMultipleObjects(Ex), PulseEvent, alertable waits,
// SuspendThread / ResumeThread, FlushProcessWriteBuffers, and Win32's
// Interlocked* C functions (Relacy has none either; its CLI rl::Interlocked
// is in relacy_cli.hpp).
#ifndef PERCPU_VERIFICATION_RELACY_WINDOWS_H_
#define PERCPU_VERIFICATION_RELACY_WINDOWS_H_

#include <cstdint>
#include <new>

#include "relacy.hpp"

namespace rl {

// A kernel object behind a HANDLE (or a CRITICAL_SECTION / SRWLOCK). As
// in Relacy, an object set up by init() (CreateX, InitializeX) holds a
// resource until deinit() (CloseHandle, DeleteX): left held at the end of
// an execution it is a RESOURCE LEAK. The resource is a heap-model token.
struct win_object {
  virtual ~win_object() = default;
  void deinit(debug_info info = RL_CURRENT_INFO) {
    if (resource_ == nullptr) return;
    detail::HeapFree(resource_, detail::kHeapResource, info);
    resource_ = nullptr;
  }
  // Waits for the object (try_wait: do not block). True when acquired.
  virtual bool wait(bool try_wait, debug_info info) = 0;
  // Releases it (SignalObjectAndWait); false if it cannot be.
  virtual bool signal(debug_info info) = 0;

 protected:
  // Called by init(); a re-init keeps the one token.
  void TakeResource() {
    if (resource_ == nullptr)
      resource_ = detail::HeapAlloc(1, 0, detail::kHeapResource);
  }

 private:
  void* resource_ = nullptr;
};
using win_waitable_object = win_object;

namespace detail {
// Re-initializes a checker atomic in place (init() starts over, like the
// real object).
template <typename T>
void ReinitAtomic(atomic<T>* a, T v, debug_info info) {
  a->~atomic<T>();
  new (a) atomic<T>(v, info);
}
}  // namespace detail

// Event (CreateEvent): a state word, 1 while signaled. Every operation on it
// is a read-modify-write or a wait that re-reads the newest value, so the
// state evolves in one total order, as a kernel event's does.
class generic_event : public win_object {
 public:
  generic_event(debug_info info = RL_CURRENT_INFO)  // NOLINT
      : state_(0, info) {}
  void init(bool manual_reset, bool initial_state,
            debug_info info = RL_CURRENT_INFO) {
    manual_reset_ = manual_reset;
    detail::ReinitAtomic(&state_, initial_state ? 1 : 0, info);
    TakeResource();
  }
  void set(debug_info info = RL_CURRENT_INFO) {
    // Pairs with: the acquire read of the state in wait() that sees it set.
    state_.exchange(1, mo_release, info);
  }
  void reset(debug_info info = RL_CURRENT_INFO) {
    // Relaxed: a reset publishes nothing; being an RMW it still reads (and
    // so is ordered after) the newest set.
    state_.exchange(0, mo_relaxed, info);
  }
  bool wait(bool try_wait, debug_info info) override {
    for (;;) {
      if (manual_reset_) {
        // Pairs with: the release exchange in set().
        if (state_.load(mo_acquire, info) == 1) return true;
      } else {
        int expected = 1;
        // Pairs with: the release exchange in set(); consumes the signal.
        if (state_.compare_exchange_strong(expected, 0, mo_acquire, mo_relaxed,
                                           info))
          return true;
      }
      if (try_wait) return false;
      // Until another thread sets it (or DEADLOCK); unwinding: give up.
      if (!detail::WaitBlocked(info)) return false;
    }
  }
  bool signal(debug_info info) override {
    set(info);
    return true;
  }

 private:
  atomic<int> state_;
  bool manual_reset_ = false;
};

// Counting semaphore (CreateSemaphore): the same protocol as the POSIX
// sem_t shim in relacy_std.hpp, with Win32's maximum count.
template <typename Tag = void>
class semaphore : public win_object {
 public:
  semaphore(debug_info info = RL_CURRENT_INFO)  // NOLINT
      : count_(0, info) {}
  void init(bool /*spurious_wakeups*/, unsigned initial_count,
            unsigned max_count, debug_info info = RL_CURRENT_INFO) {
    max_ = max_count;
    detail::ReinitAtomic(&count_, initial_count, info);
    TakeResource();
  }
  // Adds count; false (nothing added) if that would pass the maximum.
  bool post(unsigned count, unsigned& prev_count,
            debug_info info = RL_CURRENT_INFO) {
    unsigned v = count_.load(mo_relaxed, info);
    for (;;) {
      prev_count = v;
      if (count == 0 || v + count > max_ || v + count < v) return false;
      // Pairs with: the acquire CAS in wait() that takes a unit of it.
      if (count_.compare_exchange_strong(v, v + count, mo_release, mo_relaxed,
                                         info))
        return true;
    }
  }
  bool wait(bool try_wait, debug_info info) override {
    for (;;) {
      unsigned v = count_.load(mo_relaxed, info);
      if (v == 0) {
        if (try_wait) return false;
        // Until a thread releases (or DEADLOCK); unwinding: give up.
        if (!detail::WaitBlocked(info)) return false;
        continue;
      }
      // Pairs with: the release CAS in post().
      if (count_.compare_exchange_strong(v, v - 1, mo_acquire, mo_relaxed,
                                         info))
        return true;
    }
  }
  bool signal(debug_info info) override {
    unsigned prev = 0;
    return post(1, prev, info);
  }

 private:
  atomic<unsigned> count_;
  unsigned max_ = ~0u;
};

// Mutex under Win32's names (CRITICAL_SECTION, SRWLOCK, CreateMutex): an
// rl::mutex or rl::recursive_mutex (acquisition synchronizes-with the
// previous release; DEADLOCK, RECURSION ON NON-RECURSIVE MUTEX and
// UNLOCKING MUTEX W/O OWNERSHIP as for those). Shared locking of an SRWLOCK
// is modelled as exclusive (as rl::mutex::lock_shared is).
template <typename Tag = void>
class generic_mutex : public win_object {
 public:
  generic_mutex(debug_info info = RL_CURRENT_INFO)  // NOLINT
      : m_(info), rm_(info) {}
  void init(bool /*is_rw*/, bool is_exclusive_recursive,
            bool /*is_shared_recursive*/, bool /*failing_try_lock*/,
            debug_info info = RL_CURRENT_INFO) {
    m_.~mutex();
    new (&m_) mutex(info);
    rm_.~recursive_mutex();
    new (&rm_) recursive_mutex(info);
    recursive_ = is_exclusive_recursive;
    TakeResource();
  }
  void lock_exclusive(debug_info info = RL_CURRENT_INFO) {
    if (recursive_)
      rm_.lock(info);
    else
      m_.lock(info);
  }
  bool try_lock_exclusive(debug_info info = RL_CURRENT_INFO) {
    return recursive_ ? rm_.try_lock(info) : m_.try_lock(info);
  }
  void unlock_exclusive(debug_info info = RL_CURRENT_INFO) {
    if (recursive_)
      rm_.unlock(info);
    else
      m_.unlock(info);
  }
  void lock_shared(debug_info info = RL_CURRENT_INFO) { lock_exclusive(info); }
  void unlock_shared(debug_info info = RL_CURRENT_INFO) {
    unlock_exclusive(info);
  }
  // Relacy's std-style spellings.
  void lock(debug_info info = RL_CURRENT_INFO) { lock_exclusive(info); }
  void unlock(debug_info info = RL_CURRENT_INFO) { unlock_exclusive(info); }
  bool wait(bool try_wait, debug_info info) override {
    if (try_wait) return try_lock_exclusive(info);
    lock_exclusive(info);
    return true;
  }
  bool signal(debug_info info) override {
    unlock_exclusive(info);
    return true;
  }

 private:
  mutex m_;
  recursive_mutex rm_;
  bool recursive_ = true;  // CRITICAL_SECTION's default
};

// A thread created by CreateThread / _beginthreadex: waiting for its handle
// joins it (its end synchronizes-with the wait's return). Later waits
// return at once.
class win_thread : public win_object {
 public:
  template <typename R>
  win_thread(R (*fn)(void*), void* param, debug_info info)
      : fn_(reinterpret_cast<void (*)()>(fn)), param_(param) {
    call_ = &Call<R>;
    handle_ = detail::CreateThread(&Start, this, info);
  }
  bool wait(bool try_wait, debug_info info) override {
    if (joined_) return true;
    // A poll of a running thread is not modelled: report "not yet".
    if (try_wait) return false;
    detail::JoinThread(handle_, info);
    joined_ = true;
    return true;
  }
  bool signal(debug_info) override { return false; }
  bool started() const { return handle_ >= 0; }

 private:
  template <typename R>
  static void Call(win_thread* t) {
    reinterpret_cast<R (*)(void*)>(t->fn_)(t->param_);
  }
  static void* Start(void* p) {
    auto* t = static_cast<win_thread*>(p);
    t->call_(t);
    return nullptr;
  }
  void (*fn_)();
  void* param_;
  void (*call_)(win_thread*) = nullptr;
  int handle_ = -1;
  bool joined_ = false;
};

using rl_HANDLE = win_object*;
inline constexpr unsigned long rl_INFINITE = static_cast<unsigned long>(-1);
inline constexpr unsigned long rl_WAIT_FAILED = static_cast<unsigned long>(-1);
inline constexpr unsigned long rl_WAIT_OBJECT_0 = 0;
inline constexpr unsigned long rl_WAIT_TIMEOUT = 258;

inline int rl_SwitchToThread(debug_info info) {
  yield(1, info);
  return 1;
}
inline void rl_Sleep(unsigned long ms, debug_info info) {
  yield(ms != 0 ? static_cast<unsigned>(ms) : 1u, info);
}

inline unsigned long rl_WaitForSingleObject(rl_HANDLE h, unsigned long timeout,
                                            debug_info info) {
  if (h == nullptr) return rl_WAIT_FAILED;
  // A finite timeout is explored as an immediate time-out (see the top).
  bool ok = h->wait(timeout != rl_INFINITE, info);
  return ok ? rl_WAIT_OBJECT_0 : rl_WAIT_TIMEOUT;
}
inline unsigned long rl_SignalObjectAndWait(rl_HANDLE to_signal,
                                            rl_HANDLE to_wait,
                                            unsigned long timeout,
                                            int /*alertable*/,
                                            debug_info info) {
  if (to_signal == nullptr || !to_signal->signal(info)) return rl_WAIT_FAILED;
  return rl_WaitForSingleObject(to_wait, timeout, info);
}
namespace detail {
// The handles open in the running execution. CloseHandle of anything else
// (closed already, never opened) goes to the heap model, which reports it
// (DOUBLE FREE), without touching the dead object. A fixed table: the heap
// model would count a growing container's allocations as the test's.
struct HandleTable {
  static constexpr int kMax = 256;
  win_object* open[kMax];
  int n = 0;
  bool overflow = false;  // some handle is not in the table: trust all
  uint64_t gen = 0;
};
inline HandleTable& Handles() {
  static HandleTable t;
  if (t.gen != Generation()) {
    t.gen = Generation();
    t.n = 0;
    t.overflow = false;
  }
  return t;
}
template <typename T>
T* Opened(T* h) {
  HandleTable& t = Handles();
  if (t.n < HandleTable::kMax)
    t.open[t.n++] = h;
  else
    t.overflow = true;
  return h;
}
// True if h was open (now removed from the table).
inline bool Closing(win_object* h) {
  HandleTable& t = Handles();
  for (int i = 0; i < t.n; ++i) {
    if (t.open[i] == h) {
      t.open[i] = t.open[--t.n];
      return true;
    }
  }
  return t.overflow || Generation() == 0;
}
}  // namespace detail

inline int rl_CloseHandle(rl_HANDLE h, debug_info info) {
  if (h == nullptr) return 0;
  if (!detail::Closing(h)) {
    detail::HeapFree(h, 1, info);  // reports the double (or foreign) free
    return 0;
  }
  h->deinit(info);
  delete h;  // tracked: an unclosed handle is a MEMORY LEAK
  return 1;
}

inline rl_HANDLE rl_CreateEvent(void* /*security*/, int manual_reset,
                                int initial_state, const void* /*name*/,
                                debug_info info) {
  auto* ev = detail::Opened(new generic_event(info));
  ev->init(manual_reset != 0, initial_state != 0, info);
  return ev;
}
inline int rl_SetEvent(rl_HANDLE ev, debug_info info) {
  static_cast<generic_event*>(ev)->set(info);
  return 1;
}
inline int rl_ResetEvent(rl_HANDLE ev, debug_info info) {
  static_cast<generic_event*>(ev)->reset(info);
  return 1;
}

struct sem_tag_win;
inline rl_HANDLE rl_CreateSemaphore(void* /*security*/, long initial_count,
                                    long max_count, const void* /*name*/,
                                    debug_info info) {
  if (initial_count < 0 || max_count <= 0 || initial_count > max_count)
    return nullptr;  // ERROR_INVALID_PARAMETER
  auto* s = detail::Opened(new semaphore<sem_tag_win>(info));
  s->init(false, static_cast<unsigned>(initial_count),
          static_cast<unsigned>(max_count), info);
  return s;
}
inline int rl_ReleaseSemaphore(rl_HANDLE sema, long count, long* prev_count,
                               debug_info info) {
  if (count <= 0) return 0;
  unsigned prev = 0;
  bool ok = static_cast<semaphore<sem_tag_win>*>(sema)->post(
      static_cast<unsigned>(count), prev, info);
  if (prev_count != nullptr) *prev_count = static_cast<long>(prev);
  return ok ? 1 : 0;
}

struct mutex_tag_win_cs;
using rl_CRITICAL_SECTION = generic_mutex<mutex_tag_win_cs>;
inline void rl_InitializeCriticalSection(rl_CRITICAL_SECTION* m,
                                         debug_info info) {
  m->init(false, true, false, false, info);
}
inline int rl_InitializeCriticalSectionAndSpinCount(rl_CRITICAL_SECTION* m,
                                                    unsigned long,
                                                    debug_info info) {
  m->init(false, true, false, false, info);
  return 1;
}
inline void rl_DeleteCriticalSection(rl_CRITICAL_SECTION* m, debug_info info) {
  m->deinit(info);
}
inline void rl_EnterCriticalSection(rl_CRITICAL_SECTION* m, debug_info info) {
  m->lock_exclusive(info);
}
inline int rl_TryEnterCriticalSection(rl_CRITICAL_SECTION* m, debug_info info) {
  return m->try_lock_exclusive(info) ? 1 : 0;
}
inline void rl_LeaveCriticalSection(rl_CRITICAL_SECTION* m, debug_info info) {
  m->unlock_exclusive(info);
}

struct mutex_tag_win_srwl;
using rl_SRWLOCK = generic_mutex<mutex_tag_win_srwl>;
inline void rl_InitializeSRWLock(rl_SRWLOCK* l, debug_info info) {
  l->init(true, false, false, false, info);
}

// CONDITION_VARIABLE: an rl::condition_variable (spurious wake-ups
// explored, a lost wake-up ends in DEADLOCK) over a CRITICAL_SECTION or an
// SRWLOCK. A finite timeout is modelled as an infinite wait that may wake
// spuriously: a program that relies on the time-out to make progress is
// reported as DEADLOCK.
// Initialized, it holds a resource until Relacy's DeleteConditionVariable.
struct rl_CONDITION_VARIABLE : condition_variable {
  void* resource = nullptr;
};
inline void rl_InitializeConditionVariable(rl_CONDITION_VARIABLE* cv,
                                           debug_info info) {
  void* const resource = cv->resource != nullptr
                             ? cv->resource
                             : detail::HeapAlloc(1, 0, detail::kHeapResource);
  cv->~rl_CONDITION_VARIABLE();
  new (cv) rl_CONDITION_VARIABLE();
  cv->resource = resource;
  (void)info;
}
inline void rl_DeleteConditionVariable(rl_CONDITION_VARIABLE* cv,
                                       debug_info info) {
  if (cv->resource == nullptr) return;
  detail::HeapFree(cv->resource, detail::kHeapResource, info);
  cv->resource = nullptr;
}
template <typename Lock>
inline int rl_SleepConditionVariable(rl_CONDITION_VARIABLE* cv, Lock* l,
                                     debug_info info) {
  cv->wait(*l, info);
  return 1;
}
inline void rl_WakeConditionVariable(rl_CONDITION_VARIABLE* cv,
                                     debug_info info) {
  cv->notify_one(info);
}
inline void rl_WakeAllConditionVariable(rl_CONDITION_VARIABLE* cv,
                                        debug_info info) {
  cv->notify_all(info);
}

struct mutex_tag_win_mutex;
using rl_win_mutex = generic_mutex<mutex_tag_win_mutex>;
inline rl_HANDLE rl_CreateMutex(void* /*security*/, int initial_owner,
                                const void* /*name*/, debug_info info) {
  auto* m = detail::Opened(new rl_win_mutex(info));
  m->init(false, true, false, false, info);
  if (initial_owner != 0) m->lock_exclusive(info);
  return m;
}
inline int rl_ReleaseMutex(rl_HANDLE m, debug_info info) {
  static_cast<rl_win_mutex*>(m)->unlock_exclusive(info);
  return 1;
}

// Threads: checker threads (the suite declares dynamic_thread_count).
inline rl_HANDLE rl_CreateThread(void* /*security*/, size_t /*stack_size*/,
                                 unsigned long (*fn)(void*), void* param,
                                 unsigned long /*flags*/,
                                 unsigned long* thread_id, debug_info info) {
  auto* t = new win_thread(fn, param, info);
  if (!t->started()) {
    delete t;
    return nullptr;
  }
  if (thread_id != nullptr) *thread_id = 0;
  return detail::Opened(t);
}
inline uintptr_t rl_beginthreadex(void* /*security*/, unsigned /*stack*/,
                                  unsigned (*fn)(void*), void* param,
                                  unsigned /*flags*/, unsigned* thread_id,
                                  debug_info info) {
  auto* t = new win_thread(fn, param, info);
  if (!t->started()) {
    delete t;
    return 0;
  }
  if (thread_id != nullptr) *thread_id = 0;
  return reinterpret_cast<uintptr_t>(
      detail::Opened(static_cast<win_object*>(t)));
}

}  // namespace rl

#ifndef RL_STDCALL
#define RL_STDCALL
#endif
#ifndef WINAPI
#define WINAPI
#endif
#define HANDLE ::rl::rl_HANDLE
#define INFINITE ::rl::rl_INFINITE
#define WAIT_FAILED ::rl::rl_WAIT_FAILED
#define WAIT_OBJECT_0 ::rl::rl_WAIT_OBJECT_0
#define WAIT_TIMEOUT ::rl::rl_WAIT_TIMEOUT
#define CRITICAL_SECTION ::rl::rl_CRITICAL_SECTION
#define SRWLOCK ::rl::rl_SRWLOCK
#define SwitchToThread() ::rl::rl_SwitchToThread(RL_INFO)
#define Sleep(ms) ::rl::rl_Sleep((ms), RL_INFO)
#define CloseHandle(h) ::rl::rl_CloseHandle((h), RL_INFO)
#define WaitForSingleObject(h, timeout) \
  ::rl::rl_WaitForSingleObject((h), (timeout), RL_INFO)
#define SignalObjectAndWait(s, w, timeout, alertable) \
  ::rl::rl_SignalObjectAndWait((s), (w), (timeout), (alertable), RL_INFO)
#define CreateEvent(sec, manual, initial, name) \
  ::rl::rl_CreateEvent((sec), (manual), (initial), (name), RL_INFO)
#define CreateEventA CreateEvent
#define CreateEventW CreateEvent
#define SetEvent(ev) ::rl::rl_SetEvent((ev), RL_INFO)
#define ResetEvent(ev) ::rl::rl_ResetEvent((ev), RL_INFO)
#define CreateSemaphore(sec, initial, max, name) \
  ::rl::rl_CreateSemaphore((sec), (initial), (max), (name), RL_INFO)
#define CreateSemaphoreA CreateSemaphore
#define CreateSemaphoreW CreateSemaphore
#define ReleaseSemaphore(s, count, prev) \
  ::rl::rl_ReleaseSemaphore((s), (count), (prev), RL_INFO)
#define CreateMutex(sec, owner, name) \
  ::rl::rl_CreateMutex((sec), (owner), (name), RL_INFO)
#define CreateMutexA CreateMutex
#define CreateMutexW CreateMutex
#define ReleaseMutex(m) ::rl::rl_ReleaseMutex((m), RL_INFO)
#define InitializeCriticalSection(cs) \
  ::rl::rl_InitializeCriticalSection((cs), RL_INFO)
#define InitializeCriticalSectionAndSpinCount(cs, spin) \
  ::rl::rl_InitializeCriticalSectionAndSpinCount((cs), (spin), RL_INFO)
#define DeleteCriticalSection(cs) ::rl::rl_DeleteCriticalSection((cs), RL_INFO)
#define EnterCriticalSection(cs) ::rl::rl_EnterCriticalSection((cs), RL_INFO)
#define TryEnterCriticalSection(cs) \
  ::rl::rl_TryEnterCriticalSection((cs), RL_INFO)
#define LeaveCriticalSection(cs) ::rl::rl_LeaveCriticalSection((cs), RL_INFO)
#define InitializeSRWLock(l) ::rl::rl_InitializeSRWLock((l), RL_INFO)
#define AcquireSRWLockExclusive(l) (l)->lock_exclusive(RL_INFO)
#define AcquireSRWLockShared(l) (l)->lock_shared(RL_INFO)
#define ReleaseSRWLockExclusive(l) (l)->unlock_exclusive(RL_INFO)
#define ReleaseSRWLockShared(l) (l)->unlock_shared(RL_INFO)
#define CONDITION_VARIABLE ::rl::rl_CONDITION_VARIABLE
#define InitializeConditionVariable(cv) \
  ::rl::rl_InitializeConditionVariable((cv), RL_INFO)
#define SleepConditionVariableCS(cv, cs, ms) \
  ::rl::rl_SleepConditionVariable((cv), (cs), RL_INFO)
#define SleepConditionVariableSRW(cv, l, ms, flags) \
  ::rl::rl_SleepConditionVariable((cv), (l), RL_INFO)
#define WakeConditionVariable(cv) ::rl::rl_WakeConditionVariable((cv), RL_INFO)
#define WakeAllConditionVariable(cv) \
  ::rl::rl_WakeAllConditionVariable((cv), RL_INFO)
// Relacy's own (no such Win32 functions); they release the resource.
#define DeleteConditionVariable(cv) \
  ::rl::rl_DeleteConditionVariable((cv), RL_INFO)
#define DeleteSRWLock(l) (l)->deinit(RL_INFO)
#define CreateThread(sec, stack, fn, param, flags, id) \
  ::rl::rl_CreateThread((sec), (stack), (fn), (param), (flags), (id), RL_INFO)
#define _beginthreadex(sec, stack, fn, param, flags, id) \
  ::rl::rl_beginthreadex((sec), (stack), (fn), (param), (flags), (id), RL_INFO)

#endif  // PERCPU_VERIFICATION_RELACY_WINDOWS_H_
