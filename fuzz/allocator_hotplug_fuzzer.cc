// libFuzzer entry point of the allocator + hotplug fuzzer (clang only; build
// with --config=fuzz, run with fuzz/run_fuzz.sh). The operations, the model
// and the checks are in allocator_hotplug_harness.cc, shared with the corpus
// regression test.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "fuzz/allocator_hotplug_harness.h"
#include "primitives/status.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const percpu::fuzz::HarnessOptions options =
      percpu::fuzz::HarnessOptionsFromEnv();
  const percpu::Status s =
      percpu::fuzz::RunAllocatorHotplugInput(data, size, options);
  if (!s.ok()) {
    // A disagreement with the model is a crash for libFuzzer: it saves the
    // input (crash-<sha1>) and stops.
    std::fprintf(stderr, "allocator_hotplug_fuzzer: %s\n",
                 s.ToString().c_str());
    std::abort();
  }
  return 0;
}
