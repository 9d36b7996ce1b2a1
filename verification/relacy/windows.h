// Relacy's Win32 spellings for the checker (Relacy's include path:
// "relacy/windows.h"): CRITICAL_SECTION, SRWLOCK, CONDITION_VARIABLE,
// HANDLE events (with PulseEvent), semaphores and mutexes, CreateThread,
// WaitForSingleObject(Ex), WaitForMultipleObjects(Ex) (wait-any and
// wait-all), SignalObjectAndWait, CloseHandle, Sleep / SwitchToThread,
// GetLastError, TlsAlloc..., FlushProcessWriteBuffers, and the objects
// behind them under Relacy's public names
// rl::generic_event, rl::semaphore<Tag>, rl::generic_mutex<Tag>. A test
// written for Relacy's Win32 shims compiles unchanged and runs on the
// checker's objects. See docs/verification.md, "The dialect".
//
// Memory-ordering contract (every object is a checker object, so the
// search explores every order):
//  * SetEvent / PulseEvent / ReleaseSemaphore / ReleaseMutex / a thread's
//    end / LeaveCriticalSection are release operations; a wait (or Enter)
//    they satisfy is an acquire operation that reads from them, so they
//    synchronize-with it. A failed poll (timeout 0) also acquires, as in
//    Relacy.
//  * Each waitable object (event, semaphore, mutex handle, thread handle)
//    changes state under its lock word, as a kernel object does under the
//    dispatcher lock: taking it is an acquire CAS and dropping it a release
//    store, so every operation on an object synchronizes-with the later
//    operations on it. WaitForMultipleObjects holds the locks of all its
//    objects (taken in creation order): it sees them at one instant, and
//    wait-all takes them all at once. A blocked waiter sleeps on its
//    doorbell word, which every state change of its objects increments.
//  * A wait no thread can ever satisfy (an event never set, a semaphore
//    never released, a thread that never ends) is a DEADLOCK.
//  * A finite, non-zero timeout blocks like INFINITE but may time out at
//    once each time the wait looks (explored, not twice in a row), and
//    times out instead of a DEADLOCK once every thread waits, so
//    "signaled later" and "timed out" are both explored, as in Relacy, and
//    a timed wait never deadlocks. (Condition variables: see
//    rl_CONDITION_VARIABLE.)
//  * A signal satisfies the wait-any waits registered on the object at
//    once (GrantLocked), as Win32 does inside the signaling call.
// Handles are allocated with the tracked `new`: a handle not closed with
// CloseHandle is a MEMORY LEAK, as in Relacy; thread handles come from a
// per-execution pool and need no CloseHandle (Relacy's tests close none).
//
// Unlike Relacy, relacy/relacy.hpp does not include this header (its
// object-like macros HANDLE, INFINITE, CRITICAL_SECTION... would leak into
// every primitive compiled for the checker): include relacy/windows.h, or
// relacy/relacy_std.hpp or relacy/relacy_cli.hpp, which include it.
// Not provided: WAIT_ABANDONED (a thread ending with a mutex handle owned),
// queued APCs (alertable waits never return WAIT_IO_COMPLETION), and
// Win32's Interlocked* C functions (Relacy has none either; its CLI
// rl::Interlocked is in relacy_cli.hpp).
#ifndef PERCPU_VERIFICATION_RELACY_WINDOWS_H_
#define PERCPU_VERIFICATION_RELACY_WINDOWS_H_

#include <algorithm>
#include <climits>
#include <cstdint>
#include <new>
#include <utility>

#include "relacy.hpp"

namespace rl {

inline constexpr unsigned long rl_INFINITE = static_cast<unsigned long>(-1);

// A kernel object behind a HANDLE (or a CRITICAL_SECTION / SRWLOCK). As
// in Relacy, an object set up by init() (CreateX, InitializeX) holds a
// resource until deinit() (CloseHandle, DeleteX): left held at the end of
// an execution it is a RESOURCE LEAK. The resource is a heap-model token.
struct win_object {
  virtual ~win_object() = default;
  // CloseHandle's end of the object: a handle is a tracked heap block
  // (unclosed: MEMORY LEAK) unless it says otherwise (a thread handle).
  virtual void Dispose() { delete this; }
  // A lock some thread holds (deinit reports it).
  virtual bool Owned() const { return false; }
  // The kind of an object that init() sets up and deinit() ends (Relacy's
  // lifecycle checks, detail::ShimUse); false for a thread handle.
  virtual bool Life(detail::ShimKind* kind) const {
    (void)kind;
    return false;
  }
  // Reports a use before init() or after deinit().
  void CheckLive(const debug_info& info) const {
    if (detail::ShimKind k; Life(&k)) detail::ShimUse(this, k, false, info);
  }
  void deinit(debug_info info = RL_CURRENT_INFO) {
    if (detail::ShimKind k; Life(&k)) detail::ShimDestroy(this, k, false, info);
    if (Owned())
      detail::Fail(test_result_destroying_owned_mutex,
                   "a critical section, SRW lock or mutex handle deleted or "
                   "closed while a thread holds it",
                   info);
    if (resource_ == nullptr) return;
    detail::HeapFree(resource_, detail::kHeapResource, info);
    resource_ = nullptr;
  }

 protected:
  // Called by init(), which sets the object up (a second init() before
  // deinit() is DOUBLE INITIALIZATION); a re-init keeps the one token.
  void TakeResource(const debug_info& info) {
    if (detail::ShimKind k; Life(&k)) detail::ShimInit(this, k, info);
    if (resource_ == nullptr)
      resource_ = detail::HeapAlloc(1, 0, detail::kHeapResource);
  }

