#include "primitives/lazy_percpu.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <new>
#include <thread>
#include <vector>

#include "doctest/doctest.h"
#include "primitives/internal/test_work.h"

namespace percpu {
namespace {

// An allocator that fails for chosen CPUs (or always) and counts calls.
struct FaultyAllocator {
  std::atomic<int> allocations{0};
  std::atomic<int> frees{0};
  std::atomic<int> fail_cpu{-2};   // -1: fail every CPU, -2: never fail
  std::atomic<bool> fail_slot0{false};

  LazySlotAllocator Get() {
    LazySlotAllocator a;
    a.ctx = this;
    a.allocate = [](void* ctx, size_t size, size_t align, int cpu) -> void* {
      auto* self = static_cast<FaultyAllocator*>(ctx);
      const int f = self->fail_cpu.load();
      if (cpu == 0 && self->fail_slot0.load()) return nullptr;
      if (cpu != 0 && (f == -1 || f == cpu)) return nullptr;
      self->allocations.fetch_add(1);
      return ::operator new(size, std::align_val_t(align), std::nothrow);
    };
    a.free = [](void* ctx, void* p, size_t, size_t align) {
      static_cast<FaultyAllocator*>(ctx)->frees.fetch_add(1);
      ::operator delete(p, std::align_val_t(align));
    };
    return a;
  }
};

TEST_CASE("Create validates its arguments") {
  auto bad = FlowStats::Create(0);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().code() == StatusCode::kInvalidArgument);
  CHECK(bad.status().message().find("num_possible 0") != std::string::npos);
  CHECK(FlowStats::Create(8193).status().code() ==
        StatusCode::kInvalidArgument);
  LazySlotAllocator null_alloc;
  CHECK(FlowStats::Create(4, null_alloc).status().code() ==
        StatusCode::kInvalidArgument);

