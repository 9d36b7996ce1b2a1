// HotplugMonitor on the host: the polling path against a temporary sysfs
// folder, the uevent path through the uevent_fd seam (a socketpair carrying
// crafted kernel messages), the parser on crafted buffers, errors and clean
// stop. Real kernel events are tested inside the VMs (vm/).
#include "primitives/hotplug_monitor.h"

#include <dirent.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>

#include "doctest/doctest.h"
#include "primitives/internal/fake_sysfs.h"

namespace percpu {
namespace {

using internal::CpuUeventAction;
using testing::FakeSysfs;
using internal::ParseCpuUevent;
using std::chrono::milliseconds;


// Waits up to 10 s for pred(); returns its last value.
template <typename Pred>
bool WaitFor(Pred pred) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(milliseconds(2));
  }
  return pred();
}

int CountOpenFds() {
  int n = 0;
  DIR* d = opendir("/proc/self/fd");
  if (d == nullptr) return -1;
  while (readdir(d) != nullptr) ++n;
  closedir(d);
  return n;
}

std::string Msg(const std::string& action, const std::string& devpath,
                const std::string& extra = "SUBSYSTEM=cpu") {
  std::string m = action + "@" + devpath;
  m.push_back('\0');
  m += "ACTION=" + action;
  m.push_back('\0');
  m += "DEVPATH=" + devpath;
  m.push_back('\0');
  m += extra;
  m.push_back('\0');
  m += "SEQNUM=1234";
  m.push_back('\0');
  return m;
}

TEST_CASE("ParseCpuUevent accepts the four CPU actions") {
  for (const auto& [name, action] :
       {std::pair<const char*, CpuUeventAction>{"online", CpuUeventAction::kOnline},
        {"offline", CpuUeventAction::kOffline},
        {"add", CpuUeventAction::kAdd},
        {"remove", CpuUeventAction::kRemove}}) {
    const std::string m = Msg(name, "/devices/system/cpu/cpu17");
    const auto ev = ParseCpuUevent(m.data(), m.size());
    CHECK(ev.action == action);
    CHECK(ev.cpu == 17);
  }
  const std::string m0 = Msg("online", "/devices/system/cpu/cpu0");
  CHECK(ParseCpuUevent(m0.data(), m0.size()).cpu == 0);
}

TEST_CASE("ParseCpuUevent rejects everything else") {
  auto rejects = [](const std::string& m) {
    return ParseCpuUevent(m.data(), m.size()).action == CpuUeventAction::kNone;
  };
  CHECK(rejects(Msg("change", "/devices/system/cpu/cpu1")));
  CHECK(rejects(Msg("bind", "/devices/system/cpu/cpu1")));
  CHECK(rejects(Msg("online", "/devices/system/memory/memory3")));
  CHECK(rejects(Msg("add", "/devices/system/cpu/cpufreq")));
  CHECK(rejects(Msg("add", "/devices/system/cpu/cpu1/cache")));
  CHECK(rejects(Msg("add", "/devices/system/cpu/cpu")));
  CHECK(rejects(Msg("add", "/devices/system/cpu/cpu-1")));
  CHECK(rejects(Msg("add", "/devices/system/cpu/cpu12345678")));
  // Header and keys disagree.
  {
    std::string m = Msg("online", "/devices/system/cpu/cpu1");
    m.replace(0, 6, "remove");  // "remove@..." with ACTION=online
    CHECK(rejects(m));
  }
  // udev's re-broadcast starts with "libudev".
  {
    std::string m = "libudev";
    m.push_back('\0');
    m += Msg("online", "/devices/system/cpu/cpu1").substr(
        std::string("online@/devices/system/cpu/cpu1").size() + 1);
    CHECK(rejects(m));
  }
  // Missing keys, truncation (no final NUL on the DEVPATH field), empty.
  {
    std::string m = "online@/devices/system/cpu/cpu1";
    m.push_back('\0');
    m += "ACTION=online";
    m.push_back('\0');
    CHECK(rejects(m));
    std::string t = m + "DEVPATH=/devices/system/cpu/cpu1";  // no NUL
    CHECK(rejects(t));
  }
  CHECK(ParseCpuUevent(nullptr, 10).action == CpuUeventAction::kNone);
  CHECK(ParseCpuUevent("", 0).action == CpuUeventAction::kNone);
  const std::string m = Msg("online", "/devices/system/cpu/cpu1");
  // Every proper prefix stops before DEVPATH's NUL or before SEQNUM:
  // prefixes that still contain complete ACTION and DEVPATH fields parse,
  // shorter ones do not; none may read past len (ASan would see it).
  const size_t complete = m.find("SUBSYSTEM");
  for (size_t len = 0; len < m.size(); ++len) {
    const auto ev = ParseCpuUevent(m.data(), len);
    if (len >= complete) {
      CHECK(ev.action == CpuUeventAction::kOnline);
    } else {
      CHECK(ev.action == CpuUeventAction::kNone);
    }
  }
}

