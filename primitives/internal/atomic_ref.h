// internal::AtomicRef<T>: an atomic view of a plain object that cannot
// change type (std::atomic_ref under C++20, boost::atomic_ref under C++17).
//
// Used by primitives/u64_field.h only. Kept apart from internal/atomic.h so
// that the primitives which never touch plain memory do not include Boost.
// The model checker has no atomic view of plain memory (rl::atomic<T> owns
// its storage), so this header is not available with PERCPU_MODEL_CHECK;
// the ordering that u64_field.h relies on is the seqcount's, which is
// model-checked (verification/seqcount_model_test.cc).
#ifndef PERCPU_PRIMITIVES_INTERNAL_ATOMIC_REF_H_
#define PERCPU_PRIMITIVES_INTERNAL_ATOMIC_REF_H_

#if defined(PERCPU_MODEL_CHECK)
#error "internal/atomic_ref.h has no model-check mapping (see its header)"
#endif

#include <atomic>

#if __has_include(<version>)
#include <version>  // __cpp_lib_atomic_ref
#endif

#if defined(__cpp_lib_atomic_ref)
#define PERCPU_ATOMIC_REF_IS_STD 1
#elif __has_include(<boost/atomic/atomic_ref.hpp>)
#include <boost/atomic/atomic_ref.hpp>
#define PERCPU_ATOMIC_REF_IS_STD 0
#else
#error \
    "percpu/u64_field.h needs std::atomic_ref (C++20) or Boost.Atomic >= 1.73 " \
    "headers (boost/atomic/atomic_ref.hpp; Debian: libboost-atomic-dev)"
#endif

namespace percpu {
namespace internal {

#if PERCPU_ATOMIC_REF_IS_STD
template <typename T>
using AtomicRef = std::atomic_ref<T>;
#else
template <typename T>
using AtomicRef = boost::atomic_ref<T>;
#endif

// boost::atomic_ref takes boost::memory_order; both enums list the same
// orders in the same sequence, and std::memory_order is what primitive code
// is written with.
#if PERCPU_ATOMIC_REF_IS_STD
constexpr std::memory_order RefOrder(std::memory_order order) { return order; }
#else
constexpr boost::memory_order RefOrder(std::memory_order order) {
  switch (order) {
    case std::memory_order_relaxed:
      return boost::memory_order_relaxed;
    case std::memory_order_consume:
      return boost::memory_order_consume;
    case std::memory_order_acquire:
      return boost::memory_order_acquire;
    case std::memory_order_release:
      return boost::memory_order_release;
    case std::memory_order_acq_rel:
      return boost::memory_order_acq_rel;
    default:
      return boost::memory_order_seq_cst;
  }
}
#endif

}  // namespace internal
}  // namespace percpu

#endif  // PERCPU_PRIMITIVES_INTERNAL_ATOMIC_REF_H_
