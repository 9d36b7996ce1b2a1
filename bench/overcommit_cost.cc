// What possible-but-absent CPUs cost in commit charge (docs/percpu_alloc.md
// section 4a). The allocator reserves each chunk (unit_size x possible
// CPUs) with MAP_NORESERVE: under vm.overcommit_memory 0 or 1 that charges
// nothing until pages are touched, but under 2 (strict accounting) the
// kernel ignores MAP_NORESERVE and charges the whole chunk to
// Committed_AS at mmap time, absent CPUs included.
//
// For each possible-CPU count, creates a Simulated(possible, 4, 4) topology
// and an allocator, makes it map one chunk (one 8-byte allocation), and
// prints the growth of Committed_AS (/proc/meminfo; the minimum of several
// runs, as other processes move it too) next to the chunk size. Run it in
// each overcommit mode to compare; it never changes the sysctl itself:
//
//   bazel run //bench:overcommit_cost
//   old=$(cat /proc/sys/vm/overcommit_memory); echo 2 >/proc/sys/vm/overcommit_memory
//   bazel-bin/bench/overcommit_cost; echo $old >/proc/sys/vm/overcommit_memory
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>

#include "primitives/percpu_alloc.h"
#include "primitives/topology.h"

namespace {

long ReadMeminfoKb(const char* key) {
  std::ifstream f("/proc/meminfo");
  std::string k, unit;
  long v = 0;
  while (f >> k >> v >> unit) {
    if (k == key) return v;
  }
  return -1;
}

int OvercommitMode() {
  std::ifstream f("/proc/sys/vm/overcommit_memory");
  int mode = -1;
  f >> mode;
  return mode;
}

}  // namespace

int main() {
  std::printf("vm.overcommit_memory=%d CommitLimit=%ld KiB Committed_AS=%ld KiB\n",
              OvercommitMode(), ReadMeminfoKb("CommitLimit:"),
              ReadMeminfoKb("Committed_AS:"));
  std::printf("%10s %8s %14s %22s\n", "possible", "present", "chunk_KiB",
              "Committed_AS_delta_KiB");
  for (const int possible : {4, 192, 1024, 8192}) {
    long best = -1;
    size_t chunk_kib = 0;
    for (int rep = 0; rep < 5; ++rep) {
      auto topo = percpu::Topology::Simulated(possible, 4, 4);
      if (!topo.ok()) return 1;
      auto alloc = percpu::PerCpuAllocator::Create(topo->get());
      if (!alloc.ok()) return 1;
      const long before = ReadMeminfoKb("Committed_AS:");
      auto p = (*alloc)->Allocate(8);
      const long after = ReadMeminfoKb("Committed_AS:");
      if (!p.ok()) {
        std::printf("%10d: allocation failed: %s\n", possible,
                    p.status().ToString().c_str());
        break;
      }
      chunk_kib = (*alloc)->stats().bytes_reserved / 1024;
      if (best < 0 || after - before < best) best = after - before;
      (void)(*alloc)->Free(*p);  // the chunk stays mapped until ~allocator
    }
    std::printf("%10d %8d %14zu %22ld\n", possible, 4, chunk_kib, best);
  }
  return 0;
}