 private:
  void* resource_ = nullptr;
};

namespace detail {
// Re-initializes a checker atomic in place (init() starts over, like the
// real object).
template <typename T>
void ReinitAtomic(atomic<T>* a, T v, debug_info info) {
  a->~atomic<T>();
  new (a) atomic<T>(v, info);
}

// Dispatcher state of one waitable object. Win32 changes its kernel
// objects' state under a lock, so WaitForMultipleObjects sees all its
// objects at one instant and wait-all takes them all at once. Here each
// object has a lock word (1 while held, taken as rl::mutex is); the
// object's state (signaled, count, owner, finished) and the fields below
// are plain data read and changed only while it is held. A multi-object
// wait holds all its objects' locks (taken in creation order). Taking the
// lock is an acquire CAS and dropping it a release store, so every
// operation on an object synchronizes-with the later operations on it (the
// kernel's object lock; Relacy's per-object sync_var orders only some of
// them).

// A number per object in creation order, the same in every replay of an
// execution (addresses are not: the lock order must not depend on them, or
// a replay would take another path than the execution it replays).
inline uint64_t NextObjectNumber() {
  static uint64_t gen = ~uint64_t{0};
  static uint64_t next = 0;
  if (gen != Generation()) {
    gen = Generation();
    next = 0;
  }
  return next++;
}
struct WaitState {
  explicit WaitState(const debug_info& info)
      : word(0, info), number(NextObjectNumber()) {}
  atomic<uint64_t> word;
  uint64_t number;        // lock order
  uint64_t waiting = 0;   // wait-any waiters a PulseEvent may release
  uint64_t released = 0;  // waiters a PulseEvent released through it
  uint64_t rung = 0;      // waiters whose doorbell a state change rings
  void Reset(const debug_info& info) {
    ReinitAtomic(&word, uint64_t{0}, info);
    number = NextObjectNumber();
    waiting = released = rung = 0;
  }
};

// A waiting thread's doorbell (per execution and thread): every state
// change of an object it waits for increments it, so the waiter blocks on
// one word (the newest value read, or the wait is pruned) and wakes on a
// change of any of its objects. Made by the waiter itself before it
// registers under the objects' locks, so every ringer (which holds one of
// those locks afterwards) happens-after its initialization.
struct Doorbells {
  static constexpr unsigned kMax = 64;
  alignas(atomic<uint64_t>) unsigned char buf[kMax][sizeof(atomic<uint64_t>)];
  uint64_t made = 0;
  uint64_t gen = ~uint64_t{0};
  // Threads a PulseEvent released whose wait has not returned yet: a later
  // pulse (of another object they wait for) skips them.
  uint64_t pulsed = 0;
  // Threads whose last timed wait timed out at once (WaitObjects).
  uint64_t expired_at_once = 0;
};
inline Doorbells& Bells() {
  static Doorbells d;
  if (d.gen != Generation()) {
    d.gen = Generation();
    d.made = 0;
    d.pulsed = 0;
    d.expired_at_once = 0;
  }
  return d;
}
inline atomic<uint64_t>* Doorbell(unsigned t, const debug_info& info) {
  Doorbells& d = Bells();
  if (t >= Doorbells::kMax) return nullptr;
  auto* a = reinterpret_cast<atomic<uint64_t>*>(d.buf[t]);
  if ((d.made & ThreadBit(t)) == 0) {
    new (a) atomic<uint64_t>(0, info);
    d.made |= ThreadBit(t);
  }
  return a;
}

inline uint64_t LockState(WaitState& s, const debug_info& info) {
  // As rl::mutex: waits for the unlock with no event; unwinding: go on
  // without it. The unlock is the previous operation on the object.
  // Pairs with: the release store in UnlockState.
  s.word.await_compare_exchange(0, 1, mo_acquire, info);
  return 0;
}
// changed: the object's state changed (the waiters registered on it are
// rung).
inline void UnlockState(WaitState& s, uint64_t /*v*/, bool changed,
                        const debug_info& info) {
  if (changed) {
    for (uint64_t m = s.rung; m != 0; m &= m - 1) {
      atomic<uint64_t>* b =
          Doorbell(static_cast<unsigned>(__builtin_ctzll(m)), info);
      // Relaxed: the ring only wakes the waiter, which then takes the
      // objects' locks (acquire) to look at them.
      if (b != nullptr) b->fetch_add(1, mo_relaxed, info);
    }
  }
  // Pairs with: the acquire CAS in LockState (the next operation).
  s.word.store(0, mo_release, info);
}
}  // namespace detail

// How Relacy's wait(try_wait, is_timed) on an event or semaphore ended.
enum sema_wakeup_reason {
  sema_wakeup_reason_success,   // taken
  sema_wakeup_reason_failed,    // a try found it not signaled
  sema_wakeup_reason_timeout,   // a timed wait timed out
  sema_wakeup_reason_spurious,  // (not produced: no spurious wake-ups)
};

// An object a thread can wait for (WaitForSingleObject,
// WaitForMultipleObjects, SignalObjectAndWait): an event, a semaphore, a
// mutex handle or a thread handle. Its state is dispatcher data guarded
// by its WaitState (above).
struct win_waitable_object : win_object {
  explicit win_waitable_object(debug_info info = RL_CURRENT_INFO)
      : own_(info), state_(&own_) {}
  // Relacy's interface: waits for the object (try_wait: do not block);
  // true when it was acquired. Defined below (WaitObjects).
  bool wait(bool try_wait, debug_info info = RL_CURRENT_INFO);
  // Relacy's form: is_timed waits with a finite timeout (explored to end
  // either way, as WaitForSingleObject's).
  sema_wakeup_reason wait(bool try_wait, bool is_timed,
                          debug_info info = RL_CURRENT_INFO);
  // Releases it (SignalObjectAndWait): false if it cannot be.
  bool signal(debug_info info = RL_CURRENT_INFO) {
    CheckLive(info);
    uint64_t v = detail::LockState(*state_, info);
    bool ok = SignalLocked(info);
    if (ok) GrantLocked(info);
    detail::UnlockState(*state_, v, ok, info);
    return ok;
  }

  // Dispatcher side, called with the object's lock held.
  virtual bool SignalLocked(const debug_info& info) = 0;
  // Could the thread take the object now (Ready); take it (Take; returns
  // whether the object's state changed).
  virtual bool Ready(unsigned me) const = 0;
  virtual bool Take(unsigned me) = 0;
  detail::WaitState& State() { return *state_; }
  const detail::WaitState& State() const { return *state_; }
  // With the object's lock held, after it became signaled: satisfies the
  // wait-any waits registered on it now, as Win32 does inside the signaling
  // call (an auto-reset event set while a thread waits is taken by that
  // thread, never by a later poll). Defined below.
  void GrantLocked(const debug_info& info);

 protected:
  // A thread handle keeps its state outside the handle.
  void UseState(detail::WaitState* s) { state_ = s; }
  detail::WaitState own_;

 private:
  detail::WaitState* state_;
};

namespace detail {
// The operations of one object under its lock.
class Locked {
 public:
  Locked(win_waitable_object& o, const debug_info& info)
      : s_(o.State()), info_(info), v_(LockState(s_, info)) {}
  ~Locked() { UnlockState(s_, v_, changed, info_); }
  Locked(const Locked&) = delete;
  Locked& operator=(const Locked&) = delete;
  bool changed = false;

 private:
  WaitState& s_;
  debug_info info_;
  uint64_t v_;
};
}  // namespace detail

// Event (CreateEvent). PulseEvent releases the threads waiting at that
// instant (manual reset: all; auto reset: one, every choice explored) and
// leaves the event reset; with no waiter it does nothing: a waiter that
// was not waiting yet misses it (the classic lost wake-up).
class generic_event : public win_waitable_object {
 public:
  generic_event(debug_info info = RL_CURRENT_INFO)  // NOLINT
      : win_waitable_object(info) {}
  void init(bool manual_reset, bool initial_state,
            debug_info info = RL_CURRENT_INFO) {
    own_.Reset(info);
    manual_reset_ = manual_reset;
    signaled_ = initial_state;
    TakeResource(info);
  }
  bool Life(detail::ShimKind* kind) const override {
    *kind = detail::ShimKind::kEvent;
    return true;
  }
  void set(debug_info info = RL_CURRENT_INFO) {
    CheckLive(info);
    detail::Locked l(*this, info);
    l.changed = SignalLocked(info);
    if (l.changed) GrantLocked(info);
  }
  void reset(debug_info info = RL_CURRENT_INFO) {
    CheckLive(info);
    detail::Locked l(*this, info);
    l.changed = signaled_;
    signaled_ = false;
  }
  void pulse(debug_info info = RL_CURRENT_INFO) {
    CheckLive(info);
    detail::Locked l(*this, info);
    detail::WaitState& s = State();
    detail::Doorbells& d = detail::Bells();
    uint64_t candidates = s.waiting & ~d.pulsed;
    uint64_t chosen = candidates;
    if (!manual_reset_ && candidates != 0) {
      // One waiter; which one is not specified: explore each.
      unsigned k =
          rand(static_cast<unsigned>(__builtin_popcountll(candidates)), info);
      while (k-- > 0) chosen &= chosen - 1;
      chosen &= ~(chosen - 1);
    }
    s.released |= chosen;
    d.pulsed |= chosen;
    // Win32: reset after the pulse, whether it was set before or not.
    l.changed = chosen != 0 || signaled_;
    signaled_ = false;
  }
  bool SignalLocked(const debug_info&) override {
    bool was = signaled_;
    signaled_ = true;
    return !was;
  }
  bool Ready(unsigned me) const override {
    return signaled_ || (State().released & detail::ThreadBit(me)) != 0;
  }
  bool Take(unsigned) override {
    if (manual_reset_) return false;
    signaled_ = false;
    return true;
  }

 private:
  bool manual_reset_ = false;
  bool signaled_ = false;
};

// Counting semaphore (CreateSemaphore).
template <typename Tag = void>
class semaphore : public win_waitable_object {
 public:
  semaphore(debug_info info = RL_CURRENT_INFO)  // NOLINT
      : win_waitable_object(info) {}
  void init(bool /*spurious_wakeups*/, unsigned initial_count,
            unsigned max_count, debug_info info = RL_CURRENT_INFO) {
    own_.Reset(info);
    max_ = max_count;
    count_ = initial_count;
    TakeResource(info);
  }
  // Adds count; false (nothing added) if that would pass the maximum.
  bool Life(detail::ShimKind* kind) const override {
    *kind = detail::ShimKind::kSemaphore;
    return true;
  }
  bool post(unsigned count, unsigned& prev_count,
            debug_info info = RL_CURRENT_INFO) {
    CheckLive(info);
    detail::Locked l(*this, info);
    prev_count = count_;
    if (count == 0 || count_ + count > max_ || count_ + count < count_)
      return false;
    count_ += count;
    l.changed = true;
    GrantLocked(info);
    return true;
  }
  int get_value(debug_info info = RL_CURRENT_INFO) {
    detail::Locked l(*this, info);
    return static_cast<int>(count_);
  }
  bool SignalLocked(const debug_info&) override {
    if (count_ + 1 > max_) return false;
    count_ += 1;
    return true;
  }
  bool Ready(unsigned) const override { return count_ > 0; }
  bool Take(unsigned) override {
    count_ -= 1;
    return true;
  }

