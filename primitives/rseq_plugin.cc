// A dlopen()ed plugin that inlines the per-CPU rseq add (issue 12 item 3):
// its restartable section and descriptor live in this shared object, which
// the test unmaps with dlclose() before the thread is next preempted or
// signalled. Built by //primitives:rseq_plugin.so (linkshared).
//
// It uses only the header-only sequence (internal/rseq_asm.h), so nothing
// pulls in code with STB_GNU_UNIQUE symbols (std::to_string's tables),
// which would make glibc refuse to unload the object and the test prove
// nothing; the test checks that the object really is unmapped.
#include <cstdint>

#include "primitives/internal/atomic.h"
#include "primitives/internal/rseq_asm.h"

namespace {
percpu::internal::Atomic<uint64_t> g_slots[4096];
}  // namespace

// Returns 1 if the rseq sequence ran (and added 1), 0 if rseq is not
// available here (nothing to test), -1 if it ran but added nothing.
extern "C" __attribute__((visibility("default"))) int PercpuPluginAddOnce() {
#if PERCPU_HAVE_RSEQ_ASM
  if (__rseq_size == 0) return 0;
  const uint32_t cpu = percpu::internal::RseqAddU64(
      reinterpret_cast<uintptr_t>(&g_slots[0]), sizeof(g_slots[0]), 4096, 1);
  if (cpu >= 4096) return -1;
  return g_slots[cpu].load(std::memory_order_relaxed) == 1 ? 1 : -1;
#else
  return 0;
#endif
}
