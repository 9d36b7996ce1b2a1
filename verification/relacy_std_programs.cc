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

template <int kWaits>
struct SemHand : rl::test_suite<SemHand<kWaits>, 2> {
  sem_t s;
  rl::var<int> data{0};
  void before() { sem_init(&s, 0, 0); }
  void thread(unsigned index) {
    if (index == 0) {
      data($) = 42;
      sem_post(&s);
    } else {
      for (int i = 0; i < kWaits; ++i) sem_wait(&s);
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
rl::test_result_e PthreadCondPredicate() { return Full<CondPredicate<true>>(); }
rl::test_result_e PthreadCondNotDestroyed() {
  return Full<CondPredicate<false>>();
}
rl::test_result_e MallocLeak() { return Full<Malloc<false>>(); }
rl::test_result_e MallocFreed() { return Full<Malloc<true>>(); }

}  // namespace relacy_std_programs
