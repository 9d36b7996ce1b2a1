// PerCpuPacketsBytes: a per-CPU (packets, bytes) pair written on "this CPU"
// whose reader gets, per CPU, a pair from ONE moment: the packets and bytes of
// the same set of updates (never packets of n updates with bytes of n+1).
// Layer: the building block under PacketCounter (counter.h), for callers that
// want explicit control (their own Topology and PerCpuAllocator, StatusOr
// errors); new code wants PacketCounter.
//
// Why not a seqcount: an rseq section commits with exactly one store, so a
// seqcount write section (odd store, data, even store) cannot sit inside one
// -- an abort after the odd store would leave it odd. Instead each CPU has a
// latch (double buffer):
//   struct { u64 version; u32 lock; copy[2] of (packets, bytes) }
// version's low bit selects the active copy. An update reads v, writes
// copy[(v+1)&1] = copy[v&1] + (p, b) -- the INACTIVE copy -- and publishes it
// with the single store version = v + 1.
//
// Writers (the object picks its mode at Create, as PerCpuU64Mib does):
//   * rseq (x86_64 only, internal::RseqLatchAddPair): the whole update is one
//     restartable sequence; the speculative stores to the inactive copy are
//     idempotent on restart and the commit is the version store. No lock
//     prefix. aarch64 has no such sequence (it would need a "dmb ishst"
//     before the data stores and cannot be run under qemu), so it uses the
//     fallback.
//   * fallback (32-bit targets, aarch64, simulated topologies, no rseq):
//     sched_getcpu(), then the slot's tiny spinlock (an atomic exchange,
//     uncontended in practice: the writers of one slot share one CPU; a
//     waiter yields the CPU after a few spins so a preempted holder can run)
//     around the same latch update. A non-present or out-of-range CPU id
//     goes to the object's overflow latch (same locked update).
// Reader (LatchRead): v1 = version (acquire); read copy[v1&1]; acquire
// fence; v2 = version; retry unless v1 == v2.
//
// Hotplug: the fold callback takes c's lock, moves the active pair into the
// accumulator and publishes (0, 0) as a new version -- inside the hotplug
// write section -- for kAbsent (after the topology cleared c's present bit
// and fenced rseq writers), kPresent (a delayed fallback update, before the
// bit is set) and, in fallback mode only, kOffline; the kAbsent teardown
// folds once more before the allocator releases the unit. The rseq section
// tests c's present bit, so rseq updates land only in visited latches.
// Readers sum acc + overflow + every PRESENT CPU's latch inside a hotplug
// read section, so a fallback writer with a stale id that updates c after
// its offline fold is still counted, as in percpu_stats.h.
//
// Memory-ordering contract (ordering table in docs/writers.md):
//   * Per CPU, a pair a reader returns is the state after some prefix of
//     that CPU's updates (no tearing between packets and bytes, no torn u64
//     on 32-bit targets). Totals over CPUs are not a snapshot across CPUs
//     (as every per-CPU stat); for a reader thread they never decrease.
//   * Ordering obligations: (a) the data stores of update v -> v+1 are
//     ordered after the store of version v (release fence / x86-TSO);
//     (b) the commit store of version is a release store (reader's acquire
//     load). Checked by verification/percpu_pair_model_test.cc on the
//     fallback functions; the x86_64 asm relies on TSO.
//
// Usage constraints:
//   * Add(): any thread. Signal handlers: SAFE in rseq mode (an interrupted
//     section restarts; the handler's update is a complete update); NOT safe
//     in fallback mode (a handler interrupting an update of the same slot on
//     the same thread would spin on the slot lock forever) -- and in rseq
//     mode the overflow path (CPU id out of range) takes a lock too.
//   * Readers anywhere except inside a hotplug callback of the same topology.
//   * The object keeps its topology and allocator alive (shared
//     ownership: any declaration order is safe); debug builds report use
//     after destruction via contract.h.
//   * Known fallback limit as in percpu_stats.h: a writer delayed across
//     both Offline and SetAbsent of its CPU whose update lands between the
//     kAbsent teardown fold and the allocator's madvise loses it.
#ifndef PERCPU_PRIMITIVES_PERCPU_PAIR_H_
#define PERCPU_PRIMITIVES_PERCPU_PAIR_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <string>

#include "primitives/contract.h"
#include "primitives/fold.h"
#include "primitives/internal/atomic.h"
#include "primitives/internal/rseq_asm.h"
#include "primitives/percpu_alloc.h"
#include "primitives/percpu_stats.h"
#include "primitives/rseq.h"
#include "primitives/status.h"
#include "primitives/topology.h"

