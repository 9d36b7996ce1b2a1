// A model checker speaking the Relacy Race Detector dialect, implementing
// the C++20 (RC11) memory model. See docs/verification.md.
//
//   struct Test : rl::test_suite<Test, 2> {
//     rl::atomic<int> x{0};
//     void thread(unsigned i) { ... x.load(rl::mo_acquire) ... }
//   };
//   bool ok = rl::simulate<Test>();
#ifndef PERCPU_VERIFICATION_RELACY_RELACY_HPP_
#define PERCPU_VERIFICATION_RELACY_RELACY_HPP_

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <limits>
#include <mutex>
#include <new>
#include <sstream>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <utility>

#include "internal/engine.h"

#define RL_INFO ::rl::debug_info(__FILE__, __LINE__, __func__)
#ifndef RL_NO_DOLLAR
#define $ RL_INFO
#endif
// Default argument of every operation: the builtins evaluate at the call
// site (like std::source_location::current(), which clang 14 with
// libstdc++ lacks), so plain x.load(mo) is attributed to the caller's line.
#define RL_CURRENT_INFO \
  ::rl::debug_info(__builtin_FILE(), __builtin_LINE(), __builtin_FUNCTION())

#define RL_ASSERT(x)                                           \
  do {                                                         \
    if (!(x))                                                  \
      ::rl::detail::Fail(::rl::test_result_user_assert_failed, \
                         "assertion: " #x, RL_INFO);           \
  } while (0)
// Relacy's assert(): a failed assert() in a test is USER ASSERT FAILED with
// the failing execution's trace, not an abort of the whole run. Relacy
// ignores NDEBUG here too. A standard header that includes <cassert> or
// <assert.h> after this one redefines the C assert: include those first.
#include <cassert>
#undef assert
#define assert(x) RL_ASSERT(x)

// Relacy's check of its own invariants, which its tests also use (e.g.
// `default: RL_VERIFY(false);`). As in Relacy it is compiled out unless
// RL_DO_ASSERT_IMPL is defined; then a false condition fails the run like
// RL_ASSERT.
#ifdef RL_DO_ASSERT_IMPL
#define RL_VERIFY(x) RL_ASSERT(x)
#else
#define RL_VERIFY(x) ((void)0)
#endif
#define RL_UNTIL(x)                                      \
  do {                                                   \
    if ((x)) ::rl::detail::Until("until: " #x, RL_INFO); \
  } while (0)
#define VAR(x) x(RL_INFO)
#define VAR_T(x) ::rl::var<x>
#define TLS_T(T) ::rl::thread_local_var<T>
// new/delete in a test are tracked by the heap model (global operator
// new/delete while an execution runs), so Relacy's macros are plain.
// User history events (see rl::context): in the failing execution's trace.
#define RL_HIST_IMPL(C, INFO, TYPE)                \
  do {                                             \
    if ((C).collecting_history()) {                \
      const ::rl::debug_info& rl_hist_info = INFO; \
      ::rl::context& rl_hist_ctx = (C);            \
    TYPE rl_hist_ev =
#define RL_HIST_END()                             \
  ;                                               \
  rl_hist_ctx.exec_log(rl_hist_info, rl_hist_ev); \
  }                                               \
  }                                               \
  while (0)
#define RL_LOG(desc) ::rl::ctx().exec_log_msg(RL_INFO, desc)
#define RL_NEW new
#define RL_DELETE(p) delete p

namespace rl {

template <typename Derived, thread_id_t ThreadCount,
          test_result_e ExpectedResult = test_result_success>
struct test_suite {
  static constexpr thread_id_t static_thread_count = ThreadCount;
  static constexpr thread_id_t dynamic_thread_count = 0;
  static constexpr test_result_e expected_result = ExpectedResult;
  // Relacy's spelling of the same figures (base_t::params::thread_count).
  struct params {
    static constexpr thread_id_t static_thread_count = ThreadCount;
    static constexpr thread_id_t dynamic_thread_count =
        Derived::dynamic_thread_count;
    static constexpr thread_id_t thread_count =
        static_thread_count + dynamic_thread_count;
    static constexpr test_result_e expected_result = ExpectedResult;
  };
  void before() {}
  void after() {}
  void invariant() {}
};

// Relacy's spellings for code around its tests: the debug-info parameter
// type, the type of &rl::simulate<T> (an array of them is Relacy's usual
// test driver), its string stream and the names of the search types.
using debug_info_param = const debug_info&;
using simulate_f = bool (*)(test_params&);
using ostringstream = std::ostringstream;
// Relacy's address hash: the same address hashes alike within an
// execution, numbered by first use, modulo size (a size of 0 returns the
// number itself).
inline size_t hash_ptr(const void* p, size_t size) {
  const size_t h = detail::AddrHash(p);
  return size != 0 ? h % size : h;
}
inline const char* format(scheduler_type_e t) {
  switch (t) {
    case sched_random:
      return "random search";
    case sched_bound:
      return "context-bounded search";
    case sched_full:
      return "full search";
    default:
      return "unknown search type";
  }
}

// Relacy's long spellings (rl::memory_order_relaxed, ...).
inline constexpr memory_order memory_order_relaxed = mo_relaxed;
inline constexpr memory_order memory_order_consume = mo_consume;
inline constexpr memory_order memory_order_acquire = mo_acquire;
inline constexpr memory_order memory_order_release = mo_release;
inline constexpr memory_order memory_order_acq_rel = mo_acq_rel;
inline constexpr memory_order memory_order_seq_cst = mo_seq_cst;

inline void atomic_thread_fence(memory_order mo,
                                debug_info info = RL_CURRENT_INFO) {
  detail::Fence(mo, info);
}

// A signal fence orders a thread with a signal handler on the same thread;
// the checker has no signal handlers, so between threads it orders nothing
// (C++20 [atomics.fences]/7). Accepted and ignored.
inline void atomic_signal_fence(memory_order, debug_info = RL_CURRENT_INFO) {}

// Tells the checker the thread is spinning; see docs (spin handling).
inline void yield(unsigned count = 1, debug_info info = RL_CURRENT_INFO) {
  detail::Yield(count, info);
}

// Nondeterministic choice in [0, limit); every value is explored.
inline unsigned rand(unsigned limit, debug_info info = RL_CURRENT_INFO) {
  return detail::Rand(limit, info);
}

inline thread_id_t thread_index() { return detail::ThreadIndex(); }

namespace detail {
// Thread t's bit in a set of threads (0 past 64 threads).
inline uint64_t ThreadBit(unsigned t) { return t < 64 ? uint64_t{1} << t : 0; }
// The calling thread's.
inline uint64_t ThreadBit() { return ThreadBit(ThreadIndex()); }
// Whether the calling thread's wait ends early now, with no wake (a
// spurious wake-up, EINTR from a signal, a deadline passed at once): a
// decision the search explores, unless `last` (a bit per thread whose last
// such wait ended early) says its last one did, so a retry loop ends.
inline bool MayEndEarly(uint64_t last, const debug_info& info) {
  return (last & ThreadBit()) == 0 && rand(2, info) == 1;
}
inline void SetEndedEarly(uint64_t* last, bool ended_early) {
  if (ended_early)
    *last |= ThreadBit();
  else
    *last &= ~ThreadBit();
}
// MayEndEarly, with the answer recorded in *last.
inline bool EndsEarly(uint64_t* last, const debug_info& info) {
  const bool early = MayEndEarly(*last, info);
  SetEndedEarly(last, early);
  return early;
}
}  // namespace detail

// Relacy's execution context as its programs use it: rl::ctx() names the
// running thread (ctx().threadx_->index_) and takes user history events
// (RL_HIST_IMPL(rl::ctx(), $, Event) {...} RL_HIST_END(), RL_LOG(text)).
// History events and log lines go into the trace of a failing execution,
// after the events before them: collecting_history() is true only while
// that execution is replayed for its trace, so elsewhere an event is not
// even built. The event type prints itself (void output(std::ostream&)
// const), as in Relacy.
struct context {
  struct thread_info {
    thread_id_t index_ = 0;
  };
  thread_info* threadx_ = &thread_;
  thread_info thread_;
  bool collecting_history() const { return detail::CollectingHistory(); }
  template <typename Event>
  void exec_log(const debug_info& info, const Event& ev) {
    std::ostringstream s;
    ev.output(s);
    detail::UserLog(info, s.str());
  }
  void exec_log_msg(const debug_info& info, const char* msg) {
    if (detail::CollectingHistory()) detail::UserLog(info, msg);
  }
};

// Valid until the calling thread's next checker operation.
inline context& ctx() {
  static thread_local context c;
  c.thread_.index_ = detail::ThreadIndex();
  c.threadx_ = &c.thread_;
  return c;
}

class backoff {
 public:
  void operator()(debug_info info = RL_CURRENT_INFO) { detail::Yield(1, info); }
  void yield(debug_info info = RL_CURRENT_INFO) { detail::Yield(1, info); }
};
using linear_backoff = backoff;
using exp_backoff = backoff;

namespace detail {

template <typename T>
inline uint64_t ToBits(T v) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= 8,
                "ToBits needs a trivially copyable T of <= 8 bytes");
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  return bits;
}

template <typename T>
inline T FromBits(uint64_t bits) {
  T v;
  std::memcpy(&v, &bits, sizeof(T));
  return v;
}

// The values an rl::atomic<T> of a T wider than 8 bytes has held in the
// running execution (Relacy models atomics of any T). The engine's 64-bit
// value of such an atomic is an index into this table: equal values (T's
// operator== if it has one, else the bytes without padding, as C++20's
// compare_exchange) share an index, so the engine's CAS compares what the
// program's would. The table belongs to the atomic object, which is
// constructed afresh in every execution, and is filled in the order the
// execution writes, so replays get the same indexes. Its memory is the
// checker's (plain malloc), not the test's heap.
template <typename T>
class WideValues {
 public:
  static_assert(std::is_trivially_copyable_v<T>,
                "rl::atomic<T> needs a trivially copyable T");
  static constexpr uint64_t kAbsent = ~uint64_t{0};
  WideValues() = default;
  WideValues(const WideValues&) = delete;
  WideValues& operator=(const WideValues&) = delete;
  ~WideValues() { std::free(values_); }
  void Clear() { n_ = 0; }
  uint64_t Intern(const T& v) {
    uint64_t i = Find(v);
    if (i != kAbsent) return i;
    if (n_ == cap_) {
      size_t cap = cap_ == 0 ? 8 : 2 * cap_;
      void* p = std::realloc(values_, cap * sizeof(T));
      if (p == nullptr) throw std::bad_alloc();
      values_ = static_cast<T*>(p);
      cap_ = cap;
    }
    std::memcpy(static_cast<void*>(values_ + n_), &v, sizeof(T));
    return n_++;
  }
  uint64_t Find(const T& v) const {
    for (size_t i = 0; i < n_; ++i)
      if (Same(values_[i], v)) return i;
    return kAbsent;
  }
  T Value(uint64_t i) const { return n_ == 0 ? T() : values_[i < n_ ? i : 0]; }
  static bool Same(const T& a, const T& b) {
    if constexpr (requires { static_cast<bool>(a == b); }) {
      return static_cast<bool>(a == b);
    } else {
      T x = a, y = b;
#if defined(__has_builtin)
#if __has_builtin(__builtin_clear_padding)
      __builtin_clear_padding(&x);
      __builtin_clear_padding(&y);
#endif
#endif
      return std::memcmp(&x, &y, sizeof(T)) == 0;
    }
  }

 private:
  T* values_ = nullptr;
  size_t n_ = 0, cap_ = 0;
};

struct NoWideValues {
  void Clear() {}
};

// The threads waiting on one object: an rl::atomic's C++20 waiters, a
// futex word's, a POSIX condition variable's. A checker location (made on
// first use in each execution) holding a bit per registered thread and a
// lock bit, so that whoever wakes reads who waits like any other load: the
// search explores a waker that comes before a waiter registers and one
// that comes after. A registered thread sleeps until a waker clears its
// bit: a load that only reads the bit clear (AtomicAwaitLoad), so its
// looks at a bit still set are no events.
class WaitQueue {
 public:
  // Registers the calling thread (relaxed: the callers order it, see
  // them).
  void Register(const debug_info& info) {
    if (Word(info) >= 0)
      AtomicRmw(loc_, RmwOp::kOr, Bit(), mo_relaxed, info);
  }
  // Leaves the queue; false if a waker had picked the thread already.
  // Relaxed: leaving orders nothing.
  bool Leave(const debug_info& info) {
    if (Word(info) < 0) return false;
    return (AtomicRmw(loc_, RmwOp::kAnd, ~Bit(), mo_relaxed, info) &
            Bit()) != 0;
  }
  // Whether a waker has picked the calling thread (mo: the caller's).
  bool Picked(memory_order mo, const debug_info& info) {
    if (Word(info) < 0) return true;
    return (AtomicLoad(loc_, mo, info) & Bit()) == 0;
  }
  // Sleeps until a waker picks the calling thread; false when unwinding.
  // Timed (a deadline): false also when it timed out (AwaitCond::timed),
  // still registered (the caller leaves the queue).
  bool SleepUntilPicked(memory_order mo, const debug_info& info,
                        bool timed = false) {
    if (Bit() == 0) {
      // No bit to be picked by (outside the suite's threads): it can never
      // be woken; WaitBlocked reports that.
      WaitBlocked(info);
      return false;
    }
    if (Word(info) < 0) return true;
    // Until a waker clears the bit, with no event while it waits.
    AwaitCond cond{Bit(), 0, true};
    cond.timed = timed;
    AtomicAwaitLoad(loc_, cond, mo, info);
    return !Abandoning() && !(timed && AwaitTimedOut());
  }
  // Wakes up to n registered threads (which ones, when not all: every
  // choice explored) with one CAS of the given order, after the lock bit
  // is free; returns how many.
  unsigned Wake(unsigned n, memory_order mo, const debug_info& info) {
    if (n == 0 || Word(info) < 0) return 0;
    // Relaxed: the CAS below decides, on the newest value.
    uint64_t m = AtomicLoad(loc_, mo_relaxed, info);
    for (;;) {
      if ((m & kLock) != 0) {
        // Held by a futex waiter between its compare and its queueing.
        if (!WaitBlocked(info)) return 0;
        m = AtomicLoad(loc_, mo_relaxed, info);
        continue;
      }
      const uint64_t picked = Pick(m, n, info);
      if (picked == 0) return 0;
      if (AtomicCas(loc_, &m, m & ~picked, mo, mo_relaxed, info))
        return static_cast<unsigned>(__builtin_popcountll(picked));
    }
  }
  // The futex's hash-bucket lock: a waiter compares the word and queues
  // itself under it, so no wake comes in between. Acquire: a holder sees
  // what the wakers and holders before it did (pairs with the release of
  // Unlock and of the waker's CAS).
  void Lock(const debug_info& info) {
    if (Word(info) < 0) return;
    uint64_t m = AtomicLoad(loc_, mo_relaxed, info);
    for (;;) {
      if ((m & kLock) != 0) {
        if (!WaitBlocked(info)) return;
        m = AtomicLoad(loc_, mo_relaxed, info);
        continue;
      }
      if (AtomicCas(loc_, &m, m | kLock, mo_acquire, mo_relaxed, info))
        return;
    }
  }
  // Drops the lock, registering the calling thread with it if enqueue.
  // Release: pairs with the acquire of the next Lock and waker's CAS.
  void Unlock(bool enqueue, const debug_info& info) {
    if (Word(info) < 0) return;
    AtomicRmw(loc_, RmwOp::kXor, kLock | (enqueue ? Bit() : 0), mo_release,
              info);
  }

 private:
  static constexpr uint64_t kLock = uint64_t{1} << 63;
  static uint64_t Bit() {
    const unsigned t = ThreadIndex();
    return t < 63 ? uint64_t{1} << t : 0;
  }
  // n of the registered threads in m (all of them if there are no more).
  static uint64_t Pick(uint64_t m, unsigned n, const debug_info& info) {
    if (static_cast<unsigned>(__builtin_popcountll(m)) <= n) return m;
    uint64_t picked = 0;
    for (; n > 0; --n) {
      uint64_t rest = m & ~picked;
      const unsigned k = Rand(
          static_cast<unsigned>(__builtin_popcountll(rest)), info);
      for (unsigned i = 0; i < k; ++i) rest &= rest - 1;
      picked |= rest & (~rest + 1);
    }
    return picked;
  }
  // The location of this execution (-1 outside one).
  int Word(const debug_info& info) {
    const uint64_t gen = Generation();
    if (gen == 0) return -1;
    if (gen_ != gen) {
      gen_ = gen;
      loc_ = NewSideAtomic(0, info);
    }
    return loc_;
  }
  int loc_ = -1;
  uint64_t gen_ = 0;
};

}  // namespace detail

namespace detail {
template <typename T>
class basic_atomic;
// A pointer to an object type: fetch_add / fetch_sub, ++, --, += and -=
// count elements, as for std::atomic<U*> (and Relacy's atomic<U*>).
template <typename T>
inline constexpr bool kObjectPointer =
    std::is_pointer_v<T>&& std::is_object_v<std::remove_pointer_t<T>>;
// The operand of those operations: std::ptrdiff_t for such a pointer, else
// T (std::atomic<T>::difference_type).
template <typename T>
using Difference = std::conditional_t<kObjectPointer<T>, std::ptrdiff_t, T>;

// The operators of rl::atomic and of its x($) proxy, in terms of the class's
// own load and fetch_* (CRTP). Each returns what the C++ operator does.
template <typename Derived, typename T>
class AtomicOperators {
 public:
  operator T() const { return Self().load(); }  // NOLINT
  T operator++() { return T(Self().fetch_add(Difference<T>(1)) + 1); }
  T operator++(int) { return Self().fetch_add(Difference<T>(1)); }
  T operator--() { return T(Self().fetch_sub(Difference<T>(1)) - 1); }
  T operator--(int) { return Self().fetch_sub(Difference<T>(1)); }
  T operator+=(Difference<T> v) { return T(Self().fetch_add(v) + v); }
  T operator-=(Difference<T> v) { return T(Self().fetch_sub(v) - v); }
  T operator&=(T v) { return Self().fetch_and(v) & v; }
  T operator|=(T v) { return Self().fetch_or(v) | v; }
  T operator^=(T v) { return Self().fetch_xor(v) ^ v; }

 private:
  Derived& Self() { return static_cast<Derived&>(*this); }
  const Derived& Self() const { return static_cast<const Derived&>(*this); }
};
}  // namespace detail

// Result of x($): the same operations, attributed to the given position.
template <typename T>
class atomic_proxy : public detail::AtomicOperators<atomic_proxy<T>, T> {
 public:
  atomic_proxy(detail::basic_atomic<T>* a, debug_info info)
      : a_(a), info_(info) {}
  T load(memory_order mo = mo_seq_cst) const { return a_->load(mo, info_); }
  void store(T v, memory_order mo = mo_seq_cst) { a_->store(v, mo, info_); }
  T exchange(T v, memory_order mo = mo_seq_cst) {
    return a_->exchange(v, mo, info_);
  }
  bool compare_exchange_weak(T& e, T d, memory_order mo = mo_seq_cst) {
    return a_->compare_exchange_weak(e, d, mo, info_);
  }
  bool compare_exchange_weak(T& e, T d, memory_order s, memory_order f) {
    return a_->compare_exchange_weak(e, d, s, f, info_);
  }
  bool compare_exchange_strong(T& e, T d, memory_order mo = mo_seq_cst) {
    return a_->compare_exchange_strong(e, d, mo, info_);
  }
  bool compare_exchange_strong(T& e, T d, memory_order s, memory_order f) {
    return a_->compare_exchange_strong(e, d, s, f, info_);
  }
  using difference_type = detail::Difference<T>;
  T fetch_add(difference_type v, memory_order mo = mo_seq_cst) {
    return a_->fetch_add(v, mo, info_);
  }
  T fetch_sub(difference_type v, memory_order mo = mo_seq_cst) {
    return a_->fetch_sub(v, mo, info_);
  }
  T fetch_and(T v, memory_order mo = mo_seq_cst) {
    return a_->fetch_and(v, mo, info_);
  }
  T fetch_or(T v, memory_order mo = mo_seq_cst) {
    return a_->fetch_or(v, mo, info_);
  }
  T fetch_xor(T v, memory_order mo = mo_seq_cst) {
    return a_->fetch_xor(v, mo, info_);
  }
  void wait(T old, memory_order mo = mo_seq_cst) const {
    a_->wait(old, mo, info_);
  }
  void notify_one() { a_->notify_one(info_); }
  void notify_all() { a_->notify_all(info_); }
  T operator=(T v) {
    store(v);
    return v;
  }

 private:
  detail::basic_atomic<T>* a_;
  debug_info info_;
};

// Result of x($) on a const atomic: reads only.
template <typename T>
class atomic_proxy_const {
 public:
  atomic_proxy_const(const detail::basic_atomic<T>* a, debug_info info)
      : a_(a), info_(info) {}
  T load(memory_order mo = mo_seq_cst) const { return a_->load(mo, info_); }
  void wait(T old, memory_order mo = mo_seq_cst) const {
    a_->wait(old, mo, info_);
  }
  operator T() const { return load(); }  // NOLINT

 private:
  const detail::basic_atomic<T>* a_;
  debug_info info_;
};

namespace detail {

// rl::atomic without the end of its lifetime: trivially destructible, for
// storage that never runs destructors (the project's PerCpuAllocator hands
// out zeroed memory; its seam, primitives/internal/atomic.h, uses this).
template <typename T>
class basic_atomic : public AtomicOperators<basic_atomic<T>, T> {
 public:
  // Value-initialized like C++20 std::atomic.
  basic_atomic(debug_info info = RL_CURRENT_INFO) {
    Init(T(), info);
  }                                                       // NOLINT
  basic_atomic(T v, debug_info info = RL_CURRENT_INFO) {  // NOLINT
    Init(v, info);
  }
  basic_atomic(const basic_atomic&) = delete;
  basic_atomic& operator=(const basic_atomic&) = delete;

  atomic_proxy<T> operator()(debug_info info) { return {this, info}; }
  atomic_proxy_const<T> operator()(debug_info info) const {
    return {this, info};
  }

  T load(memory_order mo = mo_seq_cst,
         debug_info info = RL_CURRENT_INFO) const {
    if (!Live()) return plain_;
    return Dec(detail::AtomicLoad(loc_, mo, info));
  }
  void store(T v, memory_order mo = mo_seq_cst,
             debug_info info = RL_CURRENT_INFO) {
    if (!Live()) {
      plain_ = v;
      return;
    }
    detail::AtomicStore(loc_, Enc(v), mo, info);
  }
  T exchange(T v, memory_order mo = mo_seq_cst,
             debug_info info = RL_CURRENT_INFO) {
    return Rmw(detail::RmwOp::kXchg, v, mo, info);
  }
  bool compare_exchange_strong(T& expected, T desired,
                               memory_order mo = mo_seq_cst,
                               debug_info info = RL_CURRENT_INFO) {
    return Cas(expected, desired, mo, FailureOrder(mo), info);
  }
  bool compare_exchange_strong(T& expected, T desired, memory_order success,
                               memory_order failure,
                               debug_info info = RL_CURRENT_INFO) {
    return Cas(expected, desired, success, failure, info);
  }
  // Checker extensions for modelling locks and wake-ups. Each waits until
  // the atomic holds a value that lets it go on, with no event while it
  // waits: the failed tries a spin loop would make are not explored, only
  // the reads that end the wait, as when a Relacy thread blocks on a held
  // mutex. If no thread can write the atomic again, the run is a DEADLOCK.
  //
  // await_compare_exchange: a CAS from `expected` to `desired` (order
  // `mo`) that only succeeds. False only when the execution is being
  // abandoned (or outside one, when the value is not `expected`).
  bool await_compare_exchange(T expected, T desired, memory_order mo,
                              debug_info info = RL_CURRENT_INFO) {
    return AwaitCas(expected, desired, mo, /*timed=*/false, info);
  }
  // timed_await_compare_exchange: await_compare_exchange with a deadline
  // (AwaitCond::timed, a timed lock). False if it timed out: every
  // unfinished thread waited, and the search chose this wait to end.
  bool timed_await_compare_exchange(T expected, T desired, memory_order mo,
                                    debug_info info = RL_CURRENT_INFO) {
    return AwaitCas(expected, desired, mo, /*timed=*/true, info);
  }
  // await_fetch_add / await_fetch_sub: an RMW (order `mo`) once it can read
  // a value v with ((v & mask) == want) == equal (a semaphore's count not
  // 0, a reader count with no writer bit); returns v.
  T await_fetch_add(T v, T mask, T want, bool equal, memory_order mo,
                    debug_info info = RL_CURRENT_INFO) {
    return AwaitRmw(detail::RmwOp::kAdd, v, mask, want, equal, mo, info);
  }
  T await_fetch_sub(T v, T mask, T want, bool equal, memory_order mo,
                    debug_info info = RL_CURRENT_INFO) {
    return AwaitRmw(detail::RmwOp::kSub, v, mask, want, equal, mo, info);
  }
  // await_bits: a load (order `mo`) once it can read a value v with
  // (v & mask) == want (a wake-up bit set or cleared); returns v.
  T await_bits(T mask, T want, memory_order mo,
               debug_info info = RL_CURRENT_INFO) {
    static_assert(std::is_integral_v<T>, "a mask of bits");
    if (!Live()) return plain_;
    return detail::FromBits<T>(
        detail::AtomicAwaitLoad(loc_, Cond(mask, want, true), mo, info));
  }
  // timed_await_bits: await_bits with a deadline (AwaitCond::timed). False
  // if it timed out: every unfinished thread waited, and the search chose
  // this wait to end (nothing read, *value unchanged).
  bool timed_await_bits(T mask, T want, memory_order mo, T* value,
                        debug_info info = RL_CURRENT_INFO) {
    static_assert(std::is_integral_v<T>, "a mask of bits");
    return TimedAwaitLoad(Cond(mask, want, true), mo, value, info);
  }
  // await_change: a load once it can read a value other than `old`.
  T await_change(T old, memory_order mo, debug_info info = RL_CURRENT_INFO) {
    static_assert(std::is_integral_v<T>, "compared by value");
    if (!Live()) return plain_;
    return detail::FromBits<T>(detail::AtomicAwaitLoad(
        loc_, {~uint64_t{0}, detail::ToBits(old), false}, mo, info));
  }
  // timed_await_change: await_change with a deadline, as timed_await_bits.
  bool timed_await_change(T old, memory_order mo, T* value,
                          debug_info info = RL_CURRENT_INFO) {
    static_assert(std::is_integral_v<T>, "compared by value");
    return TimedAwaitLoad({~uint64_t{0}, detail::ToBits(old), false}, mo, value,
                          info);
  }
  // May fail spuriously (test_params::spurious_cas_failures): the checker
  // explores a failure even when the value matched, at most once in a row
  // per thread and location.
  bool compare_exchange_weak(T& expected, T desired,
                             memory_order mo = mo_seq_cst,
                             debug_info info = RL_CURRENT_INFO) {
    return Cas(expected, desired, mo, FailureOrder(mo), info, true);
  }
  bool compare_exchange_weak(T& expected, T desired, memory_order success,
                             memory_order failure,
                             debug_info info = RL_CURRENT_INFO) {
    return Cas(expected, desired, success, failure, info, true);
  }
  using difference_type = detail::Difference<T>;
  // Lock-free, as Relacy's: the checker's atomics have no lock.
  static constexpr bool is_always_lock_free = true;
  bool is_lock_free() const { return true; }
  T fetch_add(difference_type v, memory_order mo = mo_seq_cst,
              debug_info info = RL_CURRENT_INFO) {
    if constexpr (detail::kObjectPointer<T>)
      return Rmw(detail::RmwOp::kAdd, ElementOffset(v), mo, info);
    else if constexpr (kWide)
      return WideRmw(v, mo, info,
                     [](const T& a, const T& b) { return T(a + b); });
    else
      return Rmw(detail::RmwOp::kAdd, v, mo, info);
  }
  T fetch_sub(difference_type v, memory_order mo = mo_seq_cst,
              debug_info info = RL_CURRENT_INFO) {
    if constexpr (detail::kObjectPointer<T>)
      return Rmw(detail::RmwOp::kSub, ElementOffset(v), mo, info);
    else if constexpr (kWide)
      return WideRmw(v, mo, info,
                     [](const T& a, const T& b) { return T(a - b); });
    else
      return Rmw(detail::RmwOp::kSub, v, mo, info);
  }
  T fetch_and(T v, memory_order mo = mo_seq_cst,
              debug_info info = RL_CURRENT_INFO) {
    if constexpr (kWide)
      return WideRmw(v, mo, info,
                     [](const T& a, const T& b) { return T(a & b); });
    else
      return Rmw(detail::RmwOp::kAnd, v, mo, info);
  }
  T fetch_or(T v, memory_order mo = mo_seq_cst,
             debug_info info = RL_CURRENT_INFO) {
    if constexpr (kWide)
      return WideRmw(v, mo, info,
                     [](const T& a, const T& b) { return T(a | b); });
    else
      return Rmw(detail::RmwOp::kOr, v, mo, info);
  }
  T fetch_xor(T v, memory_order mo = mo_seq_cst,
              debug_info info = RL_CURRENT_INFO) {
    if constexpr (kWide)
      return WideRmw(v, mo, info,
                     [](const T& a, const T& b) { return T(a ^ b); });
    else
      return Rmw(detail::RmwOp::kXor, v, mo, info);
  }

  // C++20 atomic waiting: returns once a load (mo) reads a value other
  // than old; in between the thread sleeps until notify_one / notify_all
  // picks it. A wait nothing ends is a DEADLOCK. Spurious wake-ups are not
  // explored: the wait looks again and returns only on a change, which an
  // earlier look could have read as well. Notifying orders nothing (C++20
  // [atomics.wait]: no release / acquire); only the value read does.
  void wait(T old, memory_order mo = mo_seq_cst,
            debug_info info = RL_CURRENT_INFO) const {
    for (;;) {
      if (!SameValue(load(mo, info), old) || !Live()) return;
      waiters_.Register(info);
      // Orders the registration before the second look, against the
      // fence in Notify (between the notifier's store and its look at the
      // queue): a notifier that missed the registration stored before a
      // look that sees its value (C++20 [atomics.order]/4), so no wake-up
      // is lost. Real implementations have this fence pair too.
      atomic_thread_fence(mo_seq_cst, info);
      if (!SameValue(load(mo, info), old)) {
        // A notify_one that picked this thread before it slept goes to
        // another waiter, as the kernel would wake one that sleeps.
        if (!waiters_.Leave(info)) Notify(1, info);
        return;
      }
      // Sleeps until picked. Not pruned when the look above was stale: a
      // newer store does not wake the waiter, only a notify does.
      if (!waiters_.SleepUntilPicked(mo_relaxed, info)) return;
    }
  }
  void notify_one(debug_info info = RL_CURRENT_INFO) { Notify(1, info); }
  void notify_all(debug_info info = RL_CURRENT_INFO) { Notify(~0u, info); }
  // The threads blocked on this object (C++20 wait, the POSIX futex shim).
  detail::WaitQueue& wait_queue() const { return waiters_; }

  T operator=(T v) {
    store(v);
    return v;
  }

 private:
  void Notify(unsigned n, const debug_info& info) const {
    if (!Live()) return;
    // Pairs with: the fence in wait() (see there).
    atomic_thread_fence(mo_seq_cst, info);
    // Relaxed: notifying is no release (C++20).
    waiters_.Wake(n, mo_relaxed, info);
  }
  static detail::AwaitCond Cond(T mask, T want, bool equal) {
    return {detail::ToBits(mask), detail::ToBits(want), equal};
  }
  bool AwaitCas(T expected, T desired, memory_order mo, bool timed,
                const debug_info& info) {
    static_assert(!kWide, "a lock word fits in 64 bits");
    if (!Live()) {
      if (!SameValue(plain_, expected)) return false;
      plain_ = desired;
      return true;
    }
    // The whole value (stored zero-extended, as ToBits makes it).
    detail::AwaitCond cond{~uint64_t{0}, detail::ToBits(expected), true};
    cond.timed = timed;
    detail::AtomicAwaitRmw(loc_, cond, detail::RmwOp::kXchg, Enc(desired), mo,
                           info);
    return !detail::Abandoning() && !(timed && detail::AwaitTimedOut());
  }
  // The timed waits' load: false if it timed out (*value unchanged).
  bool TimedAwaitLoad(detail::AwaitCond cond, memory_order mo, T* value,
                      const debug_info& info) {
    if (!Live()) {
      *value = plain_;
      return true;
    }
    cond.timed = true;
    const uint64_t bits = detail::AtomicAwaitLoad(loc_, cond, mo, info);
    if (detail::AwaitTimedOut()) return false;
    *value = detail::FromBits<T>(bits);
    return true;
  }
  T AwaitRmw(detail::RmwOp op, T v, T mask, T want, bool equal, memory_order mo,
             const debug_info& info) {
    static_assert(std::is_integral_v<T>, "compared by value");
    if (!Live()) {
      const T old = plain_;
      if (((old & mask) == want) != equal) return old;  // cannot wait here
      plain_ = op == detail::RmwOp::kAdd ? T(old + v) : T(old - v);
      return old;
    }
    return detail::FromBits<T>(detail::AtomicAwaitRmw(
        loc_, Cond(mask, want, equal), op, detail::ToBits(v), mo, info));
  }
  static memory_order FailureOrder(memory_order mo) {
    if (mo == mo_acq_rel) return mo_acquire;
    if (mo == mo_release) return mo_relaxed;
    return mo;
  }
  // An atomic of a T wider than 8 bytes holds the index of its value in
  // wide_ (detail::WideValues); read-modify-writes other than exchange are
  // then a CAS loop applying T's operator (an atomic RMW's effect, with
  // the loop's failed attempts as extra explored reads).
  static constexpr bool kWide = sizeof(T) > 8;
  uint64_t Enc(const T& v) {
    if constexpr (kWide)
      return wide_.Intern(v);
    else
      return detail::ToBits(v);
  }
  T Dec(uint64_t bits) const {
    if constexpr (kWide)
      return wide_.Value(bits);
    else
      return detail::FromBits<T>(bits);
  }
  static bool SameValue(const T& a, const T& b) {
    if constexpr (kWide)
      return detail::WideValues<T>::Same(a, b);
    else
      return detail::ToBits(a) == detail::ToBits(b);
  }
  template <typename F>
  T WideRmw(T v, memory_order mo, const debug_info& info, F f) {
    if (!Live()) {
      T old = plain_;
      plain_ = f(old, v);
      return old;
    }
    T old = load(mo_relaxed, info);
    for (;;) {
      T seen = old;
      if (Cas(old, f(old, v), mo, mo_relaxed, info)) return old;
      // A strong CAS fails only on a different value; the same one back
      // means the execution is being abandoned: stop.
      if (SameValue(seen, old)) return old;
    }
  }
  void Init(T v, const debug_info& info) {
    plain_ = v;
    gen_ = detail::Generation();
    wide_.Clear();
    if (gen_ != 0)
      loc_ = detail::NewAtomic(kWide ? 8 : sizeof(T), Enc(v), info, this,
                               sizeof(*this));
  }
  bool Live() const { return gen_ != 0 && gen_ == detail::Generation(); }
  // n elements of a pointer's pointee as the pointer-sized operand of an
  // add or subtract RMW (the engine adds the bits, modulo the width).
  static T ElementOffset(std::ptrdiff_t n) {
    return reinterpret_cast<T>(static_cast<uintptr_t>(n) *
                               sizeof(std::remove_pointer_t<T>));
  }
  T Rmw(detail::RmwOp op, T v, memory_order mo, const debug_info& info) {
    if constexpr (kWide)
      return WideExchange(op, v, mo, info);
    else
      return NarrowRmw(op, v, mo, info);
  }
  // Only exchange reaches here (the others are WideRmw's CAS loops).
  T WideExchange(detail::RmwOp op, T v, memory_order mo,
                 const debug_info& info) {
    if (!Live()) {
      T old = plain_;
      plain_ = v;
      return old;
    }
    return Dec(detail::AtomicRmw(loc_, op, Enc(v), mo, info));
  }
  T NarrowRmw(detail::RmwOp op, T v, memory_order mo, const debug_info& info) {
    if (!Live()) {
      T old = plain_;
      uint64_t a = detail::ToBits(old), b = detail::ToBits(v), r = 0;
      switch (op) {
        case detail::RmwOp::kXchg:
          r = b;
          break;
        case detail::RmwOp::kAdd:
          r = a + b;
          break;
        case detail::RmwOp::kSub:
          r = a - b;
          break;
        case detail::RmwOp::kAnd:
          r = a & b;
          break;
        case detail::RmwOp::kOr:
          r = a | b;
          break;
        case detail::RmwOp::kXor:
          r = a ^ b;
          break;
      }
      plain_ = detail::FromBits<T>(r);
      return old;
    }
    return detail::FromBits<T>(
        detail::AtomicRmw(loc_, op, detail::ToBits(v), mo, info));
  }
  bool Cas(T& expected, T desired, memory_order s, memory_order f,
           const debug_info& info, bool weak = false) {
    if (!Live()) {
      if (SameValue(plain_, expected)) {
        plain_ = desired;
        return true;
      }
      expected = plain_;
      return false;
    }
    uint64_t e;
    if constexpr (kWide)
      e = wide_.Find(expected);  // absent: no value held equals it
    else
      e = detail::ToBits(expected);
    bool ok = detail::AtomicCas(loc_, &e, Enc(desired), s, f, info, weak);
    if (!ok) expected = Dec(e);
    return ok;
  }

  int loc_ = -1;
  uint64_t gen_ = 0;
  mutable detail::WaitQueue waiters_;
  T plain_;  // used only outside an execution
  [[no_unique_address]] std::conditional_t<kWide, detail::WideValues<T>,
                                           detail::NoWideValues>
      wide_;

 protected:
  // The destructor of rl::atomic: the end of the object's lifetime.
  void EndLifetime() {
    if (Live()) detail::AtomicDestroyed(loc_);
  }
};

}  // namespace detail

// The model checker's atomic (Relacy's rl::atomic, C++20 std::atomic's
// interface). The end of its lifetime is a free: a later access through a
// dangling pointer (use after scope, after delete) is ACCESS TO FREED
// MEMORY, and so is an access by another thread that does not happen
// before the destruction. The destructor's call also keeps the compiler
// from dropping the store of loc_ to an object nothing reads before it dies
// (GCC's lifetime dead-store elimination).
template <typename T>
class atomic : public detail::basic_atomic<T> {
 public:
  atomic(debug_info info = RL_CURRENT_INFO)  // NOLINT
      : detail::basic_atomic<T>(info) {}
  atomic(T v, debug_info info = RL_CURRENT_INFO)  // NOLINT
      : detail::basic_atomic<T>(v, info) {}
  ~atomic() { this->EndLifetime(); }
  using detail::basic_atomic<T>::operator=;
};

// A non-atomic variable whose every access is checked for data races.
template <typename T>
class var;

template <typename T>
class var_proxy {
 public:
  var_proxy(var<T>* v, debug_info info) : v_(v), info_(info) {}
  T load() const {
    v_->Access(false, info_);
    return v_->value_;
  }
  void store(const T& x) {
    v_->Access(true, info_);
    v_->value_ = x;
  }
  operator T() const { return load(); }  // NOLINT
  T operator->() const { return load(); }
  var_proxy& operator=(const T& x) {
    store(x);
    return *this;
  }
  var_proxy& operator=(const var_proxy& o) {
    store(o.load());
    return *this;
  }
  T operator++() {
    T x = load() + 1;
    store(x);
    return x;
  }
  T operator++(int) {
    T x = load();
    store(x + 1);
    return x;
  }
  T operator--() {
    T x = load() - 1;
    store(x);
    return x;
  }
  T operator--(int) {
    T x = load();
    store(x - 1);
    return x;
  }
  // For a pointer, d counts elements (Relacy's ptrdiff_t operand).
  T operator+=(const detail::Difference<T>& d) {
    T x = load() + d;
    store(x);
    return x;
  }
  T operator-=(const detail::Difference<T>& d) {
    T x = load() - d;
    store(x);
    return x;
  }
  // Relacy's bitwise compound assignments (a read, then a write).
  T operator&=(const T& d) {
    T x = load() & d;
    store(x);
    return x;
  }
  T operator|=(const T& d) {
    T x = load() | d;
    store(x);
    return x;
  }
  T operator^=(const T& d) {
    T x = load() ^ d;
    store(x);
    return x;
  }

 private:
  var<T>* v_;
  debug_info info_;
};

// Result of x($) on a const var: reads only.
template <typename T>
class var_proxy_const {
 public:
  var_proxy_const(const var<T>* v, debug_info info) : v_(v), info_(info) {}
  T load() const {
    v_->Access(false, info_);
    return v_->value_;
  }
  operator T() const { return load(); }  // NOLINT
  T operator->() const { return load(); }

 private:
  const var<T>* v_;
  debug_info info_;
};

template <typename T>
class var {
 public:
  var(debug_info info = RL_CURRENT_INFO) : value_() {
    Init(false, info);
  }                                                                 // NOLINT
  var(const T& v, debug_info info = RL_CURRENT_INFO) : value_(v) {  // NOLINT
    Init(true, info);
  }
  // Relacy's copy: a checked read of the source, then a new variable
  // initialized with the value read.
  var(const var& from, debug_info info = RL_CURRENT_INFO)
      : value_(ReadChecked(from, info)) {
    Init(true, info);
  }
  var& operator=(const var&) = delete;
  // The end of the variable's lifetime, as a free of its memory: a later
  // access (a pointer kept past the scope) is ACCESS TO FREED MEMORY, as
  // Relacy reports it; so is another thread's access not ordered before
  // the destruction. Reading id_ here also keeps its store alive (else
  // the compiler may drop the stores to an object nothing reads before it
  // dies, and a dangling access would pass another variable's id).
  ~var() {
    if (gen_ != 0 && gen_ == detail::Generation()) detail::VarDestroyed(id_);
  }
  var_proxy<T> operator()(debug_info info) { return {this, info}; }
  var_proxy_const<T> operator()(debug_info info) const { return {this, info}; }

 private:
  friend class var_proxy<T>;
  friend class var_proxy_const<T>;
  void Init(bool initialized, const debug_info& info) {
    gen_ = detail::Generation();
    if (gen_ != 0) id_ = detail::NewVar(initialized, info, this, sizeof(*this));
  }
  void Access(bool write, const debug_info& info) const {
    if (gen_ != 0 && gen_ == detail::Generation())
      detail::VarAccess(id_, write, info);
  }
  static T ReadChecked(const var& v, const debug_info& info) {
    v.Access(false, info);
    return v.value_;
  }
  T value_;
  int id_ = -1;
  uint64_t gen_ = 0;
};

// A test-and-set flag (C++20 std::atomic_flag), over rl::atomic<bool>.
class atomic_flag {
 public:
  atomic_flag(debug_info info = RL_CURRENT_INFO) : f_(false, info) {}  // NOLINT
  bool test_and_set(memory_order mo = mo_seq_cst,
                    debug_info info = RL_CURRENT_INFO) {
    return f_.exchange(true, mo, info);
  }
  void clear(memory_order mo = mo_seq_cst, debug_info info = RL_CURRENT_INFO) {
    f_.store(false, mo, info);
  }
  bool test(memory_order mo = mo_seq_cst,
            debug_info info = RL_CURRENT_INFO) const {
    return f_.load(mo, info);
  }
  // C++20 waiting, as rl::atomic's.
  void wait(bool old, memory_order mo = mo_seq_cst,
            debug_info info = RL_CURRENT_INFO) const {
    f_.wait(old, mo, info);
  }
  void notify_one(debug_info info = RL_CURRENT_INFO) { f_.notify_one(info); }
  void notify_all(debug_info info = RL_CURRENT_INFO) { f_.notify_all(info); }

 private:
  atomic<bool> f_;
};
// Relacy's initializer of a clear flag (`rl::atomic_flag f =
// RL_ATOMIC_FLAG_INIT;`): the default-constructed flag, attributed to the
// line that uses it.
#define RL_ATOMIC_FLAG_INIT ::rl::atomic_flag()

// Mutexes, modelled with the checker's own atomics so the search explores
// every acquisition order: lock() is an acquire CAS of a state word that
// unlock() releases, so acquiring a mutex synchronizes-with its previous
// unlock (C++20 [thread.mutex.requirements.mutex]/25). A thread that finds
// it held waits, with no event, until the word is written
// (atomic::await_compare_exchange: only acquisitions are explored, not
// failed tries); if no thread can write it, the run is a DEADLOCK. The owner
// bookkeeping is the checker's (reset with each execution's suite), not part of
// the modelled program.
//
// A mutex is a resource, as in Relacy: constructed during an execution it
// holds a token of the heap model that its destructor gives back, so
// memory freed under a mutex never destroyed is a RESOURCE LEAK, and
// destroying a mutex some thread holds is DESTROYING OWNED MUTEX. The
// POSIX and Win32 shims, whose objects C code frees without a destructor,
// track their resource by *_init / *_destroy instead (NoResource).
class mutex;
class recursive_mutex;
namespace detail {
struct NoResource {};
// Whether a thread holds m (for the shims' destroy functions: destroying a
// held mutex is DESTROYING OWNED MUTEX).
bool Held(const mutex& m);
bool Held(const recursive_mutex& m);
}  // namespace detail
class mutex {
 public:
  mutex(debug_info info = RL_CURRENT_INFO)  // NOLINT
      : state_(0, info),
        token_(gen_ != 0 ? detail::HeapAlloc(1, 0, detail::kHeapResource)
                         : nullptr) {}
  mutex(detail::NoResource, debug_info info = RL_CURRENT_INFO)
      : state_(0, info), token_(nullptr) {}
  ~mutex() {
    if (!Live()) return;
    detail::NoAbortScope no_abort;  // a destructor: report, do not unwind
    if (owner_ >= 0)
      detail::Fail(test_result_destroying_owned_mutex,
                   "a mutex destroyed while a thread holds it (locked here)",
                   info_);
    if (token_ != nullptr)
      detail::HeapFree(token_, detail::kHeapResource, info_);
  }
  mutex(const mutex&) = delete;
  mutex& operator=(const mutex&) = delete;
  void lock(debug_info info = RL_CURRENT_INFO) {
    CheckRecursion(info);
    // Waits for an unlock (a write of state_) with no event: only the
    // acquisitions are explored. Unwinding: go on without it.
    // Pairs with: the release store of unlock().
    state_.await_compare_exchange(0, 1, mo_acquire, info);
    owner_ = static_cast<int>(thread_index());
    info_ = info;
  }
  // Checker extension (pthread_mutex_timedlock): lock() with a deadline,
  // which passes once every unfinished thread waits (AwaitCond::timed).
  // False if it timed out (or the execution is being abandoned).
  bool timed_lock(debug_info info = RL_CURRENT_INFO) {
    CheckRecursion(info);
    // Pairs with: the release store of unlock().
    if (!state_.timed_await_compare_exchange(0, 1, mo_acquire, info))
      return false;
    owner_ = static_cast<int>(thread_index());
    info_ = info;
    return true;
  }
  bool try_lock(debug_info info = RL_CURRENT_INFO) {
    int expected = 0;
    // Pairs with: the release store of unlock(). Relaxed on failure: a
    // failed try takes nothing, so it orders nothing.
    if (!state_.compare_exchange_strong(expected, 1, mo_acquire, mo_relaxed,
                                        info))
      return false;
    owner_ = static_cast<int>(thread_index());
    info_ = info;
    return true;
  }
  void unlock(debug_info info = RL_CURRENT_INFO) {
    detail::NoAbortScope no_abort;  // often called from ~unique_lock
    if (Live() && owner_ != static_cast<int>(thread_index()))
      detail::Fail(test_result_unlocking_mutex_wo_ownership,
                   "unlock of a mutex the thread does not hold", info);
    owner_ = -1;
    // Pairs with: the acquire CAS of the next lock(), timed_lock() or
    // try_lock().
    state_.store(0, mo_release, info);
  }
  // Relacy's spellings.
  void lock_shared(debug_info info = RL_CURRENT_INFO) { lock(info); }
  void unlock_shared(debug_info info = RL_CURRENT_INFO) { unlock(info); }
  // Checker extension: reports RECURSION ON NON-RECURSIVE MUTEX if the
  // calling thread holds it (lock() and timed_lock() check it first).
  void CheckRecursion(const debug_info& info) const {
    if (Live() && owner_ == static_cast<int>(thread_index()))
      detail::Fail(test_result_recursion_on_nonrecursive_mutex,
                   "lock of a non-recursive mutex the thread already holds",
                   info);
  }

 private:
  friend bool detail::Held(const mutex& m);
  bool Live() const { return gen_ != 0 && gen_ == detail::Generation(); }
  uint64_t gen_ = detail::Generation();  // first: token_ tests it
  atomic<int> state_;
  void* token_;  // the resource token (nullptr outside an execution)
  int owner_ = -1;
  debug_info info_;
};

class recursive_mutex {
 public:
  recursive_mutex(debug_info info = RL_CURRENT_INFO) : m_(info) {}  // NOLINT
  recursive_mutex(detail::NoResource tag, debug_info info = RL_CURRENT_INFO)
      : m_(tag, info) {}
  void lock(debug_info info = RL_CURRENT_INFO) {
    Take([&] {
      m_.lock(info);
      return true;
    });
  }
  bool try_lock(debug_info info = RL_CURRENT_INFO) {
    return Take([&] { return m_.try_lock(info); });
  }
  // As mutex::timed_lock.
  bool timed_lock(debug_info info = RL_CURRENT_INFO) {
    return Take([&] { return m_.timed_lock(info); });
  }
  void unlock(debug_info info = RL_CURRENT_INFO) {
    if (count_ == 0 || owner_ != static_cast<int>(thread_index())) {
      m_.unlock(info);  // reports the missing ownership
      return;
    }
    if (--count_ == 0) {
      owner_ = -1;
      m_.unlock(info);
    }
  }

 private:
  friend bool detail::Held(const recursive_mutex& m);
  // Once more if the calling thread holds it, else as take_inner takes m_.
  template <typename F>
  bool Take(F take_inner) {
    if (count_ > 0 && owner_ == static_cast<int>(thread_index())) {
      ++count_;
      return true;
    }
    if (!take_inner()) return false;
    owner_ = static_cast<int>(thread_index());
    count_ = 1;
    return true;
  }
  mutex m_;
  int owner_ = -1;
  unsigned count_ = 0;
};

namespace detail {
inline bool Held(const mutex& m) { return m.Live() && m.owner_ >= 0; }
inline bool Held(const recursive_mutex& m) { return Held(m.m_); }
}  // namespace detail

namespace detail {
// A reader-writer lock's word, shared by pthread_rwlock_t (relacy_std.hpp)
// and the Win32 SRW lock (windows.h): 0 free, -1 held exclusively, n > 0
// held shared by n. Exclusive acquisition is an acquire CAS from 0, shared
// acquisition an acquire increment of a count with no writer; a lock waits
// with no event while the word is held the other way. Release is a
// release store of 0 / a release decrement, so an exclusive holder
// synchronizes-with every earlier holder (the shared holders' decrements
// form a release sequence) and a shared holder with the earlier exclusive
// ones. Readers are not kept out by a waiting writer (POSIX leaves the
// preference open; Relacy's rwlock prefers the writer). Who holds it is
// the checker's bookkeeping, for the ownership checks, which the callers
// report in their own words.
class RwWord {
 public:
  explicit RwWord(debug_info info) : state_(0, info) {}
  // Free again, as an object set up anew (SRW's InitializeSRWLock).
  void Reset(const debug_info& info) {
    // Relaxed: the initialization, before any thread takes it.
    state_.store(0, mo_relaxed, info);
    writer_ = -1;
    for (unsigned char& n : reads_) n = 0;
  }
  // How the calling thread's own holds conflict with a request: a second
  // exclusive hold is a recursion, a shared request under its exclusive
  // hold or an exclusive one under its shared hold an attempted upgrade
  // (the thread would wait for itself). test_result_success if none.
  test_result_e Conflict(bool exclusive) const {
    if (HoldsExclusive())
      return exclusive ? test_result_recursion_on_nonrecursive_mutex
                       : test_result_mutex_write_to_read_upgrade;
    if (exclusive && HoldsShared())
      return test_result_mutex_read_to_write_upgrade;
    return test_result_success;
  }
  // Waits until it can take it (callers check Conflict() first). False if
  // the execution is being abandoned: then it was not taken.
  bool Lock(bool exclusive, const debug_info& info) {
    if (exclusive) {
      // Pairs with: the release store / decrements of the holders before
      // (Unlock).
      if (!state_.await_compare_exchange(0, -1, mo_acquire, info)) return false;
    } else {
      // A count of shared holders with no writer (sign bit clear): add one.
      // Pairs with: the release store of the last exclusive holder.
      state_.await_fetch_add(1, std::numeric_limits<int>::min(), 0,
                             /*equal=*/true, mo_acquire, info);
      if (Abandoning()) return false;
    }
    Taken(exclusive);
    return true;
  }
  // One attempt (callers check Conflict() first): false if it is held
  // the other way, or exclusively by another thread. A shared CAS that
  // fails because another shared holder came or went tries again.
  bool TryLock(bool exclusive, const debug_info& info) {
    int v = 0;  // the CAS reads the value when it fails
    for (;;) {
      // Pairs with: as Lock's. Relaxed on failure: a failed try takes
      // nothing, so it orders nothing.
      if (state_.compare_exchange_strong(v, exclusive ? -1 : v + 1, mo_acquire,
                                         mo_relaxed, info))
        break;
      if (exclusive || v < 0) return false;
    }
    Taken(exclusive);
    return true;
  }
  // Releases the calling thread's hold of that kind; false (nothing done)
  // if it has none. Callers report that inside a NoAbortScope (an unlock
  // is often called from a destructor).
  bool Unlock(bool exclusive, const debug_info& info) {
    NoAbortScope no_abort;
    if (exclusive ? !HoldsExclusive() : !HoldsShared()) return false;
    if (exclusive) {
      writer_ = -1;
      // Pairs with: the acquire CAS / increment of the next holders.
      state_.store(0, mo_release, info);
    } else {
      --reads_[Me()];
      // Pairs with: the acquire CAS of the next exclusive holder (through
      // the release sequence of the shared holders' decrements).
      state_.fetch_sub(1, mo_release, info);
    }
    return true;
  }
  bool HoldsExclusive() const { return writer_ == static_cast<int>(Me()); }
  bool HoldsShared() const { return reads_[Me()] != 0; }
  bool Held() const {
    if (writer_ >= 0) return true;
    for (unsigned char n : reads_)
      if (n != 0) return true;
    return false;
  }

 private:
  // Thread indices are below RL_MAX_THREADS <= 65 (main included).
  static constexpr unsigned kSlots = 65;
  static unsigned Me() { return ThreadIndex() % kSlots; }
  void Taken(bool exclusive) {
    if (exclusive)
      writer_ = static_cast<int>(Me());
    else
      ++reads_[Me()];
  }
  atomic<int> state_;
  int writer_ = -1;                   // the exclusive holder
  unsigned char reads_[kSlots] = {};  // shared holds per thread (may nest)
};
}  // namespace detail

// Condition variable. wait() registers the waiter, unlocks, and either
// wakes spuriously (explored: C++ allows it) or waits until a notify picks
// it, then relocks. A notify wakes only threads registered before it
// (C++20 [thread.condition.condvar]: notify_all unblocks the threads
// blocked at the time): notify_all() all of them, notify_one() one, which
// one being explored, so a program that needs notify_all() is caught. A
// notify with no registered waiter is lost, so a missed wake-up ends in
// DEADLOCK (nobody can wake the waiter).
//
// Waiters are bits of two masks (bit = thread index; RL_MAX_THREADS is at
// most 64): waiting_ (registered, not yet picked) and woken_ (picked, not
// yet returned). They are atomics of the model, like the mutex's lock
// word, so that the exhaustive search sees who told whom (its graphs are
// made of reads and writes). All relaxed: the mutex orders the waiter's and
// the notifier's data; these words only decide who may return. A blocked
// waiter waits, with no event, for a write to woken_ that sets its bit
// (atomic::await_bits). Until 0.2.0 a notify added to a count of wake-ups that
// any later waiter could take: a waiter that waited again took the wake-up
// meant for another, a false DEADLOCK (Relacy's test_condvar2).
class condition_variable {
 public:
  condition_variable(debug_info info = RL_CURRENT_INFO)  // NOLINT
      : waiting_(0u, info), woken_(0u, info) {}
  template <typename Lock>
  void wait(Lock& lock, debug_info info = RL_CURRENT_INFO) {
    Wait(lock, /*timed=*/false, info);
  }
  template <typename Lock, typename Pred>
  void wait(Lock& lock, Pred pred, debug_info info = RL_CURRENT_INFO) {
    while (!pred()) wait(lock, info);
  }
  // Timed waits, in Relacy's form: true if woken by a notify, false on a
  // timeout (any duration or time point; the checker has no clock). A
  // timeout at once is explored like a spurious wake-up, so not twice in a
  // row for a thread; a wait nobody notifies times out when every thread
  // waits (as Relacy's), not a DEADLOCK: see docs/verification.md, "The
  // dialect".
  template <typename Lock, typename Duration>
  bool wait_for(Lock& lock, const Duration&, debug_info info = RL_CURRENT_INFO) {
    return TimedWait(lock, info);
  }
  template <typename Lock, typename Duration, typename Pred>
  bool wait_for(Lock& lock, const Duration&, Pred pred,
                debug_info info = RL_CURRENT_INFO) {
    return TimedWait(lock, pred, info);
  }
  // Relacy's wait_until without a predicate returns the opposite of its
  // wait_for: true if the wait ended without a notify (timed out or woke
  // spuriously), the value of std::cv_status::timeout.
  template <typename Lock, typename TimePoint>
  bool wait_until(Lock& lock, const TimePoint&,
                  debug_info info = RL_CURRENT_INFO) {
    return !TimedWait(lock, info);
  }
  template <typename Lock, typename TimePoint, typename Pred>
  bool wait_until(Lock& lock, const TimePoint&, Pred pred,
                  debug_info info = RL_CURRENT_INFO) {
    return TimedWait(lock, pred, info);
  }
  void notify_one(debug_info info = RL_CURRENT_INFO) {
    uint64_t w = waiting_.load(mo_relaxed, info);
    while (w != 0) {
      // Which registered waiter wakes is a choice the search explores.
      unsigned k = rand(static_cast<unsigned>(__builtin_popcountll(w)), info);
      uint64_t pick = w;
      while (k-- > 0) pick &= pick - 1;  // drop the k lowest waiters
      pick &= ~(pick - 1);               // keep the lowest one left
      if (waiting_.compare_exchange_strong(w, w & ~pick, mo_relaxed,
                                           mo_relaxed, info)) {
        woken_.fetch_or(pick, mo_relaxed, info);
        return;
      }
    }
  }
  void notify_all(debug_info info = RL_CURRENT_INFO) {
    uint64_t w = waiting_.exchange(0, mo_relaxed, info);
    if (w != 0) woken_.fetch_or(w, mo_relaxed, info);
  }

 private:
  // Registers, unlocks, and either wakes spuriously (explored, not twice
  // in a row for a thread, or a predicate loop would never end) or sleeps
  // until a notify picks this thread (no event while it waits), then
  // relocks. Timed: the spurious wake-up is also the timeout at once, and
  // a sleep nobody ends times out when every thread waits
  // (atomic::timed_await_bits). signalled_: whether a notify ended it.
  template <typename Lock>
  void Wait(Lock& lock, bool timed, const debug_info& info) {
    Fresh();
    const unsigned slot = thread_index() % kSlots;
    const uint64_t me = uint64_t{1} << slot;
    waiting_.fetch_or(me, mo_relaxed, info);
    lock.unlock();
    bool spurious = !spurious_[slot] && rand(2, info) == 1;
    spurious_[slot] = spurious;
    bool notified = !spurious;
    if (notified && timed) {
      uint64_t bits;
      notified = woken_.timed_await_bits(me, me, mo_relaxed, &bits, info);
    } else if (notified) {
      woken_.await_bits(me, me, mo_relaxed, info);
    }
    signalled_[slot] = notified;
    lock.lock();
    // Under the mutex again, where a notifier that holds it also updates
    // the masks, so these RMWs add no orders for the search to explore:
    // take the wake-up, or after a spurious one or a timeout deregister (or
    // take the wake-up of a notify that picked this thread meanwhile,
    // which woke it: allowed).
    if (!notified && (waiting_.fetch_and(~me, mo_relaxed, info) & me) != 0)
      return;
    woken_.fetch_and(~me, mo_relaxed, info);
  }
  template <typename Lock>
  bool TimedWait(Lock& lock, const debug_info& info) {
    Wait(lock, /*timed=*/true, info);
    return signalled_[thread_index() % kSlots];
  }
  // With a predicate: its value when the wait ends (by it or by timeout).
  template <typename Lock, typename Pred>
  bool TimedWait(Lock& lock, Pred& pred, const debug_info& info) {
    while (!pred())
      if (!TimedWait(lock, info)) return pred();
    return true;
  }
  // The per-thread flags of an object that outlives executions are reset
  // on first use in a new one.
  void Fresh() {
    if (gen_ == detail::Generation()) return;
    gen_ = detail::Generation();
    for (bool& b : spurious_) b = false;
    for (bool& b : signalled_) b = false;
  }
  static constexpr unsigned kSlots = 64;
  atomic<uint64_t> waiting_;
  atomic<uint64_t> woken_;
  bool spurious_[kSlots] = {};
  bool signalled_[kSlots] = {};  // how each thread's last wait ended
  uint64_t gen_ = 0;
};
using condition_variable_any = condition_variable;

namespace detail {
// A lock holder's call of the mutex: with the caller's debug info where
// the mutex takes one (the checker's, Relacy's), plain otherwise.
template <typename M>
void LockWith(M& m, const debug_info& info) {
  if constexpr (requires { m.lock(info); })
    m.lock(info);
  else
    m.lock();
}
template <typename M>
bool TryLockWith(M& m, const debug_info& info) {
  if constexpr (requires { m.try_lock(info); })
    return m.try_lock(info);
  else
    return m.try_lock();
}
template <typename M>
void UnlockWith(M& m, const debug_info& info) {
  if constexpr (requires { m.unlock(info); })
    m.unlock(info);
  else
    m.unlock();
}
}  // namespace detail

// Lock holders (std::lock_guard, std::unique_lock, std::scoped_lock in
// relacy_std.hpp): the standard ones' interface, plus Relacy's trailing
// debug info (`std::unique_lock<std::mutex> lock(m, $)`), which then names
// the lock's line in traces, and for the unlock its destructor does.
template <typename Mutex>
class lock_guard {
 public:
  using mutex_type = Mutex;
  explicit lock_guard(Mutex& m, debug_info info = RL_CURRENT_INFO)
      : m_(m), info_(info) {
    detail::LockWith(m_, info_);
  }
  lock_guard(Mutex& m, std::adopt_lock_t,
             debug_info info = RL_CURRENT_INFO) noexcept
      : m_(m), info_(info) {}
  ~lock_guard() { detail::UnlockWith(m_, info_); }
  lock_guard(const lock_guard&) = delete;
  lock_guard& operator=(const lock_guard&) = delete;

 private:
  Mutex& m_;
  debug_info info_;
};

template <typename Mutex>
class unique_lock {
 public:
  using mutex_type = Mutex;
  unique_lock() noexcept = default;
  explicit unique_lock(Mutex& m, debug_info info = RL_CURRENT_INFO)
      : m_(&m), info_(info) {
    lock(info);
  }
  unique_lock(Mutex& m, std::defer_lock_t,
              debug_info info = RL_CURRENT_INFO) noexcept
      : m_(&m), info_(info) {}
  unique_lock(Mutex& m, std::try_to_lock_t, debug_info info = RL_CURRENT_INFO)
      : m_(&m), info_(info) {
    owns_ = detail::TryLockWith(m, info);
  }
  unique_lock(Mutex& m, std::adopt_lock_t,
              debug_info info = RL_CURRENT_INFO) noexcept
      : m_(&m), owns_(true), info_(info) {}
  unique_lock(unique_lock&& o) noexcept
      : m_(std::exchange(o.m_, nullptr)),
        owns_(std::exchange(o.owns_, false)),
        info_(o.info_) {}
  unique_lock& operator=(unique_lock&& o) noexcept {
    if (owns_) unlock();
    m_ = std::exchange(o.m_, nullptr);
    owns_ = std::exchange(o.owns_, false);
    info_ = o.info_;
    return *this;
  }
  unique_lock(const unique_lock&) = delete;
  unique_lock& operator=(const unique_lock&) = delete;
  ~unique_lock() {
    if (owns_) detail::UnlockWith(*m_, info_);
  }
  void lock(debug_info info = RL_CURRENT_INFO) {
    if (m_ == nullptr || owns_)
      detail::Fail(test_result_user_assert_failed,
                   m_ == nullptr ? "unique_lock::lock without a mutex"
                                 : "unique_lock::lock of a lock it owns",
                   info);
    detail::LockWith(*m_, info);
    owns_ = true;
  }
  bool try_lock(debug_info info = RL_CURRENT_INFO) {
    if (m_ == nullptr || owns_)
      detail::Fail(test_result_user_assert_failed,
                   m_ == nullptr ? "unique_lock::try_lock without a mutex"
                                 : "unique_lock::try_lock of a lock it owns",
                   info);
    owns_ = detail::TryLockWith(*m_, info);
    return owns_;
  }
  void unlock(debug_info info = RL_CURRENT_INFO) {
    if (!owns_)
      detail::Fail(test_result_unlocking_mutex_wo_ownership,
                   "unique_lock::unlock of a lock it does not own", info);
    detail::UnlockWith(*m_, info);
    owns_ = false;
  }
  Mutex* release() noexcept {
    owns_ = false;
    return std::exchange(m_, nullptr);
  }
  void swap(unique_lock& o) noexcept {
    std::swap(m_, o.m_);
    std::swap(owns_, o.owns_);
    std::swap(info_, o.info_);
  }
  bool owns_lock() const noexcept { return owns_; }
  explicit operator bool() const noexcept { return owns_; }
  Mutex* mutex() const noexcept { return m_; }

 private:
  Mutex* m_ = nullptr;
  bool owns_ = false;
  debug_info info_;
};

// All of its mutexes at once, deadlock-free as std::lock does it: lock one,
// try the others; on a failure release those taken, yield (a spin step to
// the checker) and start again from the one that failed.
template <typename... Mutexes>
class scoped_lock {
 public:
  explicit scoped_lock(Mutexes&... m, debug_info info = RL_CURRENT_INFO)
      : m_{Erase(m)...}, info_(info) {
    LockAll();
  }
  explicit scoped_lock(std::adopt_lock_t, Mutexes&... m,
                       debug_info info = RL_CURRENT_INFO) noexcept
      : m_{Erase(m)...}, info_(info) {}
  ~scoped_lock() {
    for (size_t i = 0; i < kCount; ++i) m_[i].unlock(m_[i].m, info_);
  }
  scoped_lock(const scoped_lock&) = delete;
  scoped_lock& operator=(const scoped_lock&) = delete;

 private:
  static constexpr size_t kCount = sizeof...(Mutexes);
  // One mutex of the set, its type erased.
  struct Held {
    void* m;
    void (*lock)(void*, const debug_info&);
    bool (*try_lock)(void*, const debug_info&);
    void (*unlock)(void*, const debug_info&);
  };
  template <typename M>
  static Held Erase(M& m) {
    return {&m,
            [](void* p, const debug_info& i) {
              detail::LockWith(*static_cast<M*>(p), i);
            },
            [](void* p, const debug_info& i) {
              return detail::TryLockWith(*static_cast<M*>(p), i);
            },
            [](void* p, const debug_info& i) {
              detail::UnlockWith(*static_cast<M*>(p), i);
            }};
  }
  void LockAll() {
    if constexpr (kCount > 0) {
      size_t first = 0;
      for (;;) {
        m_[first].lock(m_[first].m, info_);
        size_t failed = kCount;
        for (size_t k = 1; k < kCount && failed == kCount; ++k) {
          const Held& h = m_[(first + k) % kCount];
          if (!h.try_lock(h.m, info_)) failed = (first + k) % kCount;
        }
        if (failed == kCount) return;
        for (size_t i = first; i != failed; i = (i + 1) % kCount)
          m_[i].unlock(m_[i].m, info_);
        first = failed;
        yield(1, info_);
      }
    }
  }
  Held m_[kCount > 0 ? kCount : 1];
  debug_info info_;
};

// Per-thread storage (Relacy's thread_local_var / TLS_T): each checker
// thread sees its own value, value-initialized in every execution.
template <typename T>
class thread_local_var;

template <typename T>
class thread_local_proxy {
 public:
  thread_local_proxy(thread_local_var<T>& v, debug_info info)
      : v_(v), info_(info) {}
  operator T() const { return v_.get(info_); }  // NOLINT
  T operator->() const { return v_.get(info_); }
  thread_local_proxy& operator=(T value) {
    v_.set(value, info_);
    return *this;
  }

 private:
  thread_local_var<T>& v_;
  debug_info info_;
};

template <typename T>
class thread_local_var {
 public:
  static constexpr unsigned kSlots = 64;
  thread_local_proxy<T> operator()(debug_info info) { return {*this, info}; }
  T get(debug_info = RL_CURRENT_INFO) { return Slot(); }
  void set(T v, debug_info = RL_CURRENT_INFO) { Slot() = v; }

 private:
  T& Slot() {
    if (gen_ != detail::Generation()) {
      gen_ = detail::Generation();
      for (T& v : values_) v = T();
    }
    unsigned i = thread_index();
    return values_[i < kSlots ? i : kSlots - 1];
  }
  T values_[kSlots] = {};
  uint64_t gen_ = 0;
};

// A thread created during an execution (Relacy's rl::dyn_thread): a checker
// thread like the suite's own, explored the same way. The suite declares
// how many it may create: `static constexpr unsigned dynamic_thread_count
// = N;` (creating more is INCONSISTENT TEST SUITE). start() synchronizes
// with the new thread's start, and the thread's end with join()'s return.
class dyn_thread {
 public:
  dyn_thread() = default;
  dyn_thread(const dyn_thread&) = delete;
  dyn_thread& operator=(const dyn_thread&) = delete;
  void start(void* (*fn)(void*), void* arg,
             debug_info info = RL_CURRENT_INFO) {
    handle_ = detail::CreateThread(fn, arg, info);
  }
  void join(debug_info info = RL_CURRENT_INFO) {
    detail::JoinThread(handle_, info);
    handle_ = -1;
  }
  // The checker's thread index of the started thread (-1: none).
  int handle() const { return handle_; }

 private:
  int handle_ = -1;
};

// The heap model's malloc/calloc/realloc/free (relacy_std.hpp maps the C
// names to them, as Relacy's relacy.hpp does).
inline void* rl_malloc(size_t size, debug_info = RL_CURRENT_INFO) {
  return detail::HeapAlloc(size, 0, 0);
}
// Null if count * size overflows, as calloc.
inline void* rl_calloc(size_t count, size_t size,
                       debug_info = RL_CURRENT_INFO) {
  if (size != 0 && count > SIZE_MAX / size) return nullptr;
  void* p = detail::HeapAlloc(count * size, 0, 0);
  if (p != nullptr) std::memset(p, 0, count * size);
  return p;
}
inline void* rl_realloc(void* p, size_t size,
                        debug_info info = RL_CURRENT_INFO) {
  return detail::HeapRealloc(p, size, info);
}
inline void rl_free(void* p, debug_info info = RL_CURRENT_INFO) {
  detail::HeapFree(p, 0, info);
}

namespace detail {

std::string Demangle(const char* name);

template <typename T>
class SuiteAdapter : public SuiteIface {
 public:
  ~SuiteAdapter() override { Destroy(); }
  void Create() override { obj_ = new (&storage_) T(); }
  void Before() override { obj_->before(); }
  void Thread(unsigned index) override { obj_->thread(index); }
  void After() override { obj_->after(); }
  void Invariant() override { obj_->invariant(); }
  bool HasInvariant() const override {
    // Only a suite that declares invariant() pays for calling it at every
    // step.
    using Base = test_suite<T, T::static_thread_count, T::expected_result>;
    return !std::is_same_v<decltype(&T::invariant), void (Base::*)()>;
  }
  void Destroy() override {
    if (obj_ != nullptr) obj_->~T();
    obj_ = nullptr;
  }
  const unsigned char* Bytes(size_t* size) const override {
    *size = sizeof(T);
    return storage_;
  }

 private:
  alignas(T) unsigned char storage_[sizeof(T)];
  T* obj_ = nullptr;
};

}  // namespace detail

template <typename T>
bool simulate(test_params& params) {
  // Relacy fills in the name (its test drivers print params.test_name).
  if (params.test_name.empty())
    params.test_name = detail::Demangle(typeid(T).name());
  detail::SuiteAdapter<T> suite;
  test_result_e r =
      detail::Run(suite, params, T::static_thread_count, T::expected_result,
                  detail::Demangle(typeid(T).name()),
                  static_cast<unsigned>(T::dynamic_thread_count),
#if defined(RL_JAVA_MODE) || defined(RL_CLI_MODE)
                  // Relacy's Java / CLI mode (relacy_java.hpp or
                  // relacy_cli.hpp included before this header): collected.
                  /*garbage_collected=*/true
#else
                  /*garbage_collected=*/false
#endif
      );
  return r == T::expected_result;
}

template <typename T>
bool simulate() {
  test_params params;
  return simulate<T>(params);
}

}  // namespace rl

#endif  // PERCPU_VERIFICATION_RELACY_RELACY_HPP_
