// The README's first "Use" block, verbatim between the markers, run as
// //examples:readme_u64_stats (//examples:doc_snippets_test checks that
// the README still shows exactly this code). Exits non-zero if the folded
// counts differ from what was written.
#include <cstdint>
#include <cstdio>
#include <thread>
#include <vector>

// --- README block begins
#include "primitives/u64_stats.h"

struct alignas(64) RxStats {            // one per CPU or per writer thread
  percpu::U64Stat packets, bytes;
  percpu::U64StatsSync sync;            // a seqcount only where u64 is 2 words
};

// Writer (the slot's only writer):
void CountPacket(RxStats& slot, uint64_t len) {
  percpu::U64StatsUpdate<percpu::U64StatsSync> update(slot.sync);
  slot.packets.Inc();
  slot.bytes.Add(len);
}

// Reader (any thread):
uint64_t Packets(const RxStats& slot) {
  return percpu::FetchConsistent(slot.sync, [&] { return slot.packets.Read(); });
}
// --- README block ends

int main() {
  constexpr int kWriters = 2;
  constexpr uint64_t kPackets = 100000;
  std::vector<RxStats> slots(kWriters);
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&slots, w] {
      for (uint64_t i = 0; i < kPackets; ++i) CountPacket(slots[w], 64);
    });
  }
  for (std::thread& t : writers) t.join();
  uint64_t packets = 0, bytes = 0;
  for (const RxStats& slot : slots) {
    packets += Packets(slot);
    bytes += percpu::FetchConsistent(slot.sync, [&] { return slot.bytes.Read(); });
  }
  std::printf("packets %llu, bytes %llu\n",
              static_cast<unsigned long long>(packets),
              static_cast<unsigned long long>(bytes));
  return packets == kWriters * kPackets && bytes == 64 * packets ? 0 : 1;
}