#if !defined(PERCPU_MODEL_CHECK)
#include <sched.h>
#endif

namespace percpu {

struct PacketsBytes {
  uint64_t packets = 0;
  uint64_t bytes = 0;
};

namespace internal {

// One CPU's latch. Zero bytes are a valid empty latch (version 0, copy[0]
// active and (0, 0), unlocked). Layout fixed for the x86_64 asm.
struct PairLatch {
  Atomic<uint64_t> version{0};
  Atomic<uint32_t> lock{0};
  uint32_t pad = 0;
  Atomic<uint64_t> copy[2][2] = {{{0}, {0}}, {{0}, {0}}};  // [copy][packets, bytes]
};
#if !defined(PERCPU_MODEL_CHECK) && defined(__x86_64__)
static_assert(sizeof(PairLatch) == 48, "layout used by RseqLatchAddPair");
#endif

// Reader: a (packets, bytes) pair of one version.
inline PacketsBytes LatchRead(const PairLatch& s) {
  for (;;) {
    // Pairs with: release store of version in LatchWriteLocked / the rseq
    // commit store (TSO): the copy it selects is complete.
    const uint64_t v1 = s.version.load(std::memory_order_acquire);  // Pairs with: writer's release store of version.
    const Atomic<uint64_t>* c = s.copy[v1 & 1];
    PacketsBytes r;
    // Relaxed suffices: validated by the version re-check below.
    r.packets = c[0].load(std::memory_order_relaxed);
    r.bytes = c[1].load(std::memory_order_relaxed);
    // Pairs with: release fence before the data stores in LatchWriteLocked:
    // if a load above saw a later update's store to this copy, the re-check
    // below sees that update's predecessor version (> v1).
    ThreadFence(std::memory_order_acquire);  // Pairs with: writer's release fence.
    // Relaxed suffices: ordered by the acquire fence above.
    const uint64_t v2 = s.version.load(std::memory_order_relaxed);
    if (v1 == v2) return r;
    SpinPause();
  }
}

// The update, by the slot's only writer (lock holder). `reset` publishes
// (0, 0) instead and returns the pair it replaced (the fold).
inline PacketsBytes LatchWriteLocked(PairLatch& s, uint64_t packets,
                                     uint64_t bytes, bool reset) {
  // Relaxed suffices: the lock holder is the only writer; the lock's
  // acquire ordered the previous holder's stores before this load.
  const uint64_t v = s.version.load(std::memory_order_relaxed);
  Atomic<uint64_t>* cur = s.copy[v & 1];
  Atomic<uint64_t>* next = s.copy[(v + 1) & 1];
  PacketsBytes old;
  // Relaxed suffices: single writer (as above).
  old.packets = cur[0].load(std::memory_order_relaxed);
  old.bytes = cur[1].load(std::memory_order_relaxed);
  // Obligation (a): the stores below after the store of version v.
  ThreadFence(std::memory_order_release);  // Pairs with: reader's acquire fence in LatchRead.
  // Relaxed suffices: published by the release store of version.
  next[0].store(reset ? 0 : old.packets + packets, std::memory_order_relaxed);
  next[1].store(reset ? 0 : old.bytes + bytes, std::memory_order_relaxed);
  // Obligation (b): the commit.
  s.version.store(v + 1, std::memory_order_release);  // Pairs with: reader's acquire load in LatchRead.
  return old;
}

inline void LatchLock(PairLatch& s) {
  int spins = 0;
  // Pairs with: release store in LatchUnlock (the previous holder's update).
  while (s.lock.exchange(1, std::memory_order_acquire) != 0) {  // Pairs with: LatchUnlock's release store.
    // Relaxed suffices: a hint; the exchange above re-checks with acquire.
    while (s.lock.load(std::memory_order_relaxed) != 0) {
      SpinPause();
#if !defined(PERCPU_MODEL_CHECK)
      // The holder likely shares our CPU and was preempted: let it run.
      if (++spins > 16) sched_yield();
#else
      (void)spins;
#endif
    }
  }
}

inline void LatchUnlock(PairLatch& s) {
  s.lock.store(0, std::memory_order_release);  // Pairs with: LatchLock's acquire exchange.
}

// The fallback writer (several writers per slot).
inline void LatchLockedAdd(PairLatch& s, uint64_t packets, uint64_t bytes) {
  LatchLock(s);
  (void)LatchWriteLocked(s, packets, bytes, /*reset=*/false);
  LatchUnlock(s);
}

}  // namespace internal

class PerCpuPacketsBytes {
 public:
  using Latch = internal::PairLatch;

