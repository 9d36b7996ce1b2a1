// A network device's per-CPU rx/tx statistics, the way a driver keeps them:
// each "CPU" (here a writer thread that owns one slot) counts the packets and
// bytes it receives and transmits in its own cache line, with no lock and no
// lock-prefixed instruction; a reader (like `ip -s link`) folds all slots
// into consistent totals while the writers run.
//
// At the end the program checks that the folded totals equal exactly what
// the writers counted, and exits non-zero if they do not.
//
//   bazel run //examples:netdev_stats -- [writers] [packets_per_writer]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <thread>
#include <vector>

#include "primitives/u64_stats.h"

namespace {

// One CPU's counters. alignas(64): each slot has its own cache line so the
// writers never share one (64 bytes is the L1 line size of x86_64 and of
// the common ARM64 cores).
struct alignas(64) NetStatsSlot {
  percpu::U64Stat rx_packets;
  percpu::U64Stat rx_bytes;
  percpu::U64Stat tx_packets;
  percpu::U64Stat tx_bytes;
  // Group sync: packets and bytes of one direction are read as a pair.
  percpu::U64StatsGroupSync sync;
};

struct Totals {
  uint64_t rx_packets = 0, rx_bytes = 0, tx_packets = 0, tx_bytes = 0;
};

Totals Fold(const std::vector<NetStatsSlot>& slots) {
  Totals totals;
  for (const NetStatsSlot& slot : slots) {
    const Totals one = percpu::FetchConsistent(slot.sync, [&] {
      Totals t;
      t.rx_packets = slot.rx_packets.Read();
      t.rx_bytes = slot.rx_bytes.Read();
      t.tx_packets = slot.tx_packets.Read();
      t.tx_bytes = slot.tx_bytes.Read();
      return t;
    });
    totals.rx_packets += one.rx_packets;
    totals.rx_bytes += one.rx_bytes;
    totals.tx_packets += one.tx_packets;
    totals.tx_bytes += one.tx_bytes;
  }
  return totals;
}

// A deterministic packet-size pattern (64..1518 bytes, Ethernet's range).
uint64_t PacketSize(uint64_t seed) { return 64 + (seed * 2654435761u) % 1455; }

}  // namespace

int main(int argc, char** argv) {
  const int writers = argc > 1 ? std::max(1, std::atoi(argv[1])) : 4;
  const uint64_t packets =
      argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 2000000;

  std::vector<NetStatsSlot> slots(writers);
  std::vector<Totals> expected(writers);
  std::atomic<int> running{writers};

  std::vector<std::thread> threads;
  for (int cpu = 0; cpu < writers; ++cpu) {
    threads.emplace_back([&, cpu] {
      NetStatsSlot& slot = slots[cpu];
      Totals mine;
      for (uint64_t i = 0; i < packets; ++i) {
        const uint64_t size = PacketSize(i + cpu);
        percpu::U64StatsUpdate<percpu::U64StatsGroupSync> update(slot.sync);
        if (i % 3 == 0) {
          slot.tx_packets.Inc();
          slot.tx_bytes.Add(size);
          ++mine.tx_packets;
          mine.tx_bytes += size;
        } else {
          slot.rx_packets.Inc();
          slot.rx_bytes.Add(size);
          ++mine.rx_packets;
          mine.rx_bytes += size;
        }
      }
      expected[cpu] = mine;
      // Release: publishes `expected[cpu]` to the main thread.
      // Pairs with: acquire load of running in the reader loop below.
      running.fetch_sub(1, std::memory_order_release);
    });
  }

  std::printf("%d writer threads, %" PRIu64 " packets each\n", writers,
              packets);
  Totals last;
  int backwards = 0;
  // Pairs with: release fetch_sub of running by each writer.
  while (running.load(std::memory_order_acquire) > 0) {
    const Totals now = Fold(slots);
    if (now.rx_packets < last.rx_packets || now.rx_bytes < last.rx_bytes ||
        now.tx_packets < last.tx_packets || now.tx_bytes < last.tx_bytes) {
      ++backwards;
    }
    std::printf("  rx %12" PRIu64 " pkts %15" PRIu64 " bytes   tx %12" PRIu64
                " pkts %15" PRIu64 " bytes\n",
                now.rx_packets, now.rx_bytes, now.tx_packets, now.tx_bytes);
    last = now;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  for (std::thread& t : threads) t.join();

  Totals want;
  for (const Totals& t : expected) {
    want.rx_packets += t.rx_packets;
    want.rx_bytes += t.rx_bytes;
    want.tx_packets += t.tx_packets;
    want.tx_bytes += t.tx_bytes;
  }
  const Totals got = Fold(slots);
  std::printf("final: rx %" PRIu64 " pkts %" PRIu64 " bytes, tx %" PRIu64
              " pkts %" PRIu64 " bytes (%s path)\n",
              got.rx_packets, got.rx_bytes, got.tx_packets, got.tx_bytes,
              percpu::kU64StatsUseSeqcount ? "32-bit seqcount" : "64-bit");
  const bool equal = got.rx_packets == want.rx_packets &&
                     got.rx_bytes == want.rx_bytes &&
                     got.tx_packets == want.tx_packets &&
                     got.tx_bytes == want.tx_bytes &&
                     want.rx_packets + want.tx_packets == packets * writers;
  if (!equal || backwards != 0) {
    std::printf("FAIL: folded totals differ from what was written "
                "(or went backwards %d times)\n", backwards);
    return 1;
  }
  std::printf("OK: folded totals equal what the %d writers counted; no total "
              "ever went backwards\n", writers);
  return 0;
}
