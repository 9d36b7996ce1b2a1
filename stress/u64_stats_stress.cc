// Stress of U64Stat, U64StatsSync and U64StatsGroupSync with real threads.
//
// Each writer owns one slot. It adds random deltas (up to 2^26) so its
// counter crosses the 2^32 carry every ~100 updates, and keeps a second
// counter equal to 3x the first under the same group sync. Readers fold all
// slots continuously and check:
//   * a slot's value never goes backwards and never exceeds what its writer
//     had published when the read finished (no torn value: a torn read of a
//     counter that crosses 2^32 jumps by ~2^32 either way);
//   * under the group sync, mirror == 3 * value (consistent pair);
//   * the folded total never goes backwards;
// and at the end every total equals exactly what was written.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "primitives/u64_stats.h"
#include "stress/harness.h"

namespace percpu {
namespace stress {
namespace {

struct alignas(64) Slot {
  U64Stat value;          // covered by sync
  U64StatsSync sync;      // the kernel's: a seqcount only on 32-bit
  U64Stat grouped;        // covered by group_sync, with mirror
  U64Stat mirror;         // always 3 * grouped
  U64StatsGroupSync group_sync;
  // Written total, published after each update section.
  std::atomic<uint64_t> published{0};
};

void Stress(const Options& options, Reporter& reporter) {
  const int writers = options.threads;
  std::vector<Slot> slots(writers);
  std::atomic<bool> stop{false};
  std::vector<uint64_t> final_written(writers, 0);

  std::vector<std::thread> threads;
  for (int w = 0; w < writers; ++w) {
    threads.emplace_back([&, w] {
      Slot& slot = slots[w];
      Rng rng(options.seed * 1000003 + w);
      uint64_t written = 0;
      Deadline deadline(options.duration_ms);
      for (uint64_t op = 0; options.ops == 0 || op < options.ops; ++op) {
        if ((op & 255) == 0 && deadline.Passed()) break;
        const uint64_t delta = 1 + rng.Below(1ull << 26);
        slot.sync.UpdateBegin();
        slot.value.Add(delta);
        slot.sync.UpdateEnd();
        slot.group_sync.UpdateBegin();
        slot.grouped.Add(delta);
        slot.mirror.Add(3 * delta);
        slot.group_sync.UpdateEnd();
        written += delta;
        // Release: a reader that sees `written` also sees the updates.
        // Pairs with: acquire load of published in the reader.
        slot.published.store(written, std::memory_order_release);
        if (rng.Below(64) == 0) std::this_thread::yield();
      }
      final_written[w] = written;
    });
  }

  std::vector<std::thread> readers;
  for (int r = 0; r < 2; ++r) {
    readers.emplace_back([&] {
      std::vector<uint64_t> last(writers, 0);
      uint64_t last_total = 0;
      while (!stop.load(std::memory_order_relaxed) && !reporter.failed()) {
        uint64_t total = 0;
        for (int w = 0; w < writers; ++w) {
          const Slot& slot = slots[w];
          const uint64_t v =
              FetchConsistent(slot.sync, [&] { return slot.value.Read(); });
          uint64_t g, m;
          uint32_t start;
          do {
            start = slot.group_sync.FetchBegin();
            g = slot.grouped.Read();
            m = slot.mirror.Read();
          } while (slot.group_sync.FetchRetry(start));
          // Pairs with: release store of published by the writer.
          const uint64_t bound = slot.published.load(std::memory_order_acquire);
          // The writer may be one update (< 2^26) past what it published.
          const uint64_t slack = 1ull << 26;
          if (v < last[w] || v > bound + slack) {
            reporter.Fail("slot " + std::to_string(w) + ": value " +
                          std::to_string(v) + " after " +
                          std::to_string(last[w]) + ", published " +
                          std::to_string(bound));
          }
          if (m != 3 * g || g > bound + slack) {
            reporter.Fail("slot " + std::to_string(w) + ": group pair (" +
                          std::to_string(g) + ", " + std::to_string(m) +
                          ") inconsistent");
          }
          last[w] = std::max(last[w], v);
          total += v;
        }
        if (total < last_total) {
          reporter.Fail("folded total went backwards: " +
                        std::to_string(total) + " after " +
                        std::to_string(last_total));
        }
        last_total = std::max(last_total, total);
      }
    });
  }

  for (std::thread& t : threads) t.join();
  stop.store(true, std::memory_order_relaxed);
  for (std::thread& t : readers) t.join();

  for (int w = 0; w < writers; ++w) {
    const Slot& slot = slots[w];
    if (slot.value.Read() != final_written[w] ||
        slot.grouped.Read() != final_written[w] ||
        slot.mirror.Read() != 3 * final_written[w]) {
      reporter.Fail("slot " + std::to_string(w) + ": final value " +
                    std::to_string(slot.value.Read()) + " != written " +
                    std::to_string(final_written[w]));
    }
    if (final_written[w] < (1ull << 32)) {
      // Not a failure of the primitive, but the test did not do its job.
      reporter.Fail("slot " + std::to_string(w) +
                    " never crossed 2^32; raise --duration_ms");
    }
  }
}

}  // namespace
}  // namespace stress
}  // namespace percpu

int main(int argc, char** argv) {
  return percpu::stress::RunStress("u64_stats_stress", argc, argv,
                                   &percpu::stress::Stress);
}