TEST_CASE("Start refuses a simulated topology and bad intervals") {
  auto sim = Topology::Simulated(4, 4, 4);
  REQUIRE(sim.ok());
  auto m = HotplugMonitor::Start(**sim);
  CHECK(m.status().code() == StatusCode::kFailedPrecondition);

  FakeSysfs fs;
  fs.WriteAll("0-3\n", "0-3\n", "0-3\n");
  auto t = Topology::FromSysfs(fs.dir());
  REQUIRE(t.ok());
  HotplugMonitor::Options o;
  o.poll_interval = milliseconds(0);
  CHECK(HotplugMonitor::Start(**t, o).status().code() ==
        StatusCode::kInvalidArgument);
  o = {};
  o.resync_interval = milliseconds(-5);
  CHECK(HotplugMonitor::Start(**t, o).status().code() ==
        StatusCode::kInvalidArgument);
}

TEST_CASE("polling path: the topology follows the folder, no caller") {
  FakeSysfs fs;
  fs.WriteAll("0-7\n", "0-3\n", "0-1\n");
  auto t = Topology::FromSysfs(fs.dir());
  REQUIRE(t.ok());
  Topology& topo = **t;
  std::atomic<int> onlines{0}, offlines{0}, presents{0}, absents{0};
  auto reg = topo.RegisterHotplugCallbacks(
      nullptr, [&](HotplugEvent e, int) {
        switch (e) {
          case HotplugEvent::kOnline: onlines++; break;
          case HotplugEvent::kOffline: offlines++; break;
          case HotplugEvent::kPresent: presents++; break;
          case HotplugEvent::kAbsent: absents++; break;
        }
        return Status::Ok();
      });
  REQUIRE(reg.ok());

  // The folder changes before Start: the initial Rescan catches it.
  fs.Write("online", "0-2\n");
  HotplugMonitor::Options o;
  o.source = HotplugMonitor::Options::Source::kPollOnly;
  o.poll_interval = milliseconds(5);
  auto m = HotplugMonitor::Start(topo, o);
  REQUIRE_MESSAGE(m.ok(), m.status().ToString());
  CHECK_FALSE((*m)->using_netlink());
  CHECK((*m)->netlink_error() == "kPollOnly");
  CHECK(topo.online().ToString() == "0-2");  // synchronous first Rescan
  CHECK(onlines.load() == 1);

  fs.Write("present", "0-5\n");
  CHECK(WaitFor([&] { return topo.present().ToString() == "0-5"; }));
  CHECK(presents.load() == 2);
  fs.Write("online", "0-1,4-5\n");
  CHECK(WaitFor([&] { return topo.online().ToString() == "0-1,4-5"; }));
  CHECK(onlines.load() == 3);
  CHECK(offlines.load() == 1);
  fs.Write("online", "0-1\n");
  fs.Write("present", "0-3\n");
  CHECK(WaitFor([&] { return topo.present().ToString() == "0-3"; }));
  CHECK(topo.online().ToString() == "0-1");
  CHECK(absents.load() == 2);
  CHECK((*m)->rescans() > 3);
  CHECK((*m)->rescan_errors() == 0);
  CHECK((*m)->last_error().ok());
}

