// The out-of-line part of a counter family (primitives/counter.h): its names,
// the per-CPU objects underneath, its degraded words, and the process-wide
// registry the exporter walks. Internal: use counter.h / exporter.h.
//
// A family of k items is ceil(k / 8) PerCpuU64Mib<8> chunks (item i is item
// i % 8 of chunk i / 8), so any item count runs on the one model-checked
// writer and fold of percpu_stats.h without a runtime-sized copy of it; a
// PacketCounter is one PerCpuPacketsBytes.
//
// Registry: a mutex-protected map from each exported metric name to its
// family. A family registers at construction and unregisters at the start of
// its destruction, under the mutex, so the exporter (which renders under the
// mutex) never reads a family being destroyed. The mutex is never taken on
// the Add/Read paths nor inside hotplug callbacks.
#ifndef PERCPU_PRIMITIVES_INTERNAL_FAMILY_H_
#define PERCPU_PRIMITIVES_INTERNAL_FAMILY_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "primitives/counter.h"
#include "primitives/domain.h"
#include "primitives/internal/atomic.h"
#include "primitives/percpu_pair.h"
#include "primitives/percpu_stats.h"
#include "primitives/status.h"

namespace percpu {
namespace internal {

// One exported series: "<family>[_<item>]", its help, and its index into
// the family's values (for a PacketCounter: 0 packets, 1 bytes).
struct MetricInfo {
  std::string name;  // without the _total suffix
  std::string help;
};

// One CPU's values of every metric of a family (the exporter's cpu label).
struct PerCpuValues {
  int cpu = -1;
  std::vector<uint64_t> values;
};

class FamilyCore {
 public:
  static constexpr size_t kChunkItems = kFamilyChunkItems;
  using Chunk = PerCpuU64Mib<kChunkItems>;

  FamilyCore(Domain* domain, FamilyKind kind);
  ~FamilyCore();

  // Validates names, allocates the per-CPU objects (or degrades) and
  // registers. Never fails; status() records what went wrong.
  void Init(const char* name, const char* help, const CounterItem* items,
            size_t num_items);

  void Add(size_t item, uint64_t delta);
  uint64_t Read(size_t item) const;
  void ReadAll(uint64_t* out, size_t n) const;
  void AddPair(uint64_t packets, uint64_t bytes);
  void ReadPair(uint64_t* packets, uint64_t* bytes) const;

  // Every metric's total, in metrics() order; pairs in one fold.
  std::vector<uint64_t> Totals() const;
  // One row per present CPU (its slot; a pair from one moment), then a row
  // with cpu == -1: the accumulator of CPUs that went offline plus the
  // overflow (adds that found no CPU slot), each read in one hotplug read
  // section, so every row's series is monotonic except that a CPU's row
  // falls to 0 when its counts are folded into row -1. Empty for a
  // degraded family.
  std::vector<PerCpuValues> PerCpu() const;

  FamilyKind kind() const { return kind_; }
  const std::string& name() const { return name_; }
  const std::string& help() const { return help_; }
  const std::vector<MetricInfo>& metrics() const { return metrics_; }
  bool degraded() const { return degraded_; }
  const Status& status() const { return status_; }
  Domain* domain() const { return domain_; }
  const FamilyAddTarget* add_targets() const { return add_targets_.get(); }

 private:
  void Degrade(Status why);
  void Register();

  Domain* const domain_;
  const FamilyKind kind_;
  std::string name_;
  std::string help_;
  std::vector<MetricInfo> metrics_;
  size_t num_items_ = 0;
  bool degraded_ = false;
  bool registered_ = false;
  Status status_;
  std::vector<std::unique_ptr<Chunk>> chunks_;
  // The inline add's copy of each chunk's rseq fields (counter.h); null
  // unless every chunk writes with rseq.
  std::unique_ptr<FamilyAddTarget[]> add_targets_;
  std::unique_ptr<PerCpuPacketsBytes> pair_;
  // Degraded counters: one shared word per item.
  std::unique_ptr<Atomic<uint64_t>[]> spill_;
  // Degraded pair: a lock keeps packets and bytes consistent.
  mutable std::mutex spill_pair_mu_;
  uint64_t spill_packets_ = 0;
  uint64_t spill_bytes_ = 0;
};

// The registry (see the header comment). Hold the lock while using the map.
std::mutex& RegistryMutex();
// Exported metric name -> family (a family appears once per metric).
const std::map<std::string, FamilyCore*>& RegistryLocked();

// [a-zA-Z_:][a-zA-Z0-9_:]*
bool IsValidMetricName(const std::string& name);

}  // namespace internal
}  // namespace percpu

#endif  // PERCPU_PRIMITIVES_INTERNAL_FAMILY_H_
