// Writing "this CPU's" slot of a per-CPU array from userspace: the
// counterpart of the kernel's this_cpu_add(), with no lock prefix when rseq
// is available.
//
//   CpuSlots         a view of caller-owned u64 slots, slot c at
//                    base + c * stride bytes (CPU-major, e.g. a PerCpuPtr's
//                    units or a cache-line-strided array). TryAddThisCpu()
//                    is the raw hot path, AddThisCpu() the checked one.
//   CpuSlotCounter   DEPRECATED (removed in 0.3): an owning per-CPU u64
//                    counter, one 64-byte slot per possible CPU plus an
//                    overflow slot, Add() never fails. "A u64 on this CPU"
//                    is Counter (counter.h), or PerCpuU64 (percpu_stats.h)
//                    for an explicit Topology/PerCpuAllocator: both are
//                    hotplug-aware and async-signal-safe too.
//
// How a slot is written depends on the process-wide WriterMode (rseq.h):
//   * kRseq: a restartable sequence reads the CPU id from the rseq area and
//     does load + add + one commit store; the kernel restarts it if the
//     thread is preempted, migrated or signalled before the commit, so each
//     slot has a single writer at a time (internal/rseq_asm.h).
//   * kFallbackSchedGetcpu: sched_getcpu() + relaxed atomic fetch_add; the
//     CPU id may be stale, so several threads can hit one slot.
// The mode never changes within a process, and all writers go through these
// functions, so the two kinds of writes never meet on one slot. Do NOT
// write these slots any other way (e.g. slot.fetch_add from elsewhere, or a
// plain store) while writers may run: in rseq mode that loses updates.
//
// CPU ids: the id is the kernel's (rseq cpu_id / sched_getcpu), i.e. a CPU
// the thread ran on at the commit. The array must cover the possible CPUs
// (Topology::num_possible()). An id outside [0, num_cpus) -- a topology
// smaller than the machine, an unregistered thread, a sched_getcpu error --
// never indexes out of bounds: TryAddThisCpu() returns -1 and adds nothing,
// AddThisCpu() returns OutOfRange, CpuSlotCounter adds to its overflow slot
// (always with an atomic RMW, in both modes).
//
// Memory-ordering contract: an add is a relaxed read-modify-write of one
// slot (atomic by single-writer-ness in rseq mode, by the RMW in fallback
// mode). Readers load slots relaxed and see every completed add of a slot,
// per slot in order; a sum over slots is not a snapshot (as the kernel's
// percpu counters). No ordering with other data is implied.
//
// Signal handlers: TryAddThisCpu/AddThisCpu/CpuSlotCounter::Add are
// async-signal-safe in both modes (rseq: a signal aborts the interrupted
// sequence, which restarts after the handler, so the handler's add and the
// interrupted add are both applied exactly once; fallback: atomic RMW),
// provided CurrentWriterMode() was called once outside a handler.
#ifndef PERCPU_PRIMITIVES_CPU_SLOT_H_
#define PERCPU_PRIMITIVES_CPU_SLOT_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "primitives/contract.h"
#include "primitives/internal/atomic.h"
#include "primitives/internal/rseq_asm.h"
#include "primitives/rseq.h"
#include "primitives/status.h"

namespace percpu {

namespace internal {

// Adds v to the slot of the calling thread's CPU with the process's mode.
// Returns the CPU id used; >= n means out of range and nothing was added.
inline uint32_t AddThisCpuU64(uintptr_t base, size_t stride, uint32_t n,
                              uint64_t v) {
#if PERCPU_HAVE_RSEQ_ASM
  // One load, one compare and one branch on the hot path: once chosen the
  // mode is kRseq; "not chosen yet" (0) goes through InitWriterMode() once.
  // Relaxed suffices: the mode is idempotent and publishes nothing else.
  const int m = g_writer_mode.load(std::memory_order_relaxed);
  if (__builtin_expect(m == static_cast<int>(WriterMode::kRseq), 1) ||
      (m == 0 && InitWriterMode() == WriterMode::kRseq)) {
    return RseqAddU64(base, stride, n, v);
  }
#endif
  return FallbackAddU64(base, stride, n, v);
}

}  // namespace internal

class CpuSlots {
 public:
  // Validates the layout: base non-null and aligned for u64 atomics, stride
  // a multiple of that alignment and >= 8, num_cpus in [1, 65536], and
  // base + num_cpus * stride not overflowing.
  [[nodiscard]] static StatusOr<CpuSlots> Create(
      internal::Atomic<uint64_t>* base, size_t stride_bytes, int num_cpus);

  CpuSlots() = default;

  // Raw hot path. Adds delta (mod 2^64) to the calling thread's CPU's slot
  // and returns that CPU id, or -1 if the id is outside [0, num_cpus()) (or
  // the thread has no CPU id), in which case nothing was added.
  int TryAddThisCpu(uint64_t delta) const {
    const uint32_t cpu = internal::AddThisCpuU64(base_, stride_, n_, delta);
    return cpu < n_ ? static_cast<int>(cpu) : -1;
  }

