// internal::Callable<R(Args...)>: a small owning, copyable, type-erased
// callable, the project's stand-in for std::function in public headers
// (<functional> costs ~35k preprocessed lines; see docs/header_cost.md).
//
// Constructible from nullptr (empty) and from any copy-constructible
// callable invocable as R(Args...); copy and move as std::function
// (copying clones the target, moving steals it and leaves the source
// empty). Calling an empty Callable is a programmer-contract violation
// (asserted in debug builds; callers test `if (cb)` first, as Topology
// does). Not thread-safe: one Callable object is used by one thread at a
// time, like std::function. No atomics, so no ordering contract.
#ifndef PERCPU_PRIMITIVES_INTERNAL_CALLABLE_H_
#define PERCPU_PRIMITIVES_INTERNAL_CALLABLE_H_

#include <cassert>
#include <cstddef>
#include <type_traits>
#include <utility>

namespace percpu {
namespace internal {

template <typename Signature>
class Callable;

template <typename R, typename... Args>
class Callable<R(Args...)> {
 public:
  Callable() noexcept = default;
  Callable(std::nullptr_t) noexcept {}  // NOLINT: implicit, as std::function

  template <typename F,
            typename D = std::decay_t<F>,
            typename = std::enable_if_t<
                !std::is_same_v<D, Callable> &&
                !std::is_same_v<D, std::nullptr_t> &&
                std::is_copy_constructible_v<D> &&
                std::is_invocable_r_v<R, D&, Args...>>>
  Callable(F&& f)  // NOLINT: implicit, as std::function
      : ops_(&OpsFor<D>::kOps), target_(new D(std::forward<F>(f))) {}

  Callable(const Callable& other)
      : ops_(other.ops_),
        target_(other.ops_ != nullptr ? other.ops_->clone(other.target_)
                                      : nullptr) {}
  Callable(Callable&& other) noexcept
      : ops_(std::exchange(other.ops_, nullptr)),
        target_(std::exchange(other.target_, nullptr)) {}
  Callable& operator=(const Callable& other) {
    if (this != &other) Callable(other).swap(*this);
    return *this;
  }
  Callable& operator=(Callable&& other) noexcept {
    Callable(std::move(other)).swap(*this);
    return *this;
  }
  Callable& operator=(std::nullptr_t) noexcept {
    Callable().swap(*this);
    return *this;
  }
  ~Callable() {
    if (ops_ != nullptr) ops_->destroy(target_);
  }

  void swap(Callable& other) noexcept {
    std::swap(ops_, other.ops_);
    std::swap(target_, other.target_);
  }

  explicit operator bool() const noexcept { return ops_ != nullptr; }
  friend bool operator==(const Callable& c, std::nullptr_t) noexcept {
    return !c;
  }
  friend bool operator!=(const Callable& c, std::nullptr_t) noexcept {
    return static_cast<bool>(c);
  }

  R operator()(Args... args) const {
    assert(ops_ != nullptr && "calling an empty internal::Callable");
    return ops_->invoke(target_, std::forward<Args>(args)...);
  }

 private:
  struct Ops {
    R (*invoke)(void*, Args&&...);
    void* (*clone)(const void*);
    void (*destroy)(void*);
  };
  template <typename D>
  struct OpsFor {
    static R Invoke(void* t, Args&&... args) {
      if constexpr (std::is_void_v<R>) {
        (*static_cast<D*>(t))(std::forward<Args>(args)...);
      } else {
        return (*static_cast<D*>(t))(std::forward<Args>(args)...);
      }
    }
    static void* Clone(const void* t) {
      return new D(*static_cast<const D*>(t));
    }
    static void Destroy(void* t) { delete static_cast<D*>(t); }
    static constexpr Ops kOps{&Invoke, &Clone, &Destroy};
  };

  const Ops* ops_ = nullptr;
  void* target_ = nullptr;  // a heap D, owned; null iff ops_ is null
};

}  // namespace internal
}  // namespace percpu

#endif  // PERCPU_PRIMITIVES_INTERNAL_CALLABLE_H_