  [[nodiscard]] static StatusOr<std::unique_ptr<PerCpuPacketsBytes>> Create(
      Topology& topo, PerCpuAllocator& alloc, PerCpuStatsOptions options = {}) {
#if !defined(PERCPU_MODEL_CHECK)
    (void)CurrentWriterMode();  // choose the mode outside signal handlers
#endif
    StatusOr<PerCpuPtr<Latch>> slots = alloc.Allocate<Latch>();
    if (!slots.ok()) return slots.status();
#if defined(PERCPU_HAVE_RSEQ_LATCH_ASM)
    const bool rseq = internal::StatsUseRseq(topo, options);
#else
    (void)options;
    const bool rseq = false;
#endif
    std::unique_ptr<PerCpuPacketsBytes> obj(
        new (std::nothrow) PerCpuPacketsBytes(topo, alloc, *slots, rseq));
    if (obj == nullptr) {
      (void)alloc.Free(*slots);
      return ResourceExhaustedError("PerCpuPacketsBytes::Create: out of memory");
    }
    PerCpuPacketsBytes* self = obj.get();
    StatusOr<uint64_t> id = topo.RegisterHotplugCallbacks(
        [self](HotplugEvent event, int cpu) {
          // Teardown of kAbsent: fold once more right before the allocator
          // releases the unit (see PerCpuU64Mib::TeardownCallback).
          if (event == HotplugEvent::kAbsent &&
              static_cast<uint32_t>(cpu) < self->n_) {
            self->FoldCpu(cpu);
          }
          return Status::Ok();
        },
        [self](HotplugEvent event, int cpu) {
          return self->FoldCallback(event, cpu);
        });
    if (!id.ok()) return id.status();
    obj->callback_id_ = *id;
    return obj;
  }

  ~PerCpuPacketsBytes() {
    magic_ = kDeadMagic;
    if (callback_id_ != 0) (void)topo_.UnregisterHotplugCallbacks(callback_id_);
    (void)alloc_.Free(slots_);
  }
  PerCpuPacketsBytes(const PerCpuPacketsBytes&) = delete;
  PerCpuPacketsBytes& operator=(const PerCpuPacketsBytes&) = delete;

  // One update of this CPU's pair: packets += packets, bytes += bytes.
  void Add(uint64_t packets, uint64_t bytes) {
    if (!CheckAlive()) return;
#if defined(PERCPU_HAVE_RSEQ_LATCH_ASM)
    if (__builtin_expect(use_rseq_, 1)) {
      // Bounded by the present mask readers visit (percpu_stats.h).
      const uint32_t cpu = internal::RseqLatchAddPair(
          slots_.base_address(), slots_.stride(), n_, topo_.present_words(),
          packets, bytes);
      if (__builtin_expect(cpu >= n_, 0)) {
        internal::LatchLockedAdd(overflow_, packets, bytes);
      }
      return;
    }
#endif
    FallbackAdd(internal::FallbackCpuId(), packets, bytes);
  }

  // The fallback writer with an explicit CPU id (tests, simulations, model
  // tests). OutOfRange for a bad id; FailedPrecondition in rseq mode.
  [[nodiscard]] Status AddOnCpu(int cpu, uint64_t packets, uint64_t bytes) {
    if (use_rseq_) {
      return FailedPreconditionError(
          "PerCpuPacketsBytes::AddOnCpu: the object uses the rseq writer");
    }
    Status valid = topo_.ValidateCpu(cpu);
    if (!valid.ok()) {
      return OutOfRangeError("PerCpuPacketsBytes::AddOnCpu: " +
                             valid.message());
    }
    if (!CheckAlive()) return FailedPreconditionError("destroyed object");
    FallbackAdd(cpu, packets, bytes);
    return Status::Ok();
  }

  // acc + overflow + every present CPU's pair, in one hotplug read section.
  // Each CPU's pair is from one moment; the total never decreases for a
  // reader thread.
  PacketsBytes Sum() const { return SumOver(PresentCpus(topo_)); }

  template <typename CpuSet>
  PacketsBytes SumOver(const CpuSet& cpus) const {
    if (!CheckAlive()) return PacketsBytes();
    return ReadHotplugConsistent(topo_, [&] {
      // Relaxed suffices: acc is written only inside the hotplug write
      // section, whose seqcount orders this read.
      PacketsBytes t{acc_packets_.load(std::memory_order_relaxed),
                     acc_bytes_.load(std::memory_order_relaxed)};
      const PacketsBytes o = internal::LatchRead(overflow_);
      t.packets += o.packets;
      t.bytes += o.bytes;
      cpus.ForEach([&](int cpu) {
        const PacketsBytes c = internal::LatchRead(*slots_.on(cpu));
        t.packets += c.packets;
        t.bytes += c.bytes;
      });
      return t;
    });
  }

