#include "primitives/topology.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "doctest/doctest.h"
#include "primitives/internal/fake_sysfs.h"

namespace percpu {
namespace {

using testing::FakeSysfs;

std::shared_ptr<Topology> MustSim(int possible, int present, int online) {
  auto t = Topology::Simulated(possible, present, online);
  REQUIRE_MESSAGE(t.ok(), t.status().ToString());
  return std::move(t).value();
}

struct Call {
  std::string phase;
  HotplugEvent event;
  int cpu;
  bool operator==(const Call& o) const {
    return phase == o.phase && event == o.event && cpu == o.cpu;
  }
};

TEST_CASE("Topology: Simulated(192, 32, 32) models a 160-hotplug-CPU box") {
  auto t = MustSim(192, 32, 32);
  CHECK(t->num_possible() == 192);
  CHECK(t->possible().ToString() == "0-191");
  CHECK(t->present().ToString() == "0-31");
  CHECK(t->online().ToString() == "0-31");
  CHECK(t->IsPresent(31));
  CHECK_FALSE(t->IsPresent(32));
  CHECK_FALSE(t->IsPresent(-1));
  CHECK_FALSE(t->IsOnline(192));
  CHECK(t->sysfs_dir().empty());
  int n = 0;
  t->ForEachOnline([&](int cpu) { CHECK(cpu == n++); });
  CHECK(n == 32);
  CHECK(t->ValidateCpu(191).ok());
  Status s = t->ValidateCpu(192);
  CHECK(s.code() == StatusCode::kOutOfRange);
  CHECK(s.message() == "Topology: CPU id 192 is not in [0, 192)");
  CHECK(t->ValidateCpu(-1).code() == StatusCode::kOutOfRange);
}

TEST_CASE("Topology: Simulated rejects bad shapes") {
  for (auto args : {std::vector<int>{0, 0, 0}, std::vector<int>{4, 4, 0},
                    std::vector<int>{4, 5, 1}, std::vector<int>{4, 2, 3},
                    std::vector<int>{kMaxCpus + 1, 1, 1},
                    std::vector<int>{-1, 1, 1}}) {
    auto t = Topology::Simulated(args[0], args[1], args[2]);
    REQUIRE_FALSE(t.ok());
    CHECK(t.status().code() == StatusCode::kInvalidArgument);
  }
  auto t = Topology::Simulated(4, 2, 3);
  CHECK(t.status().message() ==
        "Topology::Simulated: need 1 <= online <= present <= possible <= "
        "8192, got possible=4 present=2 online=3");
  CHECK(Topology::Simulated(kMaxCpus, kMaxCpus, 1).ok());
}

TEST_CASE("Topology: hotplug rules") {
  auto t = MustSim(8, 2, 1);
  // Online requires present.
  Status s = t->Online(5);
  CHECK(s.code() == StatusCode::kFailedPrecondition);
  CHECK(s.message() == "Topology::Online(5): CPU 5 is not present");
  // Last online CPU cannot go offline.
  s = t->Offline(0);
  CHECK(s.code() == StatusCode::kFailedPrecondition);
  CHECK(s.message() == "Topology::Offline(0): CPU 0 is the last online CPU");
  CHECK(t->IsOnline(0));
  // Bad ids.
  for (int cpu : {-1, 8, 1000, kMaxCpus}) {
    CHECK(t->SetPresent(cpu).code() == StatusCode::kOutOfRange);
    CHECK(t->SetAbsent(cpu).code() == StatusCode::kOutOfRange);
    CHECK(t->Online(cpu).code() == StatusCode::kOutOfRange);
    CHECK(t->Offline(cpu).code() == StatusCode::kOutOfRange);
  }
  CHECK(t->Online(8).message() ==
        "Topology::Online(8): CPU id 8 is not in [0, 8)");
  // Online CPU cannot be removed.
  CHECK(t->Online(1).ok());
  s = t->SetAbsent(1);
  CHECK(s.code() == StatusCode::kFailedPrecondition);
  CHECK(s.message() == "Topology::SetAbsent(1): CPU 1 is online; Offline() it "
                       "first");
  // Now 0 can go offline since 1 is online.
  CHECK(t->Offline(0).ok());
  CHECK(t->online().ToString() == "1");
  CHECK(t->Offline(1).code() == StatusCode::kFailedPrecondition);
  // Full cycle of a hot-added CPU.
  const uint64_t before = t->events_fired();
  CHECK(t->SetPresent(7).ok());
  CHECK(t->Online(7).ok());
  CHECK(t->online().ToString() == "1,7");
  CHECK(t->present().ToString() == "0-1,7");
  CHECK(t->Offline(7).ok());
  CHECK(t->SetAbsent(7).ok());
  CHECK(t->present().ToString() == "0-1");
  CHECK(t->events_fired() == before + 4);
  // Requests for the current state are no-ops without events.
  CHECK(t->SetAbsent(7).ok());
  CHECK(t->Offline(7).ok());
  CHECK(t->SetPresent(0).ok());
  CHECK(t->Online(1).ok());
  CHECK(t->events_fired() == before + 4);
}

TEST_CASE("Topology: callback phases and order") {
  auto t = MustSim(4, 1, 1);
  std::vector<Call> calls;
  Topology* tp = t.get();
  auto make = [&](const std::string& name, bool fold) {
    return [&, name, fold](HotplugEvent e, int cpu) {
      // Where the masks are when the callback runs.
      const bool present = tp->IsPresent(cpu);
      const bool online = tp->IsOnline(cpu);
      const bool in_write = (tp->hotplug_seq().RawCount() & 1) != 0;
      std::string phase = name + (fold ? ".fold" : ".prep");
      phase += in_write ? "[w]" : "[-]";
      phase += present ? "P" : "p";
      phase += online ? "O" : "o";
      calls.push_back(Call{phase, e, cpu});
      return Status::Ok();
    };
  };
  auto a = t->RegisterHotplugCallbacks(make("a", false), make("a", true));
  auto b = t->RegisterHotplugCallbacks(make("b", false), make("b", true));
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(*a != 0);
  CHECK(*a != *b);

  REQUIRE(t->SetPresent(2).ok());
  using E = HotplugEvent;
  // Bring-up: prepare before the mask changes (registration order), fold
  // inside the write section, mask still old there (updated last).
  CHECK(calls == std::vector<Call>{{"a.prep[-]po", E::kPresent, 2},
                                   {"b.prep[-]po", E::kPresent, 2},
                                   {"a.fold[w]po", E::kPresent, 2},
                                   {"b.fold[w]po", E::kPresent, 2}});
  calls.clear();
  REQUIRE(t->Online(2).ok());
  CHECK(calls == std::vector<Call>{{"a.prep[-]Po", E::kOnline, 2},
                                   {"b.prep[-]Po", E::kOnline, 2},
                                   {"a.fold[w]Po", E::kOnline, 2},
                                   {"b.fold[w]Po", E::kOnline, 2}});
  calls.clear();
  // Teardown: fold in the write section (mask not yet cleared), then the
  // teardown phase after the masks changed, in reverse order.
  REQUIRE(t->Offline(2).ok());
  CHECK(calls == std::vector<Call>{{"a.fold[w]PO", E::kOffline, 2},
                                   {"b.fold[w]PO", E::kOffline, 2},
                                   {"b.prep[-]Po", E::kOffline, 2},
                                   {"a.prep[-]Po", E::kOffline, 2}});
  calls.clear();
  REQUIRE(t->SetAbsent(2).ok());
  // kAbsent: the present bit is cleared first (then the rseq fence), so the
  // folds already see it clear.
  CHECK(calls == std::vector<Call>{{"a.fold[w]po", E::kAbsent, 2},
                                   {"b.fold[w]po", E::kAbsent, 2},
                                   {"b.prep[-]po", E::kAbsent, 2},
                                   {"a.prep[-]po", E::kAbsent, 2}});
  calls.clear();
  // Unregistered callbacks never run again.
  CHECK(t->UnregisterHotplugCallbacks(*a).ok());
  Status s = t->UnregisterHotplugCallbacks(*a);
  CHECK(s.code() == StatusCode::kNotFound);
  CHECK(s.message() == "Topology::UnregisterHotplugCallbacks: no callbacks "
                       "registered with id " + std::to_string(*a));
  REQUIRE(t->SetPresent(3).ok());
  CHECK(calls.size() == 2);
  for (const Call& c : calls) CHECK(c.phase[0] == 'b');
  // Empty callbacks are allowed.
  CHECK(t->RegisterHotplugCallbacks(nullptr, nullptr).ok());
  CHECK(t->Online(3).ok());
}

TEST_CASE("Topology: failing callbacks are reported and do not stop others") {
  auto t = MustSim(4, 1, 1);
  int runs = 0;
  auto ok_cb = [&](HotplugEvent, int) {
    ++runs;
    return Status::Ok();
  };
  auto fail_prep = [&](HotplugEvent e, int cpu) {
    ++runs;
    return ResourceExhaustedError(std::string("no memory for ") +
                                  HotplugEventName(e) + " " +
                                  std::to_string(cpu));
  };
  auto fail_fold = [&](HotplugEvent, int) {
    ++runs;
    return InternalError("fold broke");
  };
  auto r1 = t->RegisterHotplugCallbacks(fail_prep, ok_cb);
  auto r2 = t->RegisterHotplugCallbacks(ok_cb, fail_fold);
  REQUIRE(r1.ok());
  REQUIRE(r2.ok());
  // Bring-up: failing prepare vetoes the event; the other prepare still ran.
  Status s = t->SetPresent(1);
  CHECK(s.code() == StatusCode::kResourceExhausted);
  CHECK(s.message() ==
        "Topology: kPresent of CPU 1: 1 hotplug callback(s) failed: prepare "
        "callback #" + std::to_string(*r1) +
            ": RESOURCE_EXHAUSTED: no memory for kPresent 1 (event vetoed; "
            "masks unchanged)");
  CHECK(runs == 2);  // both prepares, no folds
  CHECK_FALSE(t->IsPresent(1));

  // Teardown cannot be vetoed: failures of every phase are listed.
  REQUIRE(t->UnregisterHotplugCallbacks(*r1).ok());
  REQUIRE(t->UnregisterHotplugCallbacks(*r2).ok());
  auto r3 = t->RegisterHotplugCallbacks(ok_cb, fail_fold);
  REQUIRE(r3.ok());
  runs = 0;
  s = t->SetPresent(1);  // fold fails but the event happens
  CHECK(s.code() == StatusCode::kInternal);
  CHECK(t->IsPresent(1));
  CHECK(runs == 2);
  REQUIRE(t->Online(1).ok() == false);  // fold fails again: still onlined
  CHECK(t->IsOnline(1));
  auto r4 = t->RegisterHotplugCallbacks(fail_prep, ok_cb);
  REQUIRE(r4.ok());
  runs = 0;
  s = t->Offline(1);
  CHECK(s.code() == StatusCode::kInternal);  // first failure: r3's fold
  CHECK(s.message() ==
        "Topology: kOffline of CPU 1: 2 hotplug callback(s) failed: fold "
        "callback #" + std::to_string(*r3) +
            ": INTERNAL: fold broke; teardown callback #" +
            std::to_string(*r4) +
            ": RESOURCE_EXHAUSTED: no memory for kOffline 1");
  CHECK_FALSE(t->IsOnline(1));
  CHECK(runs == 4);  // 2 folds + 2 teardowns
}

TEST_CASE("Topology: calls from inside a callback fail instead of deadlock") {
  auto t = MustSim(4, 2, 1);
  Topology* tp = t.get();
  std::vector<Status> seen;
  std::string present_inside;
  auto cb = [&](HotplugEvent, int) {
    seen.push_back(tp->UnregisterHotplugCallbacks(1));
    seen.push_back(tp->RegisterHotplugCallbacks(nullptr, nullptr).status());
    seen.push_back(tp->Online(0));
    seen.push_back(tp->Offline(0));
    seen.push_back(tp->SetPresent(3));
    seen.push_back(tp->SetAbsent(3));
    present_inside = tp->present().ToString();  // must not spin
    return Status::Ok();
  };
  auto id = t->RegisterHotplugCallbacks(nullptr, cb);
  REQUIRE(id.ok());
  REQUIRE(t->Online(1).ok());
  REQUIRE(seen.size() == 6);
  // Unregistering from inside a callback works (issue 12 item 6): the
  // callback unregistered itself (id 1) and never runs again.
  CHECK(seen[0].ok());
  for (size_t i = 1; i < seen.size(); ++i) {
    CHECK(seen[i].code() == StatusCode::kFailedPrecondition);
  }
  CHECK(seen[2].message() ==
        "Topology::Online(0): called from inside a hotplug callback");
  CHECK(present_inside == "0-1");
  REQUIRE(*id == 1);
  CHECK(t->UnregisterHotplugCallbacks(*id).code() == StatusCode::kNotFound);
  REQUIRE(t->Offline(1).ok());
  CHECK(seen.size() == 6);  // did not run again
}

// Readers in a hotplug_seq read section see the fold's move and the mask
// change atomically: the sum over online CPUs plus the accumulator is
// constant.
TEST_CASE("Topology: fold + mask update are atomic for seq readers") {
  constexpr int kCpus = 8;
  auto t = MustSim(kCpus, kCpus, kCpus);
  Topology* tp = t.get();
  std::unique_ptr<internal::Atomic<uint64_t>[]> value(
      new internal::Atomic<uint64_t>[kCpus]);
  internal::Atomic<uint64_t> acc{0};
  for (int i = 0; i < kCpus; ++i) value[i].store(100, std::memory_order_relaxed);
  const uint64_t kTotal = 100 * kCpus;
  auto fold = [&](HotplugEvent e, int cpu) {
    // Relaxed: ordered by the hotplug seqcount write section.
    if (e == HotplugEvent::kOffline) {
      acc.store(acc.load(std::memory_order_relaxed) +
                    value[cpu].load(std::memory_order_relaxed),
                std::memory_order_relaxed);
      value[cpu].store(0, std::memory_order_relaxed);
    } else if (e == HotplugEvent::kOnline) {
      acc.store(acc.load(std::memory_order_relaxed) - 100,
                std::memory_order_relaxed);
      value[cpu].store(100, std::memory_order_relaxed);
    }
    return Status::Ok();
  };
  REQUIRE(t->RegisterHotplugCallbacks(nullptr, fold).ok());
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0};
  std::atomic<int> reads{0};
  std::thread reader([&] {
    while (!stop.load(std::memory_order_relaxed)) {
      uint64_t sum;
      uint32_t start;
      do {
        start = tp->hotplug_seq().ReadBegin();
        sum = acc.load(std::memory_order_relaxed);
        tp->ForEachOnline([&](int cpu) {
          sum += value[cpu].load(std::memory_order_relaxed);
        });
      } while (tp->hotplug_seq().ReadRetry(start));
      if (sum != kTotal) bad.fetch_add(1, std::memory_order_relaxed);
      reads.fetch_add(1, std::memory_order_relaxed);
    }
  });
  for (int i = 0; i < 20000; ++i) {
    const int cpu = 1 + i % (kCpus - 1);
    REQUIRE(t->Offline(cpu).ok());
    REQUIRE(t->Online(cpu).ok());
  }
  stop.store(true);
  reader.join();
  CHECK(bad.load() == 0);
  CHECK(reads.load() > 0);
}

TEST_CASE("Topology: concurrent register/unregister with events") {
  auto t = MustSim(16, 16, 16);
  Topology* tp = t.get();
  std::atomic<bool> stop{false};
  std::atomic<int> after_unregister{0};
  std::atomic<long> calls{0};
  std::thread events([&] {
    int i = 0;
    // At least 200 rounds, and as long as the registering threads run.
    while (i < 200 || !stop.load(std::memory_order_relaxed)) {
      const int cpu = 1 + (i++ % 15);
      CHECK(tp->Offline(cpu).ok());
      CHECK(tp->SetAbsent(cpu).ok());
      CHECK(tp->SetPresent(cpu).ok());
      CHECK(tp->Online(cpu).ok());
    }
  });
  std::vector<std::thread> regs;
  for (int th = 0; th < 2; ++th) {
    regs.emplace_back([&] {
      for (int i = 0; i < 500; ++i) {
        auto gone = std::make_shared<std::atomic<bool>>(false);
        auto cb = [gone, &after_unregister, &calls](HotplugEvent, int) {
          if (gone->load()) after_unregister.fetch_add(1);
          calls.fetch_add(1, std::memory_order_relaxed);
          return Status::Ok();
        };
        auto id = tp->RegisterHotplugCallbacks(cb, cb);
        REQUIRE(id.ok());
        std::this_thread::yield();
        REQUIRE(tp->UnregisterHotplugCallbacks(*id).ok());
        gone->store(true);
      }
    });
  }
  for (auto& th : regs) th.join();
  stop.store(true);
  events.join();
  CHECK(after_unregister.load() == 0);
  CHECK(t->online().ToString() == "0-15");
  CHECK(t->events_fired() > 0);
  MESSAGE("callback calls during churn: " << calls.load());
}

// --- sysfs ----------------------------------------------------------------


TEST_CASE("Topology::FromSysfs on a fake directory") {
  FakeSysfs fs;
  fs.WriteAll("0-191\n", "0-31\n", "0-31\n");
  auto t = Topology::FromSysfs(fs.dir());
  REQUIRE_MESSAGE(t.ok(), t.status().ToString());
  CHECK((*t)->num_possible() == 192);
  CHECK((*t)->present().ToString() == "0-31");
  CHECK((*t)->online().ToString() == "0-31");
  CHECK((*t)->sysfs_dir() == fs.dir());

  SUBCASE("holes in possible") {
    fs.WriteAll("0-3,8\n", "0-1,8\n", "0\n");
    auto h = Topology::FromSysfs(fs.dir());
    REQUIRE(h.ok());
    CHECK((*h)->num_possible() == 9);
    Status s = (*h)->SetPresent(5);
    CHECK(s.code() == StatusCode::kFailedPrecondition);
    CHECK(s.message() == "Topology::SetPresent(5): CPU 5 is not possible "
                         "(possible: 0-3,8)");
    CHECK((*h)->Online(8).ok());
  }
  SUBCASE("malformed file") {
    fs.Write("present", "0-3,,4\n");
    auto b = Topology::FromSysfs(fs.dir());
    REQUIRE_FALSE(b.ok());
    CHECK(b.status().code() == StatusCode::kInvalidArgument);
    CHECK(b.status().message() ==
          "Topology::FromSysfs: " + fs.dir() +
              "/present: CpuMask::Parse: expected a CPU id, found ',' at "
              "position 4 of \"0-3,,4\\n\"");
  }
  SUBCASE("missing file") {
    fs.Remove("online");
    auto b = Topology::FromSysfs(fs.dir());
    REQUIRE_FALSE(b.ok());
    CHECK(b.status().code() == StatusCode::kNotFound);
    CHECK(b.status().message() ==
          "Topology::FromSysfs: cannot open " + fs.dir() + "/online");
  }
  SUBCASE("missing directory") {
    auto b = Topology::FromSysfs(fs.dir() + "/nonexistent");
    CHECK(b.status().code() == StatusCode::kNotFound);
  }
  SUBCASE("inconsistent masks") {
    fs.WriteAll("0-3\n", "0-1\n", "0-2\n");
    auto b = Topology::FromSysfs(fs.dir());
    CHECK(b.status().code() == StatusCode::kFailedPrecondition);
    CHECK(b.status().message() == "Topology::FromSysfs: online CPUs 0-2 are "
                                  "not all present (0-1)");
    fs.WriteAll("0-3\n", "0-5\n", "0\n");
    CHECK(Topology::FromSysfs(fs.dir()).status().code() ==
          StatusCode::kFailedPrecondition);
    fs.WriteAll("\n", "\n", "\n");
    CHECK(Topology::FromSysfs(fs.dir()).status().code() ==
          StatusCode::kFailedPrecondition);
    fs.WriteAll("0-3\n", "0-3\n", "\n");
    CHECK(Topology::FromSysfs(fs.dir()).status().message() ==
          "Topology::FromSysfs: " + fs.dir() + "/online lists no CPU");
  }
}

TEST_CASE("Topology::Rescan fires the sysfs differences") {
  FakeSysfs fs;
  fs.WriteAll("0-7\n", "0-3\n", "0-1\n");
  auto r = Topology::FromSysfs(fs.dir());
  REQUIRE(r.ok());
  Topology& t = **r;
  std::vector<Call> calls;
  REQUIRE(t.RegisterHotplugCallbacks(nullptr,
                                     [&](HotplugEvent e, int cpu) {
                                       calls.push_back(Call{"", e, cpu});
                                       return Status::Ok();
                                     })
              .ok());
  CHECK(t.Rescan().ok());
  CHECK(calls.empty());

  using E = HotplugEvent;
  fs.WriteAll("0-7\n", "0-2,5-6\n", "0,2,5\n");
  CHECK(t.Rescan().ok());
  CHECK(calls == std::vector<Call>{{"", E::kPresent, 5},
                                   {"", E::kPresent, 6},
                                   {"", E::kOnline, 2},
                                   {"", E::kOnline, 5},
                                   {"", E::kOffline, 1},
                                   {"", E::kAbsent, 3}});
  CHECK(t.present().ToString() == "0-2,5-6");
  CHECK(t.online().ToString() == "0,2,5");

  // Errors: malformed file fires nothing; a changed possible set is refused.
  calls.clear();
  fs.Write("online", "0-\n");
  CHECK(t.Rescan().code() == StatusCode::kInvalidArgument);
  fs.WriteAll("0-8\n", "0-3\n", "0\n");
  Status s = t.Rescan();
  CHECK(s.code() == StatusCode::kFailedPrecondition);
  CHECK(s.message() ==
        "Topology::Rescan: possible CPUs changed from 0-7 to 0-8");
  CHECK(calls.empty());
  CHECK(t.online().ToString() == "0,2,5");

  auto sim = MustSim(2, 2, 2);
  CHECK(sim->Rescan().message() ==
        "Topology::Rescan: a simulated topology has no sysfs directory");
}

TEST_CASE("Topology::FromSysfs on this machine") {
  std::ifstream probe("/sys/devices/system/cpu/possible");
  if (!probe) {
    MESSAGE("no /sys/devices/system/cpu here; skipped");
    CHECK(Topology::FromSysfs().status().code() == StatusCode::kNotFound);
    return;
  }
  auto t = Topology::FromSysfs();
  REQUIRE_MESSAGE(t.ok(), t.status().ToString());
  CHECK((*t)->num_possible() >= 1);
  CHECK((*t)->online().IsSubsetOf((*t)->present()));
  CHECK((*t)->present().IsSubsetOf((*t)->possible()));
  CHECK((*t)->online().Count() >= 1);
  const long conf = sysconf(_SC_NPROCESSORS_CONF);
  MESSAGE("possible=" << (*t)->possible().ToString()
                      << " present=" << (*t)->present().ToString()
                      << " online=" << (*t)->online().ToString()
                      << " _SC_NPROCESSORS_CONF=" << conf);
  CHECK((*t)->Rescan().ok());  // unchanged sysfs: no events
}

}  // namespace
}  // namespace percpu

