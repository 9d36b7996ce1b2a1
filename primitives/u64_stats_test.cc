#include "primitives/u64_stats.h"

#include <atomic>
#include <cstdint>
#include <thread>
#include <type_traits>

#include "doctest/doctest.h"
#include "primitives/internal/test_work.h"

namespace percpu {
namespace {

TEST_CASE("the seqcount path is used exactly where a u64 is two words") {
#if defined(PERCPU_FORCE_SEQCOUNT)
  CHECK(kU64StatsUseSeqcount);
#else
  CHECK(kU64StatsUseSeqcount == (sizeof(void*) == 4));
#endif
  CHECK(sizeof(U64Stat) == 8);
  // The kernel's u64_stats_sync is empty on 64-bit; so is ours.
  CHECK(std::is_empty<U64StatsSync>::value == !kU64StatsUseSeqcount);
  CHECK_FALSE(std::is_empty<U64StatsGroupSync>::value);
}

TEST_CASE("set, add, inc, sub and read") {
  U64StatsSync sync;
  U64Stat stat;
  CHECK(stat.Read() == 0);
  sync.UpdateBegin();
  stat.Add(5);
  stat.Inc();
  sync.UpdateEnd();
  CHECK(stat.Read() == 6);
  {
    U64StatsUpdate<U64StatsSync> update(sync);
    stat.Sub(2);
  }
  CHECK(stat.Read() == 4);
  sync.UpdateBegin();
  stat.Set(0xffffffffull);
  stat.Inc();  // carries into the high word
  sync.UpdateEnd();
  CHECK(stat.Read() == 0x100000000ull);
  sync.UpdateBegin();
  stat.Set(~0ull);
  stat.Inc();  // wraps modulo 2^64
  sync.UpdateEnd();
  CHECK(stat.Read() == 0);
  sync.UpdateBegin();
  stat.Sub(1);
  sync.UpdateEnd();
  CHECK(stat.Read() == ~0ull);
  const U64Stat initial(42);
  CHECK(initial.Read() == 42);
}

TEST_CASE("an update section moves the sequence only on the seqcount path") {
  U64StatsSync sync;
  const uint32_t start = sync.FetchBegin();
  sync.UpdateBegin();
  sync.UpdateEnd();
  CHECK(sync.FetchRetry(start) == kU64StatsUseSeqcount);

  U64StatsGroupSync group;
  const uint32_t group_start = group.FetchBegin();
  group.UpdateBegin();
  group.UpdateEnd();
  CHECK(group.FetchRetry(group_start));
}

// The writer walks the counter across the 2^32 carry again and again: from
// k * 2^32 - kWindow up to k * 2^32 + kWindow, then on to the next k. Every
// value written has its low word within kWindow of the carry. A torn read
// (old high word with new low word, or the reverse) yields a value that is
// either not of that form or smaller than one read before.
TEST_CASE("no torn or backwards value across the 2^32 carry") {
  constexpr uint64_t kWindow = 64;
  constexpr uint64_t kCarries = 2000;
  U64StatsSync sync;
  U64Stat stat;
  std::atomic<uint64_t> published{0};
  std::atomic<bool> done{false};

  std::thread writer([&] {
    for (uint64_t k = 1; k <= kCarries; ++k) {
      const uint64_t base = (k << 32) - kWindow;
      sync.UpdateBegin();
      stat.Set(base);
      sync.UpdateEnd();
      for (uint64_t i = 0; i < 2 * kWindow; ++i) {
        sync.UpdateBegin();
        stat.Inc();
        sync.UpdateEnd();
      }
      // Release: the reader's acquire load below then bounds what it read.
      // Pairs with: acquire load of published in the reader loop.
      published.store(stat.Read(), std::memory_order_release);  // Pairs with: acquire load below.
    }
    done.store(true, std::memory_order_release);  // Pairs with: acquire load of done below.
  });

  uint64_t reads = 0;
  uint64_t last = 0;
  bool ok = true;
  for (;;) {
    const bool finished = done.load(std::memory_order_acquire);  // Pairs with: release store of done.
    const uint64_t value =
        FetchConsistent(sync, [&] { return stat.Read(); });
    // Acquire: every value the writer had published is at most its latest.
    // Pairs with: release store of published in the writer.
    const uint64_t bound_after = published.load(std::memory_order_acquire);  // Pairs with: release store above.
    const uint64_t low = value & 0xffffffffull;
    const bool near_carry =
        value == 0 || low >= (1ull << 32) - kWindow || low <= kWindow;
    // The writer is at most one carry ahead of what it published last.
    const uint64_t bound = (bound_after == 0 ? kWindow : bound_after) + (1ull << 32);
    if (!near_carry || value < last || value > bound) {
      ok = false;
      FAIL_CHECK("torn or backwards value " << value << " after " << last);
      break;
    }
    last = value;
    ++reads;
    if (finished) break;
  }
  writer.join();
  CHECK(ok);
  CHECK(reads > 0);
  CHECK(stat.Read() == (kCarries << 32) + kWindow);
}

// Packets and bytes under one group sync: every packet carries 100 bytes,
// so a consistent snapshot always has bytes == 100 * packets.
TEST_CASE("a group sync gives a consistent packets/bytes pair") {
  U64StatsGroupSync sync;
  U64Stat packets;
  U64Stat bytes;
  std::atomic<bool> done{false};
  const uint64_t kPackets = testing::Work(uint64_t{300000});

  std::thread writer([&] {
    for (uint64_t i = 0; i < kPackets; ++i) {
      U64StatsUpdate<U64StatsGroupSync> update(sync);
      packets.Inc();
      bytes.Add(100);
    }
    done.store(true, std::memory_order_relaxed);
  });

  uint64_t inconsistent = 0;
  uint64_t reads = 0;
  while (!done.load(std::memory_order_relaxed)) {
    uint64_t p, b;
    uint32_t start;
    do {
      start = sync.FetchBegin();
      p = packets.Read();
      b = bytes.Read();
    } while (sync.FetchRetry(start));
    if (b != 100 * p) ++inconsistent;
    ++reads;
  }
  writer.join();
  CHECK(inconsistent == 0);
  CHECK(reads > 0);
  CHECK(packets.Read() == kPackets);
  CHECK(bytes.Read() == 100 * kPackets);
}

}  // namespace
}  // namespace percpu
