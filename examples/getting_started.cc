// The program of docs/getting_started.md: per-CPU request counters on this
// machine's real CPU topology, written from several threads and folded.
// Exits non-zero if the folded totals differ from what was written.
#include <array>
#include <cstdint>
#include <cstdio>
#include <thread>
#include <vector>

#include "primitives/percpu_alloc.h"
#include "primitives/percpu_stats.h"
#include "primitives/rseq.h"
#include "primitives/topology.h"

int main() {
  // 1. The CPUs of this machine (possible, present, online) from sysfs.
  auto topo = percpu::Topology::FromSysfs();
  if (!topo.ok()) {
    std::fprintf(stderr, "%s\n", topo.status().ToString().c_str());
    return 1;
  }
  // 2. Per-CPU memory: one unit per possible CPU, committed for present ones.
  auto alloc = percpu::PerCpuAllocator::Create(topo->get());
  if (!alloc.ok()) {
    std::fprintf(stderr, "%s\n", alloc.status().ToString().c_str());
    return 1;
  }
  // 3. A MIB of 3 counters per CPU: requests, errors, bytes.
  enum Item { kRequests, kErrors, kBytes, kItems };
  auto stats = percpu::PerCpuU64Mib<kItems>::Create(**topo, **alloc);
  if (!stats.ok()) {
    std::fprintf(stderr, "%s\n", stats.status().ToString().c_str());
    return 1;
  }
  std::printf("writer mode: %s\n",
              percpu::WriterModeName(percpu::CurrentWriterMode()));

  // 4. Writers: each Add goes to the slot of the CPU the thread runs on.
  constexpr int kThreads = 4;
  constexpr uint64_t kRequestsPerThread = 100000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&stats] {
      for (uint64_t i = 0; i < kRequestsPerThread; ++i) {
        (*stats)->Add(kRequests, 1);
        (*stats)->Add(kBytes, 512);
        if (i % 100 == 0) (*stats)->Add(kErrors, 1);
      }
    });
  }
  for (std::thread& t : threads) t.join();

  // 5. Reader: fold every CPU's counters into a stack array (no heap).
  std::array<uint64_t, kItems> totals;
  (*stats)->FoldAll(totals);
  std::printf("requests %llu, errors %llu, bytes %llu\n",
              static_cast<unsigned long long>(totals[kRequests]),
              static_cast<unsigned long long>(totals[kErrors]),
              static_cast<unsigned long long>(totals[kBytes]));
  const uint64_t want = kThreads * kRequestsPerThread;
  const bool ok = totals[kRequests] == want && totals[kBytes] == 512 * want &&
                  totals[kErrors] == kThreads * (kRequestsPerThread / 100);
  std::printf("%s\n", ok ? "OK: totals equal what was written"
                         : "FAIL: totals differ from what was written");
  return ok ? 0 : 1;
}
