// See relacy_std_programs.h. Only relacy_std.hpp spellings below the
// include: std::atomic and std::mutex are the checker's, the POSIX calls
// are the shims, malloc/free the heap model.
#include "relacy_std_programs.h"

#include "test_support.h"  // before relacy_std.hpp (standard headers first)

#include "relacy/relacy_std.hpp"

namespace {

template <typename T>
rl::test_result_e Full() {
  return rl_test::RunFull<T>();
}

// Relacy's introductory example: a plain write published by a relaxed
// store is a data race; with release/acquire it is correct.
template <std::memory_order kStore, std::memory_order kLoad>
struct Publication : rl::test_suite<Publication<kStore, kLoad>, 2> {
  std::atomic<int> a;
  rl::var<int> x;
  void before() {
    a($) = 0;
    x($) = 0;
  }
  void thread(unsigned index) {
    if (index == 0) {
      x($) = 1;
      a($).store(1, kStore);
    } else if (a($).load(kLoad) == 1) {
      x($) = 2;
    }
  }
};

struct StdMutex : rl::test_suite<StdMutex, 2> {
  std::mutex m;
  rl::var<int> n{0};
  void thread(unsigned) {
    std::lock_guard<std::mutex> lock(m);
    n($) = n($) + 1;
  }
  void after() { RL_ASSERT(n($) == 2); }
};

template <bool kLocked>
struct PthreadCounter : rl::test_suite<PthreadCounter<kLocked>, 1> {
  static constexpr unsigned dynamic_thread_count = 2;
  pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  rl::var<int> n{0};
  static void* Inc(void* p) {
    auto* self = static_cast<PthreadCounter*>(p);
    if (kLocked) pthread_mutex_lock(&self->m);
    self->n($) = self->n($) + 1;
    if (kLocked) pthread_mutex_unlock(&self->m);
    return p;
  }
  void thread(unsigned) {
    pthread_mutex_init(&m, nullptr);
    pthread_t t1, t2;
    pthread_create(&t1, nullptr, &Inc, this);
    pthread_create(&t2, nullptr, &Inc, this);
    void* r1 = nullptr;
    pthread_join(t1, &r1);
    pthread_join(t2, nullptr);
    RL_ASSERT(r1 == this);
    RL_ASSERT(n($) == 2);
    pthread_mutex_destroy(&m);
  }
};

// kRetry: each sem_wait is retried while it fails with EINTR (a signal
// may end a wait that finds the count 0, and Relacy explores that).
template <int kWaits, bool kRetry = true>
struct SemHand : rl::test_suite<SemHand<kWaits, kRetry>, 2> {
  sem_t s;
  rl::var<int> data{0};
  void before() { sem_init(&s, 0, 0); }
  void thread(unsigned index) {
    if (index == 0) {
      data($) = 42;
      sem_post(&s);
    } else {
      for (int i = 0; i < kWaits; ++i) {
        if (!kRetry) {
          sem_wait(&s);
          continue;
        }
        while (sem_wait(&s) != 0) RL_ASSERT(errno == EINTR);
      }
      RL_ASSERT(data($) == 42);
    }
  }
  void after() { sem_destroy(&s); }
};

// Without the *_destroy calls in after(), Relacy reports RESOURCE LEAK
// (measured with dvyukov/relacy 9f25438, docs/verification.md).
template <bool kDestroy>
struct CondPredicate : rl::test_suite<CondPredicate<kDestroy>, 2> {
  pthread_mutex_t m;
  pthread_cond_t c;
  rl::var<bool> ready{false};
  void before() {
    pthread_mutex_init(&m, nullptr);
    pthread_cond_init(&c, nullptr);
  }
  void thread(unsigned index) {
    pthread_mutex_lock(&m);
    if (index == 0) {
      ready($) = true;
      pthread_cond_signal(&c);
    } else {
      while (!ready($)) pthread_cond_wait(&c, &m);
    }
    pthread_mutex_unlock(&m);
  }
  void after() {
    if (kDestroy) {
      pthread_cond_destroy(&c);
      pthread_mutex_destroy(&m);
    }
  }
};

template <bool kFree>
struct Malloc : rl::test_suite<Malloc<kFree>, 2> {
  std::atomic<int*> p{nullptr};
  void thread(unsigned index) {
    if (index == 0) {
      int* q = static_cast<int*>(malloc(sizeof(int)));
      p.store(q, std::memory_order_release);
    }
  }
  void after() {
    if (kFree) free(p.load(std::memory_order_relaxed));
  }
};

// calloc and realloc (Relacy's relacy.hpp maps both; its realloc macro
// names an rl::rl_realloc it does not define, so a Relacy program calling
// realloc does not build there: C's semantics here).
enum class Alloc {
  kCallocLeak,       // MEMORY LEAK
  kCallocZeroed,     // SUCCESS: zero-filled, freed
  kCallocOverflow,   // SUCCESS: count * size overflows: null
  kReallocMoves,     // SUCCESS: the bytes move, the new block is freed
  kReallocOldFreed,  // DOUBLE FREE: the old pointer freed again
  kReallocLeak,      // MEMORY LEAK: the new block never freed
  kReallocOfFreed,   // DOUBLE FREE: realloc of a freed block
  kReallocNullZero,  // SUCCESS: realloc(null) is malloc, size 0 is free
};
template <Alloc kCase>
struct CAlloc : rl::test_suite<CAlloc<kCase>, 1> {
  void thread(unsigned) {
    switch (kCase) {
      case Alloc::kCallocLeak:
        (void)calloc(4, sizeof(int));
        break;
      case Alloc::kCallocZeroed: {
        int* p = static_cast<int*>(calloc(4, sizeof(int)));
        RL_ASSERT(p != nullptr && p[0] == 0 && p[3] == 0);
        free(p);
        break;
      }
      case Alloc::kCallocOverflow:
        RL_ASSERT(calloc(SIZE_MAX / 2 + 1, 2) == nullptr);
        break;
      case Alloc::kReallocMoves:
      case Alloc::kReallocOldFreed:
      case Alloc::kReallocLeak: {
        int* p = static_cast<int*>(malloc(sizeof(int)));
        *p = 7;
        int* q = static_cast<int*>(realloc(p, 64 * sizeof(int)));
        RL_ASSERT(q != nullptr && q[0] == 7);
        if (kCase == Alloc::kReallocOldFreed) free(p);
        if (kCase != Alloc::kReallocLeak) free(q);
        break;
      }
      case Alloc::kReallocOfFreed: {
        void* p = malloc(8);
        free(p);
        (void)realloc(p, 16);
        break;
      }
      case Alloc::kReallocNullZero: {
        void* p = realloc(nullptr, 8);
        RL_ASSERT(p != nullptr);
        RL_ASSERT(realloc(p, 0) == nullptr);
        break;
      }
    }
  }
};

// pthread_mutex_destroy of a mutex the thread still holds (Relacy:
// DESTROYING OWNED MUTEX; before 0.2.0 it passed here).
struct PthreadMutexDestroyHeld : rl::test_suite<PthreadMutexDestroyHeld, 1> {
  pthread_mutex_t m;
  void thread(unsigned) {
    pthread_mutex_init(&m, nullptr);
    pthread_mutex_lock(&m);
    pthread_mutex_destroy(&m);
  }
};

// Relacy's lifecycle checks: an object used before *_init (unless built by
// its initializer) or after *_destroy, initialized twice, or an rwlock
// asked for the other kind of lock by its holder. Each gives real Relacy's
// verdict (checked side by side); before 0.2.0 all but the upgrades passed
// here (the upgrades were DEADLOCK).
enum class Life {
  kMutexNotInit,           // USAGE OF NON INITIALIZED MUTEX
  kMutexTwice,             // DOUBLE INITIALIZATION OF MUTEX
  kMutexAfterDestroy,      // USAGE OF NON INITIALIZED MUTEX
  kCondNotInit,            // USAGE OF NON INITIALIZED CONDITION VARIABLE
  kSemTwice,               // DOUBLE INITIALIZATION OF SEMAPHORE
  kSemAfterDestroy,        // USAGE OF NON INITIALIZED SEMAPHORE
  kReadToWrite,            // ATTEMPT TO UPGRADE SHARED ... TO EXCLUSIVE
  kWriteToRead,            // ATTEMPT TO UPGRADE EXCLUSIVE ... TO SHARED
  kInitializersAndReinit,  // SUCCESS
};
template <Life kCase>
struct Lifecycle : rl::test_suite<Lifecycle<kCase>, 1> {
  pthread_mutex_t m;
  pthread_mutex_t ms = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t c;
  pthread_cond_t cs = PTHREAD_COND_INITIALIZER;
  pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
  sem_t s;
  void thread(unsigned) {
    switch (kCase) {
      case Life::kMutexNotInit:
        pthread_mutex_lock(&m);
        break;
      case Life::kMutexTwice:
        pthread_mutex_init(&m, nullptr);
        pthread_mutex_init(&m, nullptr);
        break;
      case Life::kMutexAfterDestroy:
        pthread_mutex_init(&m, nullptr);
        pthread_mutex_destroy(&m);
        pthread_mutex_lock(&m);
        break;
      case Life::kCondNotInit:
        pthread_cond_signal(&c);
        break;
      case Life::kSemTwice:
        sem_init(&s, 0, 1);
        sem_init(&s, 0, 1);
        break;
      case Life::kSemAfterDestroy:
        sem_init(&s, 0, 1);
        sem_destroy(&s);
        sem_post(&s);
        break;
      case Life::kReadToWrite:
        pthread_rwlock_rdlock(&rw);
        pthread_rwlock_wrlock(&rw);
        break;
      case Life::kWriteToRead:
        pthread_rwlock_wrlock(&rw);
        pthread_rwlock_rdlock(&rw);
        break;
      case Life::kInitializersAndReinit:
        pthread_mutex_lock(&ms);
        pthread_cond_signal(&cs);
        pthread_mutex_unlock(&ms);
        pthread_rwlock_rdlock(&rw);
        pthread_rwlock_unlock(&rw);
        pthread_mutex_init(&m, nullptr);
        pthread_mutex_destroy(&m);
        pthread_mutex_init(&m, nullptr);  // again after its destruction
        pthread_mutex_destroy(&m);
        break;
    }
  }
};

// The rwlock, timed-wait and futex programs below get the same verdicts
// from real Relacy (dvyukov/relacy 9f25438, random search, with *_init in
// place of the initializers it lacks).

// Writers increment under the write lock, readers read under the read
// lock. kReadersWrite: two readers write under read locks, which they
// hold together: a DATA RACE. kDestroy: without pthread_rwlock_destroy,
// RESOURCE LEAK (as a mutex).
enum class Rw { kCounter, kReadersWrite, kNoDestroy };
template <Rw kCase>
struct Rwlock : rl::test_suite<Rwlock<kCase>, 3> {
  pthread_rwlock_t l;
  rl::var<int> n{0};
  void before() { pthread_rwlock_init(&l, nullptr); }
  void thread(unsigned index) {
    if (kCase == Rw::kReadersWrite) {
      if (index == 2) return;
      pthread_rwlock_rdlock(&l);
      n($) = static_cast<int>(index);
      pthread_rwlock_unlock(&l);
      return;
    }
    if (index < 2) {
      pthread_rwlock_wrlock(&l);
      n($) = n($) + 1;
      pthread_rwlock_unlock(&l);
    } else if (pthread_rwlock_tryrdlock(&l) == 0) {
      int v = n($);
      RL_ASSERT(v >= 0 && v <= 2);
      pthread_rwlock_unlock(&l);
    }
  }
  void after() {
    if (kCase != Rw::kReadersWrite) RL_ASSERT(n($) == 2);
    if (kCase != Rw::kNoDestroy) pthread_rwlock_destroy(&l);
  }
};

// One thread waits on a condition variable nobody signals: a timed wait
// times out (Relacy's test_pthread_condvar2 passes), an untimed one is a
// DEADLOCK.
template <bool kTimed>
struct CondAlone : rl::test_suite<CondAlone<kTimed>, 1> {
  pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t c = PTHREAD_COND_INITIALIZER;
  void thread(unsigned) {
    pthread_mutex_lock(&m);
    timespec deadline{};
    int r = kTimed ? pthread_cond_timedwait(&c, &m, &deadline)
                   : pthread_cond_wait(&c, &m);
    RL_ASSERT(r == 0 || r == ETIMEDOUT);
    pthread_mutex_unlock(&m);
  }
};

// A timed lock of a mutex another thread holds may time out.
struct TimedLock : rl::test_suite<TimedLock, 2> {
  pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  void thread(unsigned index) {
    if (index == 0) {
      pthread_mutex_lock(&m);
      pthread_mutex_unlock(&m);
    } else {
      timespec deadline{};
      int r = pthread_mutex_timedlock(&m, &deadline);
      if (r == 0) pthread_mutex_unlock(&m);
      RL_UNTIL(r == ETIMEDOUT);
    }
  }
};

// Thread 0 holds m until thread 1 gave up on it: only a timeout ends
// thread 1's timed lock (once both threads wait).
struct TimedLockGivesUp : rl::test_suite<TimedLockGivesUp, 2> {
  pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  sem_t gave_up;
  void before() { sem_init(&gave_up, 0, 0); }
  void after() { sem_destroy(&gave_up); }
  void thread(unsigned index) {
    if (index == 0) {
      pthread_mutex_lock(&m);
      while (sem_wait(&gave_up) != 0) RL_ASSERT(errno == EINTR);
      pthread_mutex_unlock(&m);
    } else {
      int r = pthread_mutex_timedlock(&m, nullptr);
      if (r == 0) pthread_mutex_unlock(&m);
      sem_post(&gave_up);
    }
  }
};

// A timed lock of a default mutex the thread already holds.
struct TimedLockSelf : rl::test_suite<TimedLockSelf, 1> {
  pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  void thread(unsigned) {
    pthread_mutex_lock(&m);
    if (pthread_mutex_timedlock(&m, nullptr) == 0) pthread_mutex_unlock(&m);
    pthread_mutex_unlock(&m);
  }
};

// Relacy's spelling pthread_mutex_try_lock: 0 when it took the mutex.
struct TryLockSpelling : rl::test_suite<TryLockSpelling, 2> {
  pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  rl::var<int> n{0};
  void thread(unsigned) {
    if (pthread_mutex_try_lock(&m) == 0) {
      n($) = n($) + 1;
      pthread_mutex_unlock(&m);
    }
  }
  void after() { RL_ASSERT(n($) >= 1); }
};

// Futexes (Relacy's futex(): the error number is returned). kNoLostWake:
// the waker stores then wakes, the waiter waits while the word is 0; the
// compare and the queueing are one step, so the waiter is either woken
// (and the wake counted it) or found the word changed. kSync: a wait that
// was woken sees what the waker did before (no race on data), and that
// path is reachable. kIntr: a wait may return EINTR. kNobody: a wait
// nobody wakes is a DEADLOCK (unless interrupted). kNobodyTimed: with a
// timeout it times out instead, also after it chose to sleep (Relacy's
// verdict; a DEADLOCK here until 0.2.0).
enum class Fx { kNoLostWake, kSync, kIntr, kNobody, kNobodyTimed };
template <Fx kCase>
struct Futex : rl::test_suite<Futex<kCase>, 2> {
  rl::atomic<int> word{0};
  rl::var<int> data{0};
  int woke = 0, waited = EINTR;
  void thread(unsigned index) {
    if (index == 0) {
      if (kCase == Fx::kNobody || kCase == Fx::kNobodyTimed) return;
      data($) = 1;
      word.store(1, rl::mo_relaxed);
      woke = futex(&word, FUTEX_WAKE, 1, nullptr, nullptr, 0);
    } else if (kCase == Fx::kNoLostWake) {
      while (word.load(rl::mo_relaxed) == 0)
        waited = futex(&word, FUTEX_WAIT, 0, nullptr, nullptr, 0);
    } else {
      timespec deadline{};
      int r =
          futex(&word, FUTEX_WAIT_PRIVATE, 0,
                kCase == Fx::kNobodyTimed ? &deadline : nullptr, nullptr, 0);
      if (kCase == Fx::kSync && r == 0) {
        RL_ASSERT(data($) == 1);
        RL_UNTIL(true);
      }
      if (kCase == Fx::kIntr) RL_UNTIL(r == EINTR);
      if (kCase == Fx::kNobody) RL_ASSERT(r == EINTR);
      if (kCase == Fx::kNobodyTimed) RL_ASSERT(r == EINTR || r == ETIMEDOUT);
    }
  }
  void after() {
    if (kCase == Fx::kNoLostWake)
      RL_ASSERT((waited == 0) == (woke == 1) &&
                (waited == 0 || waited == EWOULDBLOCK || waited == EINTR));
  }
};

// A wake of one with two waiters queued wakes exactly one: the other
// needs the second wake.
struct FutexTwoWaiters : rl::test_suite<FutexTwoWaiters, 3> {
  rl::atomic<int> word{0};
  std::atomic<int> woken{0};
  void thread(unsigned index) {
    if (index == 0) {
      word.store(1, rl::mo_relaxed);
      int a = futex(&word, FUTEX_WAKE, 1, nullptr, nullptr, 0);
      int b = futex(&word, FUTEX_WAKE, 1, nullptr, nullptr, 0);
      RL_ASSERT(a <= 1 && b <= 1);
    } else {
      while (word.load(rl::mo_relaxed) == 0)
        futex(&word, FUTEX_WAIT, 0, nullptr, nullptr, 0);
    }
  }
};

}  // namespace

