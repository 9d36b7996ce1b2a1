#include "primitives/cpu_slot.h"

#include <limits>
#include <string>

namespace percpu {

namespace {
constexpr int kMaxSlots = 65536;
}  // namespace

StatusOr<CpuSlots> CpuSlots::Create(internal::Atomic<uint64_t>* base,
                                    size_t stride_bytes, int num_cpus) {
  constexpr size_t kAlign = alignof(internal::Atomic<uint64_t>);
  if (base == nullptr) {
    return InvalidArgumentError("CpuSlots::Create: base is null");
  }
  if (reinterpret_cast<uintptr_t>(base) % kAlign != 0) {
    return InvalidArgumentError("CpuSlots::Create: base is not aligned to " +
                                std::to_string(kAlign) + " bytes");
  }
  if (stride_bytes < sizeof(uint64_t) || stride_bytes % kAlign != 0) {
    return InvalidArgumentError(
        "CpuSlots::Create: stride " + std::to_string(stride_bytes) +
        " is not a multiple of " + std::to_string(kAlign) + " that is >= 8");
  }
  if (num_cpus < 1 || num_cpus > kMaxSlots) {
    return OutOfRangeError("CpuSlots::Create: num_cpus " +
                           std::to_string(num_cpus) + " is not in [1, " +
                           std::to_string(kMaxSlots) + "]");
  }
  const uintptr_t b = reinterpret_cast<uintptr_t>(base);
  if (stride_bytes > (std::numeric_limits<uintptr_t>::max() - b) /
                         static_cast<uintptr_t>(num_cpus)) {
    return InvalidArgumentError("CpuSlots::Create: stride " +
                                std::to_string(stride_bytes) + " * " +
                                std::to_string(num_cpus) +
                                " CPUs overflows the address space");
  }
  CpuSlots s;
  s.base_ = b;
  s.stride_ = stride_bytes;
  s.n_ = static_cast<uint32_t>(num_cpus);
  return s;
}

StatusOr<internal::Atomic<uint64_t>*> CpuSlots::At(int cpu) const {
  if (cpu < 0 || static_cast<uint32_t>(cpu) >= n_) {
    return OutOfRangeError("CpuSlots::At: CPU id " + std::to_string(cpu) +
                           " is not in [0, " + std::to_string(n_) + ")");
  }
  return internal::SlotAt(base_, stride_, static_cast<uint32_t>(cpu));
}

uint64_t CpuSlots::Sum() const {
  uint64_t total = 0;
  for (uint32_t c = 0; c < n_; ++c) {
    // Relaxed suffices: a statistics sum, not a snapshot; each slot's load
    // sees that slot's adds in order.
    total += internal::SlotAt(base_, stride_, c)->load(std::memory_order_relaxed);
  }
  return total;
}

// The deprecated CpuSlotCounter's own definitions name it: no warning for
// them (users of the type still get one).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

CpuSlotCounter::CpuSlotCounter(int num_cpus)
    : n_(static_cast<uint32_t>(num_cpus)),
      rseq_n_(CurrentWriterMode() == WriterMode::kRseq ? n_ : 0),
      slots_(new Slot[static_cast<size_t>(num_cpus)]),
      base_(reinterpret_cast<uintptr_t>(slots_.get())) {}

CpuSlotCounter::~CpuSlotCounter() { magic_ = kDeadMagic; }

StatusOr<std::unique_ptr<CpuSlotCounter>> CpuSlotCounter::Create(
    int num_cpus) {
  if (num_cpus < 1 || num_cpus > kMaxSlots) {
    return OutOfRangeError("CpuSlotCounter::Create: num_cpus " +
                           std::to_string(num_cpus) + " is not in [1, " +
                           std::to_string(kMaxSlots) + "]");
  }
  // Choose the mode now, outside any signal handler (the first choice reads
  // the environment).
  (void)CurrentWriterMode();
  return std::unique_ptr<CpuSlotCounter>(new CpuSlotCounter(num_cpus));
}

void CpuSlotCounter::AddSlow(uint64_t delta) {
  // rseq_n_ != 0: mode kRseq, and the sequence found the CPU id out of
  // range (nothing was written). Otherwise the mode is the fallback: its
  // atomic RMW, with its own out-of-range case.
  const uint32_t cpu =
      rseq_n_ != 0 ? n_
                   : internal::FallbackAddU64(base_, sizeof(Slot), n_, delta);
  if (cpu >= n_) AddOverflow(delta);
}

void CpuSlotCounter::AddOverflow(uint64_t delta) {
  // Relaxed suffices: the overflow slot has many writers in both modes, and
  // the RMW's atomicity alone makes it exact; no ordering is published.
  overflow_.value.fetch_add(delta, std::memory_order_relaxed);
}

void CpuSlotCounter::CheckAlive(const char* op) const {
  if (magic_ != kAliveMagic) {
    (void)op;
    internal::ReportContractViolation(
        "CpuSlotCounter: used after destruction (or corrupted)");
  }
}

uint64_t CpuSlotCounter::Sum() const {
  uint64_t total = 0;
  for (uint32_t c = 0; c < n_; ++c) {
    // Relaxed suffices: see CpuSlots::Sum().
    total += slots_[c].value.load(std::memory_order_relaxed);
  }
  // Relaxed suffices: as above.
  return total + overflow_.value.load(std::memory_order_relaxed);
}

StatusOr<uint64_t> CpuSlotCounter::OnCpu(int cpu) const {
  if (cpu < 0 || static_cast<uint32_t>(cpu) >= n_) {
    return OutOfRangeError("CpuSlotCounter::OnCpu: CPU id " +
                           std::to_string(cpu) + " is not in [0, " +
                           std::to_string(n_) + ")");
  }
  // Relaxed suffices: a single statistics value.
  return slots_[cpu].value.load(std::memory_order_relaxed);
}

uint64_t CpuSlotCounter::overflow() const {
  // Relaxed suffices: a single statistics value.
  return overflow_.value.load(std::memory_order_relaxed);
}

CpuSlots CpuSlotCounter::slots() const {
  CpuSlots s;
  // Valid by construction (Create checked num_cpus).
  StatusOr<CpuSlots> r = CpuSlots::Create(&slots_[0].value, sizeof(Slot),
                                          static_cast<int>(n_));
  if (r.ok()) s = *r;
  return s;
}

#pragma GCC diagnostic pop

}  // namespace percpu