  // One CPU's consistent pair. OutOfRange for a bad id.
  [[nodiscard]] StatusOr<PacketsBytes> OnCpu(int cpu) const {
    Status valid = topo_.ValidateCpu(cpu);
    if (!valid.ok()) {
      return OutOfRangeError("PerCpuPacketsBytes::OnCpu: " + valid.message());
    }
    return internal::LatchRead(*slots_.on(cpu));
  }
  PacketsBytes overflow() const { return internal::LatchRead(overflow_); }
  bool uses_rseq() const { return use_rseq_; }
  const PerCpuPtr<Latch>& slots() const { return slots_; }

 private:
  static constexpr uint32_t kAliveMagic = 0x9a1b5u;
  static constexpr uint32_t kDeadMagic = 0xdeadc0deu;

  PerCpuPacketsBytes(Topology& topo, PerCpuAllocator& alloc,
                     PerCpuPtr<Latch> slots, bool use_rseq)
      : topo_(topo),
        alloc_(alloc),
        slots_(slots),
        n_(static_cast<uint32_t>(topo.num_possible())),
        use_rseq_(use_rseq) {}

  bool CheckAlive() const {
#if PERCPU_CONTRACT_CHECKS
    if (magic_ != kAliveMagic) {
      internal::ReportContractViolation(
          "PerCpuPacketsBytes: used after destruction (or corrupted)");
      return false;
    }
#endif
    return true;
  }

  void FallbackAdd(int cpu, uint64_t packets, uint64_t bytes) {
    if (static_cast<uint32_t>(cpu) < n_ && topo_.IsPresent(cpu)) {
      internal::LatchLockedAdd(*slots_.on(cpu), packets, bytes);
    } else {
      internal::LatchLockedAdd(overflow_, packets, bytes);
    }
  }

  void FoldCpu(int cpu) {
    // rseq mode: called only where no rseq writer can reach the latch (see
    // FoldCallback); fallback mode: late writers take the lock, so the move
    // is exact.
    Latch& s = *slots_.on(cpu);
    internal::LatchLock(s);
    const PacketsBytes old = internal::LatchWriteLocked(s, 0, 0, true);
    internal::LatchUnlock(s);
    // Relaxed suffices: single writer (callbacks are serialized); readers
    // read acc inside the hotplug read section.
    acc_packets_.store(acc_packets_.load(std::memory_order_relaxed) +
                           old.packets,
                       std::memory_order_relaxed);
    acc_bytes_.store(acc_bytes_.load(std::memory_order_relaxed) + old.bytes,
                     std::memory_order_relaxed);
  }

  // The events that move a latch, as PerCpuU64Mib::FoldCallback: kOffline
  // only in fallback mode (an rseq writer may still run on the real CPU),
  // kAbsent after the topology cleared the bit and fenced rseq writers,
  // kPresent before the bit is set (a delayed fallback update).
  [[nodiscard]] Status FoldCallback(HotplugEvent event, int cpu) {
    if (static_cast<uint32_t>(cpu) >= n_) {
      return OutOfRangeError("PerCpuPacketsBytes::FoldCallback: cpu " +
                             std::to_string(cpu));
    }
    if ((event == HotplugEvent::kOffline && !use_rseq_) ||
        event == HotplugEvent::kAbsent || event == HotplugEvent::kPresent) {
      FoldCpu(cpu);
    }
    return Status::Ok();
  }

  Topology& topo_;
  PerCpuAllocator& alloc_;
  // Keeps topo_ and alloc_ alive (shared ownership) until after the
  // destructor body: any declaration order of counter and owners is safe.
  const internal::PerCpuOwners owners_{topo_, alloc_};
  PerCpuPtr<Latch> slots_;
  const uint32_t n_;
  const bool use_rseq_;
  uint32_t magic_ = kAliveMagic;
  uint64_t callback_id_ = 0;
  internal::Atomic<uint64_t> acc_packets_{0};
  internal::Atomic<uint64_t> acc_bytes_{0};
  mutable Latch overflow_;
};

}  // namespace percpu

#endif  // PERCPU_PRIMITIVES_PERCPU_PAIR_H_
