// Relacy's Java dialect for the checker (Relacy's include path:
// "relacy/relacy_java.hpp"): rl::jvar<T> (a plain Java field),
// rl::jvolatile<T> (a Java volatile field) and rl::jatomic<T> (a
// java.util.concurrent.atomic Atomic*). See docs/verification.md, "The
// dialect".
//
// Memory-ordering contract, as Relacy models Java:
//  * jvar<T>: every access through x($) is a relaxed atomic access (Java
//    has no undefined behaviour for racy fields: a race gives stale or
//    reordered values, never DATA RACE). x($)++ / += are a load then a
//    store, not atomic: concurrent increments lose updates.
//  * jvolatile<T>: loads and stores are seq_cst (JLS 17.4.4: volatile
//    accesses are synchronization actions in one total order).
//    Increments are a load then a store, not atomic.
//  * jatomic<T>: get/set and every read-modify-write are seq_cst;
//    weakCompareAndSet may fail spuriously, compareAndSet does not.
// Garbage collected, as Relacy's Java mode: memory a test never deletes is
// collected after each execution, not reported as a MEMORY LEAK. The mode
// belongs to the translation unit and needs this header before relacy.hpp
// (RL_JAVA_MODE), as in Relacy.
#ifndef PERCPU_VERIFICATION_RELACY_RELACY_JAVA_HPP_
#define PERCPU_VERIFICATION_RELACY_RELACY_JAVA_HPP_

#if !defined(RL_JAVA_MODE) && !defined(PERCPU_VERIFICATION_RELACY_RELACY_HPP_)
#define RL_JAVA_MODE
#endif

#include "relacy.hpp"
#include "relacy_cli.hpp"  // detail::managed_field, as .NET fields

namespace rl {

// A plain Java field: relaxed accesses (see the top).
template <typename T>
using jvar = detail::managed_field<T, mo_relaxed, mo_relaxed>;

// A Java volatile field: seq_cst loads and stores (see the top).
template <typename T>
using jvolatile = detail::managed_field<T, mo_seq_cst, mo_seq_cst>;

template <typename T>
class jatomic;

namespace detail {
// x($) of a jatomic: Java's AtomicInteger/AtomicLong/AtomicReference
// methods, every one seq_cst (see the top).
template <typename T>
class jatomic_proxy {
 public:
  jatomic_proxy(atomic<T>* a, debug_info info) : a_(a), info_(info) {}
  T get() const { return a_->load(mo_seq_cst, info_); }
  void set(T v) { a_->store(v, mo_seq_cst, info_); }
  bool compareAndSet(T expect, T update) {
    return a_->compare_exchange_strong(expect, update, mo_seq_cst, info_);
  }
  bool weakCompareAndSet(T expect, T update) {
    return a_->compare_exchange_weak(expect, update, mo_seq_cst, info_);
  }
  T getAndSet(T v) { return a_->exchange(v, mo_seq_cst, info_); }
  T getAndAdd(T d) { return a_->fetch_add(d, mo_seq_cst, info_); }
  T addAndGet(T d) { return getAndAdd(d) + d; }
  T getAndIncrement() { return getAndAdd(T(1)); }
  T getAndDecrement() { return getAndAdd(T(-1)); }
  T incrementAndGet() { return addAndGet(T(1)); }
  T decrementAndGet() { return addAndGet(T(-1)); }
  const debug_info& info() const { return info_; }

 private:
  atomic<T>* a_;
  debug_info info_;
};
}  // namespace detail

template <typename T>
class jatomic : public atomic<T> {
 public:
  using proxy_t = detail::jatomic_proxy<T>;
  jatomic(debug_info info = RL_CURRENT_INFO)
      : atomic<T>(T(), info) {}  // NOLINT
  explicit jatomic(T v, debug_info info = RL_CURRENT_INFO)
      : atomic<T>(v, info) {}
  // Initialized from another atomic's value (`AtomicInteger b(a)` or
  // `b(a($))`): a seq_cst get() of it. Pairs with: the seq_cst writes of
  // o (every jatomic operation is seq_cst, see the top).
  jatomic(const jatomic& o, debug_info info = RL_CURRENT_INFO)
      : atomic<T>(o.load(mo_seq_cst, info), info) {}
  jatomic(const proxy_t& o)  // NOLINT: Relacy's implicit form
      : atomic<T>(o.get(), o.info()) {}
  jatomic& operator=(const jatomic&) = delete;
  proxy_t operator()(debug_info info) { return proxy_t(this, info); }
};

// Java's names (java.util.concurrent.atomic), as Relacy's typedefs.
using AtomicInteger = jatomic<int>;
using AtomicLong = jatomic<long>;  // NOLINT: Relacy's (32 bits on ILP32)

}  // namespace rl

#endif  // PERCPU_VERIFICATION_RELACY_RELACY_JAVA_HPP_
