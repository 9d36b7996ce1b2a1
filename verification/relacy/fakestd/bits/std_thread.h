// fakestd mode: shadows libstdc++'s <bits/std_thread.h> (std::thread over
// OS threads; <thread>, <future> and <stop_token> include it). See thread
// in the parent directory for what std::thread is here.
// Only for the include path of a program using relacy_std.hpp.
#ifndef PERCPU_VERIFICATION_RELACY_FAKESTD_BITS_STD_THREAD_H_
#define PERCPU_VERIFICATION_RELACY_FAKESTD_BITS_STD_THREAD_H_

#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <system_error>
#include <tuple>
#include <type_traits>
#include <utility>

#include "../../relacy.hpp"
#include "../mode.hpp"

namespace std {

class thread {
 public:
  class id {
   public:
    id() noexcept = default;
    friend bool operator==(id a, id b) noexcept { return a.index_ == b.index_; }
    friend auto operator<=>(id a, id b) noexcept {
      return a.index_ <=> b.index_;
    }

   private:
    friend class thread;
    friend struct hash<id>;
    friend id __rl_this_thread_id() noexcept;
    explicit id(int index) : index_(index) {}
    int index_ = -1;  // the checker's thread index; -1: no thread
  };

  thread() noexcept = default;
  // Relacy's form `std::thread t{f, $}`: a trailing debug info the callable
  // cannot take names the creation in traces instead of being passed on.
  template <typename F, typename... A,
            typename = enable_if_t<!is_same_v<remove_cvref_t<F>, thread>>>
  explicit thread(F&& f, A&&... a) {
    constexpr size_t n = sizeof...(A);
    auto args = std::forward_as_tuple(std::forward<A>(a)...);
    if constexpr (TrailingInfo<F, A...>()) {
      Start(std::forward<F>(f), args, make_index_sequence<n - 1>{},
            std::get<n - 1>(args));
    } else {
      Start(std::forward<F>(f), args, make_index_sequence<n>{},
            RL_CURRENT_INFO);
    }
  }
  thread(thread&& o) noexcept
      : handle_(std::exchange(o.handle_, -1)), created_(o.created_) {}
  thread& operator=(thread&& o) noexcept {
    if (joinable()) Terminates("move-assigned to");
    handle_ = std::exchange(o.handle_, -1);
    created_ = o.created_;
    return *this;
  }
  thread(const thread&) = delete;
  thread& operator=(const thread&) = delete;
  ~thread() {
    // Not while the checker unwinds an execution it abandoned (a failure
    // found, or a pruned one): the thread is gone with the execution.
    if (joinable() && std::uncaught_exceptions() == 0) Terminates("destroyed");
  }

  bool joinable() const noexcept { return handle_ >= 0; }
  void join(::rl::debug_info info = RL_CURRENT_INFO) {
    if (!joinable()) __throw_system_error(int(errc::invalid_argument));
    ::rl::detail::JoinThread(handle_, info);
    handle_ = -1;
  }
  id get_id() const noexcept { return id(handle_); }
  void swap(thread& o) noexcept {
    std::swap(handle_, o.handle_);
    std::swap(created_, o.created_);
  }
  static unsigned hardware_concurrency() noexcept { return 1; }

 private:
  // A joinable thread destroyed or overwritten calls std::terminate
  // ([thread.thread.destr], [thread.thread.assign]). The checker reports it
  // as the failure of this execution (the verdict of an exception escaping
  // a thread, which also calls std::terminate), with its trace, instead of
  // ending the whole process. Relacy's std::thread lets it pass.
  void Terminates(const char* what) const {
    ::rl::detail::NoAbortScope no_abort;  // called from noexcept code
    ::rl::detail::Fail(::rl::test_result_unhandled_exception,
                       (std::string("std::terminate: a joinable std::thread ") +
                        what + " (join it first); created here")
                           .c_str(),
                       created_);
  }
  template <typename F, typename... A>
  static constexpr bool TrailingInfo() {
    if constexpr (sizeof...(A) == 0) {
      return false;
    } else {
      using Last = remove_cvref_t<tuple_element_t<sizeof...(A) - 1, tuple<A...>>>;
      return is_same_v<Last, ::rl::debug_info> &&
             !is_invocable_v<decay_t<F>, decay_t<A>...>;
    }
  }
  template <typename F, typename Args, size_t... I>
  void Start(F&& f, Args& args, index_sequence<I...>,
             const ::rl::debug_info& info) {
    // The callable and its arguments live on the checker's heap until the
    // new thread has run them (its unwinding frees them too).
    using Call = tuple<decay_t<F>, decay_t<tuple_element_t<I, Args>>...>;
    auto* call = new Call(std::forward<F>(f),
                          std::forward<tuple_element_t<I, Args>>(
                              std::get<I>(args))...);
    handle_ = ::rl::detail::CreateThread(&Run<Call>, call, info);
    created_ = info;
    if (handle_ < 0) {
      delete call;
      __throw_system_error(int(errc::resource_unavailable_try_again));
    }
  }
  template <typename Call>
  static void* Run(void* p) {
    unique_ptr<Call> call(static_cast<Call*>(p));
    std::apply([](auto&... x) { std::invoke(std::move(x)...); }, *call);
    return nullptr;
  }
  int handle_ = -1;  // the checker's thread index; -1: not joinable
  ::rl::debug_info created_;
};

inline void swap(thread& a, thread& b) noexcept { a.swap(b); }

inline thread::id __rl_this_thread_id() noexcept {
  return thread::id(static_cast<int>(::rl::detail::ThreadIndex()));
}

namespace this_thread {
inline thread::id get_id() noexcept { return __rl_this_thread_id(); }
// A spin loop's yield: tells the checker the thread is spinning.
inline void yield(::rl::debug_info info = RL_CURRENT_INFO) {
  ::rl::yield(1, info);
}
}  // namespace this_thread

template <>
struct hash<thread::id> {
  size_t operator()(thread::id i) const noexcept {
    return hash<int>()(i.index_);
  }
};

}  // namespace std

#endif  // PERCPU_VERIFICATION_RELACY_FAKESTD_BITS_STD_THREAD_H_
