#include "primitives/percpu_stats.h"

#include <sched.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "doctest/doctest.h"
#include "primitives/contract.h"
#include "primitives/percpu_alloc.h"
#include "primitives/rseq.h"
#include "primitives/topology.h"

namespace percpu {
namespace {

struct Env {
  std::unique_ptr<Topology> topo;
  std::unique_ptr<PerCpuAllocator> alloc;
  explicit Env(std::unique_ptr<Topology> t) : topo(std::move(t)) {
    alloc = std::move(*PerCpuAllocator::Create(topo.get()));
  }
};

int MachineCpus() {
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

// A simulated topology as large as the machine's possible CPU ids (so every
// real CPU id has a slot), plus `extra` absent CPUs.
std::unique_ptr<Topology> MachineSized(int extra = 0) {
  const int n = std::max(MachineCpus(), 64);  // covers real CPU ids on CI
  return std::move(*Topology::Simulated(n + extra, n, n));
}

// Hammers Add from several threads; returns the expected total.
template <typename AddFn>
uint64_t Hammer(int threads, int per_thread, AddFn add) {
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      for (int i = 0; i < per_thread; ++i) {
        add(static_cast<uint64_t>(t + 1));
        if (i % 512 == 0) sched_yield();
      }
    });
  }
  for (auto& t : ts) t.join();
  uint64_t expect = 0;
  for (int t = 0; t < threads; ++t) {
    expect += static_cast<uint64_t>(t + 1) * static_cast<uint64_t>(per_thread);
  }
  return expect;
}

TEST_CASE("PerCpuU64: concurrent Add is exact, in the object's writer mode") {
  for (bool rseq_opt : {false, true}) {
    Env env(MachineSized());
    PerCpuStatsOptions o;
    o.rseq_with_simulated_topology = rseq_opt;
    auto c = std::move(*PerCpuU64::Create(*env.topo, *env.alloc, o));
    const bool expect_rseq = rseq_opt &&
                             CurrentWriterMode() == WriterMode::kRseq &&
                             PERCPU_HAVE_RSEQ_ASM;
    CHECK(c->uses_rseq() == expect_rseq);
    MESSAGE("writer mode " << std::string(c->uses_rseq() ? "rseq" : "fallback")
                           << " (process: " << WriterModeReason() << ")");
    const uint64_t expect =
        Hammer(3 * MachineCpus() + 1, 20000, [&](uint64_t d) { c->Add(d); });
    c->Inc();
    CHECK(c->Sum() == expect + 1);
    CHECK(c->overflow() == 0);
  }
}

TEST_CASE("PerCpuU64Mib: items, FoldAll == Read, cpu-major") {
  Env env(MachineSized());
  auto mib = std::move(*PerCpuU64Mib<5>::Create(*env.topo, *env.alloc));
  const uint64_t expect = Hammer(4, 10000, [&](uint64_t d) {
    mib->Add(0, d);
    mib->Add(4, 2 * d);
    mib->Inc(2);
  });
  std::array<uint64_t, 5> out;
  out.fill(12345);
  mib->FoldAll(out);
  CHECK(out[0] == expect);
  CHECK(out[1] == 0);
  CHECK(out[2] == 40000);
  CHECK(out[3] == 0);
  CHECK(out[4] == 2 * expect);
  for (size_t i = 0; i < 5; ++i) CHECK(mib->Read(i) == out[i]);
  // Per-CPU values add up to the total (the slots are cpu-major words).
  uint64_t per_cpu = 0;
  for (int cpu = 0; cpu < env.topo->num_possible(); ++cpu) {
    per_cpu += *mib->OnCpu(cpu, 4);
  }
  CHECK(per_cpu + mib->overflow(4) == 2 * expect);
  CHECK(mib->slots().on(1) ==
        reinterpret_cast<internal::Atomic<uint64_t>*>(
            mib->slots().base_address() + env.alloc->unit_size()));
}

