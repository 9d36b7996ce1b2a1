// fakestd mode: shadows libstdc++'s <bits/std_mutex.h>, which defines
// std::mutex over pthreads (it would clash with the checker's rl::mutex,
// which relacy_std.hpp puts into std). Keeps what is no mutex: the lock
// tags and std::lock_guard, which <bits/unique_lock.h> (std::unique_lock)
// and the checker itself build on.
// Only for the include path of a program using relacy_std.hpp.
#ifndef PERCPU_VERIFICATION_RELACY_FAKESTD_BITS_STD_MUTEX_H_
#define PERCPU_VERIFICATION_RELACY_FAKESTD_BITS_STD_MUTEX_H_

#include <bits/functexcept.h>  // __throw_system_error, for unique_lock
#include <bits/gthr.h>  // the pthread declarations <shared_mutex> expects

#include <system_error>

#include "../mode.hpp"

namespace std {

struct defer_lock_t {
  explicit defer_lock_t() = default;
};
struct try_to_lock_t {
  explicit try_to_lock_t() = default;
};
struct adopt_lock_t {
  explicit adopt_lock_t() = default;
};
inline constexpr defer_lock_t defer_lock{};
inline constexpr try_to_lock_t try_to_lock{};
inline constexpr adopt_lock_t adopt_lock{};

template <typename Mutex>
class lock_guard {
 public:
  using mutex_type = Mutex;
  explicit lock_guard(Mutex& m) : m_(m) { m_.lock(); }
  lock_guard(Mutex& m, adopt_lock_t) noexcept : m_(m) {}
  ~lock_guard() { m_.unlock(); }
  lock_guard(const lock_guard&) = delete;
  lock_guard& operator=(const lock_guard&) = delete;

 private:
  Mutex& m_;
};

}  // namespace std

#endif  // PERCPU_VERIFICATION_RELACY_FAKESTD_BITS_STD_MUTEX_H_