 private:
  unsigned count_ = 0;
  unsigned max_ = ~0u;
};

// Mutex under Win32's names for CRITICAL_SECTION and SRWLOCK. A critical
// section is an rl::recursive_mutex (acquisition synchronizes-with the
// previous release; DEADLOCK and UNLOCKING MUTEX W/O OWNERSHIP as for it).
// An SRW lock (init with is_rw) is a detail::RwWord, as a pthread rwlock
// (its protocol and orders are there): shared holders hold it together (two of
// them writing data under it race), a release of the other mode than the thread
// holds is UNLOCKING MUTEX W/O OWNERSHIP, as in Relacy; an exclusive holder
// asking again is RECURSION ON NON-RECURSIVE MUTEX, a shared holder asking
// exclusive ATTEMPT TO UPGRADE ... (Relacy's results). Until 0.2.0 shared
// locking was exclusive here. Not waitable (neither is a critical section
// in Win32); a CreateMutex handle is win_mutex, below.
template <typename Tag = void>
class generic_mutex : public win_object {
 public:
  generic_mutex(debug_info info = RL_CURRENT_INFO)  // NOLINT
      : m_(detail::NoResource{}, info),
        rm_(detail::NoResource{}, info),
        rw_word_(info) {}
  void init(bool is_rw, bool is_exclusive_recursive,
            bool /*is_shared_recursive*/, bool /*failing_try_lock*/,
            debug_info info = RL_CURRENT_INFO) {
    m_.~mutex();
    new (&m_) mutex(detail::NoResource{}, info);
    rm_.~recursive_mutex();
    new (&rm_) recursive_mutex(detail::NoResource{}, info);
    recursive_ = is_exclusive_recursive;
    rw_ = is_rw;
    if (rw_) rw_word_.Reset(info);
    TakeResource(info);
  }
  bool Life(detail::ShimKind* kind) const override {
    *kind = detail::ShimKind::kMutex;
    return true;
  }
  void lock_exclusive(debug_info info = RL_CURRENT_INFO) {
    CheckLive(info);
    if (rw_)
      RwLock(/*exclusive=*/true, info);
    else if (recursive_)
      rm_.lock(info);
    else
      m_.lock(info);
    ++acquisitions_;
  }
  bool try_lock_exclusive(debug_info info = RL_CURRENT_INFO) {
    CheckLive(info);
    const bool ok = rw_          ? RwTryLockExclusive(info)
                    : recursive_ ? rm_.try_lock(info)
                                 : m_.try_lock(info);
    if (ok) ++acquisitions_;
    return ok;
  }
  // How often it was taken (by any thread): a condition-variable sleeper
  // that sees it change knows another thread held the lock meanwhile.
  uint64_t acquisitions() const { return acquisitions_; }
  void unlock_exclusive(debug_info info = RL_CURRENT_INFO) {
    CheckLive(info);
    if (rw_)
      RwUnlock(/*exclusive=*/true, info);
    else if (recursive_)
      rm_.unlock(info);
    else
      m_.unlock(info);
  }
  // Shared: an SRW lock's; a critical section's is exclusive.
  void lock_shared(debug_info info = RL_CURRENT_INFO) {
    if (!rw_) {
      lock_exclusive(info);
      return;
    }
    CheckLive(info);
    RwLock(/*exclusive=*/false, info);
    ++acquisitions_;
  }
  void unlock_shared(debug_info info = RL_CURRENT_INFO) {
    if (!rw_) {
      unlock_exclusive(info);
      return;
    }
    CheckLive(info);
    RwUnlock(/*exclusive=*/false, info);
  }
  // Relacy's std-style spellings.
  void lock(debug_info info = RL_CURRENT_INFO) { lock_exclusive(info); }
  void unlock(debug_info info = RL_CURRENT_INFO) { unlock_exclusive(info); }
  bool Owned() const override {
    if (rw_) return rw_word_.Held();
    return recursive_ ? detail::Held(rm_) : detail::Held(m_);
  }

 private:
  // The ownership checks of an SRW acquisition; false if it must not wait.
  bool RwMayTake(bool exclusive, const debug_info& info) {
    const test_result_e conflict = rw_word_.Conflict(exclusive);
    if (conflict == test_result_success) return true;
    detail::Fail(conflict,
                 conflict == test_result_recursion_on_nonrecursive_mutex
                     ? "AcquireSRWLockExclusive by the thread holding it "
                       "exclusively"
                 : conflict == test_result_mutex_write_to_read_upgrade
                     ? "AcquireSRWLockShared by the thread holding it "
                       "exclusively"
                     : "AcquireSRWLockExclusive by a thread holding it shared",
                 info);
    return false;
  }
  void RwLock(bool exclusive, const debug_info& info) {
    if (RwMayTake(exclusive, info)) rw_word_.Lock(exclusive, info);
  }
  bool RwTryLockExclusive(const debug_info& info) {
    // Not recursive: Win32's TryAcquire fails.
    return rw_word_.Conflict(/*exclusive=*/true) == test_result_success &&
           rw_word_.TryLock(/*exclusive=*/true, info);
  }
  void RwUnlock(bool exclusive, const debug_info& info) {
    detail::NoAbortScope no_abort;  // may be called from a destructor
    if (!rw_word_.Unlock(exclusive, info))
      detail::Fail(test_result_unlocking_mutex_wo_ownership,
                   exclusive ? "ReleaseSRWLockExclusive by a thread not "
                               "holding it exclusively"
                             : "ReleaseSRWLockShared by a thread not holding "
                               "it shared",
                   info);
  }

  mutex m_;
  recursive_mutex rm_;
  bool recursive_ = true;  // CRITICAL_SECTION's default
  bool rw_ = false;        // an SRW lock: rw_word_, not m_ / rm_
  detail::RwWord rw_word_;
  uint64_t acquisitions_ = 0;
};

// A mutex handle (CreateMutex): recursive, owned by the thread whose wait
// took it; ReleaseMutex by another thread is UNLOCKING MUTEX W/O OWNERSHIP
// (as Relacy reports it). A thread that ends owning it does not abandon it
// (no WAIT_ABANDONED): its waiters wait on (DEADLOCK).
class win_mutex : public win_waitable_object {
 public:
  win_mutex(debug_info info = RL_CURRENT_INFO)  // NOLINT
      : win_waitable_object(info) {}
  void init(debug_info info = RL_CURRENT_INFO) {
    own_.Reset(info);
    owner_ = -1;
    count_ = 0;
    TakeResource(info);
  }
  void unlock(debug_info info = RL_CURRENT_INFO) {
    bool ok;
    {
      detail::Locked l(*this, info);
      ok = l.changed = SignalLocked(info);
      if (ok) GrantLocked(info);
    }
    if (!ok)
      detail::Fail(test_result_unlocking_mutex_wo_ownership,
                   "ReleaseMutex of a mutex the thread does not own", info);
  }
  bool SignalLocked(const debug_info&) override {
    if (count_ == 0 || owner_ != static_cast<int>(thread_index())) return false;
    if (--count_ == 0) owner_ = -1;
    return true;
  }
  bool Ready(unsigned me) const override {
    return count_ == 0 || owner_ == static_cast<int>(me);
  }
  bool Take(unsigned me) override {
    owner_ = static_cast<int>(me);
    ++count_;
    return true;
  }
  bool Owned() const override { return count_ != 0; }
  bool Life(detail::ShimKind* kind) const override {
    *kind = detail::ShimKind::kMutex;
    return true;
  }

