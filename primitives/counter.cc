#include "primitives/counter.h"

#include <algorithm>
#include <new>
#include <string>
#include <utility>

#include "primitives/contract.h"
#include "primitives/domain.h"
#include "primitives/internal/family.h"
#include "primitives/status.h"

namespace percpu {
namespace internal {
namespace {

// Leaked on purpose: families with static storage duration may unregister
// after other statics are gone.
std::map<std::string, FamilyCore*>& Registry() {
  static auto* map = new std::map<std::string, FamilyCore*>();
  return *map;
}

std::string MetricName(const std::string& family, const char* item) {
  std::string name = family;
  if (item != nullptr && item[0] != '\0') {
    name += '_';
    name += item;
  }
  // The exporter appends _total; a user's "requests_total" is "requests".
  static const std::string kTotal = "_total";
  if (name.size() > kTotal.size() &&
      name.compare(name.size() - kTotal.size(), kTotal.size(), kTotal) == 0) {
    name.resize(name.size() - kTotal.size());
  }
  return name;
}

}  // namespace

std::mutex& RegistryMutex() {
  static auto* mu = new std::mutex();
  return *mu;
}

const std::map<std::string, FamilyCore*>& RegistryLocked() {
  return Registry();
}

bool IsValidMetricName(const std::string& name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                       c == '_' || c == ':';
    const bool digit = c >= '0' && c <= '9';
    if (!alpha && !(i > 0 && digit)) return false;
  }
  return true;
}

void FamilyCore::Init(const char* name, const char* help,
                      const CounterItem* items, size_t num_items) {
  name_ = name != nullptr ? name : "";
  help_ = help != nullptr ? help : "";
  if (kind_ == FamilyKind::kPacketsBytes) {
    metrics_.push_back({MetricName(name_, "packets"), help_ + " (packets)"});
    metrics_.push_back({MetricName(name_, "bytes"), help_ + " (bytes)"});
    num_items_ = 2;
  } else {
    num_items_ = num_items;
    for (size_t i = 0; i < num_items; ++i) {
      const char* item_help = items[i].help;
      metrics_.push_back(
          {MetricName(name_, items[i].name),
           item_help != nullptr && item_help[0] != '\0' ? item_help : help_});
    }
  }

  // The per-CPU objects, or the degraded words.
  Topology* topo = domain_->topology();
  PerCpuAllocator* alloc = domain_->allocator();
  if (topo == nullptr || alloc == nullptr) {
    Degrade(FailedPreconditionError(
        "counter '" + name_ +
        "': degraded domain: " + domain_->status().ToString()));
  } else if (kind_ == FamilyKind::kPacketsBytes) {
    StatusOr<std::unique_ptr<PerCpuPacketsBytes>> pair =
        PerCpuPacketsBytes::Create(*topo, *alloc, domain_->options().stats);
    if (pair.ok()) {
      pair_ = std::move(*pair);
    } else {
      Degrade(pair.status());
    }
  } else {
    const size_t n_chunks = (num_items_ + kChunkItems - 1) / kChunkItems;
    for (size_t c = 0; c < n_chunks; ++c) {
      StatusOr<std::unique_ptr<Chunk>> chunk =
          Chunk::Create(*topo, *alloc, domain_->options().stats);
      if (!chunk.ok()) {
        chunks_.clear();  // frees the chunks made so far
        Degrade(chunk.status());
        break;
      }
      chunks_.push_back(std::move(*chunk));
    }
  }
  if (!degraded_ && kind_ == FamilyKind::kCounters && !chunks_.empty() &&
      chunks_[0]->uses_rseq()) {
    // All chunks share the topology and the writer mode.
    add_targets_.reset(new FamilyAddTarget[chunks_.size()]);
    for (size_t c = 0; c < chunks_.size(); ++c) {
      add_targets_[c] = FamilyAddTarget{
          chunks_[c]->slots().base_address(), chunks_[c]->slots().stride(),
          static_cast<uint32_t>(topo->num_possible()), topo->present_words()};
    }
  }
  if (degraded_ && kind_ == FamilyKind::kCounters) {
    spill_.reset(new Atomic<uint64_t>[num_items_]);
    for (size_t i = 0; i < num_items_; ++i) {
      // Relaxed suffices: not yet published (the constructor returns it).
      spill_[i].store(0, std::memory_order_relaxed);
    }
  }
  Register();
}

void FamilyCore::Degrade(Status why) {
  degraded_ = true;
  status_ = Status(why.code(),
                   "counter '" + name_ +
                       "' degraded to shared atomic words: " + why.message());
}

void FamilyCore::Register() {
  for (const MetricInfo& m : metrics_) {
    if (!IsValidMetricName(m.name)) {
      if (status_.ok()) {
        status_ = InvalidArgumentError(
            "counter '" + name_ + "': '" + m.name +
            "' is not a valid metric name ([a-zA-Z_:][a-zA-Z0-9_:]*); the "
            "family counts but is not exported");
      }
      return;
    }
  }
  std::lock_guard<std::mutex> lock(RegistryMutex());
  std::map<std::string, FamilyCore*>& reg = Registry();
  for (const MetricInfo& m : metrics_) {
    if (reg.count(m.name) != 0) {
      if (status_.ok()) {
        status_ = FailedPreconditionError(
            "counter '" + name_ + "': metric '" + m.name +
            "' is already registered by another family; this one counts but "
            "is not exported");
      }
      return;
    }
  }
  for (size_t i = 0; i < metrics_.size(); ++i) {
    if (!reg.emplace(metrics_[i].name, this).second) {
      // Two items of one family with the same name.
      for (size_t j = 0; j < i; ++j) reg.erase(metrics_[j].name);
      if (status_.ok()) {
        status_ = InvalidArgumentError("counter '" + name_ +
                                       "': two items are named '" +
                                       metrics_[i].name + "'");
      }
      return;
    }
  }
  registered_ = true;
}

FamilyCore::FamilyCore(Domain* domain, FamilyKind kind)
    : domain_(domain), kind_(kind) {
  // Relaxed suffices: a count checked at the domain's destruction, which
  // the caller orders after every family's destruction.
  domain_->live_families_.fetch_add(1, std::memory_order_relaxed);
}

FamilyCore::~FamilyCore() {
  if (registered_) {
    std::lock_guard<std::mutex> lock(RegistryMutex());
    for (const MetricInfo& m : metrics_) Registry().erase(m.name);
  }
  // Frees the per-CPU memory (the objects' destructors) before the domain
  // may go.
  chunks_.clear();
  pair_.reset();
  // Relaxed suffices: as in the constructor.
  domain_->live_families_.fetch_sub(1, std::memory_order_relaxed);
}

void FamilyCore::Add(size_t item, uint64_t delta) {
  if (__builtin_expect(!degraded_, 1)) {
    chunks_[item / kChunkItems]->Add(item % kChunkItems, delta);
    return;
  }
  // Relaxed suffices: a shared statistics word; atomicity keeps it exact.
  spill_[item].fetch_add(delta, std::memory_order_relaxed);
}

uint64_t FamilyCore::Read(size_t item) const {
  if (!degraded_) return chunks_[item / kChunkItems]->Read(item % kChunkItems);
  // Relaxed suffices: one statistics value.
  return spill_[item].load(std::memory_order_relaxed);
}

void FamilyCore::ReadAll(uint64_t* out, size_t n) const {
  n = std::min(n, num_items_);
  if (degraded_) {
    for (size_t i = 0; i < n; ++i) {
      // Relaxed suffices: one statistics value each.
      out[i] = spill_[i].load(std::memory_order_relaxed);
    }
    return;
  }
  std::array<uint64_t, kChunkItems> part;
  for (size_t c = 0; c < chunks_.size(); ++c) {
    chunks_[c]->FoldAll(part);  // one hotplug read section per chunk
    for (size_t k = 0; k < kChunkItems && c * kChunkItems + k < n; ++k) {
      out[c * kChunkItems + k] = part[k];
    }
  }
}

void FamilyCore::AddPair(uint64_t packets, uint64_t bytes) {
  if (__builtin_expect(!degraded_, 1)) {
    pair_->Add(packets, bytes);
    return;
  }
  std::lock_guard<std::mutex> lock(spill_pair_mu_);
  spill_packets_ += packets;
  spill_bytes_ += bytes;
}

void FamilyCore::ReadPair(uint64_t* packets, uint64_t* bytes) const {
  if (!degraded_) {
    const PacketsBytes t = pair_->Sum();  // one fold: a consistent pair
    *packets = t.packets;
    *bytes = t.bytes;
    return;
  }
  std::lock_guard<std::mutex> lock(spill_pair_mu_);
  *packets = spill_packets_;
  *bytes = spill_bytes_;
}

std::vector<uint64_t> FamilyCore::Totals() const {
  std::vector<uint64_t> v(num_items_);
  if (kind_ == FamilyKind::kPacketsBytes) {
    ReadPair(&v[0], &v[1]);
  } else {
    ReadAll(v.data(), v.size());
  }
  return v;
}

namespace {
// The empty CPU set: ReadOver/SumOver over it read the accumulator (counts
// folded from CPUs that went offline) plus the overflow, in one hotplug
// read section.
struct NoCpus {
  template <typename F>
  void ForEach(F&&) const {}
};
}  // namespace

std::vector<PerCpuValues> FamilyCore::PerCpu() const {
  std::vector<PerCpuValues> out;
  if (degraded_) return out;
  domain_->topology()->ForEachPresent([&](int cpu) {
    PerCpuValues row;
    row.cpu = cpu;
    row.values.resize(num_items_);
    if (kind_ == FamilyKind::kPacketsBytes) {
      StatusOr<PacketsBytes> p = pair_->OnCpu(cpu);  // one consistent pair
      if (p.ok()) {
        row.values[0] = p->packets;
        row.values[1] = p->bytes;
      }
    } else {
      for (size_t i = 0; i < num_items_; ++i) {
        StatusOr<uint64_t> v =
            chunks_[i / kChunkItems]->OnCpu(cpu, i % kChunkItems);
        if (v.ok()) row.values[i] = *v;
      }
    }
    out.push_back(std::move(row));
  });
  PerCpuValues other;  // cpu == -1
  other.values.resize(num_items_);
  if (kind_ == FamilyKind::kPacketsBytes) {
    const PacketsBytes p = pair_->SumOver(NoCpus());
    other.values[0] = p.packets;
    other.values[1] = p.bytes;
  } else {
    for (size_t i = 0; i < num_items_; ++i) {
      other.values[i] =
          chunks_[i / kChunkItems]->ReadOver(NoCpus(), i % kChunkItems);
    }
  }
  out.push_back(std::move(other));
  return out;
}

// --- The functions counter.h calls ----------------------------------------

FamilyCore* NewFamily(Domain* domain, FamilyKind kind, const char* name,
                      const char* help, const CounterItem* items,
                      size_t num_items) {
  if (domain == nullptr) domain = &Domain::Default();
  FamilyCore* core = nullptr;
  try {
    core = new FamilyCore(domain, kind);
    core->Init(name, help, items, num_items);
  } catch (const std::bad_alloc&) {
    // The caller's object counts on its in-object words (degraded, not
    // exported); nothing half-built stays registered.
    delete core;
    return nullptr;
  }
  return core;
}

void DeleteFamily(FamilyCore* core) {
  if (core == nullptr) return;
  delete core;
}

void FamilyAdd(FamilyCore* core, size_t item, uint64_t delta) {
  core->Add(item, delta);
}
uint64_t FamilyRead(const FamilyCore* core, size_t item) {
  return core->Read(item);
}
void FamilyReadAll(const FamilyCore* core, uint64_t* out, size_t num_items) {
  core->ReadAll(out, num_items);
}
void FamilyAddPair(FamilyCore* core, uint64_t packets, uint64_t bytes) {
  core->AddPair(packets, bytes);
}
void FamilyReadPair(const FamilyCore* core, uint64_t* packets,
                    uint64_t* bytes) {
  core->ReadPair(packets, bytes);
}
const FamilyAddTarget* FamilyAddTargets(const FamilyCore* core) {
  return core == nullptr ? nullptr : core->add_targets();
}

bool FamilyDegraded(const FamilyCore* core) {
  return core == nullptr || core->degraded();
}
Status FamilyStatus(const FamilyCore* core) {
  if (core == nullptr) {
    return ResourceExhaustedError(
        "counter: out of memory for the family; it counts exactly on "
        "in-object atomic words and is not exported");
  }
  return core->status();
}

void ReportItemOutOfRange(const char* type) {
#if PERCPU_CONTRACT_CHECKS
  std::string message = std::string(type) + ": item out of range";
  ReportContractViolation(message.c_str());
#else
  (void)type;
#endif
}

bool FamilyHandle::degraded() const { return FamilyDegraded(core_); }
Status FamilyHandle::status() const { return FamilyStatus(core_); }

}  // namespace internal

Status Counter::status() const { return set_.status(); }

}  // namespace percpu
