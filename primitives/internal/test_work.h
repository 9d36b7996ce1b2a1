// Test-only: how much of a stress loop's work a test case runs.
//
// The emulated lanes (qemu-user: aarch64, armhf, and i686 where the kernel
// refuses 32-bit code; .bazelrc and tools/run_i686.sh) run every
// instruction several times slower than the host, and aarch64-tsan adds
// ThreadSanitizer's cost on top: measured in one fresh-clone CI run, the
// four-thread 2,000,000-add programs of issue 12 took 95-149 s there
// against 1-3 s on the host. Those lanes set PERCPU_TEST_WORK_DIVISOR, and
// the loops that make a test's running time (millions of adds, thousands
// of hotplug cycles) run that fraction of their iterations there. What the
// test asserts does not change (totals are computed from the count run);
// the native lanes (host, tsan, seqcount, norseq, asan-ubsan) run the full
// counts, so a rare lost update still has its full chance to show there.
#ifndef PERCPU_PRIMITIVES_INTERNAL_TEST_WORK_H_
#define PERCPU_PRIMITIVES_INTERNAL_TEST_WORK_H_

#include <cstdlib>

namespace percpu {
namespace testing {

// PERCPU_TEST_WORK_DIVISOR, or 1 if unset or not a positive number.
inline long WorkDivisor() {
  static const long divisor = [] {
    const char* e = std::getenv("PERCPU_TEST_WORK_DIVISOR");
    const long d = e != nullptr ? std::strtol(e, nullptr, 10) : 1;
    return d >= 1 ? d : 1;
  }();
  return divisor;
}

// The iterations to run of a loop whose full count is `full` (at least 1).
template <typename T>
T Work(T full) {
  const T n = static_cast<T>(full / static_cast<T>(WorkDivisor()));
  return n > 0 ? n : T{1};
}

}  // namespace testing
}  // namespace percpu

#endif  // PERCPU_PRIMITIVES_INTERNAL_TEST_WORK_H_