  // Checked: OK, or OutOfRange naming the CPU id when nothing was added.
  [[nodiscard]] Status AddThisCpu(uint64_t delta) const {
    const uint32_t cpu = internal::AddThisCpuU64(base_, stride_, n_, delta);
    if (__builtin_expect(cpu < n_, 1)) return Status();
    return OutOfRangeError(
        "CpuSlots::AddThisCpu: CPU id " +
        std::to_string(static_cast<int32_t>(cpu)) + " is not in [0, " +
        std::to_string(n_) + ")");
  }

  // Slot of `cpu` (for readers: load relaxed). Precondition:
  // 0 <= cpu < num_cpus() (debug builds report a violation and clamp).
  internal::Atomic<uint64_t>& on(int cpu) const {
#if PERCPU_CONTRACT_CHECKS
    if (static_cast<uint32_t>(cpu) >= n_) {
      internal::ReportContractViolation("CpuSlots::on: CPU id out of range");
      cpu = 0;
    }
#endif
    return *internal::SlotAt(base_, stride_, static_cast<uint32_t>(cpu));
  }

  // Checked slot lookup.
  [[nodiscard]] StatusOr<internal::Atomic<uint64_t>*> At(int cpu) const;

  // Relaxed sum of all slots (not a snapshot).
  uint64_t Sum() const;

  int num_cpus() const { return static_cast<int>(n_); }
  size_t stride() const { return stride_; }

 private:
  uintptr_t base_ = 0;
  size_t stride_ = 0;
  uint32_t n_ = 0;
};

// An owning per-CPU 64-bit counter, one cache line per CPU. Deprecated:
// use Counter, or PerCpuU64 for an explicit topology (see the top).
class [[deprecated(
    "use Counter, or PerCpuU64 for an explicit topology; removed in "
    "0.3")]] CpuSlotCounter {
 public:
  // num_cpus: the number of possible CPUs (Topology::num_possible()), in
  // [1, 65536].
  [[nodiscard]] static StatusOr<std::unique_ptr<CpuSlotCounter>> Create(
      int num_cpus);

  CpuSlotCounter(const CpuSlotCounter&) = delete;
  CpuSlotCounter& operator=(const CpuSlotCounter&) = delete;
  ~CpuSlotCounter();

  // Adds delta (mod 2^64) to this CPU's slot; an out-of-range CPU id goes to
  // the overflow slot. Never fails, async-signal-safe.
  void Add(uint64_t delta) {
#if PERCPU_CONTRACT_CHECKS
    CheckAlive("CpuSlotCounter::Add");
#endif
#if PERCPU_HAVE_RSEQ_ASM
    // rseq_n_ is n_ in mode kRseq and 0 otherwise (the mode never changes
    // once chosen, and Create() chose it): one compare is both the mode test
    // and the bound check; everything else leaves through AddSlow().
    if (__builtin_expect(
            internal::RseqTryAddU64Shift<kSlotShift>(base_, rseq_n_, delta),
            1)) {
      return;
    }
#endif
    AddSlow(delta);
  }
  void Inc() { Add(1); }

  // Relaxed sum of all slots and the overflow slot (not a snapshot; exact
  // once writers are quiescent).
  uint64_t Sum() const;
  // CPU `cpu`'s slot; OutOfRange unless 0 <= cpu < num_cpus().
  [[nodiscard]] StatusOr<uint64_t> OnCpu(int cpu) const;
  // Adds that found no valid CPU id.
  uint64_t overflow() const;
  int num_cpus() const { return static_cast<int>(n_); }
  // The view of the slots (e.g. for tests or a reader that walks CPUs).
  CpuSlots slots() const;

 private:
  static constexpr int kSlotShift = 6;
  struct alignas(64) Slot {
    internal::Atomic<uint64_t> value{0};
  };
  static_assert(sizeof(Slot) == size_t{1} << kSlotShift, "slot stride");
  explicit CpuSlotCounter(int num_cpus);
  // Not rseq mode, or an out-of-range CPU id in rseq mode.
  [[gnu::noinline]] void AddSlow(uint64_t delta);
  void AddOverflow(uint64_t delta);
  void CheckAlive(const char* op) const;

  static constexpr uint32_t kAliveMagic = 0x5e1f0c7u;
  static constexpr uint32_t kDeadMagic = 0xdeadc0deu;

  uint32_t n_;
  // n_ when the process's writer mode is kRseq, else 0 (no rseq write).
  uint32_t rseq_n_;
  std::unique_ptr<Slot[]> slots_;
  uintptr_t base_;  // slots_.get(), as the sequence's operand
  uint32_t magic_ = kAliveMagic;
  Slot overflow_;
};

}  // namespace percpu

#endif  // PERCPU_PRIMITIVES_CPU_SLOT_H_
