// fakestd mode: shadows libstdc++'s <bits/std_mutex.h>, which defines
// std::mutex over pthreads (it would clash with the checker's rl::mutex,
// which relacy_std.hpp puts into std). Keeps what is no mutex: the lock
// tags. std::lock_guard, std::unique_lock and std::scoped_lock are the
// checker's (relacy_std.hpp), which also take Relacy's trailing `$`.
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

}  // namespace std

#endif  // PERCPU_VERIFICATION_RELACY_FAKESTD_BITS_STD_MUTEX_H_
