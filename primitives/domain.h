// Domain: the per-CPU world a counter family lives in -- a Topology (which
// CPUs exist), a PerCpuAllocator (one unit of memory per possible CPU) and,
// for sysfs topologies, a HotplugMonitor, owned together and destroyed in
// the right order.
//
//   Domain::Default()     the process-wide domain of primitives/counter.h:
//                         the machine's CPUs from sysfs, one allocator and
//                         a hotplug monitor, created on first use
//                         (thread-safe), never destroyed, so families with
//                         static storage duration may be destroyed in any
//                         order. If sysfs cannot be read or the allocator
//                         cannot be created, Default() still returns a domain:
//                         a degraded one (topology() == nullptr, status() says
//                         why) on which every family counts exactly on shared
//                         atomic words (see counter.h).
//   Domain::FromSysfs()   the same, owned by the caller (RAII), with options.
//   Domain::Simulated()   a simulated topology, for tests and simulations
//                         (hotplug through topology()->Offline/...).
//   Domain::New<T>(...)   constructs a family on this domain and returns its
//                         status as an error instead of degrading.
//
// CPU hotplug: readers visit the present CPUs and fold callbacks move the
// counts of a CPU that goes offline, so counts are exact across the events
// the topology is told about. A sysfs domain (Default(), FromSysfs()) starts
// a HotplugMonitor (primitives/hotplug_monitor.h: kernel uevents, polling
// fallback) that tells its topology, on the monitor's own thread; set
// DomainOptions::monitor_hotplug = false to drive topology()->Rescan()
// yourself. The default domain's monitor runs until the process exits; if it
// cannot start, the default domain still counts exactly (a CPU hot-added
// later is then counted on the families' overflow path) and
// monitor_status() says why.
//
// Usage constraints: a Domain outlives every family created on it (debug
// builds report a domain destroyed with live families through contract.h).
// All members are thread-safe.
#ifndef PERCPU_PRIMITIVES_DOMAIN_H_
#define PERCPU_PRIMITIVES_DOMAIN_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "primitives/counter.h"
#include "primitives/hotplug_monitor.h"
#include "primitives/internal/atomic.h"
#include "primitives/percpu_alloc.h"
#include "primitives/percpu_stats.h"
#include "primitives/status.h"
#include "primitives/topology.h"

namespace percpu {

struct DomainOptions {
  PerCpuAllocatorOptions allocator;
  // Options of the per-CPU families created on the domain.
  PerCpuStatsOptions stats;
  // Sysfs domains: start a HotplugMonitor on the topology (ignored by
  // Simulated and Create, whose caller drives hotplug).
  bool monitor_hotplug = true;
  HotplugMonitorOptions monitor;
};

class Domain {
 public:
  // The process-wide default domain (see the header comment). Never fails.
  static Domain& Default();

  // Errors of the topology, the allocator, and (monitor_hotplug) of
  // HotplugMonitor::Start.
  static StatusOr<std::unique_ptr<Domain>> FromSysfs(
      DomainOptions options = {},
      const std::string& dir = "/sys/devices/system/cpu");
  // possible/present/online CPUs {0..n-1}, as Topology::Simulated.
  static StatusOr<std::unique_ptr<Domain>> Simulated(
      int possible, int present, int online, DomainOptions options = {});
  // Takes ownership of a topology the caller built.
  static StatusOr<std::unique_ptr<Domain>> Create(
      std::shared_ptr<Topology> topology, DomainOptions options = {});

  // Constructs a family (Counter, CounterSet<N>, PacketCounter) on this
  // domain; the family's status() as an error if it is not OK (degraded,
  // invalid or duplicate name).
  template <typename T, typename... Args>
  StatusOr<std::unique_ptr<T>> New(Args&&... args) {
    std::unique_ptr<T> family(new (std::nothrow)
                                  T(std::forward<Args>(args)..., this));
    if (family == nullptr) {
      return ResourceExhaustedError("Domain::New: out of memory");
    }
    Status status = family->status();
    if (!status.ok()) return status;
    return family;
  }

  ~Domain();
  Domain(const Domain&) = delete;
  Domain& operator=(const Domain&) = delete;

  // nullptr for a degraded default domain.
  Topology* topology() const { return topology_.get(); }
  PerCpuAllocator* allocator() const { return allocator_.get(); }
  const DomainOptions& options() const { return options_; }
  // OK, or why the default domain is degraded.
  const Status& status() const { return status_; }
  // The hotplug monitor of a sysfs domain (nullptr if none runs).
  HotplugMonitor* monitor() const { return monitor_.get(); }
  // OK, or why the default domain runs without a hotplug monitor.
  const Status& monitor_status() const { return monitor_status_; }
  // Families currently alive on the domain.
  uint64_t live_families() const {
    // Relaxed suffices: a diagnostic count.
    return live_families_.load(std::memory_order_relaxed);
  }

 private:
  friend class internal::FamilyCore;
  Domain(std::shared_ptr<Topology> topology,
         std::shared_ptr<PerCpuAllocator> allocator, DomainOptions options,
         Status status);

  // Starts the monitor (sysfs domains with monitor_hotplug).
  Status StartMonitor();

  // Destroyed in reverse order: the monitor (its thread joined), then the
  // allocator, then their topology.
  std::shared_ptr<Topology> topology_;
  std::shared_ptr<PerCpuAllocator> allocator_;
  std::unique_ptr<HotplugMonitor> monitor_;
  DomainOptions options_;
  Status status_;
  Status monitor_status_;
  internal::Atomic<uint64_t> live_families_{0};
};

}  // namespace percpu

#endif  // PERCPU_PRIMITIVES_DOMAIN_H_
