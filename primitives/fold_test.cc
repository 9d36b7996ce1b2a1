#include "primitives/fold.h"

#include <sched.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <thread>
#include <vector>

#include "doctest/doctest.h"
#include "primitives/internal/test_env.h"
#include "primitives/internal/test_work.h"
#include "primitives/percpu_alloc.h"
#include "primitives/percpu_mib.h"
#include "primitives/topology.h"

// Counts this thread's heap allocations, to prove the folds never allocate.
namespace {
thread_local uint64_t t_heap_allocations = 0;
}  // namespace

[[gnu::noinline]] void* operator new(std::size_t size) {
  ++t_heap_allocations;
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t size) { return ::operator new(size); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  ++t_heap_allocations;
  return std::malloc(size == 0 ? 1 : size);
}
void* operator new[](std::size_t size, const std::nothrow_t& nt) noexcept {
  return ::operator new(size, nt);
}
void* operator new(std::size_t size, std::align_val_t align) {
  ++t_heap_allocations;
  const std::size_t a = static_cast<std::size_t>(align);
  if (void* p = std::aligned_alloc(a, (size + a - 1) / a * a)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t size, std::align_val_t align) {
  return ::operator new(size, align);
}
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}
[[gnu::noinline]] void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

namespace percpu {
namespace {

using testing::Env;
using testing::MakeEnv;

template <size_t N>
void MibAdd(U64StatMib<N>& m, size_t item, uint64_t delta) {
  m.syncp.UpdateBegin();
  m.items[item].Add(delta);
  m.syncp.UpdateEnd();
}

// A value that differs per (cpu, item) and needs the high word on 32-bit.
uint64_t Val(int cpu, size_t item) {
  return (static_cast<uint64_t>(cpu + 1) << 33) + uint64_t{item} * 1000 + 7 * cpu + 1;
}

template <size_t N>
void CheckFoldOrdersAgree() {
  Env env = MakeEnv(/*possible=*/10, /*present=*/7, /*online=*/4);
  auto p = env.alloc->Allocate<U64StatMib<N>>();
  REQUIRE(p.ok());
  const PerCpuPtr<U64StatMib<N>> mibs = *p;
  env.topo->ForEachPresent([&](int cpu) {
    for (size_t i = 0; i < N; ++i) MibAdd(*mibs.on(cpu), i, Val(cpu, i));
  });

  std::array<uint64_t, N> present{}, online{}, possible{}, mask{};
  FoldAll(mibs, PresentCpus(*env.topo), present);
  FoldAll(mibs, OnlineCpus(*env.topo), online);
  FoldAllPossibleBaseline(mibs, env.topo->num_possible(), possible);
  FoldAll(mibs, env.topo->online(), mask);  // a CpuMask is a CPU set too
  for (size_t i = 0; i < N; ++i) {
    uint64_t want_present = 0, want_online = 0;
    for (int cpu = 0; cpu < 7; ++cpu) want_present += Val(cpu, i);
    for (int cpu = 0; cpu < 4; ++cpu) want_online += Val(cpu, i);
    CHECK(present[i] == want_present);
    CHECK(online[i] == want_online);
    CHECK(mask[i] == want_online);
    // Absent CPUs hold zeros: the possible baseline equals the present fold.
    CHECK(possible[i] == want_present);
    CHECK(FoldField(mibs, PresentCpus(*env.topo), i) == want_present);
    CHECK(FoldField(mibs, OnlineCpus(*env.topo), i) == want_online);
  }
  // FoldAll accumulates: a second fold into the same buffer doubles it.
  FoldAll(mibs, OnlineCpus(*env.topo), online.data());
  for (size_t i = 0; i < N; ++i) {
    uint64_t want_online = 0;
    for (int cpu = 0; cpu < 4; ++cpu) want_online += Val(cpu, i);
    CHECK(online[i] == 2 * want_online);
  }
  CHECK(env.alloc->Free(mibs).ok());
}

TEST_CASE("item-major, cpu-major, online, present and possible folds agree") {
  CheckFoldOrdersAgree<1>();
  CheckFoldOrdersAgree<5>();
  CheckFoldOrdersAgree<kFoldChunk>();
  CheckFoldOrdersAgree<2 * kFoldChunk + 3>();  // several chunks on 32-bit
}

TEST_CASE("plain atomic folds agree") {
  Env env = MakeEnv(6, 6, 5);
  constexpr size_t kN = 9;
  auto p = env.alloc->AllocateArray<internal::Atomic<uint64_t>>(kN);
  REQUIRE(p.ok());
  const auto arr = *p;
  for (int cpu = 0; cpu < 6; ++cpu) {
    for (size_t i = 0; i < kN; ++i) arr.on(cpu)[i].store(Val(cpu, i));
  }
  uint64_t all[kN] = {};
  FoldAllAtomic(arr, kN, OnlineCpus(*env.topo), all);
  for (size_t i = 0; i < kN; ++i) {
    uint64_t want = 0;
    for (int cpu = 0; cpu < 5; ++cpu) want += Val(cpu, i);
    CHECK(all[i] == want);
    CHECK(FoldFieldAtomic(arr, OnlineCpus(*env.topo), i) == want);
    CHECK(FoldFieldAtomic(arr, PresentCpus(*env.topo), i) ==
          want + Val(5, i));
  }
  CHECK(env.alloc->Free(arr).ok());
}

TEST_CASE("folds and MIB reads never touch the heap") {
  Env env = MakeEnv(8, 8, 8);
  constexpr size_t kN = 2 * kFoldChunk + 1;
  auto p = env.alloc->Allocate<U64StatMib<kN>>();
  REQUIRE(p.ok());
  auto mib = LcoreStats<kN>::Create(*env.topo, *env.alloc);
  REQUIRE(mib.ok());
  (*mib)->Add(3, 4, 5);
  std::array<uint64_t, kN> out{};
  uint64_t sink = 0;

  const uint64_t before = t_heap_allocations;
  FoldAll(*p, OnlineCpus(*env.topo), out);
  FoldAll(*p, PresentCpus(*env.topo), out);
  sink += FoldField(*p, OnlineCpus(*env.topo), 3);
  (*mib)->Snapshot(out);
  (*mib)->FoldInto(out.data());
  sink += (*mib)->Read(4);
  const uint64_t after = t_heap_allocations;

  CHECK(after == before);
  CHECK(sink == 5);
  // The counter itself works: one allocation is seen.
  ::operator delete(::operator new(16));
  CHECK(t_heap_allocations == after + 1);
  CHECK(env.alloc->Free(*p).ok());
}

TEST_CASE("LcoreStats: add, read, checked errors") {
  Env env = MakeEnv(8, 6, 4);
  auto m = LcoreStats<3>::Create(*env.topo, *env.alloc);
  REQUIRE(m.ok());
  LcoreStats<3>& mib = **m;
  mib.Add(0, 0, 10);
  mib.Inc(1, 0);
  mib.Add(3, 2, uint64_t{1} << 40);
  CHECK(mib.Read(0) == 11);
  CHECK(mib.Read(1) == 0);
  CHECK(mib.Read(2) == uint64_t{1} << 40);

  CHECK(mib.AddChecked(8, 0, 1).code() == StatusCode::kOutOfRange);
  CHECK(mib.AddChecked(-1, 0, 1).code() == StatusCode::kOutOfRange);
  Status bad_item = mib.AddChecked(0, 3, 1);
  CHECK(bad_item.code() == StatusCode::kOutOfRange);
  CHECK(bad_item.message().find("item 3") != std::string::npos);
  Status offline = mib.AddChecked(5, 0, 1);  // present, not online
  CHECK(offline.code() == StatusCode::kFailedPrecondition);
  CHECK(offline.message().find("cpu 5") != std::string::npos);
  CHECK(mib.AddChecked(2, 1, 4).ok());
  CHECK(mib.Read(1) == 4);
}

TEST_CASE("LcoreStats: offline/online cycles lose and double nothing") {
  Env env = MakeEnv(8, 8, 8);
  constexpr size_t kN = 4;
  auto m = LcoreStats<kN>::Create(*env.topo, *env.alloc);
  REQUIRE(m.ok());
  LcoreStats<kN>& mib = **m;
  std::array<uint64_t, kN> want{};
  for (int round = 0; round < 20; ++round) {
    env.topo->ForEachOnline([&](int cpu) {
      for (size_t i = 0; i < kN; ++i) {
        const uint64_t d = Val(cpu, i) + round;
        mib.Add(cpu, i, d);
        want[i] += d;
      }
    });
    const int victim = 1 + round % 7;
    REQUIRE(env.topo->Offline(victim).ok());
    std::array<uint64_t, kN> snap{}, present{};
    mib.Snapshot(snap);
    mib.SnapshotPresent(present);
    CHECK(snap == want);
    CHECK(present == want);
    // The dying CPU's block is empty; its counts live in the accumulator.
    for (size_t i = 0; i < kN; ++i) {
      CHECK(mib.blocks().on(victim)->items[i].Read() == 0);
      CHECK(mib.Read(i) == want[i]);
    }
    if (round % 3 != 2) REQUIRE(env.topo->Online(victim).ok());
    mib.Snapshot(snap);
    CHECK(snap == want);
  }
  uint64_t acc_total = 0;
  for (size_t i = 0; i < kN; ++i) acc_total += mib.accumulated(i);
  CHECK(acc_total > 0);
}

TEST_CASE("LcoreStats survives hot-remove and hot-add of a CPU") {
  Env env = MakeEnv(8, 8, 8);
  auto m = LcoreStats<2>::Create(*env.topo, *env.alloc);
  REQUIRE(m.ok());
  LcoreStats<2>& mib = **m;
  mib.Add(6, 1, 100);
  REQUIRE(env.topo->Offline(6).ok());
  REQUIRE(env.topo->SetAbsent(6).ok());   // the allocator releases its units
  CHECK(mib.Read(1) == 100);
  REQUIRE(env.topo->SetPresent(6).ok());  // and re-zeroes them
  REQUIRE(env.topo->Online(6).ok());
  mib.Add(6, 1, 1);
  CHECK(mib.Read(1) == 101);
}

TEST_CASE("a destroyed LcoreStats is no longer called back") {
  Env env = MakeEnv(4, 4, 4);
  {
    auto m = LcoreStats<2>::Create(*env.topo, *env.alloc);
    REQUIRE(m.ok());
    (*m)->Add(2, 0, 1);
  }
  // Would touch freed memory (and fail under ASan) if still registered.
  CHECK(env.topo->Offline(2).ok());
  CHECK(env.topo->Online(2).ok());
}

// Writers own one CPU each; the hotplug thread quiesces a writer before
// offlining its CPU (handshake gives happens-before from the writer's last
// Add to Offline()), and releases it after onlining. A reader snapshots
// continuously and checks that no item ever goes backwards.
TEST_CASE("reader racing offline/online never sees totals go backwards") {
  constexpr int kCpus = 4;
  constexpr size_t kN = 3;
  Env env = MakeEnv(kCpus, kCpus, kCpus);
  auto m = LcoreStats<kN>::Create(*env.topo, *env.alloc);
  REQUIRE(m.ok());
  LcoreStats<kN>& mib = **m;

  struct Ctl {
    std::atomic<bool> pause_req{false};
    std::atomic<bool> paused{false};
    std::array<uint64_t, kN> written{};  // read after join
  };
  std::array<Ctl, kCpus> ctl;
  std::atomic<bool> stop{false};
  std::atomic<bool> backwards{false};
  std::atomic<uint64_t> snapshots{0};
  std::atomic<uint64_t> events{0};

  std::vector<std::thread> threads;
  for (int cpu = 0; cpu < kCpus; ++cpu) {
    threads.emplace_back([&, cpu] {
      Ctl& c = ctl[cpu];
      uint64_t i = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        if (c.pause_req.load(std::memory_order_acquire)) {  // Pairs with: release store of pause_req by the hotplug thread.
          c.paused.store(true, std::memory_order_release);  // Pairs with: acquire load of paused by the hotplug thread; orders this CPU's Adds before Offline().
          while (c.pause_req.load(std::memory_order_acquire) &&  // Pairs with: release store of false by the hotplug thread.
                 !stop.load(std::memory_order_relaxed)) {
            std::this_thread::yield();
          }
          c.paused.store(false, std::memory_order_release);  // Pairs with: acquire load of paused by the hotplug thread.
          continue;
        }
        const size_t item = i % kN;
        const uint64_t delta = 1 + (i % 5);
        mib.Add(cpu, item, delta);
        c.written[item] += delta;
        ++i;
      }
    });
  }
  std::thread reader([&] {
    std::array<uint64_t, kN> last{}, snap{};
    while (!stop.load(std::memory_order_relaxed)) {
      mib.Snapshot(snap);
      for (size_t i = 0; i < kN; ++i) {
        if (snap[i] < last[i]) backwards = true;
        const uint64_t one = mib.Read(i);
        if (one < snap[i]) backwards = true;
        last[i] = one;
      }
      snapshots.fetch_add(1, std::memory_order_relaxed);
    }
  });
  std::thread hotplug([&] {
    int k = 0;
    while (!stop.load(std::memory_order_relaxed)) {
      const int cpu = 1 + k++ % (kCpus - 1);  // CPU 0 stays online
      Ctl& c = ctl[cpu];
      c.pause_req.store(true, std::memory_order_release);  // Pairs with: acquire load of pause_req by the writer.
      while (!c.paused.load(std::memory_order_acquire) &&  // Pairs with: release store of paused by the writer.
             !stop.load(std::memory_order_relaxed)) {
        std::this_thread::yield();
      }
      if (!c.paused.load(std::memory_order_acquire)) break;  // Pairs with: release store of paused by the writer.  // stopping
      if (!env.topo->Offline(cpu).ok()) backwards = true;
      std::this_thread::yield();
      if (!env.topo->Online(cpu).ok()) backwards = true;
      c.pause_req.store(false, std::memory_order_release);  // Pairs with: acquire load of pause_req in the writer's wait loop; orders Online() before its next Adds.
      events.fetch_add(2, std::memory_order_relaxed);
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(800));
  stop = true;
  hotplug.join();
  reader.join();
  for (int cpu = 0; cpu < kCpus; ++cpu) threads[cpu].join();

  CHECK_FALSE(backwards.load());
  CHECK(events.load() > 0);
  CHECK(snapshots.load() > 0);
  std::array<uint64_t, kN> want{}, snap{};
  for (int cpu = 0; cpu < kCpus; ++cpu) {
    for (size_t i = 0; i < kN; ++i) want[i] += ctl[cpu].written[i];
  }
  mib.Snapshot(snap);
  CHECK(snap == want);
  MESSAGE("snapshots=" << snapshots.load() << " events=" << events.load());
}

TEST_CASE("objects created and destroyed while hotplug events happen") {
  constexpr int kCpus = 4;
  Env env = MakeEnv(kCpus, kCpus, kCpus);
  std::atomic<bool> stop{false};
  std::atomic<bool> bad{false};
  std::thread hotplug([&] {
    int k = 0;
    while (!stop.load()) {
      const int cpu = 1 + k++ % (kCpus - 1);
      // No writer ever uses CPUs 1..3 here, so no quiescing is needed.
      if (!env.topo->Offline(cpu).ok() || !env.topo->Online(cpu).ok()) {
        bad = true;
      }
    }
  });
  for (int round = 0; round < 300; ++round) {
    auto m = LcoreStats<2>::Create(*env.topo, *env.alloc);
    REQUIRE(m.ok());
    std::array<uint64_t, 2> snap{};
    (*m)->Snapshot(snap);
    CHECK(snap[0] == 0);
    for (int i = 0; i < 10; ++i) (*m)->Inc(0, 1);
    CHECK((*m)->Read(1) == 10);
  }
  stop = true;
  hotplug.join();
  CHECK_FALSE(bad.load());
}

}  // namespace
}  // namespace percpu

namespace percpu {
namespace {

// Issue 12 item 4 for LcoreStats: Add(sched_getcpu(), ...) from 4 threads is
// exact (claimed add or the shared counter), and tokens are exclusive.
TEST_CASE("LcoreStats: Add(sched_getcpu(), ...) from 4 threads is exact") {
  const int n = std::max(64, static_cast<int>(std::thread::hardware_concurrency()));
  testing::Env env = testing::MakeEnv(n, n, n);
  auto mib = std::move(*LcoreStats<2>::Create(*env.topo, *env.alloc));
  const int adds = testing::Work(2000000);
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t) {
    ts.emplace_back([&] {
      for (int i = 0; i < adds; ++i) mib->Add(sched_getcpu(), 1, 1);
    });
  }
  for (auto& t : ts) t.join();
  CHECK(mib->Read(1) == 4 * uint64_t(adds));
  CHECK(mib->Read(0) == 0);
}

TEST_CASE("LcoreStats: WriterToken is exclusive, refused offline, reported") {
  testing::Env env = testing::MakeEnv(4, 4, 4);
  auto mib = std::move(*LcoreStats<2>::Create(*env.topo, *env.alloc));
  auto w = mib->AcquireWriter(2);
  REQUIRE(w.ok());
  CHECK(mib->AcquireWriter(2).status().code() ==
        StatusCode::kFailedPrecondition);
  w->Add(0, 5);
  mib->Add(2, 0, 1);  // the CPU is taken: shared counter, still exact
  CHECK(mib->Read(0) == 6);
  // Held across Offline: reported, folded anyway.
  Status s = env.topo->Offline(2);
  CHECK(s.code() == StatusCode::kFailedPrecondition);
  CHECK(mib->Read(0) == 6);
  w->Add(0, 1);  // late add by the stale token: moved at the next Online
  w->Reset();
  REQUIRE(env.topo->Online(2).ok());
  CHECK(mib->Read(0) == 7);
  REQUIRE(env.topo->Offline(3).ok());
  CHECK(mib->AcquireWriter(3).status().message() ==
        "LcoreStats::AcquireWriter: cpu 3 is offline");
  mib->Add(3, 1, 4);  // offline: shared counter
  CHECK(mib->Read(1) == 4);
}

}  // namespace
}  // namespace percpu
