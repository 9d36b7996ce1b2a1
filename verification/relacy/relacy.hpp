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

#include <cstring>
#include <iostream>
#include <new>
#include <string>
#include <type_traits>
#include <typeinfo>

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
#define RL_UNTIL(x)                                      \
  do {                                                   \
    if ((x)) ::rl::detail::Until("until: " #x, RL_INFO); \
  } while (0)
#define VAR(x) x(RL_INFO)
#define VAR_T(x) ::rl::var<x>

namespace rl {

template <typename Derived, thread_id_t ThreadCount,
          test_result_e ExpectedResult = test_result_success>
struct test_suite {
  static constexpr thread_id_t static_thread_count = ThreadCount;
  static constexpr thread_id_t dynamic_thread_count = 0;
  static constexpr test_result_e expected_result = ExpectedResult;
  void before() {}
  void after() {}
  void invariant() {}
};

inline void atomic_thread_fence(memory_order mo,
                                debug_info info = RL_CURRENT_INFO) {
  detail::Fence(mo, info);
}

// Tells the checker the thread is spinning; see docs (spin handling).
inline void yield(unsigned count = 1, debug_info info = RL_CURRENT_INFO) {
  detail::Yield(count, info);
}

// Nondeterministic choice in [0, limit); every value is explored.
inline unsigned rand(unsigned limit, debug_info info = RL_CURRENT_INFO) {
  return detail::Rand(limit, info);
}

inline thread_id_t thread_index() { return detail::ThreadIndex(); }

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
                "rl::atomic<T> needs a trivially copyable T of <= 8 bytes");
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

}  // namespace detail

template <typename T>
class atomic;

// Result of x($): the same operations, attributed to the given position.
template <typename T>
class atomic_proxy {
 public:
  atomic_proxy(atomic<T>* a, debug_info info) : a_(a), info_(info) {}
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
  T fetch_add(T v, memory_order mo = mo_seq_cst) {
    return a_->fetch_add(v, mo, info_);
  }
  T fetch_sub(T v, memory_order mo = mo_seq_cst) {
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
  operator T() const { return load(); }  // NOLINT
  T operator=(T v) {
    store(v);
    return v;
  }

 private:
  atomic<T>* a_;
  debug_info info_;
};

template <typename T>
class atomic {
 public:
  // Value-initialized like C++20 std::atomic.
  atomic(debug_info info = RL_CURRENT_INFO) { Init(T(), info); }     // NOLINT
  atomic(T v, debug_info info = RL_CURRENT_INFO) { Init(v, info); }  // NOLINT
  atomic(const atomic&) = delete;
  atomic& operator=(const atomic&) = delete;

  atomic_proxy<T> operator()(debug_info info) { return {this, info}; }

