// The three-line API: named per-CPU statistics counters on a process-wide
// default domain, for the common case "count on any thread, read the exact
// total rarely, export it".
//
//   percpu::Counter requests("requests", "Requests served.");  // declare
//   requests.Inc();                                 // any thread, this CPU
//   uint64_t n = requests.Read();                   // any thread, exact
//
//   Counter          one named u64 counter, per CPU (PerCpuU64 underneath).
//   CounterSet<N>    N named u64 items per CPU, an SNMP-like MIB
//                    (PerCpuU64Mib underneath), e.g. rx packets/bytes/drops
//                    that need no consistent pair.
//   PacketCounter    a per-CPU (packets, bytes) pair whose reader gets both
//                    halves of the same updates (PerCpuPacketsBytes
//                    underneath), for workers that are NOT pinned to a CPU.
//
// Every family carries its name, help text and item names once; while it
// lives it is registered for primitives/exporter.h, which renders all of
// them in the Prometheus text format or OpenMetrics 1.0.
//
// Domain: without an explicit Domain the family lives on Domain::Default()
// (primitives/domain.h): the machine's CPUs from sysfs, one per-CPU
// allocator for the whole process and a hotplug monitor that keeps them in
// step with the kernel, created on first use and never destroyed
// (so families with static storage duration may be destroyed in any order).
// Pass a Domain (e.g. Domain::Simulated) for control and tests; it must
// outlive its families.
//
// Memory-ordering contract: as the type underneath (percpu_stats.h,
// percpu_pair.h): adds are relaxed atomic RMWs or single rseq stores, with no
// ordering with other data; a Read() that happens after an Add() includes
// it; for one reader thread totals never decrease, across CPU hotplug.
//
// Errors without StatusOr: a constructor never fails. If it cannot get
// per-CPU memory (allocator exhausted, no sysfs topology, a failing malloc)
// the family DEGRADES: every Add still counts exactly, on one shared atomic
// word per item (a lock-prefixed RMW instead of a per-CPU slot; for
// PacketCounter a small lock, so pairs stay consistent), and degraded()
// returns true; status() says why. A family whose name is not a valid
// metric name ([a-zA-Z_:][a-zA-Z0-9_:]*) or is already registered counts
// normally but is not exported; status() says so (InvalidArgument /
// AlreadyExists). Domain::New<T>(...) turns any such status into an error
// for callers that want one.
//
// Usage constraints:
//   * Add/Inc from any thread. Async-signal-safe for Counter and CounterSet
//     once the family is constructed (not for PacketCounter, whose fallback
//     writer takes a per-CPU spin lock, see percpu_pair.h).
//   * Read from any thread, not from inside a hotplug callback of the
//     domain's topology.
//   * Families are neither copyable nor movable; no Add/Read during or after
//     destruction. An item index >= N is dropped (debug builds report it
//     through contract.h).
//
// Header weight: this header is meant for hot-path translation units; it
// pulls in only <array>, <atomic>, <cstddef>, <cstdint> and the rseq
// sequences (internal/rseq_asm.h: <sys/rseq.h>, <sched.h>); no topology.h,
// percpu_alloc.h, <string>, <functional>, <mutex>, <unordered_map>.
//
// The add: in rseq mode (x86_64, aarch64) Counter/CounterSet run the rseq
// sequence of the type underneath (PerCpuU64Mib's RseqTryAddU64Present)
// inline, on a copy of its constant fields (FamilyAddTarget) taken at
// construction; any other case (fallback writer mode, a CPU that is not
// present, a degraded family) is one out-of-line call into counter.cc,
// which runs the model-checked writer of the type underneath.
#ifndef PERCPU_PRIMITIVES_COUNTER_H_
#define PERCPU_PRIMITIVES_COUNTER_H_

#include <array>
#include <cstddef>
#include <cstdint>

#include "primitives/internal/atomic.h"
#include "primitives/internal/rseq_asm.h"

