// The README's second "Use" block is this whole program, run as
// //examples:readme_percpu_stats (//examples:doc_snippets_test checks that
// the README still shows exactly this code).
#include <array>
#include <cstdint>
#include <cstdio>

#include "primitives/percpu_stats.h"

int main() {
  auto topo = percpu::Topology::FromSysfs();                 // or Simulated(192, 32, 32)
  if (!topo.ok()) return 1;                                  // a Status says why
  auto alloc = percpu::PerCpuAllocator::Create(topo->get());
  if (!alloc.ok()) return 1;
  auto rx = percpu::PerCpuU64Mib<90>::Create(**topo, **alloc);  // an SNMP-like MIB
  if (!rx.ok()) return 1;
  (*rx)->Add(/*item=*/3, 1);                                  // this CPU's slot, no lock
  std::array<uint64_t, 90> totals;
  (*rx)->FoldAll(totals);                                     // cpu-major, no heap
  std::printf("writer mode: %s\n", percpu::WriterModeName(percpu::CurrentWriterMode()));
  return totals[3] == 1 ? 0 : 1;
}