  T load(memory_order mo = mo_seq_cst,
         debug_info info = RL_CURRENT_INFO) const {
    if (!Live()) return plain_;
    return detail::FromBits<T>(detail::AtomicLoad(loc_, mo, info));
  }
  void store(T v, memory_order mo = mo_seq_cst,
             debug_info info = RL_CURRENT_INFO) {
    if (!Live()) {
      plain_ = v;
      return;
    }
    detail::AtomicStore(loc_, detail::ToBits(v), mo, info);
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
  // No spurious failures are modelled (documented limitation).
  bool compare_exchange_weak(T& expected, T desired,
                             memory_order mo = mo_seq_cst,
                             debug_info info = RL_CURRENT_INFO) {
    return Cas(expected, desired, mo, FailureOrder(mo), info);
  }
  bool compare_exchange_weak(T& expected, T desired, memory_order success,
                             memory_order failure,
                             debug_info info = RL_CURRENT_INFO) {
    return Cas(expected, desired, success, failure, info);
  }
  T fetch_add(T v, memory_order mo = mo_seq_cst,
              debug_info info = RL_CURRENT_INFO) {
    return Rmw(detail::RmwOp::kAdd, v, mo, info);
  }
  T fetch_sub(T v, memory_order mo = mo_seq_cst,
              debug_info info = RL_CURRENT_INFO) {
    return Rmw(detail::RmwOp::kSub, v, mo, info);
  }
  T fetch_and(T v, memory_order mo = mo_seq_cst,
              debug_info info = RL_CURRENT_INFO) {
    return Rmw(detail::RmwOp::kAnd, v, mo, info);
  }
  T fetch_or(T v, memory_order mo = mo_seq_cst,
             debug_info info = RL_CURRENT_INFO) {
    return Rmw(detail::RmwOp::kOr, v, mo, info);
  }
  T fetch_xor(T v, memory_order mo = mo_seq_cst,
              debug_info info = RL_CURRENT_INFO) {
    return Rmw(detail::RmwOp::kXor, v, mo, info);
  }

  operator T() const { return load(); }  // NOLINT
  T operator=(T v) {
    store(v);
    return v;
  }
  T operator++() { return fetch_add(T(1)) + T(1); }
  T operator++(int) { return fetch_add(T(1)); }
  T operator--() { return fetch_sub(T(1)) - T(1); }
  T operator--(int) { return fetch_sub(T(1)); }
  T operator+=(T v) { return fetch_add(v) + v; }
  T operator-=(T v) { return fetch_sub(v) - v; }
  T operator&=(T v) { return fetch_and(v) & v; }
  T operator|=(T v) { return fetch_or(v) | v; }
  T operator^=(T v) { return fetch_xor(v) ^ v; }

 private:
  static memory_order FailureOrder(memory_order mo) {
    if (mo == mo_acq_rel) return mo_acquire;
    if (mo == mo_release) return mo_relaxed;
    return mo;
  }
  void Init(T v, const debug_info& info) {
    plain_ = v;
    gen_ = detail::Generation();
    if (gen_ != 0) loc_ = detail::NewAtomic(sizeof(T), detail::ToBits(v), info);
  }
  bool Live() const { return gen_ != 0 && gen_ == detail::Generation(); }
  T Rmw(detail::RmwOp op, T v, memory_order mo, const debug_info& info) {
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
           const debug_info& info) {
    if (!Live()) {
      if (detail::ToBits(plain_) == detail::ToBits(expected)) {
        plain_ = desired;
        return true;
      }
      expected = plain_;
      return false;
    }
    uint64_t e = detail::ToBits(expected);
    bool ok = detail::AtomicCas(loc_, &e, detail::ToBits(desired), s, f, info);
    if (!ok) expected = detail::FromBits<T>(e);
    return ok;
  }

  int loc_ = -1;
  uint64_t gen_ = 0;
  T plain_;  // used only outside an execution
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
  T operator+=(const T& d) {
    T x = load() + d;
    store(x);
    return x;
  }
  T operator-=(const T& d) {
    T x = load() - d;
    store(x);
    return x;
  }

 private:
  var<T>* v_;
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
  var(const var&) = delete;
  var& operator=(const var&) = delete;
  var_proxy<T> operator()(debug_info info) { return {this, info}; }

 private:
  friend class var_proxy<T>;
  void Init(bool initialized, const debug_info& info) {
    gen_ = detail::Generation();
    if (gen_ != 0) id_ = detail::NewVar(initialized, info);
  }
  void Access(bool write, const debug_info& info) {
    if (gen_ != 0 && gen_ == detail::Generation())
      detail::VarAccess(id_, write, info);
  }
  T value_;
  int id_ = -1;
  uint64_t gen_ = 0;
};

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
  void Destroy() override {
    if (obj_ != nullptr) obj_->~T();
    obj_ = nullptr;
  }

 private:
  alignas(T) unsigned char storage_[sizeof(T)];
  T* obj_ = nullptr;
};

}  // namespace detail

template <typename T>
bool simulate(test_params& params) {
  detail::SuiteAdapter<T> suite;
  test_result_e r =
      detail::Run(suite, params, T::static_thread_count, T::expected_result,
                  detail::Demangle(typeid(T).name()));
  return r == T::expected_result;
}

template <typename T>
bool simulate() {
  test_params params;
  return simulate<T>(params);
}

}  // namespace rl

#endif  // PERCPU_VERIFICATION_RELACY_RELACY_HPP_