namespace percpu {

class Domain;  // primitives/domain.h
class Status;  // primitives/status.h (include it to call status())

// One item of a CounterSet: its metric-name suffix and help text. Both are
// copied at construction.
struct CounterItem {
  const char* name;
  const char* help;
};

namespace internal {

// The out-of-line family (counter.cc). Never null after a successful
// NewFamily; nullptr if even its few heap bytes could not be allocated.
class FamilyCore;

enum class FamilyKind { kCounters, kPacketsBytes };

FamilyCore* NewFamily(Domain* domain, FamilyKind kind, const char* name,
                      const char* help, const CounterItem* items,
                      size_t num_items);
void DeleteFamily(FamilyCore* core);

// Items per per-CPU object of a CounterSet (a PerCpuU64Mib<8> each).
inline constexpr size_t kFamilyChunkItems = 8;

// What the inline add needs of one chunk's per-CPU words, copied from the
// PerCpuU64Mib at construction; every field is constant for the family's
// life (the words never move; hotplug changes only the mask's contents).
struct FamilyAddTarget {
  uintptr_t base;      // item 0 of CPU 0
  size_t stride;       // bytes between two CPUs' copies
  uint32_t rseq_n;     // possible CPUs (the rseq sequence's bound)
  const Atomic<uint64_t>* present_mask;  // the topology's present words
};
// One target per chunk, or nullptr when the family does not write with
// rseq (fallback writer mode, degraded, a PacketCounter, core == nullptr).
const FamilyAddTarget* FamilyAddTargets(const FamilyCore* core);

void FamilyAdd(FamilyCore* core, size_t item, uint64_t delta);
uint64_t FamilyRead(const FamilyCore* core, size_t item);
// Cpu-major fold of all items (per chunk of items, each in one hotplug read
// section). out has num_items words.
void FamilyReadAll(const FamilyCore* core, uint64_t* out, size_t num_items);
void FamilyAddPair(FamilyCore* core, uint64_t packets, uint64_t bytes);
void FamilyReadPair(const FamilyCore* core, uint64_t* packets, uint64_t* bytes);
bool FamilyDegraded(const FamilyCore* core);
Status FamilyStatus(const FamilyCore* core);
[[gnu::cold]] void ReportItemOutOfRange(const char* type);

// What every family shares: the core, degraded() and status().
class FamilyHandle {
 public:
  // True if adds go to shared atomic words instead of per-CPU slots (still
  // exact); status() says why.
  bool degraded() const;
  // OK, or why the family is degraded or not exported.
  Status status() const;

 protected:
  explicit FamilyHandle(FamilyCore* core)
      : core_(core), add_targets_(FamilyAddTargets(core)) {}
  ~FamilyHandle() { DeleteFamily(core_); }
  FamilyHandle(const FamilyHandle&) = delete;
  FamilyHandle& operator=(const FamilyHandle&) = delete;

  FamilyCore* const core_;
  // Owned by core_; see FamilyAddTargets. In the layout whatever the build's
  // macros say (only its use in Add is conditional).
  const FamilyAddTarget* const add_targets_;
};

}  // namespace internal

// N named u64 counters per CPU.
template <size_t N>
class CounterSet : public internal::FamilyHandle {
 public:
  static_assert(N > 0, "a CounterSet has at least one item");
  static constexpr size_t kItems = N;

  // `name` prefixes every item's metric name: item "packets" of family "rx"
  // is exported as rx_packets_total. domain == nullptr: Domain::Default().
  CounterSet(const char* name, const char* help, const CounterItem (&items)[N],
             Domain* domain = nullptr)
      : FamilyHandle(internal::NewFamily(
            domain, internal::FamilyKind::kCounters, name, help, items, N)) {}

