// The allocator + hotplug fuzz harness: decodes a byte string into a
// sequence of PerCpuAllocator, Topology, LcoreStats and PerCpuU64Mib
// operations on a simulated topology, runs them single-threaded, and checks
// every result against a simple reference model (docs/percpu_alloc.md,
// "Fuzzing").
//
// Used by the libFuzzer binary (allocator_hotplug_fuzzer.cc, clang only) and
// by the corpus regression test (allocator_hotplug_regression_main.cc, every
// toolchain), so both run exactly the same code.
#ifndef PERCPU_FUZZ_ALLOCATOR_HOTPLUG_HARNESS_H_
#define PERCPU_FUZZ_ALLOCATOR_HOTPLUG_HARNESS_H_

#include <cstddef>
#include <cstdint>

#include "primitives/status.h"

namespace percpu {
namespace fuzz {

struct HarnessOptions {
  // Print every decoded operation and its result to stderr.
  bool trace = false;
};

// Runs one input. Every input is valid (missing bytes read as zero). OK if
// the library agreed with the model at every step; otherwise an Internal
// error naming the operation index, the operation and the discrepancy.
// Never aborts on a discrepancy itself (callers decide).
Status RunAllocatorHotplugInput(const uint8_t* data, size_t size,
                                const HarnessOptions& options = {});

// HarnessOptions from the environment: PERCPU_FUZZ_TRACE=1 sets trace.
HarnessOptions HarnessOptionsFromEnv();

}  // namespace fuzz
}  // namespace percpu

#endif  // PERCPU_FUZZ_ALLOCATOR_HOTPLUG_HARNESS_H_
