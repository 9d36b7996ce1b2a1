#include "primitives/percpu_counter.h"

#include <sched.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "doctest/doctest.h"
#include "primitives/internal/test_env.h"
#include "primitives/internal/test_work.h"
#include "primitives/percpu_alloc.h"
#include "primitives/topology.h"

namespace percpu {
namespace {

using testing::Env;
using testing::MakeEnv;

std::unique_ptr<ApproxCounter> MakeCounter(Env& env, int64_t initial,
                                           int32_t batch) {
  auto c = ApproxCounter::Create(*env.topo, *env.alloc, initial, batch);
  REQUIRE(c.ok());
  return std::move(*c);
}

TEST_CASE("Create validates the batch and picks the kernel's default") {
  Env env = MakeEnv(64, 64, 20);
  auto bad = ApproxCounter::Create(*env.topo, *env.alloc, 0, -1);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().code() == StatusCode::kInvalidArgument);
  CHECK(bad.status().message().find("batch -1") != std::string::npos);
  CHECK(ApproxCounter::DefaultBatch(*env.topo) == 40);
  auto c = MakeCounter(env, 5, 0);
  CHECK(c->batch() == 40);
  CHECK(c->ErrorBound() == 40 * 20);
  CHECK(c->Read() == 5);
  CHECK(c->Sum() == 5);
  Env small = MakeEnv(4, 4, 4);
  CHECK(ApproxCounter::DefaultBatch(*small.topo) == 32);
}

TEST_CASE("deltas stay per CPU until they reach the batch") {
  Env env = MakeEnv(4, 4, 4);
  auto c = MakeCounter(env, 0, 8);
  c->Add(1, 7);
  CHECK(c->Read() == 0);
  CHECK(c->Sum() == 7);
  c->Add(1, 1);  // |delta| reaches 8: flushed
  CHECK(c->Read() == 8);
  CHECK(c->Sum() == 8);
  c->Add(2, -7);
  CHECK(c->Read() == 8);
  CHECK(c->Sum() == 1);
  c->Dec(2);  // -8: flushed
  CHECK(c->Read() == 0);
  CHECK(c->Sum() == 0);
  CHECK(c->ReadPositive() == 0);
  c->Add(3, -100);  // one big amount goes straight to the count
  CHECK(c->Read() == -100);
  CHECK(c->ReadPositive() == 0);
  c->Inc(0);
  CHECK(c->Sum() == -99);
}

TEST_CASE("extreme amounts wrap like two's complement, without UB") {
  Env env = MakeEnv(2, 2, 2);
  auto c = MakeCounter(env, 0, 16);
  c->Add(0, 5);
  c->Add(0, std::numeric_limits<int64_t>::max());
  CHECK(c->Sum() == std::numeric_limits<int64_t>::min() + 4);
  c->Add(1, std::numeric_limits<int64_t>::min());
  CHECK(c->Sum() == 4);
  CHECK(c->Read() == 4);
}

TEST_CASE("AddChecked rejects bad and offline CPUs") {
  Env env = MakeEnv(8, 6, 4);
  auto c = MakeCounter(env, 0, 32);
  CHECK(c->AddChecked(8, 1).code() == StatusCode::kOutOfRange);
  CHECK(c->AddChecked(-3, 1).code() == StatusCode::kOutOfRange);
  Status off = c->AddChecked(5, 1);
  CHECK(off.code() == StatusCode::kFailedPrecondition);
  CHECK(off.message().find("cpu 5") != std::string::npos);
  CHECK(c->AddChecked(3, 2).ok());
  CHECK(c->Sum() == 2);
}

TEST_CASE("Read() stays within the documented error bound") {
  Env env = MakeEnv(16, 16, 12);
  const int32_t batch = 10;
  auto c = MakeCounter(env, 0, batch);
  std::mt19937 rng(12345);
  std::uniform_int_distribution<int> cpu_dist(0, 11);
  std::uniform_int_distribution<int> amount_dist(-12, 12);
  int64_t exact = 0;
  int64_t max_error = 0;
  for (int i = 0; i < 20000; ++i) {
    const int64_t a = amount_dist(rng);
    c->Add(cpu_dist(rng), a);
    exact += a;
    const int64_t err = c->Read() > exact ? c->Read() - exact
                                          : exact - c->Read();
    if (err > max_error) max_error = err;
    REQUIRE(err <= int64_t{batch - 1} * 12);
    REQUIRE(err < c->ErrorBound());
  }
  CHECK(c->Sum() == exact);
  CHECK(max_error > 0);  // the approximation is really approximate
  // Drive every delta to batch - 1: the bound is attained, not exceeded.
  auto d = MakeCounter(env, 0, batch);
  for (int cpu = 0; cpu < 12; ++cpu) d->Add(cpu, batch - 1);
  CHECK(d->Read() == 0);
  CHECK(d->Sum() == int64_t{batch - 1} * 12);
  CHECK(d->Sum() - d->Read() < d->ErrorBound());
}

TEST_CASE("Compare uses the approximation only when it is conclusive") {
  Env env = MakeEnv(4, 4, 4);
  auto c = MakeCounter(env, 1000, 32);  // ErrorBound = 128
  REQUIRE(c->ErrorBound() == 128);
  for (int cpu = 0; cpu < 4; ++cpu) c->Add(cpu, 31);  // exact 1124
  CHECK(c->Read() == 1000);
  CHECK(c->Sum() == 1124);
  CHECK(c->Compare(500) == 1);    // far: approximation decides
  CHECK(c->Compare(1200) == -1);  // |1000-1200| = 200 > 128
  // Within the bound the approximation would be wrong; Sum() decides.
  CHECK(c->Compare(1100) == 1);
  CHECK(c->Compare(1124) == 0);
  CHECK(c->Compare(1125) == -1);
  CHECK(c->Compare(std::numeric_limits<int64_t>::min()) == 1);
  CHECK(c->Compare(std::numeric_limits<int64_t>::max()) == -1);
}

TEST_CASE("offline folds the dying CPU's delta into the count") {
  Env env = MakeEnv(4, 4, 4);
  auto c = MakeCounter(env, 1000, 32);
  c->Add(2, 20);
  c->Add(3, -5);
  CHECK(c->Read() == 1000);
  REQUIRE(env.topo->Offline(2).ok());
  CHECK(c->Read() == 1020);  // moved, so Read() is closer
  CHECK(c->Sum() == 1015);
  REQUIRE(env.topo->Offline(3).ok());
  CHECK(c->Read() == 1015);
  CHECK(c->Sum() == 1015);
  CHECK(c->ErrorBound() == 64);  // two online CPUs left
  REQUIRE(env.topo->Online(2).ok());
  c->Add(2, 1);
  CHECK(c->Sum() == 1016);
  REQUIRE(env.topo->Online(3).ok());
  CHECK(c->Sum() == 1016);
}

// Writers publish how much they are about to add (started) and have added
// (finished). A Sum() taken between loads of those must lie in
// [finished-before, started-after]: above it would be a double count (a
// flush seen both in the delta and in the count), below it a loss.
TEST_CASE("Sum() racing flushes never double counts or loses") {
  constexpr int kCpus = 4;
  Env env = MakeEnv(kCpus, kCpus, kCpus);
  auto c = MakeCounter(env, 0, 3);  // tiny batch: a flush every few adds
  std::atomic<int64_t> started{0};
  std::atomic<int64_t> finished{0};
  std::atomic<bool> stop{false};
  std::atomic<bool> bad{false};
  std::atomic<uint64_t> sums{0};
  std::vector<std::thread> writers;
  for (int cpu = 0; cpu < kCpus; ++cpu) {
    writers.emplace_back([&, cpu] {
      int64_t i = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        const int64_t a = 1 + (i++ % 4);
        started.fetch_add(a);
        c->Add(cpu, a);
        finished.fetch_add(a);
      }
    });
  }
  std::thread reader([&] {
    int64_t last = 0;
    while (!stop.load(std::memory_order_relaxed)) {
      const int64_t lo = finished.load();
      const int64_t s = c->Sum();
      const int64_t hi = started.load();
      if (s < lo || s > hi || s < last) bad = true;
      last = s;
      sums.fetch_add(1, std::memory_order_relaxed);
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  stop = true;
  reader.join();
  for (auto& t : writers) t.join();
  CHECK_FALSE(bad.load());
  CHECK(sums.load() > 0);
  CHECK(c->Sum() == finished.load());
  CHECK(c->Sum() - c->Read() < c->ErrorBound());
}

TEST_CASE("Sum() stays exact and monotonic across offline/online cycles") {
  constexpr int kCpus = 4;
  Env env = MakeEnv(kCpus, kCpus, kCpus);
  auto c = MakeCounter(env, 0, 5);
  struct Ctl {
    std::atomic<bool> pause_req{false};
    std::atomic<bool> paused{false};
  };
  std::array<Ctl, kCpus> ctl;
  std::atomic<int64_t> started{0};
  std::atomic<int64_t> finished{0};
  std::atomic<bool> stop{false};
  std::atomic<bool> bad{false};
  std::atomic<int> events{0};
  std::vector<std::thread> threads;
  for (int cpu = 0; cpu < kCpus; ++cpu) {
    threads.emplace_back([&, cpu] {
      Ctl& k = ctl[cpu];
      int64_t i = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        if (k.pause_req.load(std::memory_order_acquire)) {  // Pairs with: release store of pause_req by the hotplug thread.
          k.paused.store(true, std::memory_order_release);  // Pairs with: acquire load of paused by the hotplug thread; orders this CPU's Adds before Offline().
          while (k.pause_req.load(std::memory_order_acquire) &&  // Pairs with: release store of false by the hotplug thread.
                 !stop.load(std::memory_order_relaxed)) {
            std::this_thread::yield();
          }
          k.paused.store(false, std::memory_order_release);  // Pairs with: acquire load of paused by the hotplug thread.
          continue;
        }
        const int64_t a = 1 + (i++ % 3);
        started.fetch_add(a);
        c->Add(cpu, a);
        finished.fetch_add(a);
      }
    });
  }
  std::thread reader([&] {
    int64_t last = 0;
    while (!stop.load(std::memory_order_relaxed)) {
      const int64_t lo = finished.load();
      const int64_t s = c->Sum();
      const int64_t hi = started.load();
      if (s < lo || s > hi || s < last) bad = true;
      last = s;
    }
  });
  std::thread hotplug([&] {
    int n = 0;
    while (!stop.load(std::memory_order_relaxed)) {
      const int cpu = 1 + n++ % (kCpus - 1);
      Ctl& k = ctl[cpu];
      k.pause_req.store(true, std::memory_order_release);  // Pairs with: acquire load of pause_req by the writer.
      while (!k.paused.load(std::memory_order_acquire) &&  // Pairs with: release store of paused by the writer.
             !stop.load(std::memory_order_relaxed)) {
        std::this_thread::yield();
      }
      if (!k.paused.load(std::memory_order_acquire)) break;  // Pairs with: release store of paused by the writer.
      if (!env.topo->Offline(cpu).ok()) bad = true;
      std::this_thread::yield();
      if (!env.topo->Online(cpu).ok()) bad = true;
      k.pause_req.store(false, std::memory_order_release);  // Pairs with: acquire load of pause_req in the writer's wait loop; orders Online() before its next Adds.
      events.fetch_add(2);
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  stop = true;
  hotplug.join();
  reader.join();
  for (auto& t : threads) t.join();
  CHECK_FALSE(bad.load());
  CHECK(events.load() > 0);
  CHECK(c->Sum() == finished.load());
}

}  // namespace
}  // namespace percpu

namespace percpu {
namespace {

// Issue 12 item 4, the exact program: Add(sched_getcpu(), 1) from 4
// threads, 2,000,000 adds each. Before: 7,999,985 / 8,000,016. Now the add
// claims the CPU for itself or goes to the shared count: exact.
TEST_CASE("Add(sched_getcpu(), 1) from 4 threads is exact") {
  const int n = std::max(64, static_cast<int>(std::thread::hardware_concurrency()));
  Env env = MakeEnv(n, n, n);
  auto c = MakeCounter(env, 0, 0);
  constexpr int kThreads = 4;
  const int kAdds = testing::Work(2000000);
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t) {
    ts.emplace_back([&] {
      for (int i = 0; i < kAdds; ++i) c->Add(sched_getcpu(), 1);
    });
  }
  for (auto& t : ts) t.join();
  CHECK(c->Sum() == int64_t{kThreads} * kAdds);
}

TEST_CASE("WriterToken: exclusive per CPU, refused offline, released") {
  Env env = MakeEnv(4, 4, 4);
  auto c = MakeCounter(env, 0, 8);
  auto w = c->AcquireWriter(1);
  REQUIRE(w.ok());
  CHECK(w->cpu() == 1);
  auto again = c->AcquireWriter(1);
  CHECK(again.status().code() == StatusCode::kFailedPrecondition);
  CHECK(again.status().message() ==
        "ApproxCounter::AcquireWriter: cpu 1 already has a writer");
  CHECK(c->AcquireWriter(4).status().code() == StatusCode::kOutOfRange);
  CHECK(c->AcquireWriter(-1).status().code() == StatusCode::kOutOfRange);
  for (int i = 0; i < 20; ++i) w->Add(1);
  // While the token holds CPU 1, Add(1, ...) from elsewhere is still exact
  // (it goes to the shared count).
  c->Add(1, 5);
  CHECK(c->Sum() == 25);
  w->Reset();
  CHECK_FALSE(w->valid());
  // P1: released before Offline. Offline CPUs refuse tokens; Add goes to
  // the shared count.
  REQUIRE(env.topo->Offline(1).ok());
  auto off = c->AcquireWriter(1);
  CHECK(off.status().code() == StatusCode::kFailedPrecondition);
  CHECK(off.status().message() ==
        "ApproxCounter::AcquireWriter: cpu 1 is offline");
  c->Add(1, 3);
  CHECK(c->Sum() == 28);
  // P2: a new token after Online.
  REQUIRE(env.topo->Online(1).ok());
  auto back = c->AcquireWriter(1);
  REQUIRE(back.ok());
  back->Add(2);
  CHECK(c->Sum() == 30);
  // Moving a token moves the ownership.
  ApproxCounter::WriterToken moved = std::move(*back);
  CHECK_FALSE(back->valid());
  moved.Add(1);
  CHECK(c->Sum() == 31);
}

TEST_CASE("WriterToken held across Offline is reported, nothing lost") {
  Env env = MakeEnv(4, 4, 4);
  auto c = MakeCounter(env, 0, 100);
  auto w = c->AcquireWriter(2);
  REQUIRE(w.ok());
  w->Add(7);
  Status s = env.topo->Offline(2);
  CHECK(s.code() == StatusCode::kFailedPrecondition);
  CHECK(s.message().find("WriterToken of the CPU is still held") !=
        std::string::npos);
  CHECK(c->Sum() == 7);  // folded anyway
  w->Add(1);             // a late add by the stale token
  w->Reset();
  REQUIRE(env.topo->Online(2).ok());  // the late add is moved, not lost
  CHECK(c->Sum() == 8);
}

TEST_CASE("tokens and Add(sched_getcpu()) mixed from 4 threads: exact") {
  const int n = std::max(64, static_cast<int>(std::thread::hardware_concurrency()));
  Env env = MakeEnv(n, n, n);
  auto c = MakeCounter(env, 0, 0);
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t) {
    ts.emplace_back([&] {
      for (int round = 0; round < 2000; ++round) {
        auto w = c->AcquireWriter(sched_getcpu());
        for (int i = 0; i < 100; ++i) {
          if (w.ok()) {
            w->Add(1);
          } else {
            c->Add(sched_getcpu(), 1);
          }
        }
      }
    });
  }
  for (auto& t : ts) t.join();
  CHECK(c->Sum() == 4 * 2000 * 100);
}

}  // namespace
}  // namespace percpu
