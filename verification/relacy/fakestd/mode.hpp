// Internal to fakestd mode (see atomic in this directory): marks the mode
// for relacy_std.hpp and checks the language level. Not for direct use.
#ifndef PERCPU_VERIFICATION_RELACY_FAKESTD_MODE_HPP_
#define PERCPU_VERIFICATION_RELACY_FAKESTD_MODE_HPP_

// relacy_std.hpp tests this: with it, the checker's types go into the real
// namespace std and `std` is not redefined as a macro.
#define PERCPU_RL_FAKESTD 1

// std::memory_order below must be the very type the checker's engine was
// compiled with (libstdc++'s C++20 enum class), or calls into it would
// name another type.
#if __cplusplus < 202002L
#error "relacy fakestd mode needs C++20 (-std=c++20)"
#endif

#endif  // PERCPU_VERIFICATION_RELACY_FAKESTD_MODE_HPP_