TEST_CASE("polling path: Rescan errors are counted, the monitor survives") {
  FakeSysfs fs;
  fs.WriteAll("0-3\n", "0-3\n", "0-3\n");
  auto t = Topology::FromSysfs(fs.dir());
  REQUIRE(t.ok());
  HotplugMonitor::Options o;
  o.source = HotplugMonitor::Options::Source::kPollOnly;
  o.poll_interval = milliseconds(2);
  auto m = HotplugMonitor::Start(**t, o);
  REQUIRE(m.ok());
  fs.Write("online", "garbage\n");
  CHECK(WaitFor([&] { return (*m)->rescan_errors() >= 2; }));
  CHECK((*m)->last_error().code() == StatusCode::kInvalidArgument);
  fs.Remove("online");
  CHECK(WaitFor([&] {
    return (*m)->last_error().code() == StatusCode::kNotFound;
  }));
  // Back to a valid folder: it follows again.
  fs.Write("online", "0,2\n");
  CHECK(WaitFor([&] { return (**t).online().ToString() == "0,2"; }));

  // A failing hotplug callback is an error of the Rescan, not of the
  // monitor.
  auto reg = (**t).RegisterHotplugCallbacks(
      nullptr, [](HotplugEvent, int) { return InternalError("planted"); });
  REQUIRE(reg.ok());
  const uint64_t before = (*m)->rescan_errors();
  fs.Write("online", "0-3\n");
  CHECK(WaitFor([&] { return (**t).online().ToString() == "0-3"; }));
  CHECK(WaitFor([&] { return (*m)->rescan_errors() > before; }));
  CHECK((*m)->last_error().message().find("planted") != std::string::npos);
}

TEST_CASE("uevent path: crafted messages drive Rescan, others do not") {
  FakeSysfs fs;
  fs.WriteAll("0-3\n", "0-3\n", "0-3\n");
  auto t = Topology::FromSysfs(fs.dir());
  REQUIRE(t.ok());
  int sv[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv) == 0);
  HotplugMonitor::Options o;
  o.uevent_fd = sv[0];
  // No timed rescans during this test: only events may rescan.
  o.resync_interval = milliseconds(60 * 60 * 1000);
  auto m = HotplugMonitor::Start(**t, o);
  REQUIRE(m.ok());
  CHECK((*m)->using_netlink());
  CHECK((*m)->rescans() == 1);

  auto send_msg = [&](const std::string& msg) {
    REQUIRE(::send(sv[1], msg.data(), msg.size(), 0) ==
            static_cast<ssize_t>(msg.size()));
  };
  // Irrelevant messages: no Rescan even though the folder changed.
  fs.Write("online", "0-2\n");
  send_msg(Msg("change", "/devices/system/cpu/cpu3"));
  send_msg(Msg("offline", "/devices/system/memory/memory3"));
  std::this_thread::sleep_for(milliseconds(100));
  CHECK((*m)->rescans() == 1);
  CHECK((*m)->cpu_uevents() == 0);
  CHECK((**t).online().ToString() == "0-3");
  // The kernel's offline message: the monitor rescans.
  send_msg(Msg("offline", "/devices/system/cpu/cpu3"));
  CHECK(WaitFor([&] { return (**t).online().ToString() == "0-2"; }));
  CHECK((*m)->cpu_uevents() == 1);
  // Several messages in a burst: all accepted, coalesced Rescans.
  fs.Write("online", "0\n");
  send_msg(Msg("offline", "/devices/system/cpu/cpu1"));
  send_msg(Msg("offline", "/devices/system/cpu/cpu2"));
  CHECK(WaitFor([&] { return (**t).online().ToString() == "0"; }));
  CHECK(WaitFor([&] { return (*m)->cpu_uevents() == 3; }));
  CHECK((*m)->rescans() <= 4);
  CHECK((*m)->rescan_errors() == 0);
  (*m)->Stop();
  close(sv[1]);
}

