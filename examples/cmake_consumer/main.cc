// A CMake consumer of an installed percpu (find_package(percpu)): per-CPU
// rx packets and bytes written from several threads on this machine's real
// topology, folded by a reader; and a port's counters kept in the kernel
// ABI's C struct through u64_field.h (boost::atomic_ref in this C++17
// build). Exits non-zero if the totals are wrong.
#include <linux/if_link.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <thread>
#include <vector>

#include "primitives/percpu_alloc.h"
#include "primitives/percpu_stats.h"
#include "primitives/topology.h"
#include "primitives/u64_field.h"

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
  enum Item { kPackets, kBytes, kItems };
  auto rx = percpu::PerCpuU64Mib<kItems>::Create(**topo, **alloc);
  if (!rx.ok()) {
    std::fprintf(stderr, "%s\n", rx.status().ToString().c_str());
    return 1;
  }
  constexpr int kThreads = 3;
  constexpr uint64_t kPacketsPerThread = 50000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&rx] {
      for (uint64_t i = 0; i < kPacketsPerThread; ++i) {
        (*rx)->Add(kPackets, 1);
        (*rx)->Add(kBytes, 1500);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  std::array<uint64_t, kItems> totals;
  (*rx)->FoldAll(totals);
  const uint64_t want = kThreads * kPacketsPerThread;
  std::printf("cmake consumer: packets %llu, bytes %llu\n",
              static_cast<unsigned long long>(totals[kPackets]),
              static_cast<unsigned long long>(totals[kBytes]));
  if (totals[kPackets] != want || totals[kBytes] != 1500 * want) return 1;

  // The same totals published in a C struct that C code may read.
  struct rtnl_link_stats64 link {};
  percpu::U64StatsSync sync;
  {
    percpu::U64StatsUpdate<percpu::U64StatsSync> update(sync);
    percpu::U64FieldSet(link.rx_packets, totals[kPackets]);
    percpu::U64FieldSet(link.rx_bytes, totals[kBytes]);
  }
  const uint64_t rx_bytes = percpu::FetchConsistent(
      sync, [&] { return percpu::U64FieldRead(link.rx_bytes); });
  return link.rx_packets == want && rx_bytes == 1500 * want ? 0 : 1;
}