TEST_CASE("PerCpuU64Mib: offline folds into the accumulator; stale ids race") {
  Env env(std::move(*Topology::Simulated(6, 4, 4)));
  auto mib = std::move(*PerCpuU64Mib<2>::Create(*env.topo, *env.alloc));
  REQUIRE(!mib->uses_rseq());  // simulated topology: fallback protocol
  REQUIRE(mib->AddOnCpu(1, 0, 10).ok());
  REQUIRE(mib->AddOnCpu(2, 1, 7).ok());
  REQUIRE(env.topo->Offline(1).ok());
  CHECK(*mib->OnCpu(1, 0) == 0);  // moved into the accumulator
  CHECK(mib->Read(0) == 10);
  // A writer with the stale id 1 adds after the fold: still counted.
  REQUIRE(mib->AddOnCpu(1, 0, 5).ok());
  CHECK(mib->Read(0) == 15);
  REQUIRE(env.topo->Online(1).ok());
  CHECK(mib->Read(0) == 15);
  REQUIRE(env.topo->Offline(1).ok());
  REQUIRE(env.topo->SetAbsent(1).ok());
  CHECK(mib->Read(0) == 15);
  // Not present: goes to the overflow counter, never into released memory.
  REQUIRE(mib->AddOnCpu(1, 0, 1).ok());
  CHECK(mib->overflow(0) == 1);
  REQUIRE(env.topo->SetPresent(1).ok());
  REQUIRE(env.topo->Online(1).ok());
  CHECK(mib->Read(0) == 16);
  CHECK(mib->Read(1) == 7);
}

TEST_CASE("PerCpuU64: writers racing offline/online lose nothing") {
  Env env(MachineSized());
  auto c = std::move(*PerCpuU64::Create(*env.topo, *env.alloc));
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> attempted{0};
  std::thread hotplug([&] {
    while (!stop.load(std::memory_order_relaxed)) {
      for (int cpu = 0; cpu < 4 && cpu < env.topo->num_possible() - 1; ++cpu) {
        CHECK(env.topo->Offline(cpu).ok());
        CHECK(env.topo->Online(cpu).ok());
      }
    }
  });
  std::thread reader([&] {
    uint64_t last = 0;
    while (!stop.load(std::memory_order_relaxed)) {
      const uint64_t s = c->Sum();
      // Pairs with: release fence of the writers (attempted before add).
      std::atomic_thread_fence(std::memory_order_acquire);  // Pairs with: writer's release fence.
      CHECK(s >= last);
      CHECK(s <= attempted.load(std::memory_order_relaxed));
      last = s;
    }
  });
  std::vector<std::thread> writers;
  for (int t = 0; t < 3; ++t) {
    writers.emplace_back([&, t] {
      for (int i = 0; i < 30000; ++i) {
        // Relaxed: a bound for the reader, ordered by the fence below.
        attempted.fetch_add(1, std::memory_order_relaxed);
        // Pairs with: reader's acquire fence after its Sum().
        std::atomic_thread_fence(std::memory_order_release);  // Pairs with: reader's acquire fence.
        // Writers on simulated CPUs 0..3, stale ids included.
        CHECK(c->AddOnCpu((i + t) % 4, 1).ok());
      }
    });
  }
  for (auto& w : writers) w.join();
  stop.store(true);
  hotplug.join();
  reader.join();
  CHECK(c->Sum() == 90000);
}

TEST_CASE("bad input: CPU ids, items, small topology, use after destruction") {
  Env env(std::move(*Topology::Simulated(2, 2, 2)));
  auto mib = std::move(*PerCpuU64Mib<3>::Create(*env.topo, *env.alloc));
  Status s = mib->AddOnCpu(7, 0, 1);
  CHECK(s.code() == StatusCode::kOutOfRange);
  CHECK(s.message().find("7") != std::string::npos);
  CHECK(mib->AddOnCpu(-1, 0, 1).code() == StatusCode::kOutOfRange);
  CHECK(mib->AddOnCpu(0, 3, 1).code() == StatusCode::kOutOfRange);
  CHECK(mib->AddChecked(3, 1).code() == StatusCode::kOutOfRange);
  CHECK(mib->ReadChecked(9).status().code() == StatusCode::kOutOfRange);
  CHECK(mib->OnCpu(2, 0).status().code() == StatusCode::kOutOfRange);
  // Real CPU ids beyond a 2-CPU topology clamp into the overflow counter.
  std::vector<std::thread> ts;
  for (int t = 0; t < MachineCpus() + 2; ++t) {
    ts.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) mib->Add(1, 1);
    });
  }
  for (auto& t : ts) t.join();
  CHECK(mib->Read(1) == 1000u * static_cast<uint64_t>(MachineCpus() + 2));

  static int violations = 0;
  ContractViolationHandler prev =
      SetContractViolationHandler([](const char*) { ++violations; });