 private:
  int owner_ = -1;
  unsigned count_ = 0;
};

namespace detail {
// Per execution, per CreateThread call (in order): the state of the thread,
// kept outside the handle, which its creator may close while the thread
// runs.
struct ThreadEnds {
  static constexpr unsigned kMax = 64;
  alignas(WaitState) unsigned char buf[kMax][sizeof(WaitState)];
  bool finished[kMax] = {};
  unsigned count = 0;
  uint64_t gen = ~uint64_t{0};
};
inline ThreadEnds& Ends() {
  static ThreadEnds e;
  if (e.gen != Generation()) {
    e.gen = Generation();
    e.count = 0;
    for (bool& f : e.finished) f = false;
  }
  return e;
}
// Made by the creator before it starts the thread (so the thread, and
// every thread that learns of the handle from the creator, happens-after
// it); -1 if there are too many.
inline int NewEndState(const debug_info& info) {
  ThreadEnds& e = Ends();
  if (e.count >= ThreadEnds::kMax) return -1;
  new (e.buf[e.count]) WaitState(info);
  return static_cast<int>(e.count++);
}
inline WaitState* EndState(int k) {
  return reinterpret_cast<WaitState*>(Ends().buf[k]);
}
}  // namespace detail

// A thread created by CreateThread / _beginthreadex (a dynamic checker
// thread; the suite declares dynamic_thread_count). Its handle is
// signaled once the thread function returned: a wait for it
// synchronizes-with everything the thread did.
class win_thread : public win_waitable_object {
 public:
  template <typename R>
  win_thread(R (*fn)(void*), void* param, debug_info info)
      : win_waitable_object(info),
        fn_(reinterpret_cast<void (*)()>(fn)),
        param_(param) {
    call_ = &Call<R>;
    end_ = detail::NewEndState(info);
    if (end_ < 0) return;  // more than ThreadEnds::kMax threads: not started
    UseState(detail::EndState(end_));
    handle_ = detail::CreateThread(&Start, this, info);
  }
  bool started() const { return handle_ >= 0; }
  // Made in a per-execution pool (New), not on the tracked heap: as in
  // Relacy, a thread handle left open is not a leak (Relacy's own tests
  // never close theirs).
  template <typename R>
  static win_thread* New(R (*fn)(void*), void* param, debug_info info);
  void Dispose() override { this->~win_thread(); }
  bool SignalLocked(const debug_info&) override { return false; }
  bool Ready(unsigned) const override {
    return end_ >= 0 && detail::Ends().finished[end_];
  }
  bool Take(unsigned) override { return false; }