TEST_CASE("auto source: netlink or a stated reason, and polling works") {
  FakeSysfs fs;
  fs.WriteAll("0-3\n", "0-3\n", "0-3\n");
  auto t = Topology::FromSysfs(fs.dir());
  REQUIRE(t.ok());
  HotplugMonitor::Options o;
  o.poll_interval = milliseconds(5);
  o.resync_interval = milliseconds(5);
  auto m = HotplugMonitor::Start(**t, o);
  REQUIRE(m.ok());
  MESSAGE("netlink: " << ((*m)->using_netlink() ? "yes" : "no: ")
                      << (*m)->netlink_error());
  CHECK((*m)->using_netlink() == (*m)->netlink_error().empty());
  // Either way, the periodic Rescan (poll or resync) follows the folder.
  fs.Write("online", "0-1\n");
  CHECK(WaitFor([&] { return (**t).online().ToString() == "0-1"; }));
}

TEST_CASE("stop is clean: thread joined, no fd leaked, no later Rescan") {
  FakeSysfs fs;
  fs.WriteAll("0-3\n", "0-3\n", "0-3\n");
  auto t = Topology::FromSysfs(fs.dir());
  REQUIRE(t.ok());
  const int fds_before = CountOpenFds();
  for (int i = 0; i < 20; ++i) {
    HotplugMonitor::Options o;
    o.poll_interval = milliseconds(1);
    o.resync_interval = milliseconds(1);
    if (i % 2 == 1) o.source = HotplugMonitor::Options::Source::kPollOnly;
    auto m = HotplugMonitor::Start(**t, o);
    REQUIRE(m.ok());
    std::this_thread::sleep_for(milliseconds(3));
    if (i % 3 == 0) (*m)->Stop();
    if (i % 3 == 0) {
      const uint64_t r = (*m)->rescans();
      std::this_thread::sleep_for(milliseconds(10));
      CHECK((*m)->rescans() == r);  // stopped means stopped
      (*m)->Stop();                 // idempotent
    }
  }  // destructors join
  CHECK(CountOpenFds() == fds_before);
  // The socketpair seam: the monitor owns and closes its end.
  int sv[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv) == 0);
  {
    HotplugMonitor::Options o;
    o.uevent_fd = sv[0];
    auto m = HotplugMonitor::Start(**t, o);
    REQUIRE(m.ok());
  }
  close(sv[1]);
  CHECK(CountOpenFds() == fds_before);
  // A failed Start closes the given fd too.
  REQUIRE(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv) == 0);
  {
    auto sim = Topology::Simulated(2, 2, 2);
    REQUIRE(sim.ok());
    HotplugMonitor::Options o;
    o.uevent_fd = sv[0];
    CHECK_FALSE(HotplugMonitor::Start(**sim, o).ok());
  }
  close(sv[1]);
  CHECK(CountOpenFds() == fds_before);
}

TEST_CASE("Stop from inside a hotplug callback does not deadlock") {
  FakeSysfs fs;
  fs.WriteAll("0-3\n", "0-3\n", "0-3\n");
  auto t = Topology::FromSysfs(fs.dir());
  REQUIRE(t.ok());
  std::atomic<HotplugMonitor*> mon{nullptr};
  std::atomic<int> calls{0};
  auto reg = (**t).RegisterHotplugCallbacks(nullptr, [&](HotplugEvent, int) {
    calls++;
    if (HotplugMonitor* p = mon.load()) p->Stop();
    return Status::Ok();
  });
  REQUIRE(reg.ok());
  HotplugMonitor::Options o;
  o.source = HotplugMonitor::Options::Source::kPollOnly;
  o.poll_interval = milliseconds(2);
  auto m = HotplugMonitor::Start(**t, o);
  REQUIRE(m.ok());
  mon.store(m->get());
  fs.Write("online", "0-2\n");
  CHECK(WaitFor([&] { return calls.load() >= 1; }));
  const uint64_t r = (*m)->rescans();
  std::this_thread::sleep_for(milliseconds(30));
  CHECK((*m)->rescans() <= r + 1);  // it stopped after that Rescan
  m->reset();                       // joins
}

}  // namespace
}  // namespace percpu