  // Adds delta (mod 2^64) to `item` on the calling thread's CPU.
  void Add(size_t item, uint64_t delta) {
    if (__builtin_expect(item >= N, 0)) {
      internal::ReportItemOutOfRange("CounterSet::Add");
      return;
    }
#if PERCPU_HAVE_RSEQ_ASM
    // The writer of PerCpuU64Mib::Add, inline: the same sequence on the same
    // words, bounded by the same present mask (docs/fold_and_hotplug.md,
    // section 3a, holds for it unchanged). false: nothing was written (CPU
    // id out of range or not present); the out-of-line add decides.
    if (__builtin_expect(add_targets_ != nullptr, 1)) {
      const internal::FamilyAddTarget& t =
          add_targets_[item / internal::kFamilyChunkItems];
      if (__builtin_expect(
              internal::RseqTryAddU64Present(
                  t.base + item % internal::kFamilyChunkItems *
                               sizeof(internal::Atomic<uint64_t>),
                  t.stride, t.rseq_n, t.present_mask, delta),
              1)) {
        return;
      }
    }
#endif
    if (__builtin_expect(core_ != nullptr, 1)) {
      internal::FamilyAdd(core_, item, delta);
    } else {
      // Relaxed suffices: a statistics word; atomicity is all Read needs.
      local_[item].fetch_add(delta, std::memory_order_relaxed);
    }
  }
  void Inc(size_t item) { Add(item, 1); }

  // The exact total of `item` (0 for item >= N, reported in debug builds).
  uint64_t Read(size_t item) const {
    if (item >= N) {
      internal::ReportItemOutOfRange("CounterSet::Read");
      return 0;
    }
    if (core_ == nullptr) {
      // Relaxed suffices: one statistics value.
      return local_[item].load(std::memory_order_relaxed);
    }
    return internal::FamilyRead(core_, item);
  }
  // All items, cpu-major, without allocating.
  void ReadAll(std::array<uint64_t, N>& out) const {
    if (core_ == nullptr) {
      for (size_t i = 0; i < N; ++i) {
        // Relaxed suffices: one statistics value each.
        out[i] = local_[i].load(std::memory_order_relaxed);
      }
      return;
    }
    internal::FamilyReadAll(core_, out.data(), N);
  }

 private:
  // Used only if core_ could not be allocated.
  internal::Atomic<uint64_t> local_[N] = {};
};

// One named u64 counter per CPU. Exported as <name>_total.
class Counter {
 public:
  explicit Counter(const char* name, const char* help = "",
                   Domain* domain = nullptr)
      : set_(name, help, {{"", help}}, domain) {}

  void Add(uint64_t delta) { set_.Add(0, delta); }
  void Inc() { set_.Add(0, 1); }
  uint64_t Read() const { return set_.Read(0); }
  bool degraded() const { return set_.degraded(); }
  Status status() const;

 private:
  CounterSet<1> set_;
};

struct PacketsBytesTotal {
  uint64_t packets = 0;
  uint64_t bytes = 0;
};

// A per-CPU (packets, bytes) pair: Read() returns, per CPU, both halves of
// the same updates (never the packets of n updates with the bytes of n+1).
// Exported as <name>_packets_total and <name>_bytes_total, read in one fold.
class PacketCounter : public internal::FamilyHandle {
 public:
  explicit PacketCounter(const char* name, const char* help = "",
                         Domain* domain = nullptr)
      : FamilyHandle(internal::NewFamily(domain,
                                         internal::FamilyKind::kPacketsBytes,
                                         name, help, nullptr, 0)) {}

  // One update on the calling thread's CPU: packets += p, bytes += b.
  void Add(uint64_t packets, uint64_t bytes) {
    if (__builtin_expect(core_ != nullptr, 1)) {
      internal::FamilyAddPair(core_, packets, bytes);
    } else {
      // Relaxed suffices: statistics words. Without a core (a failed
      // malloc of a few bytes) the pair is exact per half but not a
      // consistent pair; degraded() says so.
      packets_.fetch_add(packets, std::memory_order_relaxed);
      bytes_.fetch_add(bytes, std::memory_order_relaxed);
    }
  }
  PacketsBytesTotal Read() const {
    PacketsBytesTotal t;
    if (core_ == nullptr) {
      // Relaxed suffices: see Add().
      t.packets = packets_.load(std::memory_order_relaxed);
      t.bytes = bytes_.load(std::memory_order_relaxed);
      return t;
    }
    internal::FamilyReadPair(core_, &t.packets, &t.bytes);
    return t;
  }

 private:
  internal::Atomic<uint64_t> packets_{0};
  internal::Atomic<uint64_t> bytes_{0};
};

}  // namespace percpu

#endif  // PERCPU_PRIMITIVES_COUNTER_H_
