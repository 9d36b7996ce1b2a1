#include "primitives/domain.h"

#include <new>
#include <utility>

#include "primitives/contract.h"

namespace percpu {

Domain::Domain(std::shared_ptr<Topology> topology,
               std::shared_ptr<PerCpuAllocator> allocator,
               DomainOptions options, Status status)
    : topology_(std::move(topology)),
      allocator_(std::move(allocator)),
      options_(options),
      status_(std::move(status)) {}

Domain::~Domain() {
  // The monitor first: after Stop() no Rescan runs, so no callback of the
  // allocator (or of a family) can fire during the rest of the teardown.
  if (monitor_ != nullptr) monitor_->Stop();
#if PERCPU_CONTRACT_CHECKS
  // Relaxed suffices: the caller orders every family's destruction before
  // this one (the documented contract this checks).
  if (live_families_.load(std::memory_order_relaxed) != 0) {
    internal::ReportContractViolation(
        "Domain destroyed while counter families still live on it");
  }
#endif
}

StatusOr<std::unique_ptr<Domain>> Domain::Create(
    std::shared_ptr<Topology> topology, DomainOptions options) {
  if (topology == nullptr) {
    return InvalidArgumentError("Domain::Create: null topology");
  }
  StatusOr<std::shared_ptr<PerCpuAllocator>> alloc =
      PerCpuAllocator::Create(topology.get(), options.allocator);
  if (!alloc.ok()) return alloc.status();
  std::unique_ptr<Domain> domain(new (std::nothrow) Domain(
      std::move(topology), std::move(*alloc), options, Status::Ok()));
  if (domain == nullptr) {
    return ResourceExhaustedError("Domain::Create: out of memory");
  }
  return domain;
}

Status Domain::StartMonitor() {
  if (!options_.monitor_hotplug || topology_ == nullptr ||
      topology_->sysfs_dir().empty()) {
    return Status::Ok();
  }
  StatusOr<std::unique_ptr<HotplugMonitor>> monitor =
      HotplugMonitor::Start(*topology_, options_.monitor);
  if (!monitor.ok()) return monitor.status();
  monitor_ = std::move(*monitor);
  return Status::Ok();
}

StatusOr<std::unique_ptr<Domain>> Domain::FromSysfs(DomainOptions options,
                                                    const std::string& dir) {
  StatusOr<std::shared_ptr<Topology>> topo = Topology::FromSysfs(dir);
  if (!topo.ok()) return topo.status();
  StatusOr<std::unique_ptr<Domain>> domain = Create(std::move(*topo), options);
  if (!domain.ok()) return domain.status();
  Status monitor = (*domain)->StartMonitor();
  if (!monitor.ok()) return monitor;
  return domain;
}

StatusOr<std::unique_ptr<Domain>> Domain::Simulated(int possible, int present,
                                                    int online,
                                                    DomainOptions options) {
  StatusOr<std::shared_ptr<Topology>> topo =
      Topology::Simulated(possible, present, online);
  if (!topo.ok()) return topo.status();
  return Create(std::move(*topo), options);
}

Domain& Domain::Default() {
  // Built once (thread-safe static initialization) in static storage and
  // never destroyed: families with static storage duration may outlive
  // any other static. The object itself needs no heap, so even a failing
  // malloc yields a (degraded) domain.
  static Domain* const domain = [] {
    alignas(Domain) static unsigned char storage[sizeof(Domain)];
    std::shared_ptr<Topology> topology;
    std::shared_ptr<PerCpuAllocator> allocator;
    Status status;
    StatusOr<std::shared_ptr<Topology>> topo = Topology::FromSysfs();
    if (topo.ok()) {
      StatusOr<std::shared_ptr<PerCpuAllocator>> alloc =
          PerCpuAllocator::Create(topo->get());
      if (alloc.ok()) {
        topology = std::move(*topo);
        allocator = std::move(*alloc);
      } else {
        status = alloc.status();
      }
    } else {
      status = topo.status();
    }
    Domain* d = new (storage) Domain(std::move(topology), std::move(allocator),
                                     DomainOptions(), std::move(status));
    d->monitor_status_ = d->StartMonitor();
    return d;
  }();
  return *domain;
}

}  // namespace percpu