#if PERCPU_CONTRACT_CHECKS
  mib->Add(3, 1);  // item out of range: reported, dropped
  CHECK(violations == 1);
  // Use after destruction: the storage is kept so the check can run.
  PerCpuU64Mib<3>* raw = mib.release();
  raw->~PerCpuU64Mib<3>();
  raw->Add(0, 1);
  CHECK(violations == 2);
  CHECK(raw->Read(0) == 0);
  CHECK(violations == 3);
  ::operator delete(raw);
#else
  MESSAGE("contract checks compiled out (NDEBUG)");
  CHECK(violations == 0);
#endif
  SetContractViolationHandler(prev);
}

TEST_CASE("FromSysfs topology: rseq writer when the process mode is rseq") {
  auto topo = Topology::FromSysfs();
  if (!topo.ok()) {
    MESSAGE("no sysfs topology: " << topo.status().ToString());
    return;
  }
  Env env(std::move(*topo));
  auto c = std::move(*PerCpuU64::Create(*env.topo, *env.alloc));
  CHECK(c->uses_rseq() ==
        (PERCPU_HAVE_RSEQ_ASM && CurrentWriterMode() == WriterMode::kRseq));
  const uint64_t expect = Hammer(4, 20000, [&](uint64_t d) { c->Add(d); });
  CHECK(c->Sum() == expect);
  if (c->uses_rseq()) {
    CHECK(c->AddOnCpu(0, 1).code() == StatusCode::kFailedPrecondition);
  }
}

}  // namespace
}  // namespace percpu

namespace percpu {
namespace {

// Issue 12 item 6: destroying a counter from inside a hotplug callback
// works: its callbacks are unregistered (no dangling callback runs at the
// next event; ASan builds would report one) and its memory is freed.
TEST_CASE("PerCpuU64: destroyed from inside a hotplug callback") {
  Env env(std::move(*Topology::Simulated(4, 4, 4)));
  auto c = std::move(*PerCpuU64::Create(*env.topo, *env.alloc));
  auto keep = std::move(*PerCpuU64::Create(*env.topo, *env.alloc));
  REQUIRE(c->AddOnCpu(1, 5).ok() == !c->uses_rseq());
  REQUIRE(keep->AddOnCpu(1, 7).ok());
  PerCpuU64* raw = c.get();
  int destroyed = 0;
  // Registered after the counters: its fold runs after theirs.
  auto id = env.topo->RegisterHotplugCallbacks(
      [&](HotplugEvent, int) {
        if (c != nullptr) {
          c.reset();
          ++destroyed;
        }
        return Status::Ok();
      },
      nullptr);
  REQUIRE(id.ok());
  CHECK(env.alloc->stats().live_objects == 2);
  REQUIRE(env.topo->Offline(1).ok());  // teardown phase destroys c
  CHECK(destroyed == 1);
  CHECK(c == nullptr);
  CHECK(env.alloc->stats().live_objects == 1);
  // Later events run no callback of the destroyed counter.
  REQUIRE(env.topo->SetAbsent(1).ok());
  REQUIRE(env.topo->SetPresent(1).ok());
  REQUIRE(env.topo->Online(1).ok());
  CHECK(keep->Sum() == 7);
  (void)raw;
  CHECK(env.topo->UnregisterHotplugCallbacks(*id).ok());
}

}  // namespace
}  // namespace percpu