  FaultyAllocator fa;
  fa.fail_slot0 = true;
  auto no_slot0 = FlowStats::Create(4, fa.Get());
  REQUIRE_FALSE(no_slot0.ok());
  CHECK(no_slot0.status().code() == StatusCode::kResourceExhausted);
}

TEST_CASE("slot 0 is preallocated, others appear on a CPU's first write") {
  FaultyAllocator fa;
  {
    auto s = FlowStats::Create(130, fa.Get());
    REQUIRE(s.ok());
    FlowStats& st = **s;
    CHECK(fa.allocations == 1);
    CHECK(st.HasSlot(0));
    CHECK_FALSE(st.HasSlot(5));
    CHECK_FALSE(st.HasSlot(-1));
    CHECK_FALSE(st.HasSlot(130));
    CHECK(st.AllocatedCount() == 1);

    st.Update(5, 100, 10, 0x02);
    st.Update(5, 50, 12, 0x10);
    st.Update(129, 7, 11, 0x01);  // a CPU in the third bitmap word
    st.Update(0, 1, 3, 0);
    CHECK(st.HasSlot(5));
    CHECK(st.HasSlot(129));
    CHECK(st.AllocatedCount() == 3);
    CHECK(fa.allocations == 3);

    const FlowStatsValues v = st.Read();
    CHECK(v.packets == 4);
    CHECK(v.bytes == 158);
    CHECK(v.used == 12);
    CHECK(v.tcp_flags == 0x13);

    std::vector<int> cpus;
    st.ForEachAllocated([&](int cpu, const FlowStatsSlot&) {
      cpus.push_back(cpu);
    });
    CHECK(cpus == std::vector<int>{0, 5, 129});
    CHECK(st.fallback_updates() == 0);

    CHECK(st.UpdateChecked(130, 1, 1, 0).code() == StatusCode::kOutOfRange);
    CHECK(st.UpdateChecked(-1, 1, 1, 0).code() == StatusCode::kOutOfRange);
    CHECK(st.UpdateChecked(2, 1, 1, 0).ok());
    CHECK(st.Read().packets == 5);
  }
  // Every slot freed with the flow.
  CHECK(fa.frees == fa.allocations);
  CHECK(fa.frees == 4);
}

TEST_CASE("allocation failure on first write falls back to slot 0") {
  FaultyAllocator fa;
  auto s = FlowStats::Create(8, fa.Get());
  REQUIRE(s.ok());
  FlowStats& st = **s;
  fa.fail_cpu = 3;
  for (int i = 0; i < 10; ++i) st.Update(3, 10, i, 0);
  CHECK_FALSE(st.HasSlot(3));
  CHECK(st.fallback_updates() == 10);
  CHECK(st.Read().packets == 10);
  CHECK(st.Read().bytes == 100);
  // The allocator recovers: the next write allocates, nothing was lost.
  fa.fail_cpu = -2;
  st.Update(3, 10, 99, 0);
  CHECK(st.HasSlot(3));
  const FlowStatsValues v = st.Read();
  CHECK(v.packets == 11);
  CHECK(v.bytes == 110);
  CHECK(v.used == 99);
}

TEST_CASE("concurrent writers, some falling back to slot 0, lose nothing") {
  constexpr int kCpus = 4;
  constexpr int kPerCpu = 20000;
  FaultyAllocator fa;
  fa.fail_cpu = 2;  // CPU 2 always falls back and shares slot 0 with CPU 0
  auto s = FlowStats::Create(kCpus, fa.Get());
  REQUIRE(s.ok());
  FlowStats& st = **s;
  std::atomic<bool> stop{false};
  std::atomic<bool> backwards{false};
  std::thread reader([&] {
    uint64_t last_packets = 0, last_bytes = 0;
    while (!stop.load()) {
      const FlowStatsValues v = st.Read();
      if (v.packets < last_packets || v.bytes < last_bytes) backwards = true;
      last_packets = v.packets;
      last_bytes = v.bytes;
    }
  });
  std::vector<std::thread> writers;
  for (int cpu = 0; cpu < kCpus; ++cpu) {
    writers.emplace_back([&, cpu] {
      for (int i = 0; i < kPerCpu; ++i) st.Update(cpu, 3, i, 1u << cpu);
    });
  }
  for (auto& t : writers) t.join();
  stop = true;
  reader.join();
  CHECK_FALSE(backwards.load());
  const FlowStatsValues v = st.Read();
  CHECK(v.packets == uint64_t{kCpus} * kPerCpu);
  CHECK(v.bytes == uint64_t{3} * kCpus * kPerCpu);
  CHECK(v.used == kPerCpu - 1);
  CHECK(v.tcp_flags == 0xf);
  CHECK(st.fallback_updates() == kPerCpu);
  CHECK_FALSE(st.HasSlot(2));
  CHECK(st.AllocatedCount() == 3);
}

TEST_CASE("readers racing slot publication see initialized slots only") {
  // Slots come from poisoned memory (0xAB bytes): a reader that saw a slot
  // pointer before the slot's zero-initialization would add ~0xABAB... to
  // the totals. Totals must stay within what was written.
  constexpr int kCpus = 64;
  LazySlotAllocator poisoned;
  poisoned.allocate = [](void*, size_t size, size_t align, int) -> void* {
    void* p = ::operator new(size, std::align_val_t(align), std::nothrow);
    if (p != nullptr) std::memset(p, 0xAB, size);
    return p;
  };
  poisoned.free = [](void*, void* p, size_t, size_t align) {
    ::operator delete(p, std::align_val_t(align));
  };
  for (int round = 0; round < 50; ++round) {
    auto s = FlowStats::Create(kCpus, poisoned);
    REQUIRE(s.ok());
    FlowStats& st = **s;
    std::atomic<int> started{0};
    std::atomic<int> finished{0};
    std::atomic<bool> done{false};
    std::atomic<bool> bad{false};
    std::thread reader([&] {
      while (!done.load()) {
        const int lo = finished.load();  // updates surely complete
        const FlowStatsValues v = st.Read();
        const int hi = started.load();   // updates possibly visible
        if (v.packets < static_cast<uint64_t>(lo) ||
            v.packets > static_cast<uint64_t>(hi) ||
            v.bytes > static_cast<uint64_t>(hi) || v.tcp_flags != 0) {
          bad = true;
        }
      }
    });
    std::vector<std::thread> writers;
    for (int w = 0; w < 2; ++w) {
      writers.emplace_back([&, w] {
        for (int cpu = w; cpu < kCpus; cpu += 2) {
          started.fetch_add(1);
          st.Update(cpu, 1, 1, 0);
          finished.fetch_add(1);
        }
      });
    }
    for (auto& t : writers) t.join();
    done = true;
    reader.join();
    CHECK_FALSE(bad.load());
    CHECK(st.Read().packets == kCpus);
    CHECK(st.Read().bytes == kCpus);
    CHECK(st.AllocatedCount() == kCpus);
  }
}

}  // namespace
}  // namespace percpu

namespace percpu {
namespace {

// Issue 12 item 4: Update(sched_getcpu(), ...) from 4 threads, 2,000,000
// updates each, is exact (the claimed slot or the shared slot 0).
TEST_CASE("FlowStats: Update(sched_getcpu(), ...) from 4 threads is exact") {
  const int n = std::max(64, static_cast<int>(std::thread::hardware_concurrency()));
  auto stats = std::move(*FlowStats::Create(n));
  const int updates = testing::Work(2000000);
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t) {
    ts.emplace_back([&] {
      for (int i = 0; i < updates; ++i) {
        stats->Update(sched_getcpu(), 3, static_cast<uint64_t>(i), 0);
      }
    });
  }
  for (auto& t : ts) t.join();
  const FlowStatsValues v = stats->Read();
  CHECK(v.packets == 4 * uint64_t(updates));
  CHECK(v.bytes == 12 * uint64_t(updates));
  CHECK(v.used == uint64_t(updates) - 1);
}

// Racing first writers of one id publish one slot (the loser frees its
// own): nothing lost, no slot leaked (ASan builds would report it).
TEST_CASE("FlowStats: first writers of one CPU id race") {
  for (int round = 0; round < 200; ++round) {
    auto stats = std::move(*FlowStats::Create(4));
    std::vector<std::thread> ts;
    for (int t = 0; t < 4; ++t) {
      ts.emplace_back([&] {
        for (int i = 0; i < 100; ++i) stats->Update(3, 1, 1, 0);
      });
    }
    for (auto& t : ts) t.join();
    REQUIRE(stats->Read().packets == 400);
    REQUIRE(stats->AllocatedCount() == 2);
  }
}

}  // namespace
}  // namespace percpu
