// Relacy's CLI (.NET) dialect for the checker (Relacy's include path:
// "relacy/relacy_cli.hpp"): rl::nvar<T> (a plain .NET field),
// rl::nvolatile<T> (a .NET volatile field), rl::Interlocked and
// rl::Thread. See docs/verification.md, "The dialect".
//
// Memory-ordering contract, as Relacy models the CLI:
//  * nvar<T>: every access through x($) is a relaxed atomic access (the
//    CLI has no undefined behaviour for racy fields: a race gives stale or
//    reordered values, never DATA RACE). x($)++ / += are a load then a
//    store, not atomic: concurrent increments lose updates.
//  * nvolatile<T>: loads are acquire, stores release (ECMA-335 I.12.6.7).
//    Increments are a load then a store, not atomic.
//  * Interlocked::Add / Increment / Decrement / Exchange / CompareExchange
//    are seq_cst read-modify-writes; Interlocked::Read is an acquire load.
//  * Thread::MemoryBarrier is a seq_cst fence; VolatileRead / VolatileWrite
//    are acquire / release; SpinWait yields.
// All of them work on any rl::atomic<T> (nvar and nvolatile are ones).
//
// Garbage collected, as Relacy's CLI mode: memory a test never deletes is
// collected after each execution, not reported as a MEMORY LEAK. Like
// Relacy's, the mode belongs to the translation unit and needs this header
// before relacy.hpp (RL_CLI_MODE); included after it, the heap is checked
// as in C++.
#ifndef PERCPU_VERIFICATION_RELACY_RELACY_CLI_HPP_
#define PERCPU_VERIFICATION_RELACY_RELACY_CLI_HPP_

#if !defined(RL_CLI_MODE) && !defined(PERCPU_VERIFICATION_RELACY_RELACY_HPP_)
#define RL_CLI_MODE
#endif

#include "relacy.hpp"
#include "windows.h"  // Relacy's CLI header has its Win32 shims too

namespace rl {
namespace detail {

// x($) of a CLI field: loads and stores with the field's orders.
template <typename T, memory_order kLoad, memory_order kStore>
class cli_proxy {
 public:
  cli_proxy(atomic<T>* a, debug_info info) : a_(a), info_(info) {}
  operator T() const { return load(); }  // NOLINT
  T operator=(T v) {
    store(v);
    return v;
  }
  T operator=(const cli_proxy& r) {
    T v = r.load();
    store(v);
    return v;
  }
  T operator++(int) {
    T v = load();
    store(v + 1);
    return v;
  }
  T operator--(int) {
    T v = load();
    store(v - 1);
    return v;
  }
  T operator++() {
    T v = load() + 1;
    store(v);
    return v;
  }
  T operator--() {
    T v = load() - 1;
    store(v);
    return v;
  }
  T operator+=(T d) {
    T v = load() + d;
    store(v);
    return v;
  }
  T operator-=(T d) {
    T v = load() - d;
    store(v);
    return v;
  }

