// A dlopen()ed plugin that inlines the per-CPU add (issue 12 item 3): its
// restartable section and descriptor live in this shared object, which the
// test unmaps with dlclose() before the thread is next preempted or
// signalled. Built by //primitives:rseq_plugin.so (linkshared).
#include <cstdint>

#include "primitives/cpu_slot.h"
#include "primitives/rseq.h"

extern "C" __attribute__((visibility("default"))) int PercpuPluginAddOnce(
    uint64_t* sum_out, int* rseq_out) {
  auto c = percpu::CpuSlotCounter::Create(64);
  if (!c.ok()) return 1;
  (*c)->Add(1);  // inlined: its rseq descriptor is in this object
  *sum_out = (*c)->Sum();
  *rseq_out = percpu::CurrentWriterMode() == percpu::WriterMode::kRseq;
  return 0;
}