 private:
  template <typename R>
  static void Call(void (*fn)(), void* param) {
    reinterpret_cast<R (*)(void*)>(fn)(param);
  }
  static void* Start(void* p) {
    auto* t = static_cast<win_thread*>(p);
    // Copied first: the creator may close the handle while we run.
    void (*call)(void (*)(), void*) = t->call_;
    void (*fn)() = t->fn_;
    void* param = t->param_;
    const int end = t->end_;
    const debug_info info = RL_CURRENT_INFO;
    call(fn, param);
    detail::WaitState* s = detail::EndState(end);
    uint64_t v = detail::LockState(*s, info);
    detail::Ends().finished[end] = true;
    detail::UnlockState(*s, v, true, info);
    return nullptr;
  }
  void (*fn_)();
  void* param_;
  void (*call_)(void (*)(), void*) = nullptr;
  int handle_ = -1;
  int end_ = -1;  // its ThreadEnds entry
};

namespace detail {
// The handles of the threads created in the running execution.
struct ThreadHandles {
  alignas(win_thread) unsigned char buf[ThreadEnds::kMax][sizeof(win_thread)];
  unsigned count = 0;
  uint64_t gen = ~uint64_t{0};
};
inline ThreadHandles& Threads() {
  static ThreadHandles h;
  if (h.gen != Generation()) {
    h.gen = Generation();
    h.count = 0;
  }
  return h;
}
}  // namespace detail
template <typename R>
win_thread* win_thread::New(R (*fn)(void*), void* param, debug_info info) {
  detail::ThreadHandles& h = detail::Threads();
  if (h.count >= detail::ThreadEnds::kMax) return nullptr;
  auto* t = new (h.buf[h.count++]) win_thread(fn, param, info);
  if (t->started()) return t;
  t->Dispose();
  return nullptr;
}

namespace detail {
inline constexpr long kWaitTimedOut = -1;
inline constexpr long kWaitFailed = -2;
inline constexpr unsigned long kMaxWaitObjects = 64;  // MAXIMUM_WAIT_OBJECTS

// With the locks held: the object a wait takes now (wait-any: the one a
// pulse released it through, else the lowest-indexed ready one; wait-all:
// 0 if all are ready), or -1.
inline long Choose(unsigned long n, win_waitable_object* const* h,
                   bool wait_all, unsigned me) {
  if (wait_all) {
    for (unsigned long i = 0; i < n; ++i)
      if (!h[i]->Ready(me)) return -1;
    return 0;
  }
  for (unsigned long i = 0; i < n; ++i)
    if ((h[i]->State().released & ThreadBit(me)) != 0)
      return static_cast<long>(i);
  for (unsigned long i = 0; i < n; ++i)
    if (h[i]->Ready(me)) return static_cast<long>(i);
  return -1;
}

// The objects whose locks a wait takes (its own, and the one
// SignalObjectAndWait signals), in creation order so two waits cannot
// deadlock, with what each held when locked and whether its state changed.
struct LockSet {
  struct Entry {
    win_waitable_object* o;
    uint64_t v;
    bool changed;
  };
  Entry e[kMaxWaitObjects + 1];
  unsigned n = 0;
};
inline void Prepare(LockSet& l, unsigned long n, win_waitable_object* const* h,
                    win_waitable_object* extra) {
  l.n = 0;
  for (unsigned long i = 0; i < n; ++i) l.e[l.n++] = {h[i], 0, false};
  if (extra != nullptr) l.e[l.n++] = {extra, 0, false};
  // Insertion sort (no allocation; at most 65 entries).
  for (unsigned i = 1; i < l.n; ++i)
    for (unsigned j = i;
         j > 0 && l.e[j].o->State().number < l.e[j - 1].o->State().number; --j)
      std::swap(l.e[j], l.e[j - 1]);
  unsigned m = 0;  // drop the signaled object if it is also waited for
  for (unsigned i = 0; i < l.n; ++i)
    if (m == 0 || l.e[m - 1].o != l.e[i].o) l.e[m++] = l.e[i];
  l.n = m;
}
inline void LockAll(LockSet& l, const debug_info& info) {
  for (LockSet::Entry* p = l.e; p != l.e + l.n; ++p) {
    p->v = LockState(p->o->State(), info);
    p->changed = false;
  }
}
inline void UnlockAll(LockSet& l, const debug_info& info) {
  for (LockSet::Entry* p = l.e; p != l.e + l.n; ++p)
    UnlockState(p->o->State(), p->v, p->changed, info);
}
inline void MarkChanged(LockSet& l, const win_waitable_object* x) {
  for (LockSet::Entry* p = l.e; p != l.e + l.n; ++p)
    if (p->o == x) p->changed = true;
}

// With the locks held: take what Choose picked (r >= 0) and stop
// waiting.
inline void TakeChosen(LockSet& l, unsigned long n,
                       win_waitable_object* const* h, bool wait_all, long r,
                       unsigned me) {
  for (unsigned long i = 0; i < n; ++i) {
    if (r < 0 || (!wait_all && static_cast<long>(i) != r)) continue;
    // Granted (taken for the thread when signaled) or pulsed: nothing
    // left to take.
    if ((h[i]->State().released & ThreadBit(me)) != 0) continue;
    if (h[i]->Take(me)) MarkChanged(l, h[i]);
  }
  for (unsigned long i = 0; i < n; ++i) {
    WaitState& s = h[i]->State();
    s.waiting &= ~ThreadBit(me);
    s.released &= ~ThreadBit(me);
    s.rung &= ~ThreadBit(me);
  }
  Bells().pulsed &= ~ThreadBit(me);
}

// WaitForSingleObject / WaitForMultipleObjects / SignalObjectAndWait (which
// signals to_signal under the same locks, so a PulseEvent after the signal
// finds the thread waiting): the index taken (wait-all: 0), kWaitTimedOut
// or kWaitFailed. timeout 0 polls; INFINITE blocks (a wait no thread can
// satisfy is a DEADLOCK); a finite timeout blocks too, but may time out
// (see the top).
inline long WaitObjects(unsigned long n, win_waitable_object* const* h,
                        bool wait_all, unsigned long timeout,
                        const debug_info& info,
                        win_waitable_object* to_signal = nullptr) {
  if (n == 0 || n > kMaxWaitObjects) return kWaitFailed;
  for (unsigned long i = 0; i < n; ++i) {
    if (h[i] == nullptr) return kWaitFailed;
    for (unsigned long j = 0; j < i; ++j)
      if (h[j] == h[i]) return kWaitFailed;  // ERROR_INVALID_PARAMETER
  }
  const unsigned me = thread_index();
  const bool try_wait = timeout == 0;
  const bool timed = timeout != rl_INFINITE;
  if (try_wait && n == 1 && to_signal == nullptr) {
    // A poll of one object looks first without taking its lock: an RMW
    // writing back what it read is a read to the checker's spin detection,
    // so a loop of failed polls is a spin that waits for another thread
    // (taking the lock would be a write in every iteration: a livelock
    // under an exhaustive search). Acquire, pairs with: the release store
    // in UnlockState (the last operation on the object), as a failed poll
    // acquires. An RMW reads the newest write of the lock word, so a 0
    // means no holder now: the state read is the object's current one.
    if (h[0]->State().word.fetch_add(0, mo_acquire, info) == 0 &&
        Choose(1, h, false, me) < 0)
      return kWaitTimedOut;
  }
  LockSet l;
  Prepare(l, n, h, to_signal);
  atomic<uint64_t>* bell = nullptr;
  uint64_t rung = 0;
  for (;;) {
    LockAll(l, info);
    if (to_signal != nullptr) {
      const bool ok = to_signal->SignalLocked(info);
      if (ok) {
        to_signal->GrantLocked(info);
        MarkChanged(l, to_signal);
      }
      to_signal = nullptr;
      if (!ok) {
        UnlockAll(l, info);
        return kWaitFailed;
      }
    }
    long r = Choose(n, h, wait_all, me);
    if (r >= 0 || try_wait) {
      if (r >= 0) TakeChosen(l, n, h, wait_all, r, me);
      UnlockAll(l, info);
      return r >= 0 ? r : kWaitTimedOut;
    }
    if (bell == nullptr) bell = Doorbell(me, info);
    if (bell == nullptr) {  // no doorbell for this thread slot
      UnlockAll(l, info);
      return kWaitFailed;
    }
    for (unsigned long i = 0; i < n; ++i) {
      // A PulseEvent never satisfies a wait-all here (see docs).
      if (!wait_all) h[i]->State().waiting |= ThreadBit(me);
      h[i]->State().rung |= ThreadBit(me);
    }
    // Relaxed: read with the locks held, which every ringer takes.
    rung = bell->fetch_or(0, mo_relaxed, info);
    UnlockAll(l, info);
    // Until one of the objects changes: a ring. Relaxed: a ring is only
    // a hint to look again (under the locks). An untimed wait waits for
    // it with no event (or DEADLOCK); unwinding: give up.
    if (!timed) {
      bell->await_change(rung, mo_relaxed, info);
      if (Abandoning()) return kWaitFailed;
      continue;
    }
    // A timed wait: the deadline passes at once (explored; not twice in a
    // row for a thread, so a loop of timed waits ends), or the thread
    // sleeps as an untimed one does until a ring, timing out instead of
    // a DEADLOCK once every thread waits (atomic::timed_await_change).
    // Relaxed as above.
    bool expired = EndsEarly(&Bells().expired_at_once, info);
    uint64_t now = 0;
    if (!expired) {
      expired = !bell->timed_await_change(rung, mo_relaxed, &now, info);
      if (Abandoning()) return kWaitFailed;
    }
    if (expired) {
      LockAll(l, info);
      r = Choose(n, h, wait_all, me);
      TakeChosen(l, n, h, wait_all, r, me);  // leaves the wait
      UnlockAll(l, info);
      return r >= 0 ? r : kWaitTimedOut;
    }
  }
}
}  // namespace detail

inline void win_waitable_object::GrantLocked(const debug_info& info) {
  detail::WaitState& s = State();
  detail::Doorbells& d = detail::Bells();
  for (;;) {
    // Registered wait-any waiters not released through another object yet
    // that the object could satisfy now.
    uint64_t candidates = 0;
    for (uint64_t m = s.waiting & ~d.pulsed; m != 0; m &= m - 1) {
      const unsigned t = static_cast<unsigned>(__builtin_ctzll(m));
      if (Ready(t)) candidates |= detail::ThreadBit(t);
    }
    if (candidates == 0) return;
    // Which waiter Win32 serves first is not specified: explore each.
    uint64_t chosen = candidates;
    const unsigned n = static_cast<unsigned>(__builtin_popcountll(chosen));
    for (unsigned k = n > 1 ? rand(n, info) : 0; k > 0; --k)
      chosen &= chosen - 1;
    chosen &= ~(chosen - 1);
    const unsigned t = static_cast<unsigned>(__builtin_ctzll(chosen));
    Take(t);  // the waiter's state (a unit, the reset, the ownership)
    // Its wait returns this object (Choose) without taking it again
    // (TakeChosen); no other object releases it meanwhile.
    s.released |= chosen;
    d.pulsed |= chosen;
  }
}

inline sema_wakeup_reason win_waitable_object::wait(bool try_wait,
                                                    bool is_timed,
                                                    debug_info info) {
  CheckLive(info);
  win_waitable_object* self = this;
  const unsigned long timeout = try_wait ? 0 : is_timed ? 1 : rl_INFINITE;
  if (detail::WaitObjects(1, &self, false, timeout, info) == 0)
    return sema_wakeup_reason_success;
  return try_wait ? sema_wakeup_reason_failed : sema_wakeup_reason_timeout;
}
inline bool win_waitable_object::wait(bool try_wait, debug_info info) {
  CheckLive(info);
  win_waitable_object* self = this;
  return detail::WaitObjects(1, &self, false, try_wait ? 0 : rl_INFINITE,
                             info) == 0;
}

using rl_HANDLE = win_object*;
inline constexpr unsigned long rl_WAIT_FAILED = static_cast<unsigned long>(-1);
inline constexpr unsigned long rl_WAIT_OBJECT_0 = 0;
inline constexpr unsigned long rl_WAIT_TIMEOUT = 258;
inline constexpr unsigned long rl_WAIT_IO_COMPLETION = 192;
inline constexpr unsigned long rl_MAXIMUM_WAIT_OBJECTS =
    detail::kMaxWaitObjects;
inline constexpr unsigned long rl_CONDITION_VARIABLE_LOCKMODE_SHARED = 1;
inline constexpr unsigned long rl_ERROR_INVALID_PARAMETER = 87;
inline constexpr unsigned long rl_ERROR_INVALID_HANDLE = 6;
inline constexpr unsigned long rl_ERROR_NOT_OWNER = 288;
inline constexpr unsigned long rl_ERROR_TOO_MANY_POSTS = 298;

namespace detail {
// GetLastError: per checker thread, zero at the start of every execution.
inline thread_local_var<unsigned long>& LastError() {
  static thread_local_var<unsigned long> e;
  return e;
}
inline win_waitable_object* Waitable(rl_HANDLE h) {
  return h == nullptr ? nullptr : dynamic_cast<win_waitable_object*>(h);
}
inline unsigned long WaitResult(long r) {
  if (r >= 0) return rl_WAIT_OBJECT_0 + static_cast<unsigned long>(r);
  if (r == kWaitTimedOut) return rl_WAIT_TIMEOUT;
  LastError().set(rl_ERROR_INVALID_PARAMETER);
  return rl_WAIT_FAILED;
}
}  // namespace detail

inline unsigned long rl_GetLastError() { return detail::LastError().get(); }
inline void rl_SetLastError(unsigned long e) { detail::LastError().set(e); }

inline int rl_SwitchToThread(debug_info info) {
  yield(1, info);
  return 1;
}
inline void rl_Sleep(unsigned long ms, debug_info info) {
  yield(ms != 0 ? static_cast<unsigned>(ms) : 1u, info);
}

// Alertable waits: no APC is ever queued here, so a wait never returns
// WAIT_IO_COMPLETION (Relacy rejects alertable waits).
inline unsigned long rl_WaitForSingleObjectEx(rl_HANDLE h,
                                              unsigned long timeout,
                                              int /*alertable*/,
                                              debug_info info) {
  win_waitable_object* w = detail::Waitable(h);
  if (w == nullptr) return detail::WaitResult(detail::kWaitFailed);
  return detail::WaitResult(detail::WaitObjects(1, &w, false, timeout, info));
}
inline unsigned long rl_WaitForSingleObject(rl_HANDLE h, unsigned long timeout,
                                            debug_info info) {
  return rl_WaitForSingleObjectEx(h, timeout, 0, info);
}
// wait_all: returns WAIT_OBJECT_0 once every object is signaled at one
// instant (taking them all then); otherwise WAIT_OBJECT_0 + the lowest index
// of a signaled object (taking that one). Bad arguments (no handle, more
// than MAXIMUM_WAIT_OBJECTS, a null, a non-waitable or a repeated handle)
// are WAIT_FAILED with GetLastError() ERROR_INVALID_PARAMETER.
inline unsigned long rl_WaitForMultipleObjectsEx(
    unsigned long count, const rl_HANDLE* handles, int wait_all,
    unsigned long timeout, int /*alertable*/, debug_info info) {
  if (handles == nullptr || count == 0 || count > detail::kMaxWaitObjects)
    return detail::WaitResult(detail::kWaitFailed);
  win_waitable_object* w[detail::kMaxWaitObjects];
  for (unsigned long i = 0; i < count; ++i) {
    w[i] = detail::Waitable(handles[i]);
    if (w[i] == nullptr) return detail::WaitResult(detail::kWaitFailed);
  }
  return detail::WaitResult(
      detail::WaitObjects(count, w, wait_all != 0, timeout, info));
}
inline unsigned long rl_WaitForMultipleObjects(unsigned long count,
                                               const rl_HANDLE* handles,
                                               int wait_all,
                                               unsigned long timeout,
                                               debug_info info) {
  return rl_WaitForMultipleObjectsEx(count, handles, wait_all, timeout, 0,
                                     info);
}
// Signals one object and starts waiting for the other in one step: a
// PulseEvent of to_wait after the signal finds the thread waiting.
inline unsigned long rl_SignalObjectAndWait(rl_HANDLE to_signal,
                                            rl_HANDLE to_wait,
                                            unsigned long timeout,
                                            int /*alertable*/,
                                            debug_info info) {
  win_waitable_object* s = detail::Waitable(to_signal);
  win_waitable_object* w = detail::Waitable(to_wait);
  if (s == nullptr || w == nullptr)
    return detail::WaitResult(detail::kWaitFailed);
  return detail::WaitResult(
      detail::WaitObjects(1, &w, false, timeout, info, s));
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
  h->Dispose();
  return 1;
}

inline rl_HANDLE rl_CreateEvent(void* /*security*/, int manual_reset,
                                int initial_state, const void* /*name*/,
                                debug_info info) {
  auto* ev = detail::Opened(new generic_event(info));
  ev->init(manual_reset != 0, initial_state != 0, info);
  return ev;
}
namespace detail {
// The object behind a handle of the expected kind, or null (then the call
// fails with ERROR_INVALID_HANDLE, as Win32's does).
template <typename T>
T* HandleAs(rl_HANDLE h) {
  T* t = h == nullptr ? nullptr : dynamic_cast<T*>(h);
  if (t == nullptr) LastError().set(rl_ERROR_INVALID_HANDLE);
  return t;
}
}  // namespace detail
inline int rl_SetEvent(rl_HANDLE ev, debug_info info) {
  generic_event* e = detail::HandleAs<generic_event>(ev);
  if (e == nullptr) return 0;
  e->set(info);
  return 1;
}
inline int rl_ResetEvent(rl_HANDLE ev, debug_info info) {
  generic_event* e = detail::HandleAs<generic_event>(ev);
  if (e == nullptr) return 0;
  e->reset(info);
  return 1;
}
inline int rl_PulseEvent(rl_HANDLE ev, debug_info info) {
  generic_event* e = detail::HandleAs<generic_event>(ev);
  if (e == nullptr) return 0;
  e->pulse(info);
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
  auto* s = detail::HandleAs<semaphore<sem_tag_win>>(sema);
  if (s == nullptr) return 0;
  if (count <= 0) {
    detail::LastError().set(rl_ERROR_INVALID_PARAMETER);
    return 0;
  }
  unsigned prev = 0;
  bool ok = s->post(static_cast<unsigned>(count), prev, info);
  if (prev_count != nullptr) *prev_count = static_cast<long>(prev);
  if (!ok) detail::LastError().set(rl_ERROR_TOO_MANY_POSTS);
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
inline int rl_InitializeCriticalSectionEx(rl_CRITICAL_SECTION* m, unsigned long,
                                          unsigned long, debug_info info) {
  m->init(false, true, false, false, info);
  return 1;
}

inline void rl_InitializeSRWLock(rl_SRWLOCK* l, debug_info info) {
  l->init(true, false, false, false, info);
}

// CONDITION_VARIABLE over a CRITICAL_SECTION or an SRWLOCK. Its state is
// dispatcher data under a lock word, as a waitable object's: a sleeper
// registers under it before it leaves the lock it holds, and a Wake
// releases threads registered at that instant only (WakeAll: all; Wake:
// one, each choice explored), so a thread that starts sleeping after a
// Wake is not woken by it, and a released thread stays released until its
// Sleep returns (no stolen wake-up). A spurious wake-up is explored (not
// twice in a row per thread). A finite timeout expires at once (as a
// spurious wake-up), once another thread took the user's lock or wrote
// since the sleep began, or when every thread waits (SleepOn), so a sleep
// with a timeout never deadlocks; INFINITE sleeps until released (none
// coming: DEADLOCK).
// Initialized, it holds a resource until Relacy's DeleteConditionVariable.
inline constexpr unsigned long rl_ERROR_TIMEOUT = 1460;
struct rl_CONDITION_VARIABLE {
  rl_CONDITION_VARIABLE() : state(RL_CURRENT_INFO) {}
  detail::WaitState state;  // waiting: sleepers; released: woken ones
  void* resource = nullptr;
  // The threads whose last wake-up was spurious, in execution gen.
  uint64_t spurious = 0;
  uint64_t gen = ~uint64_t{0};
};
inline void rl_InitializeConditionVariable(rl_CONDITION_VARIABLE* cv,
                                           debug_info info) {
  detail::ShimInit(cv, detail::ShimKind::kCondvar, info);
  if (cv->resource == nullptr)
    cv->resource = detail::HeapAlloc(1, 0, detail::kHeapResource);
  cv->state.Reset(info);
  cv->spurious = 0;
}
inline void rl_DeleteConditionVariable(rl_CONDITION_VARIABLE* cv,
                                       debug_info info) {
  detail::ShimDestroy(cv, detail::ShimKind::kCondvar, false, info);
  if (cv->resource == nullptr) return;
  detail::HeapFree(cv->resource, detail::kHeapResource, info);
  cv->resource = nullptr;
}
namespace detail {
// Sleeps on cv until released (true), or timed out (false). Called
// registered, with the user's lock l released; rung: the doorbell's value
// read at the registration.
template <typename Lock>
bool SleepOn(rl_CONDITION_VARIABLE* cv, const Lock* l, unsigned long timeout,
             atomic<uint64_t>* bell, uint64_t rung, const debug_info& info) {
  WaitState& s = cv->state;
  const uint64_t me = ThreadBit(thread_index());
  const bool timed = timeout != rl_INFINITE;
  bool timed_out = timeout == 0;
  uint64_t seen = l->acquisitions();  // as the sleeper released it
  for (;;) {
    // Until a Wake rings (relaxed: only a hint to look again under the
    // lock). Timed: it times out once another thread took the user's lock
    // (it may have changed the predicate) or wrote anything since it went
    // to sleep, or when every thread waits (WaitBlocked's timed: not a
    // DEADLOCK); whether a Wake comes first is the schedule's choice. Not a
    // spin that times out by itself: the predicate loop around it writes
    // the locks in every iteration, which an exhaustive search would run
    // on for ever while the other threads never get the lock.
    // Untimed: with no event while it waits (or DEADLOCK).
    if (!timed) {
      bell->await_change(rung, mo_relaxed, info);
      if (Abandoning()) return false;  // unwinding
    } else {
      while (!timed_out && bell->load(mo_relaxed, info) == rung) {
        if (l->acquisitions() != seen) {
          timed_out = true;
          break;
        }
        if (!WaitBlocked(info, /*on_last_read=*/false, /*timed=*/true))
          return false;  // unwinding
        timed_out = true;
      }
    }
    const uint64_t v = LockState(s, info);
    const bool released = (s.released & me) != 0;
    if (released || timed_out) {
      s.waiting &= ~me;
      s.released &= ~me;
      s.rung &= ~me;
      UnlockState(s, v, false, info);
      return released;
    }
    // Relaxed: read with the lock held, which every Wake takes.
    rung = bell->fetch_or(0, mo_relaxed, info);
    UnlockState(s, v, false, info);
  }
}
}  // namespace detail
namespace detail {
// The user's lock of a condition-variable sleep, in the mode it is held.
template <typename Lock>
void ReleaseUserLock(Lock* l, bool shared, const debug_info& info) {
  if (shared)
    l->unlock_shared(info);
  else
    l->unlock(info);
}
template <typename Lock>
void TakeUserLock(Lock* l, bool shared, const debug_info& info) {
  if (shared)
    l->lock_shared(info);
  else
    l->lock(info);
}
}  // namespace detail
// shared: an SRW lock held shared (CONDITION_VARIABLE_LOCKMODE_SHARED),
// released and taken again in that mode.
template <typename Lock>
inline int rl_SleepConditionVariable(rl_CONDITION_VARIABLE* cv, Lock* l,
                                     unsigned long timeout, debug_info info,
                                     bool shared = false) {
  detail::ShimUse(cv, detail::ShimKind::kCondvar, false, info);
  const unsigned t = thread_index();
  const uint64_t me = detail::ThreadBit(t);
  if (cv->gen != detail::Generation()) {
    cv->gen = detail::Generation();
    cv->spurious = 0;
  }
  if (detail::EndsEarly(&cv->spurious, info)) {
    // Returns without being woken (Win32 allows it); with a finite
    // timeout, as timed out (at once: the same predicate re-check).
    detail::ReleaseUserLock(l, shared, info);
    detail::TakeUserLock(l, shared, info);
    if (timeout == rl_INFINITE) return 1;
    detail::LastError().set(rl_ERROR_TIMEOUT);
    return 0;
  }
  atomic<uint64_t>* bell = detail::Doorbell(t, info);
  if (bell == nullptr) return 0;  // no doorbell for this thread slot
  detail::WaitState& s = cv->state;
  // Registered before the user's lock is released: a Wake by a thread that
  // takes that lock afterwards finds this thread sleeping.
  const uint64_t v = detail::LockState(s, info);
  s.waiting |= me;
  s.rung |= me;
  // Relaxed: read with the lock held, which every Wake takes.
  const uint64_t rung = bell->fetch_or(0, mo_relaxed, info);
  detail::UnlockState(s, v, false, info);
  detail::ReleaseUserLock(l, shared, info);
  const bool woken = detail::SleepOn(cv, l, timeout, bell, rung, info);
  detail::TakeUserLock(l, shared, info);
  if (!woken) detail::LastError().set(rl_ERROR_TIMEOUT);
  return woken ? 1 : 0;
}
namespace detail {
// Releases the sleepers registered now (all, or one of them).
inline void Wake(rl_CONDITION_VARIABLE* cv, bool all, const debug_info& info) {
  ShimUse(cv, ShimKind::kCondvar, false, info);
  WaitState& s = cv->state;
  const uint64_t v = LockState(s, info);
  uint64_t chosen = s.waiting & ~s.released;
  if (!all && chosen != 0) {
    // Which sleeper Win32 wakes is not specified: explore each.
    const unsigned n = static_cast<unsigned>(__builtin_popcountll(chosen));
    for (unsigned k = n > 1 ? rand(n, info) : 0; k > 0; --k)
      chosen &= chosen - 1;
    chosen &= ~(chosen - 1);
  }
  s.released |= chosen;
  // Rings the sleepers; the released one sees its bit when it next takes
  // the lock (after this release store: synchronizes-with).
  UnlockState(s, v, chosen != 0, info);
}
}  // namespace detail
inline void rl_WakeConditionVariable(rl_CONDITION_VARIABLE* cv,
                                     debug_info info) {
  detail::Wake(cv, false, info);
}
inline void rl_WakeAllConditionVariable(rl_CONDITION_VARIABLE* cv,
                                        debug_info info) {
  detail::Wake(cv, true, info);
}

using rl_win_mutex = win_mutex;
inline rl_HANDLE rl_CreateMutex(void* /*security*/, int initial_owner,
                                const void* /*name*/, debug_info info) {
  auto* m = detail::Opened(new rl_win_mutex(info));
  m->init(info);
  if (initial_owner != 0) m->wait(false, info);
  return m;
}
inline int rl_ReleaseMutex(rl_HANDLE m, debug_info info) {
  rl_win_mutex* mx = detail::HandleAs<rl_win_mutex>(m);
  if (mx == nullptr) return 0;
  mx->unlock(info);
  return 1;
}

// Threads: checker threads (the suite declares dynamic_thread_count).
inline rl_HANDLE rl_CreateThread(void* /*security*/, size_t /*stack_size*/,
                                 unsigned long (*fn)(void*), void* param,
                                 unsigned long /*flags*/,
                                 unsigned long* thread_id, debug_info info) {
  win_thread* t = win_thread::New(fn, param, info);
  if (t == nullptr) return nullptr;
  if (thread_id != nullptr) *thread_id = 0;
  return detail::Opened(t);
}
inline uintptr_t rl_beginthreadex(void* /*security*/, unsigned /*stack*/,
                                  unsigned (*fn)(void*), void* param,
                                  unsigned /*flags*/, unsigned* thread_id,
                                  debug_info info) {
  win_thread* t = win_thread::New(fn, param, info);
  if (t == nullptr) return 0;
  if (thread_id != nullptr) *thread_id = 0;
  return reinterpret_cast<uintptr_t>(
      detail::Opened(static_cast<win_object*>(t)));
}

// FlushProcessWriteBuffers: Win32's process-wide barrier (an interrupt
// that runs a full fence on every processor running a thread of the
// process). To the checker: a seq_cst fence in every other thread where it
// stands now, ordered between two seq_cst fences of the caller (each other
// thread's one happens-after the first and before the second), so an
// asymmetric Dekker whose fast side has no fence is correct. Relacy's
// system-wide fence does the same by joining every thread's clock.
inline void rl_FlushProcessWriteBuffers(debug_info info) {
  detail::SystemFence(info);
}

// Thread-local storage indexes (TlsAlloc): TLS_MINIMUM_AVAILABLE of them,
// numbered from 0 as Win32's, each with one value per thread, null in every
// thread when allocated. The values are the thread's own: no other thread
// reads them, so they are plain data, not checker accesses. An index holds
// a heap-model block until TlsFree: one never freed is a MEMORY LEAK (as
// Relacy reports it).
inline constexpr unsigned long rl_TLS_OUT_OF_INDEXES = 0xffffffffUL;
inline constexpr unsigned long rl_ERROR_NO_MORE_ITEMS = 259;
namespace detail {
struct TlsTable {
  static constexpr unsigned kSlots = 64;    // TLS_MINIMUM_AVAILABLE
  static constexpr unsigned kThreads = 64;  // the widest checker build
  void* block[kSlots] = {};                 // non-null while allocated
  void* value[kSlots][kThreads] = {};
  uint64_t gen = ~uint64_t{0};
};
inline TlsTable& Tls() {
  static TlsTable t;
  if (t.gen != Generation()) {  // a new execution: no index allocated
    t.gen = Generation();
    for (void*& b : t.block) b = nullptr;
  }
  return t;
}
// The thread's value of an allocated index, or null (ERROR_INVALID_PARAMETER
// set) for an index not allocated.
inline void** TlsValue(unsigned long index) {
  TlsTable& t = Tls();
  if (index >= TlsTable::kSlots || t.block[index] == nullptr) {
    LastError().set(rl_ERROR_INVALID_PARAMETER);
    return nullptr;
  }
  const unsigned me = thread_index();
  return &t.value[index][me < TlsTable::kThreads ? me : 0];
}
}  // namespace detail
inline unsigned long rl_TlsAlloc(debug_info /*info*/) {
  detail::TlsTable& t = detail::Tls();
  for (unsigned i = 0; i < detail::TlsTable::kSlots; ++i) {
    if (t.block[i] != nullptr) continue;
    t.block[i] = detail::HeapAlloc(1, 0, 0);
    for (void*& v : t.value[i]) v = nullptr;
    return i;
  }
  detail::LastError().set(rl_ERROR_NO_MORE_ITEMS);
  return rl_TLS_OUT_OF_INDEXES;
}
inline int rl_TlsFree(unsigned long index, debug_info info) {
  if (detail::TlsValue(index) == nullptr) return 0;
  detail::TlsTable& t = detail::Tls();
  detail::HeapFree(t.block[index], 0, info);
  t.block[index] = nullptr;
  return 1;
}
inline void* rl_TlsGetValue(unsigned long index, debug_info /*info*/) {
  void** v = detail::TlsValue(index);
  if (v == nullptr) return nullptr;
  // Win32 clears the last error on success: a null value is then told
  // apart from a failure.
  detail::LastError().set(0);
  return *v;
}
inline int rl_TlsSetValue(unsigned long index, void* value,
                          debug_info /*info*/) {
  void** v = detail::TlsValue(index);
  if (v == nullptr) return 0;
  *v = value;
  return 1;
}

// As Relacy: accepted, no effect on the model (the checker has no CPUs to
// pin to, and suspending a thread is not modelled).
inline unsigned long rl_SetThreadAffinityMask(rl_HANDLE, unsigned long mask,
                                              debug_info) {
  return mask;
}
inline unsigned long rl_SuspendThread(rl_HANDLE, debug_info) { return 0; }
inline unsigned long rl_ResumeThread(rl_HANDLE, debug_info) { return 0; }

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
#define WAIT_IO_COMPLETION ::rl::rl_WAIT_IO_COMPLETION
#define MAXIMUM_WAIT_OBJECTS ::rl::rl_MAXIMUM_WAIT_OBJECTS
#define CONDITION_VARIABLE_LOCKMODE_SHARED \
  ::rl::rl_CONDITION_VARIABLE_LOCKMODE_SHARED
#define ERROR_INVALID_PARAMETER ::rl::rl_ERROR_INVALID_PARAMETER
#define ERROR_INVALID_HANDLE ::rl::rl_ERROR_INVALID_HANDLE
#define ERROR_NOT_OWNER ::rl::rl_ERROR_NOT_OWNER
#define ERROR_TOO_MANY_POSTS ::rl::rl_ERROR_TOO_MANY_POSTS
#define ERROR_TIMEOUT ::rl::rl_ERROR_TIMEOUT
#define GetLastError() ::rl::rl_GetLastError()
#define SetLastError(e) ::rl::rl_SetLastError(e)
#define CRITICAL_SECTION ::rl::rl_CRITICAL_SECTION
#define SRWLOCK ::rl::rl_SRWLOCK
#define SwitchToThread() ::rl::rl_SwitchToThread(RL_INFO)
#define Sleep(ms) ::rl::rl_Sleep((ms), RL_INFO)
#define CloseHandle(h) ::rl::rl_CloseHandle((h), RL_INFO)
#define WaitForSingleObject(h, timeout) \
  ::rl::rl_WaitForSingleObject((h), (timeout), RL_INFO)
#define WaitForSingleObjectEx(h, timeout, alertable) \
  ::rl::rl_WaitForSingleObjectEx((h), (timeout), (alertable), RL_INFO)
#define WaitForMultipleObjects(count, handles, wait_all, timeout)            \
  ::rl::rl_WaitForMultipleObjects((count), (handles), (wait_all), (timeout), \
                                  RL_INFO)
#define WaitForMultipleObjectsEx(count, handles, wait_all, timeout, alertable) \
  ::rl::rl_WaitForMultipleObjectsEx((count), (handles), (wait_all), (timeout), \
                                    (alertable), RL_INFO)
#define SignalObjectAndWait(s, w, timeout, alertable) \
  ::rl::rl_SignalObjectAndWait((s), (w), (timeout), (alertable), RL_INFO)
#define CreateEvent(sec, manual, initial, name) \
  ::rl::rl_CreateEvent((sec), (manual), (initial), (name), RL_INFO)
#define CreateEventA CreateEvent
#define CreateEventW CreateEvent
#define SetEvent(ev) ::rl::rl_SetEvent((ev), RL_INFO)
#define ResetEvent(ev) ::rl::rl_ResetEvent((ev), RL_INFO)
#define PulseEvent(ev) ::rl::rl_PulseEvent((ev), RL_INFO)
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
#define InitializeCriticalSectionEx(cs, spin, flags) \
  ::rl::rl_InitializeCriticalSectionEx((cs), (spin), (flags), RL_INFO)
#define InitializeSRWLock(l) ::rl::rl_InitializeSRWLock((l), RL_INFO)
#define AcquireSRWLockExclusive(l) (l)->lock_exclusive(RL_INFO)
#define AcquireSRWLockShared(l) (l)->lock_shared(RL_INFO)
#define ReleaseSRWLockExclusive(l) (l)->unlock_exclusive(RL_INFO)
#define ReleaseSRWLockShared(l) (l)->unlock_shared(RL_INFO)
#define CONDITION_VARIABLE ::rl::rl_CONDITION_VARIABLE
#define InitializeConditionVariable(cv) \
  ::rl::rl_InitializeConditionVariable((cv), RL_INFO)
#define SleepConditionVariableCS(cv, cs, ms) \
  ::rl::rl_SleepConditionVariable((cv), (cs), (ms), RL_INFO)
#define SleepConditionVariableSRW(cv, l, ms, flags) \
  ::rl::rl_SleepConditionVariable(                  \
      (cv), (l), (ms), RL_INFO,                     \
      ((flags) & ::rl::rl_CONDITION_VARIABLE_LOCKMODE_SHARED) != 0)
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

#define FlushProcessWriteBuffers() ::rl::rl_FlushProcessWriteBuffers(RL_INFO)
#define TLS_OUT_OF_INDEXES ::rl::rl_TLS_OUT_OF_INDEXES
#define ERROR_NO_MORE_ITEMS ::rl::rl_ERROR_NO_MORE_ITEMS
#define TlsAlloc() ::rl::rl_TlsAlloc(RL_INFO)
#define TlsFree(index) ::rl::rl_TlsFree((index), RL_INFO)
#define TlsGetValue(index) ::rl::rl_TlsGetValue((index), RL_INFO)
#define TlsSetValue(index, value) \
  ::rl::rl_TlsSetValue((index), (value), RL_INFO)

#define SetThreadAffinityMask(th, mask) \
  ::rl::rl_SetThreadAffinityMask((th), (mask), RL_INFO)
#define SuspendThread(th) ::rl::rl_SuspendThread((th), RL_INFO)
#define ResumeThread(th) ::rl::rl_ResumeThread((th), RL_INFO)

#endif  // PERCPU_VERIFICATION_RELACY_WINDOWS_H_
