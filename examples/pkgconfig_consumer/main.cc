// A pkg-config consumer of an installed percpu: the kernel-style
// approximate counter (ApproxCounter) on this machine's real topology,
// written on every online CPU's slot, and U64Stat counters per thread.
// Exits non-zero if a total is wrong.
#include <cstdint>
#include <cstdio>
#include <thread>
#include <vector>

#include "primitives/percpu_alloc.h"
#include "primitives/percpu_counter.h"
#include "primitives/topology.h"
#include "primitives/u64_stats.h"

namespace {

struct alignas(64) WorkerStats {
  percpu::U64Stat requests;
  percpu::U64StatsSync sync;
};

}  // namespace

int main() {
  auto topo = percpu::Topology::FromSysfs();
  if (!topo.ok()) {
    std::fprintf(stderr, "%s\n", topo.status().ToString().c_str());
    return 1;
  }
  auto alloc = percpu::PerCpuAllocator::Create(topo->get());
  if (!alloc.ok()) {
    std::fprintf(stderr, "%s\n", alloc.status().ToString().c_str());
    return 1;
  }
  auto counter = percpu::ApproxCounter::Create(**topo, **alloc);
  if (!counter.ok()) {
    std::fprintf(stderr, "%s\n", counter.status().ToString().c_str());
    return 1;
  }
  // One writer per CPU slot (the counter's contract), from this thread.
  int64_t added = 0;
  (*topo)->ForEachOnline([&](int cpu) {
    for (int i = 0; i < 1000; ++i) (*counter)->Add(cpu, 3);
    added += 3000;
  });

  constexpr int kWorkers = 2;
  constexpr uint64_t kRequests = 100000;
  std::vector<WorkerStats> stats(kWorkers);
  std::vector<std::thread> workers;
  for (int w = 0; w < kWorkers; ++w) {
    workers.emplace_back([&stats, w] {
      for (uint64_t i = 0; i < kRequests; ++i) {
        percpu::U64StatsUpdate<percpu::U64StatsSync> update(stats[w].sync);
        stats[w].requests.Inc();
      }
    });
  }
  for (std::thread& t : workers) t.join();
  uint64_t requests = 0;
  for (const WorkerStats& s : stats) {
    requests +=
        percpu::FetchConsistent(s.sync, [&] { return s.requests.Read(); });
  }
  const int64_t sum = (*counter)->Sum();
  std::printf("pkg-config consumer: counter sum %lld, requests %llu\n",
              static_cast<long long>(sum),
              static_cast<unsigned long long>(requests));
  return sum == added && added > 0 && requests == kWorkers * kRequests ? 0 : 1;
}
