// Hotplug with a sysfs folder that lags the kernel (issue 11, "Why"): a temp
// directory with possible/present/online files that the test rewrites,
// Topology::FromSysfs on it, writers pinned with sched_setaffinity to REAL
// CPUs. Between a real hot-add/offline and the next Rescan() the folder and
// the kernel disagree; nothing may be lost or counted twice meanwhile.
//
// Runs in the process's writer mode: rseq on the host, the fallback when
// built without rseq (i686, --config=norseq) or with PERCPU_RSEQ=0 (the
// hotplug_lag_fallback_test target sets it before the mode is chosen).
// Each test asserts exact totals, and that a reader never sees a total go
// down.
//
// Before the fix (main at 4257396), rseq mode: "hot-add" gave Sum() == 0
// with the adds in a slot readers do not visit, then lost them at kPresent;
// "offline/online churn" counted about 1.2x the real adds.
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "doctest/doctest.h"
#include "primitives/internal/fake_sysfs.h"
#include "primitives/internal/test_work.h"
#include "primitives/percpu_alloc.h"
#include "primitives/percpu_pair.h"
#include "primitives/percpu_stats.h"
#include "primitives/rseq.h"
#include "primitives/topology.h"

namespace percpu {
namespace {

using testing::FakeSysfs;

#if defined(PERCPU_TEST_FORCE_FALLBACK_ENV)
// Runs before main(), hence before any CurrentWriterMode() call.
const bool g_forced = [] { return setenv("PERCPU_RSEQ", "0", 1) == 0; }();
#endif


// A real CPU this process may run on (the highest allowed), and another id
// for the folder's "other" CPU (need not be real).
struct Cpus {
  int writer = -1;
  int other = -1;
  int possible = 0;  // ids 0..possible-1 in the folder
};

Cpus PickCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  REQUIRE(sched_getaffinity(0, sizeof(set), &set) == 0);
  Cpus c;
  for (int i = 0; i < CPU_SETSIZE; ++i) {
    if (CPU_ISSET(i, &set)) c.writer = i;
  }
  REQUIRE(c.writer >= 0);
  c.other = c.writer == 0 ? 1 : 0;
  c.possible = (c.writer > c.other ? c.writer : c.other) + 1;
  return c;
}

void PinTo(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  REQUIRE(sched_setaffinity(0, sizeof(set), &set) == 0);
}

std::string Range(int n) { return "0-" + std::to_string(n - 1); }
std::string Ids(int a) { return std::to_string(a); }
std::string Ids(int a, int b) {
  return std::to_string(a < b ? a : b) + "," + std::to_string(a < b ? b : a);
}

bool ExpectRseqObjects() {
  return CurrentWriterMode() == WriterMode::kRseq && PERCPU_HAVE_RSEQ_ASM &&
         internal::EnableRseqHotplugFence();
}

TEST_CASE("lagging sysfs: hot-add of the CPU a writer runs on loses nothing") {
  const Cpus cpus = PickCpus();
  FakeSysfs folder;
  // The kernel already runs the writer's CPU; the folder does not list it.
  folder.WriteAll(Range(cpus.possible), Ids(cpus.other), Ids(cpus.other));
  auto topo = std::move(*Topology::FromSysfs(folder.dir()));
  auto alloc = std::move(*PerCpuAllocator::Create(topo.get()));
  auto c = std::move(*PerCpuU64::Create(*topo, *alloc));
  auto pair = std::move(*PerCpuPacketsBytes::Create(*topo, *alloc));
  CHECK(c->uses_rseq() == ExpectRseqObjects());
  MESSAGE("writer mode: " << std::string(c->uses_rseq() ? "rseq" : "fallback") << " ("
                          << WriterModeReason() << "), writer on CPU "
                          << cpus.writer);
  const uint64_t kAdds = testing::Work(uint64_t{1000000});
  const auto write = [&] {
    std::thread w([&] {
      PinTo(cpus.writer);
      for (uint64_t i = 0; i < kAdds; ++i) {
        c->Add(1);
        pair->Add(1, 3);
      }
    });
    w.join();
  };
  write();
  // Before the folder catches up: every add is visible (overflow counter).
  CHECK(c->Sum() == kAdds);
  CHECK(*c->OnCpu(cpus.writer) == 0);
  CHECK(pair->Sum().packets == kAdds);
  CHECK(pair->Sum().bytes == 3 * kAdds);
  // The folder catches up: kPresent, kOnline. Nothing is discarded.
  folder.WriteAll(Range(cpus.possible), Ids(cpus.other, cpus.writer),
               Ids(cpus.other, cpus.writer));
  REQUIRE(topo->Rescan().ok());
  CHECK(c->Sum() == kAdds);
  CHECK(pair->Sum().packets == kAdds);
  write();
  CHECK(c->Sum() == 2 * kAdds);
  CHECK(pair->Sum().packets == 2 * kAdds);
  CHECK(pair->Sum().bytes == 6 * kAdds);
  // Now the adds land in the writer's CPU slot.
  CHECK(*c->OnCpu(cpus.writer) == kAdds);
}

// Offline/online (and, with remove, absent/present) churn of the CPU a
// writer runs on while the writer adds and a reader checks monotonicity.
void Churn(bool remove, int cycles) {
  const Cpus cpus = PickCpus();
  FakeSysfs folder;
  const std::string both = Ids(cpus.other, cpus.writer);
  folder.WriteAll(Range(cpus.possible), both, both);
  auto topo = std::move(*Topology::FromSysfs(folder.dir()));
  auto alloc = std::move(*PerCpuAllocator::Create(topo.get()));
  auto c = std::move(*PerCpuU64::Create(*topo, *alloc));
  auto pair = std::move(*PerCpuPacketsBytes::Create(*topo, *alloc));
  CHECK(c->uses_rseq() == ExpectRseqObjects());
  MESSAGE("writer mode: " << std::string(c->uses_rseq() ? "rseq" : "fallback"));

  std::atomic<bool> stop{false};
  std::atomic<uint64_t> adds{0};
  // What the reader saw go wrong: the total amount by which Sum() and the
  // pair's packets went backwards, and the largest |bytes - 2 * packets|.
  std::atomic<uint64_t> sum_drop{0}, packets_drop{0}, pair_skew{0};
  std::thread writer([&] {
    PinTo(cpus.writer);
    uint64_t n = 0;
    while (!stop.load(std::memory_order_relaxed)) {
      for (int i = 0; i < 64; ++i) {
        c->Add(1);
        pair->Add(1, 2);
      }
      n += 64;
    }
    adds.store(n);
  });
  std::thread reader([&] {
    uint64_t last = 0, last_p = 0, drop = 0, drop_p = 0, skew = 0;
    while (!stop.load(std::memory_order_relaxed)) {
      const uint64_t s = c->Sum();
      const PacketsBytes p = pair->Sum();
      if (s < last) drop += last - s;
      if (p.packets < last_p) drop_p += last_p - p.packets;
      const uint64_t twice = 2 * p.packets;
      skew = std::max(skew, p.bytes > twice ? p.bytes - twice : twice - p.bytes);
      last = s;
      last_p = p.packets;
    }
    sum_drop.store(drop);
    packets_drop.store(drop_p);
    pair_skew.store(skew);
  });
  const std::string only = Ids(cpus.other);
  for (int i = 0; i < cycles; ++i) {
    folder.Write("online", only);
    if (remove) folder.Write("present", only);
    REQUIRE(topo->Rescan().ok());
    if (remove) folder.Write("present", both);
    folder.Write("online", both);
    REQUIRE(topo->Rescan().ok());
  }
  stop.store(true);
  writer.join();
  reader.join();
  const uint64_t n = adds.load();
  const PacketsBytes p = pair->Sum();
  MESSAGE(cycles << " cycles, " << n << " adds, Sum() " << c->Sum()
                 << ", pair " << p.packets << "/" << p.bytes << ", overflow "
                 << c->overflow() << ", reader saw drops " << sum_drop.load()
                 << "/" << packets_drop.load() << ", pair skew "
                 << pair_skew.load());
  CHECK(n > 0);
  if (c->uses_rseq() || !remove) {
    // rseq writers (any churn) and offline/online churn: exact, and no
    // reader ever sees a total go backwards or a torn pair.
    CHECK(c->Sum() == n);
    CHECK(p.packets == n);
    CHECK(p.bytes == 2 * n);
    CHECK(sum_drop.load() == 0);
    CHECK(packets_drop.load() == 0);
    CHECK(pair_skew.load() == 0);
  } else {
    // Fallback writers across hot-remove: the documented window (an add
    // landing between the kAbsent teardown fold and the allocator's
    // madvise, i.e. a writer preempted between its present-bit test and
    // its fetch_add for that long) may lose adds. Measured: 2 of
    // 35,134,144 under a loaded 2-CPU machine; 5 of 411,648 for the pair
    // (whose fallback add is a spin lock and two adds, a wider window) under
    // qemu-aarch64, which stretches every preemption window; under
    // qemu-i386 one pair add lost its packets word but not its bytes word
    // (1,042,688 bytes for 521,343 packets). Bound: 1 in 10,000. A lost
    // add is the only way a total goes backwards or the pair skews, so
    // what the reader saw is bounded by what was lost: never more.
    CHECK(c->Sum() <= n);
    CHECK(p.packets <= n);
    CHECK(p.bytes <= 2 * n);
    const uint64_t lost = n - c->Sum();
    const uint64_t lost_packets = n - p.packets;
    const uint64_t lost_bytes = 2 * n - p.bytes;
    CHECK(lost * 10000 <= n);
    CHECK(lost_packets * 10000 <= n);
    CHECK(lost_bytes * 10000 <= 2 * n);
    CHECK(sum_drop.load() <= lost);
    CHECK(packets_drop.load() <= lost_packets);
    CHECK(pair_skew.load() <= lost_bytes + 2 * lost_packets);
  }
}

TEST_CASE("lagging sysfs: offline/online churn under a writer is exact") {
  Churn(/*remove=*/false, testing::Work(4000));
}

TEST_CASE("lagging sysfs: offline+absent/present+online churn is exact") {
  Churn(/*remove=*/true, testing::Work(2000));
}

// Issue 12 item 9: a fallback writer's AddOnCpu on an offline-but-present
// CPU while SetAbsent/SetPresent cycle. Nothing a unit holds is discarded
// unfolded; the remaining window (a fetch_add landing between the kAbsent
// teardown fold and the allocator's madvise) may lose an update, so the
// total is bounded: never more than the adds, never going down, and at
// most a tiny fraction lost (reported).
TEST_CASE("fallback writer delayed across Offline and SetAbsent") {
  auto topo = std::move(*Topology::Simulated(2, 2, 2));
  auto alloc = std::move(*PerCpuAllocator::Create(topo.get()));
  auto c = std::move(*PerCpuU64::Create(*topo, *alloc));
  REQUIRE_FALSE(c->uses_rseq());
  REQUIRE(topo->Offline(1).ok());
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> adds{0};
  std::atomic<bool> went_down{false};
  std::thread writer([&] {
    uint64_t n = 0;
    while (!stop.load(std::memory_order_relaxed)) {
      REQUIRE(c->AddOnCpu(1, 1).ok());
      ++n;
    }
    adds.store(n);
  });
  std::thread reader([&] {
    uint64_t last = 0;
    while (!stop.load(std::memory_order_relaxed)) {
      const uint64_t s = c->Sum();
      if (s < last) went_down.store(true);
      last = s;
    }
  });
  const int kCycles = testing::Work(20000);
  for (int i = 0; i < kCycles; ++i) {
    REQUIRE(topo->SetAbsent(1).ok());
    REQUIRE(topo->SetPresent(1).ok());
  }
  stop.store(true);
  writer.join();
  reader.join();
  const uint64_t n = adds.load();
  const uint64_t sum = c->Sum();
  MESSAGE(kCycles << " remove/add cycles: " << n << " adds, Sum() " << sum
                  << ", lost " << (n - sum));
  CHECK(sum <= n);
  CHECK_FALSE(went_down.load());
  // Documented bound: only adds landing in the teardown-fold-to-madvise
  // window are lost, one window per cycle, so the bound counts cycles, not
  // adds: at most one loss per 100 cycles. The pre-fix code lost about 16
  // per cycle (336,921 of ~9M adds in 20,000 cycles). Measured: 0 to 2
  // lost in 20,000 cycles natively; 0 to 7 in 5,000 under qemu-i386, where
  // the writer makes about 10 adds per cycle instead of 64 to 190, and a
  // bound of one loss per 10,000 adds failed (7 of 52,120).
  CHECK((n - sum) * 100 <= static_cast<uint64_t>(kCycles));
}

}  // namespace
}  // namespace percpu
