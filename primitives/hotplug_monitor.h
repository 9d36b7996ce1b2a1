// HotplugMonitor: keeps a sysfs-backed Topology (Topology::FromSysfs) in
// step with the kernel's CPU hotplug, with no caller involved. It runs one
// thread of its own that calls topo.Rescan() whenever the CPU masks may have
// changed, so hotplug callbacks (folds, unit commit/release) fire on that
// thread.
//
// How it learns of changes:
//   * Kernel uevents (NETLINK_KOBJECT_UEVENT, kernel multicast group 1):
//     "online", "offline", "add" and "remove" of /devices/system/cpu/cpuN.
//     The kernel sends them after it changed the masks, so the Rescan that
//     follows reads the new state. Messages not from the kernel (sender
//     port id != 0) and any other device are ignored. Several pending
//     messages are drained and coalesced into one Rescan. A receive overrun
//     (ENOBUFS: the kernel dropped messages) triggers a Rescan as well.
//     Besides events, it also rescans every `resync_interval` as a safety
//     net.
//   * Polling, when the netlink socket cannot be opened (no permission, no
//     netlink in a sandbox, a seccomp filter) or when Options::source is
//     kPollOnly: a Rescan every `poll_interval`.
//
// Latency (from the kernel's mask change to the Topology's event having
// fired): netlink path: the wake-up of the monitor thread plus one Rescan
// (reading three sysfs files and running the callbacks), typically well
// under a millisecond on an idle machine, bounded by scheduling delay under
// load; polling path: at most poll_interval plus one Rescan. Until then a
// Topology lags the kernel by the pending events; the per-CPU primitives are
// built to stay exact across that lag (docs/fold_and_hotplug.md).
//
// Usage constraints:
//   * Starts only when asked (Start()); nothing in the library starts one
//     implicitly. At most one monitor per Topology makes sense (two would
//     only rescan twice; Rescan is serialized by the Topology).
//   * The Topology must outlive the monitor. The destructor (or Stop())
//     wakes the thread, joins it and closes every fd it opened; after it
//     returns no Rescan is running or will run. Stop() is idempotent and may
//     be called from any thread; from inside a hotplug callback running on
//     the monitor's own thread it only asks the thread to stop (it cannot
//     join itself) and the destructor, called elsewhere, joins. Destroying
//     the monitor from such a callback is a contract violation (asserted in
//     debug builds).
//   * Rescan failures (an unreadable sysfs file, a failed hotplug callback)
//     never stop the monitor: they are counted (rescan_errors()) and the
//     last one is kept (last_error()); the next event or interval retries.
//
// Memory ordering: the counters are relaxed atomics (diagnostics; they
// publish no other data). last_error() is guarded by a mutex. Consistency of
// the masks and per-CPU data is the Topology's (hotplug_seq()).
#ifndef PERCPU_PRIMITIVES_HOTPLUG_MONITOR_H_
#define PERCPU_PRIMITIVES_HOTPLUG_MONITOR_H_

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "primitives/status.h"
#include "primitives/topology.h"

namespace percpu {

struct HotplugMonitorOptions {
  enum class Source {
    kAuto,      // netlink uevents; polling if the socket cannot be opened
    kPollOnly,  // polling only (also how tests force the fallback path)
  };
  Source source = Source::kAuto;
  // Polling path: time between two Rescans. Must be > 0.
  std::chrono::milliseconds poll_interval{100};
  // Netlink path: a Rescan at least this often even without events (covers
  // lost messages). Must be > 0.
  std::chrono::milliseconds resync_interval{1000};
  // Testing seam: when >= 0, the monitor reads uevent datagrams from this
  // descriptor (e.g. one end of a SOCK_DGRAM socketpair) instead of opening
  // a netlink socket; the monitor takes ownership and closes it. The sender
  // check (kernel port id 0) applies only to AF_NETLINK sources.
  int uevent_fd = -1;
};

class HotplugMonitor {
 public:
  using Options = HotplugMonitorOptions;

  // Does one Rescan synchronously (so the Topology is current when Start
  // returns; its error, if any, is counted like any other), then starts the
  // thread. Errors: FailedPrecondition for a simulated Topology (no sysfs
  // directory); InvalidArgument for a non-positive interval; Internal if the
  // thread or the stop descriptor cannot be created. Failing to open the
  // netlink socket is not an error: the monitor polls (using_netlink()
  // false, netlink_error() says why).
  static StatusOr<std::unique_ptr<HotplugMonitor>> Start(Topology& topo,
                                                         Options options = {});

  HotplugMonitor(const HotplugMonitor&) = delete;
  HotplugMonitor& operator=(const HotplugMonitor&) = delete;
  ~HotplugMonitor();  // Stop()

  // Wakes and joins the thread, closes the descriptors. Idempotent. Called
  // from inside a hotplug callback running on the monitor's own thread it
  // cannot join itself: it only asks the thread to stop (the destructor must
  // still run elsewhere to join it).
  void Stop();

  // True if events come from a netlink socket (or the uevent_fd seam).
  bool using_netlink() const { return using_netlink_; }
  // Why netlink is not used ("" when it is, or "kPollOnly").
  const std::string& netlink_error() const { return netlink_error_; }

  // Rescans done so far (including the one in Start), failed ones, CPU
  // uevents accepted (each of online/offline/add/remove of a CPU counts).
  uint64_t rescans() const { return rescans_.load(std::memory_order_relaxed); }
  uint64_t rescan_errors() const {
    return rescan_errors_.load(std::memory_order_relaxed);
  }
  uint64_t cpu_uevents() const {
    return cpu_uevents_.load(std::memory_order_relaxed);
  }
  // The last failed Rescan's status (OK if none failed).
  Status last_error() const;

 private:
  HotplugMonitor(Topology& topo, const Options& options);
  void Run();
  void DoRescan();
  // Drains the uevent descriptor; true if a CPU event (or an overrun) asks
  // for a Rescan.
  bool DrainUevents();

  Topology& topo_;
  const Options options_;
  int uevent_fd_ = -1;
  int stop_fd_ = -1;  // eventfd
  bool using_netlink_ = false;
  std::string netlink_error_;
  std::thread thread_;
  std::mutex stop_mu_;  // serializes Stop()
  bool stopped_ = false;  // guarded by stop_mu_

  // Relaxed: diagnostics counters, they publish nothing.
  std::atomic<uint64_t> rescans_{0};
  std::atomic<uint64_t> rescan_errors_{0};
  std::atomic<uint64_t> cpu_uevents_{0};
  mutable std::mutex error_mu_;
  Status last_error_;  // guarded by error_mu_
};

namespace internal {

enum class CpuUeventAction { kNone, kOnline, kOffline, kAdd, kRemove };

struct CpuUevent {
  CpuUeventAction action = CpuUeventAction::kNone;
  int cpu = -1;
};

// Parses one kernel uevent datagram: "ACTION@DEVPATH\0KEY=VALUE\0...".
// Returns the action and CPU for an online/offline/add/remove of
// /devices/system/cpu/cpuN (N decimal, no sign, no leading junk), taken from
// the ACTION= and DEVPATH= keys (the header must agree with them); kNone for
// anything else: other devices or actions, udev's "libudev" messages,
// truncated or malformed buffers. Never reads past len.
CpuUevent ParseCpuUevent(const char* buf, size_t len);

}  // namespace internal
}  // namespace percpu

#endif  // PERCPU_PRIMITIVES_HOTPLUG_MONITOR_H_