namespace relacy_std_programs {

rl::test_result_e RelaxedPublication() {
  return Full<Publication<std::memory_order_relaxed,
                          std::memory_order_relaxed>>();
}
rl::test_result_e ReleasePublication() {
  return Full<Publication<std::memory_order_release,
                          std::memory_order_acquire>>();
}
rl::test_result_e StdMutexCounter() { return Full<StdMutex>(); }
rl::test_result_e PthreadMutexCounter() { return Full<PthreadCounter<true>>(); }
rl::test_result_e PthreadUnlockedCounter() {
  return Full<PthreadCounter<false>>();
}
rl::test_result_e SemHandOff() { return Full<SemHand<1>>(); }
rl::test_result_e SemMissingPost() { return Full<SemHand<2>>(); }
rl::test_result_e SemUncheckedWait() { return Full<SemHand<1, false>>(); }
rl::test_result_e PthreadCondPredicate() { return Full<CondPredicate<true>>(); }
rl::test_result_e PthreadCondNotDestroyed() {
  return Full<CondPredicate<false>>();
}
rl::test_result_e RwlockCounter() { return Full<Rwlock<Rw::kCounter>>(); }
rl::test_result_e RwlockReadersWrite() {
  return Full<Rwlock<Rw::kReadersWrite>>();
}
rl::test_result_e RwlockNotDestroyed() {
  return Full<Rwlock<Rw::kNoDestroy>>();
}
rl::test_result_e CondTimedWaitAlone() { return Full<CondAlone<true>>(); }
rl::test_result_e CondWaitAlone() { return Full<CondAlone<false>>(); }
rl::test_result_e MutexTimedLockTimesOut() { return Full<TimedLock>(); }
rl::test_result_e MutexTimedLockGivesUp() { return Full<TimedLockGivesUp>(); }
rl::test_result_e MutexTimedLockSelf() { return Full<TimedLockSelf>(); }
rl::test_result_e MutexTryLockSpelling() { return Full<TryLockSpelling>(); }
rl::test_result_e FutexNoLostWake() { return Full<Futex<Fx::kNoLostWake>>(); }
rl::test_result_e FutexWakeSynchronizes() { return Full<Futex<Fx::kSync>>(); }
rl::test_result_e FutexInterrupted() { return Full<Futex<Fx::kIntr>>(); }
rl::test_result_e FutexNobodyWakes() { return Full<Futex<Fx::kNobody>>(); }
rl::test_result_e FutexTimedNobodyWakes() {
  return Full<Futex<Fx::kNobodyTimed>>();
}
rl::test_result_e FutexWakeOneOfTwo() { return Full<FutexTwoWaiters>(); }
rl::test_result_e MallocLeak() { return Full<Malloc<false>>(); }
rl::test_result_e MallocFreed() { return Full<Malloc<true>>(); }
rl::test_result_e PthreadMutexDestroyedHeld() {
  return Full<PthreadMutexDestroyHeld>();
}
rl::test_result_e LifecycleMutexNotInit() {
  return Full<Lifecycle<Life::kMutexNotInit>>();
}
rl::test_result_e LifecycleMutexTwice() {
  return Full<Lifecycle<Life::kMutexTwice>>();
}
rl::test_result_e LifecycleMutexAfterDestroy() {
  return Full<Lifecycle<Life::kMutexAfterDestroy>>();
}
rl::test_result_e LifecycleCondNotInit() {
  return Full<Lifecycle<Life::kCondNotInit>>();
}
rl::test_result_e LifecycleSemTwice() {
  return Full<Lifecycle<Life::kSemTwice>>();
}
rl::test_result_e LifecycleSemAfterDestroy() {
  return Full<Lifecycle<Life::kSemAfterDestroy>>();
}
rl::test_result_e LifecycleReadToWrite() {
  return Full<Lifecycle<Life::kReadToWrite>>();
}
rl::test_result_e LifecycleWriteToRead() {
  return Full<Lifecycle<Life::kWriteToRead>>();
}
rl::test_result_e LifecycleInitializersAndReinit() {
  return Full<Lifecycle<Life::kInitializersAndReinit>>();
}
rl::test_result_e CallocLeak() { return Full<CAlloc<Alloc::kCallocLeak>>(); }
rl::test_result_e CallocZeroed() {
  return Full<CAlloc<Alloc::kCallocZeroed>>();
}
rl::test_result_e CallocOverflow() {
  return Full<CAlloc<Alloc::kCallocOverflow>>();
}
rl::test_result_e ReallocMoves() {
  return Full<CAlloc<Alloc::kReallocMoves>>();
}
rl::test_result_e ReallocOldFreed() {
  return Full<CAlloc<Alloc::kReallocOldFreed>>();
}
rl::test_result_e ReallocLeak() { return Full<CAlloc<Alloc::kReallocLeak>>(); }
rl::test_result_e ReallocOfFreed() {
  return Full<CAlloc<Alloc::kReallocOfFreed>>();
}
rl::test_result_e ReallocNullZero() {
  return Full<CAlloc<Alloc::kReallocNullZero>>();
}

}  // namespace relacy_std_programs