 private:
  // A CLI field access: the order is the field kind's (see the top).
  T load() const { return a_->load(kLoad, info_); }
  void store(T v) { a_->store(v, kStore, info_); }
  atomic<T>* a_;
  debug_info info_;
};

// A managed field (.NET here, Java in relacy_java.hpp) whose loads and
// stores have the field kind's fixed orders; accessed as x($).
template <typename T, memory_order kLoad, memory_order kStore>
class managed_field : public atomic<T> {
 public:
  using proxy_t = cli_proxy<T, kLoad, kStore>;
  managed_field(debug_info info = RL_CURRENT_INFO)  // NOLINT
      : atomic<T>(T(), info) {}
  explicit managed_field(T v, debug_info info = RL_CURRENT_INFO)
      : atomic<T>(v, info) {}
  // A new field initialized from another's value (Relacy's `nvar<int>
  // b(a)`): a load of that field with its kind's order.
  managed_field(const managed_field& o, debug_info info = RL_CURRENT_INFO)
      : atomic<T>(o.load(kLoad, info), info) {}
  managed_field& operator=(const managed_field&) = delete;
  proxy_t operator()(debug_info info) { return proxy_t(this, info); }
};
}  // namespace detail

// A plain .NET field: relaxed accesses (see the top).
template <typename T>
using nvar = detail::managed_field<T, mo_relaxed, mo_relaxed>;

// A .NET volatile field: acquire loads, release stores (see the top).
template <typename T>
using nvolatile = detail::managed_field<T, mo_acquire, mo_release>;

// System.Threading.Interlocked: seq_cst read-modify-writes that are also
// full fences, as the CLR implements them (its memory model: "Interlocked
// operations have full-fence semantics"): a seq_cst fence on each side, so
// a later plain or volatile load cannot read past it (C++20 alone lets an
// acquire load after a seq_cst RMW read a value older than another
// thread's seq_cst RMW). Return values as .NET's: Add/Increment/Decrement
// the new value, Exchange/CompareExchange the old one.
struct Interlocked {
  template <typename T>
  static T Add(atomic<T>& v, T x, debug_info info = RL_CURRENT_INFO) {
    FullFence(info);
    T result = v.fetch_add(x, mo_seq_cst, info) + x;
    FullFence(info);
    return result;
  }
  template <typename T>
  static T CompareExchange(atomic<T>& v, T xchg, T cmp,
                           debug_info info = RL_CURRENT_INFO) {
    FullFence(info);
    // Strong: Interlocked.CompareExchange never fails spuriously.
    v.compare_exchange_strong(cmp, xchg, mo_seq_cst, mo_seq_cst, info);
    FullFence(info);
    return cmp;
  }
  template <typename T>
  static T Increment(atomic<T>& v, debug_info info = RL_CURRENT_INFO) {
    return Add(v, static_cast<T>(1), info);
  }
  template <typename T>
  static T Decrement(atomic<T>& v, debug_info info = RL_CURRENT_INFO) {
    return Add(v, static_cast<T>(-1), info);
  }
  template <typename T>
  static T Exchange(atomic<T>& v, T x, debug_info info = RL_CURRENT_INFO) {
    FullFence(info);
    T old = v.exchange(x, mo_seq_cst, info);
    FullFence(info);
    return old;
  }
  template <typename T>
  static T Read(const atomic<T>& v, debug_info info = RL_CURRENT_INFO) {
    // Pairs with: the writer's release store or seq_cst RMW (as Relacy).
    return const_cast<atomic<T>&>(v).load(mo_acquire, info);
  }

 private:
  // Orders everything before it with everything after it; pairs with
  // another thread's FullFence / Thread::MemoryBarrier (C++20 fence-fence
  // seq_cst ordering).
  static void FullFence(debug_info info) {
    atomic_thread_fence(mo_seq_cst, info);
  }
};

// System.Threading.Thread's memory-model members.
struct Thread {
  static void MemoryBarrier(debug_info info = RL_CURRENT_INFO) {
    atomic_thread_fence(mo_seq_cst, info);
  }
  template <typename T>
  static T VolatileRead(const atomic<T>& v, debug_info info = RL_CURRENT_INFO) {
    // Pairs with: VolatileWrite's release store (or any release write).
    return const_cast<atomic<T>&>(v).load(mo_acquire, info);
  }
  template <typename T>
  static void VolatileWrite(atomic<T>& v, T x,
                            debug_info info = RL_CURRENT_INFO) {
    // Pairs with: VolatileRead's acquire load (or any acquire read).
    v.store(x, mo_release, info);
  }
  static void SpinWait(int iterations, debug_info info = RL_CURRENT_INFO) {
    yield(iterations > 0 ? static_cast<unsigned>(iterations) : 1u, info);
  }
};

}  // namespace rl

#endif  // PERCPU_VERIFICATION_RELACY_RELACY_CLI_HPP_
