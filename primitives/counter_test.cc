// The three-line API (counter.h) on the default domain and on explicit
// domains: exact totals from many threads, consistent pairs, hotplug,
// degradation on allocation failure, names and the registry.
#include "primitives/counter.h"

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "doctest/doctest.h"
#include "primitives/domain.h"
#include "primitives/exporter.h"
#include "primitives/rseq.h"
#include "primitives/status.h"

namespace percpu {
namespace {

constexpr int kThreads = 4;
constexpr uint64_t kAddsPerThread = 50000;

template <typename F>
void RunThreads(int n, F f) {
  std::vector<std::thread> threads;
  for (int t = 0; t < n; ++t) threads.emplace_back(f, t);
  for (std::thread& t : threads) t.join();
}

// Until stop: CPUs 1..7 of `topo` go offline, absent, present and online
// again, one after the other; `cycles` counts the rounds over all seven.
void RemoveAddChurn(Topology* topo, const std::atomic<bool>& stop,
                    std::atomic<uint64_t>& cycles) {
  while (!stop.load()) {
    for (int cpu = 1; cpu < 8; ++cpu) {
      CHECK(topo->Offline(cpu).ok());
      CHECK(topo->SetAbsent(cpu).ok());
      CHECK(topo->SetPresent(cpu).ok());
      CHECK(topo->Online(cpu).ok());
    }
    cycles.fetch_add(1);
  }
}

bool Exported(const std::string& metric) {
  return RenderMetrics().find("\n" + metric + "\n") != std::string::npos;
}

TEST_CASE("three lines: declare, Add, Read on the default domain") {
  Counter requests("test_requests", "Requests served.");
  RunThreads(kThreads, [&](int) {
    for (uint64_t i = 0; i < kAddsPerThread; ++i) requests.Inc();
  });
  CHECK(requests.Read() == kThreads * kAddsPerThread);
  // On a machine with sysfs the default domain is real, not degraded.
  CHECK(Domain::Default().status().ok());
  CHECK(Domain::Default().topology() != nullptr);
  // ... and keeps its topology in step with the kernel's CPU hotplug.
  CHECK(Domain::Default().monitor_status().ok());
  REQUIRE(Domain::Default().monitor() != nullptr);
  CHECK(Domain::Default().monitor()->rescans() >= 1);
  CHECK_FALSE(requests.degraded());
  CHECK(requests.status().ok());
  CHECK(Exported("test_requests_total 200000"));
}

TEST_CASE("CounterSet: named items, more than one chunk, ReadAll") {
  enum { kPackets, kBytes, kDrops, k3, k4, k5, k6, k7, k8, kLast, kN };
  CounterSet<kN> rx("test_rx", "Received.",
                    {{"packets", "Packets received."},
                     {"bytes", "Bytes received."},
                     {"drops", ""},
                     {"i3", ""},
                     {"i4", ""},
                     {"i5", ""},
                     {"i6", ""},
                     {"i7", ""},
                     {"i8", ""},
                     {"last", "Item 9, in the second chunk."}});
  RunThreads(kThreads, [&](int t) {
    for (uint64_t i = 0; i < kAddsPerThread; ++i) {
      rx.Add(kPackets, 1);
      rx.Add(kBytes, 64);
      rx.Add(kLast, static_cast<uint64_t>(t));
    }
  });
  std::array<uint64_t, kN> all;
  rx.ReadAll(all);
  CHECK(all[kPackets] == kThreads * kAddsPerThread);
  CHECK(all[kBytes] == 64 * kThreads * kAddsPerThread);
  CHECK(all[kDrops] == 0);
  CHECK(all[kLast] == kAddsPerThread * (0 + 1 + 2 + 3));
  CHECK(rx.Read(kLast) == all[kLast]);
  CHECK(rx.status().ok());
  const std::string text = RenderMetrics();
  CHECK(text.find("# HELP test_rx_packets_total Packets received.\n") !=
        std::string::npos);
  // An item without help text inherits the family's.
  CHECK(text.find("# HELP test_rx_drops_total Received.\n") !=
        std::string::npos);
  CHECK(Exported("test_rx_last_total 300000"));
}

TEST_CASE("PacketCounter: every read is a consistent pair") {
  PacketCounter tx("test_tx", "Transmitted.");
  std::atomic<bool> done{false};
  std::atomic<int> bad{0};
  std::thread reader([&] {
    while (!done.load()) {
      const PacketsBytesTotal t = tx.Read();
      if (t.bytes != 100 * t.packets) bad.fetch_add(1);
    }
  });
  RunThreads(kThreads, [&](int) {
    for (uint64_t i = 0; i < kAddsPerThread; ++i) tx.Add(1, 100);
  });
  done.store(true);
  reader.join();
  CHECK(bad.load() == 0);
  const PacketsBytesTotal t = tx.Read();
  CHECK(t.packets == kThreads * kAddsPerThread);
  CHECK(t.bytes == 100 * kThreads * kAddsPerThread);
  CHECK(Exported("test_tx_packets_total 200000"));
  CHECK(Exported("test_tx_bytes_total 20000000"));
}

TEST_CASE("explicit domain: counts stay exact across CPU hotplug") {
  auto domain = Domain::Simulated(8, 8, 8);
  REQUIRE(domain.ok());
  {
    Counter c("test_hotplug", "", domain->get());
    CounterSet<2> s("test_hotplug_set", "", {{"a", ""}, {"b", ""}},
                    domain->get());
    PacketCounter p("test_hotplug_pair", "", domain->get());
    CHECK((*domain)->live_families() == 3);
    std::atomic<bool> done{false};
    std::atomic<uint64_t> cycles{0};
    std::thread hotplug(
        [&] { RemoveAddChurn((*domain)->topology(), done, cycles); });
    RunThreads(kThreads, [&](int) {
      for (uint64_t i = 0; i < kAddsPerThread; ++i) {
        c.Inc();
        s.Add(1, 2);
        p.Add(1, 3);
      }
    });
    done.store(true);
    hotplug.join();
    // The fallback's documented limit (a writer delayed between
    // sched_getcpu() and its add across both Offline and SetAbsent of its
    // CPU may lose that one add) allows a rare loss here, never a double
    // count; the next test checks exact equality without SetAbsent.
    CHECK(c.Read() <= kThreads * kAddsPerThread);
    CHECK(s.Read(1) <= 2 * kThreads * kAddsPerThread);
    CHECK(p.Read().packets <= kThreads * kAddsPerThread);
  }
  CHECK((*domain)->live_families() == 0);
}

TEST_CASE("explicit domain: offline/online races lose nothing") {
  auto domain = Domain::Simulated(8, 8, 8);
  REQUIRE(domain.ok());
  Counter c("test_offline", "", domain->get());
  PacketCounter p("test_offline_pair", "", domain->get());
  std::atomic<bool> done{false};
  std::thread hotplug([&] {
    Topology* topo = (*domain)->topology();
    while (!done.load()) {
      for (int cpu = 1; cpu < 8; ++cpu) {
        CHECK(topo->Offline(cpu).ok());
        CHECK(topo->Online(cpu).ok());
      }
    }
  });
  RunThreads(kThreads, [&](int) {
    for (uint64_t i = 0; i < kAddsPerThread; ++i) {
      c.Inc();
      p.Add(1, 3);
    }
  });
  done.store(true);
  hotplug.join();
  CHECK(c.Read() == kThreads * kAddsPerThread);
  const PacketsBytesTotal t = p.Read();
  CHECK(t.packets == kThreads * kAddsPerThread);
  CHECK(t.bytes == 3 * kThreads * kAddsPerThread);
}

// Counter/CounterSet run PerCpuU64Mib's rseq sequence inline (counter.h):
// with rseq on a simulated domain, CPUs going absent and present while
// threads add, nothing may be lost or counted twice (the absent fold runs
// after the membarrier fence, section 3a of docs/fold_and_hotplug.md). The
// real CPUs this process runs on are inside the 8 simulated ones when the
// machine has at most 8; others land in the overflow word, also exact.
TEST_CASE("rseq writer: inline adds stay exact across simulated hotplug") {
  DomainOptions options;
  options.stats.rseq_with_simulated_topology = true;
  auto domain = Domain::Simulated(8, 8, 8, options);
  REQUIRE(domain.ok());
  const bool rseq = CurrentWriterMode() == WriterMode::kRseq;
  MESSAGE("writer mode: " << std::string(WriterModeName(CurrentWriterMode())));
  Counter c("test_rseq_inline", "", domain->get());
  CounterSet<10> s("test_rseq_inline_set", "",
                   {{"a", ""}, {"b", ""}, {"c", ""}, {"d", ""}, {"e", ""},
                    {"f", ""}, {"g", ""}, {"h", ""}, {"i", ""}, {"j", ""}},
                   domain->get());
  std::atomic<bool> done{false};
  std::atomic<uint64_t> cycles{0};
  std::thread hotplug(
      [&] { RemoveAddChurn((*domain)->topology(), done, cycles); });
  // Writers run until the hotplug thread has done 20 full cycles (at least
  // kAddsPerThread adds each), so adds overlap every kind of event.
  std::atomic<uint64_t> adds{0};
  RunThreads(kThreads, [&](int) {
    uint64_t mine = 0;
    while (mine < kAddsPerThread || cycles.load() < 20) {
      c.Inc();
      s.Add(9, 3);  // second chunk (items 8..15)
      s.Add(0, 1);
      ++mine;
    }
    adds.fetch_add(mine);
  });
  done.store(true);
  hotplug.join();
  const uint64_t n = adds.load();
  MESSAGE("hotplug cycles: " << cycles.load() << ", adds: " << n);
  if (rseq) {
    CHECK(c.Read() == n);
    CHECK(s.Read(9) == 3 * n);
    CHECK(s.Read(0) == n);
  } else {
    // The fallback writer's documented limit across SetAbsent (see the
    // hotplug test above): a rare loss, never a double count.
    CHECK(c.Read() <= n);
    CHECK(s.Read(9) <= 3 * n);
    CHECK(s.Read(0) <= n);
  }
  CHECK(s.Read(1) == 0);
}

TEST_CASE("allocation failure: the family degrades and still counts exactly") {
  DomainOptions options;
  options.allocator.max_total_bytes = 1;  // no chunk fits: every Allocate fails
  auto domain = Domain::Simulated(4, 4, 4, options);
  REQUIRE(domain.ok());
  Counter c("test_degraded", "Degraded.", domain->get());
  PacketCounter p("test_degraded_pair", "", domain->get());
  CHECK(c.degraded());
  CHECK(c.status().code() == StatusCode::kResourceExhausted);
  CHECK(c.status().message().find("degraded") != std::string::npos);
  CHECK(p.degraded());
  std::atomic<int> bad{0};
  std::atomic<bool> done{false};
  std::thread reader([&] {
    while (!done.load()) {
      const PacketsBytesTotal t = p.Read();
      if (t.bytes != 7 * t.packets) bad.fetch_add(1);
    }
  });
  RunThreads(kThreads, [&](int) {
    for (uint64_t i = 0; i < kAddsPerThread; ++i) {
      c.Add(2);
      p.Add(1, 7);
    }
  });
  done.store(true);
  reader.join();
  CHECK(bad.load() == 0);
  CHECK(c.Read() == 2 * kThreads * kAddsPerThread);
  CHECK(p.Read().packets == kThreads * kAddsPerThread);
  // Degraded families are still exported (their total is exact).
  CHECK(Exported("test_degraded_total 400000"));
  // The explicit path turns degradation into an error.
  auto strict = (*domain)->New<Counter>("test_degraded_strict", "");
  CHECK(strict.status().code() == StatusCode::kResourceExhausted);
}

TEST_CASE("names: invalid and duplicate names count but are not exported") {
  Counter bad("9lives", "starts with a digit");
  bad.Add(5);
  CHECK(bad.Read() == 5);
  CHECK(bad.status().code() == StatusCode::kInvalidArgument);
  CHECK(RenderMetrics().find("9lives") == std::string::npos);

  Counter first("test_dup", "first");
  Counter second("test_dup", "second");
  first.Add(1);
  second.Add(2);
  CHECK(first.status().ok());
  CHECK(second.status().code() == StatusCode::kFailedPrecondition);
  CHECK(second.Read() == 2);
  CHECK(Exported("test_dup_total 1"));
  CHECK(RenderMetrics().find("second") == std::string::npos);

  // A CounterSet item colliding with a Counter's metric name.
  Counter rx_packets("test_coll_packets");
  CounterSet<1> coll("test_coll", "", {{"packets", ""}});
  CHECK(coll.status().code() == StatusCode::kFailedPrecondition);

  // Two items of one family with one name.
  CounterSet<2> twins("test_twins", "", {{"a", ""}, {"a", ""}});
  CHECK(twins.status().code() == StatusCode::kInvalidArgument);
  twins.Add(1, 3);
  CHECK(twins.Read(1) == 3);

  // A "_total" suffix given by the user is not doubled.
  Counter with_suffix("test_suffix_total");
  with_suffix.Inc();
  CHECK(Exported("test_suffix_total 1"));
  CHECK(RenderMetrics().find("test_suffix_total_total") == std::string::npos);
}

TEST_CASE("a destroyed family leaves the registry; its name is free again") {
  {
    Counter c("test_scoped");
    c.Inc();
    CHECK(Exported("test_scoped_total 1"));
  }
  CHECK(RenderMetrics().find("test_scoped") == std::string::npos);
  Counter again("test_scoped");
  CHECK(again.status().ok());
}

TEST_CASE("Domain::New returns the family or its error") {
  auto domain = Domain::Simulated(2, 2, 2);
  REQUIRE(domain.ok());
  auto c = (*domain)->New<Counter>("test_new", "help");
  REQUIRE(c.ok());
  (*c)->Add(3);
  CHECK((*c)->Read() == 3);
  auto dup = (*domain)->New<Counter>("test_new", "help");
  CHECK(dup.status().code() == StatusCode::kFailedPrecondition);
  static const CounterItem kItems[] = {{"a", ""}, {"b", ""}};
  auto set = (*domain)->New<CounterSet<2>>("test_new_set", "help", kItems);
  REQUIRE(set.ok());
  (*set)->Add(1, 4);
  CHECK((*set)->Read(1) == 4);
  auto pair = (*domain)->New<PacketCounter>("test_new_pair", "help");
  REQUIRE(pair.ok());
  (*pair)->Add(1, 2);
  CHECK((*pair)->Read().bytes == 2);
}

TEST_CASE("rendering races adds and families coming and going") {
  Counter steady("test_steady");
  std::atomic<bool> done{false};
  std::thread churn([&] {
    for (int i = 0; !done.load(); ++i) {
      CounterSet<2> s("test_churn", "", {{"a", ""}, {"b", ""}});
      PacketCounter p("test_churn_pair");
      s.Add(i % 2, 1);
      p.Add(1, 1);
    }
  });
  std::thread render([&] {
    while (!done.load()) {
      const std::string text =
          RenderMetrics({ExpositionFormat::kOpenMetrics, true});
      CHECK(text.find("# TYPE test_steady counter\n") != std::string::npos);
    }
  });
  RunThreads(kThreads, [&](int) {
    for (uint64_t i = 0; i < kAddsPerThread; ++i) steady.Inc();
  });
  done.store(true);
  churn.join();
  render.join();
  CHECK(steady.Read() == kThreads * kAddsPerThread);
}

TEST_CASE("a sysfs domain runs a hotplug monitor unless told not to") {
  auto monitored = Domain::FromSysfs();
  REQUIRE(monitored.ok());
  REQUIRE((*monitored)->monitor() != nullptr);
  CHECK((*monitored)->monitor()->rescans() >= 1);
  {
    Counter c("test_monitored", "", monitored->get());
    c.Add(9);
    CHECK(c.Read() == 9);
  }
  DomainOptions options;
  options.monitor_hotplug = false;
  auto manual = Domain::FromSysfs(options);
  REQUIRE(manual.ok());
  CHECK((*manual)->monitor() == nullptr);
  // Simulated domains never start one (their caller drives hotplug).
  auto simulated = Domain::Simulated(2, 2, 2);
  REQUIRE(simulated.ok());
  CHECK((*simulated)->monitor() == nullptr);
  // A bad monitor option is the explicit path's error.
  DomainOptions bad;
  bad.monitor.poll_interval = std::chrono::milliseconds(0);
  CHECK(Domain::FromSysfs(bad).status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("Domain factories reject bad input with a Status") {
  CHECK(Domain::Simulated(0, 0, 0).status().code() ==
        StatusCode::kInvalidArgument);
  CHECK(Domain::Create(nullptr).status().code() ==
        StatusCode::kInvalidArgument);
  CHECK(Domain::FromSysfs({}, "/nonexistent/cpu").status().code() ==
        StatusCode::kNotFound);
}

}  // namespace
}  // namespace percpu