namespace percpu {
namespace {

// Issue 12 item 5: a throwing callback must not leave the hotplug seqcount
// odd (readers would spin forever); the exception becomes a Status.
TEST_CASE("Topology: throwing callbacks never leave a write section open") {
  auto t = MustSim(4, 4, 4);
  int after = 0;
  auto throwing_fold = t->RegisterHotplugCallbacks(
      nullptr, [](HotplugEvent, int) -> Status {
        throw std::runtime_error("fold threw");
      });
  auto next = t->RegisterHotplugCallbacks(
      [&](HotplugEvent, int) -> Status {
        ++after;
        throw 42;  // not even a std::exception
      },
      [&](HotplugEvent, int) {
        ++after;
        return Status::Ok();
      });
  REQUIRE(throwing_fold.ok());
  REQUIRE(next.ok());
  Status s = t->Offline(2);
  CHECK(s.code() == StatusCode::kInternal);
  CHECK(s.message().find("fold callback #" + std::to_string(*throwing_fold) +
                         ": INTERNAL: threw an exception") != std::string::npos);
  CHECK(s.message().find("teardown callback #" + std::to_string(*next) +
                         ": INTERNAL: threw an exception") != std::string::npos);
  CHECK(after == 2);  // the later callbacks still ran
  CHECK((t->hotplug_seq().RawCount() & 1) == 0);
  CHECK(t->online().ToString() == "0-1,3");  // a reader does not spin
  // A throwing bring-up prepare vetoes the event like a failing one.
  s = t->Online(2);
  CHECK(s.code() == StatusCode::kInternal);
  CHECK(t->online().ToString() == "0-1,3");
  CHECK((t->hotplug_seq().RawCount() & 1) == 0);
}

// Issue 12 item 6: unregistering from inside a callback (e.g. destroying
// an object from a user's hotplug callback) works: the registration never
// runs again, also not later in the same event.
TEST_CASE("Topology: unregister another registration from inside a callback") {
  auto t = MustSim(4, 4, 4);
  int victim_runs = 0;
  uint64_t victim = 0;
  auto killer = t->RegisterHotplugCallbacks(
      nullptr, [&](HotplugEvent, int) {
        return victim != 0 ? t->UnregisterHotplugCallbacks(victim)
                           : Status::Ok();
      });
  auto v = t->RegisterHotplugCallbacks(
      [&](HotplugEvent, int) {
        ++victim_runs;
        return Status::Ok();
      },
      [&](HotplugEvent, int) {
        ++victim_runs;
        return Status::Ok();
      });
  REQUIRE(killer.ok());
  REQUIRE(v.ok());
  victim = *v;
  // The killer's fold runs first and unregisters the victim: neither its
  // fold nor its teardown runs in this event.
  REQUIRE(t->Offline(1).ok());
  CHECK(victim_runs == 0);
  victim = 0;
  REQUIRE(t->Online(1).ok());
  CHECK(victim_runs == 0);
  CHECK(t->UnregisterHotplugCallbacks(*v).code() == StatusCode::kNotFound);
}

}  // namespace
}  // namespace percpu
