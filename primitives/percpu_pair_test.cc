#include "primitives/percpu_pair.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
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

int MachineCpus() {
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

struct Env {
  std::shared_ptr<Topology> topo;
  std::shared_ptr<PerCpuAllocator> alloc;
  explicit Env(std::shared_ptr<Topology> t) : topo(std::move(t)) {
    alloc = std::move(*PerCpuAllocator::Create(topo.get()));
  }
};

std::shared_ptr<Topology> MachineSized() {
  const int n = std::max(MachineCpus(), 64);
  return std::move(*Topology::Simulated(n, n, n));
}

// Every update adds (1, 1000): a consistent pair has bytes == 1000 * packets.
TEST_CASE("PerCpuPacketsBytes: per-CPU pairs are consistent; totals exact") {
  for (bool rseq_opt : {false, true}) {
    Env env(MachineSized());
    PerCpuStatsOptions o;
    o.rseq_with_simulated_topology = rseq_opt;
    auto pb = std::move(*PerCpuPacketsBytes::Create(*env.topo, *env.alloc, o));
#if defined(PERCPU_HAVE_RSEQ_LATCH_ASM)
    CHECK(pb->uses_rseq() ==
          (rseq_opt && CurrentWriterMode() == WriterMode::kRseq));
#else
    CHECK(!pb->uses_rseq());
#endif
    MESSAGE("pair writer: " << std::string(pb->uses_rseq() ? "rseq" : "fallback"));
    std::atomic<bool> stop{false};
    std::atomic<uint64_t> reads{0};
    std::thread reader([&] {
      uint64_t last = 0, n = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        for (int cpu = 0; cpu < 4; ++cpu) {
          const PacketsBytes c = *pb->OnCpu(cpu);
          CHECK(c.bytes == 1000 * c.packets);
        }
        const PacketsBytes t = pb->Sum();
        CHECK(t.bytes == 1000 * t.packets);
        CHECK(t.packets >= last);
        last = t.packets;
        ++n;
      }
      reads.store(n);
    });
    const int threads = 3 * MachineCpus() + 1;
    std::vector<std::thread> ws;
    for (int t = 0; t < threads; ++t) {
      ws.emplace_back([&] {
        for (int i = 0; i < 20000; ++i) {
          pb->Add(1, 1000);
          if (i % 512 == 0) sched_yield();
        }
      });
    }
    for (auto& w : ws) w.join();
    stop.store(true);
    reader.join();
    MESSAGE("reads: " << reads.load());
    const PacketsBytes t = pb->Sum();
    CHECK(t.packets == 20000u * static_cast<uint64_t>(threads));
    CHECK(t.bytes == 1000 * t.packets);
    CHECK(pb->overflow().packets == 0);
  }
}

TEST_CASE("PerCpuPacketsBytes: offline folds; late stale-id adds counted") {
  Env env(std::move(*Topology::Simulated(4, 3, 3)));
  auto pb = std::move(*PerCpuPacketsBytes::Create(*env.topo, *env.alloc));
  REQUIRE(pb->AddOnCpu(2, 3, 300).ok());
  REQUIRE(env.topo->Offline(2).ok());
  CHECK(pb->OnCpu(2)->packets == 0);
  CHECK(pb->Sum().packets == 3);
  REQUIRE(pb->AddOnCpu(2, 1, 100).ok());  // stale id after the fold
  CHECK(pb->Sum().packets == 4);
  CHECK(pb->Sum().bytes == 400);
  REQUIRE(pb->AddOnCpu(3, 1, 100).ok());  // not present: overflow
  CHECK(pb->overflow().packets == 1);
  CHECK(pb->Sum().bytes == 500);
  CHECK(pb->AddOnCpu(4, 1, 1).code() == StatusCode::kOutOfRange);
  CHECK(pb->OnCpu(-1).status().code() == StatusCode::kOutOfRange);
  REQUIRE(env.topo->Online(2).ok());
  CHECK(pb->Sum().packets == 5);
}

TEST_CASE("PerCpuPacketsBytes: racing offline/online keeps pairs and totals") {
  Env env(MachineSized());
  auto pb = std::move(*PerCpuPacketsBytes::Create(*env.topo, *env.alloc));
  std::atomic<bool> stop{false};
  std::thread hotplug([&] {
    while (!stop.load(std::memory_order_relaxed)) {
      for (int cpu = 0; cpu < 3; ++cpu) {
        CHECK(env.topo->Offline(cpu).ok());
        CHECK(env.topo->Online(cpu).ok());
      }
    }
  });
  std::thread reader([&] {
    uint64_t last = 0;
    while (!stop.load(std::memory_order_relaxed)) {
      const PacketsBytes t = pb->Sum();
      CHECK(t.bytes == 7 * t.packets);
      CHECK(t.packets >= last);
      last = t.packets;
    }
  });
  std::vector<std::thread> ws;
  for (int t = 0; t < 3; ++t) {
    ws.emplace_back([&, t] {
      for (int i = 0; i < 20000; ++i) {
        CHECK(pb->AddOnCpu((i + t) % 3, 1, 7).ok());
      }
    });
  }
  for (auto& w : ws) w.join();
  stop.store(true);
  hotplug.join();
  reader.join();
  CHECK(pb->Sum().packets == 60000);
}

TEST_CASE("PerCpuPacketsBytes: use after destruction is reported") {
  Env env(std::move(*Topology::Simulated(2, 2, 2)));
  auto pb = std::move(*PerCpuPacketsBytes::Create(*env.topo, *env.alloc));
  static int violations = 0;
  ContractViolationHandler prev =
      SetContractViolationHandler([](const char*) { ++violations; });
#if PERCPU_CONTRACT_CHECKS
  PerCpuPacketsBytes* raw = pb.release();
  raw->~PerCpuPacketsBytes();
  raw->Add(1, 1);
  CHECK(violations == 1);
  CHECK(raw->Sum().packets == 0);
  CHECK(violations == 2);
  ::operator delete(raw);
#else
  CHECK(violations == 0);
#endif
  SetContractViolationHandler(prev);
}

}  // namespace
}  // namespace percpu
