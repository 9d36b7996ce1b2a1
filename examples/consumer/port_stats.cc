// A consumer of @percpu//primitives:u64_field: a port's rx counters kept in
// the kernel ABI's C struct (struct rtnl_link_stats64, fields stay __u64),
// written by one thread and read consistently by another. Exits non-zero if
// a read was inconsistent or the totals are wrong.
#include <linux/if_link.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <thread>
#include <utility>

#include "primitives/u64_field.h"

int main() {
  struct Port {
    struct rtnl_link_stats64 stats;
    percpu::U64StatsGroupSync sync;  // (packets, bytes) of one moment
  } port{};
  constexpr uint64_t kPackets = 200000;
  constexpr uint64_t kLen = 1500;
  std::atomic<bool> done{false};
  uint64_t inconsistent = 0;
  std::thread reader([&] {
    while (!done.load(std::memory_order_acquire)) {
      const auto [packets, bytes] = percpu::FetchConsistent(port.sync, [&] {
        return std::make_pair(percpu::U64FieldRead(port.stats.rx_packets),
                              percpu::U64FieldRead(port.stats.rx_bytes));
      });
      if (bytes != packets * kLen) ++inconsistent;
    }
  });
  for (uint64_t i = 0; i < kPackets; ++i) {
    percpu::U64StatsUpdate<percpu::U64StatsGroupSync> update(port.sync);
    percpu::U64FieldInc(port.stats.rx_packets);
    percpu::U64FieldAdd(port.stats.rx_bytes, kLen);
  }
  done.store(true, std::memory_order_release);
  reader.join();
  std::printf("rx_packets %llu, rx_bytes %llu, inconsistent reads %llu\n",
              static_cast<unsigned long long>(port.stats.rx_packets),
              static_cast<unsigned long long>(port.stats.rx_bytes),
              static_cast<unsigned long long>(inconsistent));
  return inconsistent == 0 && port.stats.rx_packets == kPackets &&
                 port.stats.rx_bytes == kPackets * kLen
             ? 0
             : 1;
}
