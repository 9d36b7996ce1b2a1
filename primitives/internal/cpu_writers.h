// Who may write an explicit-CPU single-writer slot (ApproxCounter): a tiny
// per-CPU ownership word kept in the OBJECT (never in the per-CPU slot, so
// no slot layout depends on it or on any macro).
//
//   kFree       nobody writes the CPU's slot
//   kTransient  one Add(cpu, ...) is in progress (a few instructions)
//   kToken      a WriterToken owns the CPU (the fast single-writer path)
//   kDead       the CPU is offline and its slot was folded: adds go to the
//               shared count
//
// Why: the natural call c->Add(sched_getcpu(), 1) from several threads put
// two writers on one slot (the CPU id is stale at once) and lost or gained
// counts (issue 12 item 4). Add(cpu, ...) now claims the CPU for the one
// add (CAS kFree -> kTransient) and, if someone else holds it, adds to the
// shared count instead: exact whoever calls it. The single-writer fast path
// is a WriterToken, whose acquisition is exclusive (a second one fails).
//
// Memory ordering (docs/fold_and_hotplug.md, section 4):
//   * A claim (transient or token) is an acquire CAS, a release is a
//     release store. Pairs with: the previous owner's release store, and
//     the hotplug fold's kDead/kFree stores (release): the previous owner's
//     and the fold's writes happen-before the new owner's.
//   * After every claim the owner issues a release fence before its first
//     slot store (issue 12 item 1). Pairs with: the acquire fence of the
//     reader's ReadRetry/Sum re-check: a reader that observes one of the
//     new owner's slot stores also observes the fold (its seqcount/count
//     change) and retries, so it never combines a post-fold slot value with
//     a pre-fold accumulator.
#ifndef PERCPU_PRIMITIVES_INTERNAL_CPU_WRITERS_H_
#define PERCPU_PRIMITIVES_INTERNAL_CPU_WRITERS_H_

#include <cstdint>
#include <memory>
#include <new>

#include "primitives/internal/atomic.h"

#if !defined(PERCPU_MODEL_CHECK)
#include <sched.h>
#endif

namespace percpu {
namespace internal {

class CpuWriterTable {
 public:
  static constexpr uint32_t kFree = 0;
  static constexpr uint32_t kTransient = 1;
  static constexpr uint32_t kToken = 2;
  static constexpr uint32_t kDead = 3;
  // A token was still held at kOffline (a P1 violation, reported): its
  // release makes the CPU kDead, not kFree.
  static constexpr uint32_t kTokenDead = 4;

  CpuWriterTable() = default;
  // false on allocation failure. Every CPU starts free (online or not: the
  // owner's hotplug callback marks offline CPUs dead at creation).
  bool Init(int n) {
    owners_.reset(new (std::nothrow) Atomic<uint32_t>[n]);
    if (owners_ == nullptr) return false;
    for (int i = 0; i < n; ++i) {
      // Relaxed suffices: not shared yet (published by the object's
      // creation).
      owners_[i].store(kFree, std::memory_order_relaxed);
    }
    return true;
  }

  // Claims `cpu` for one add (kFree -> kTransient) or for a token
  // (kFree -> kToken). false if someone holds it or it is dead.
  bool TryClaim(int cpu, uint32_t as) {
    uint32_t expected = kFree;
    // Acquire: pairs with the release store of the previous owner
    // (Release) or of the hotplug callback (MarkOnline).
    if (!owners_[cpu].compare_exchange_strong(expected, as,
                                              std::memory_order_acquire,  // Pairs with: Release()/MarkOnline() release store.
                                              std::memory_order_relaxed)) {
      return false;
    }
    // Orders the new owner's slot stores after a fold by another thread.
    // Pairs with: the reader's acquire fence (SeqCount::ReadRetry / Sum's
    // re-check fence).
#if !defined(PERCPU_MUTANT_NO_CLAIM_FENCE)  // model-test mutant only
    ThreadFence(std::memory_order_release);  // Pairs with: reader's acquire fence.
#endif
    return true;
  }

  // Ends a transient add.
  void Release(int cpu) {
    // Release: the owner's slot stores happen-before the next owner's (and
    // the fold's) accesses. Pairs with: the acquire CAS in TryClaim/MarkDead.
    owners_[cpu].store(kFree, std::memory_order_release);  // Pairs with: TryClaim()/MarkDead() acquire CAS.
  }

  // Ends a token: kToken -> kFree, or kTokenDead -> kDead (the CPU went
  // offline while the token was held).
  void ReleaseToken(int cpu) {
    uint32_t expected = kToken;
    // Release (both outcomes): as Release(). Pairs with: TryClaim()/
    // MarkDead() acquire CAS.
    if (!owners_[cpu].compare_exchange_strong(expected, kFree,
                                              std::memory_order_release,  // Pairs with: TryClaim()/MarkDead() acquire CAS.
                                              std::memory_order_relaxed)) {
      owners_[cpu].store(kDead, std::memory_order_release);  // Pairs with: TryClaim() acquire CAS.
    }
  }

  // Hotplug kOffline (inside the write section): waits out a transient add
  // (a few instructions; a preempted holder is yielded to), then marks the
  // CPU dead. Returns the state it replaced: kToken means a token holder
  // was not quiesced (a usage error the caller reports; the CPU becomes
  // kTokenDead and the token's release makes it kDead).
  uint32_t MarkDead(int cpu) {
    for (int spins = 0;; ++spins) {
      uint32_t expected = kFree;
      // Acquire: pairs with the last owner's release store: its slot stores
      // happen-before the fold.
      if (owners_[cpu].compare_exchange_strong(expected, kDead,
                                             std::memory_order_acquire,  // Pairs with: Release() release store.
                                             std::memory_order_relaxed)) {
        return kFree;
      }
      if (expected == kToken) {
        // Relaxed suffices: only the token's ReleaseToken CAS can change
        // kToken, and it handles both values.
        if (owners_[cpu].compare_exchange_strong(expected, kTokenDead,
                                                 std::memory_order_relaxed,
                                                 std::memory_order_relaxed)) {
          return kToken;
        }
        continue;  // released meanwhile: retry
      }
      if (expected == kDead || expected == kTokenDead) return expected;
      SpinPause();
#if !defined(PERCPU_MODEL_CHECK)
      if (spins > 64) sched_yield();
#endif
    }
  }

  // Hotplug kOnline: a dead CPU becomes free again (a token still held
  // since its offline owns it again).
  void MarkOnline(int cpu) {
    uint32_t expected = kDead;
    // Release: the fold's stores happen-before the next owner's.
    // Pairs with: the acquire CAS in TryClaim.
    if (owners_[cpu].compare_exchange_strong(expected, kFree,
                                             std::memory_order_release,  // Pairs with: TryClaim() acquire CAS.
                                             std::memory_order_relaxed)) {
      return;
    }
    if (expected == kTokenDead) {
      // Relaxed suffices: the token holder is not ordered by this anyway
      // (it violated P1).
      owners_[cpu].compare_exchange_strong(expected, kToken,
                                           std::memory_order_relaxed,
                                           std::memory_order_relaxed);
    }
  }

  uint32_t StateOf(int cpu) const {
    // Relaxed suffices: diagnostics.
    return owners_[cpu].load(std::memory_order_relaxed);
  }

 private:
  std::unique_ptr<Atomic<uint32_t>[]> owners_;
};

}  // namespace internal
}  // namespace percpu

#endif  // PERCPU_PRIMITIVES_INTERNAL_CPU_WRITERS_H_
