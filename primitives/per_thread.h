// PerThreadCounter: a 64-bit statistics counter with one slot per thread --
// the single-writer counter without rseq. The per-thread domain is to
// threads what the per-CPU domain is to CPUs: a thread's slot has exactly
// one writer (the thread), so its hot path is a relaxed load and a relaxed
// store, no lock prefix; and thread exit is this domain's CPU hotplug: the
// exiting thread's count is folded into the counter's accumulator.
//
//   PerThreadCounter c;
//   c.Add(1);             // any thread; first use per thread registers a slot
//   uint64_t n = c.Sum(); // any thread: accumulator + all slots
//
// Hot path after a thread's first Add() on a counter: two TLS loads (the
// entries pointer and capacity, read from the TLS block directly), a bounds
// check, a generation compare, a relaxed load and a relaxed store.
//
// Exit fold (docs/writers.md has the proof and the ordering table): at
// thread exit (a pthread-key destructor, which runs after the thread's C++
// thread_local destructors) the thread, still the only writer of its slot,
// runs inside the counter's SeqCount write section
//     acc += slot; slot = 0;
// and returns the slot to the counter's free list for reuse by a later
// thread. Sum() reads acc and every slot inside a read section and retries
// if a fold overlapped, so an exiting thread's count is seen exactly once:
// never lost, never double counted (folly's ThreadCachedInt can do either).
// Folds are serialized by the registry mutex (the seqcount's single-writer
// contract); readers never block the writers' hot path.
//
// Memory-ordering contract:
//   * Sum() returns acc + the slots as of some moment of every fold: no
//     exited thread is counted twice or missed. Adds by live threads are
//     relaxed: Sum() sees each thread's adds in program order (per thread,
//     monotonic), but no ordering with other data is implied, and it is not
//     a snapshot across threads. A Sum() that happens after a thread's
//     last Add() (e.g. after joining it) includes that Add().
//   * Values wrap modulo 2^64.
//
// Usage constraints:
//   * Add() from a signal handler: NOT safe on a thread's first Add() to a
//     counter (it allocates and takes a mutex), and NOT safe if the handler
//     can interrupt an Add() of the same counter on the same thread (the
//     interrupted load/store would overwrite the handler's add). Use
//     CpuSlotCounter (cpu_slot.h), which is async-signal-safe, instead.
//   * Sum() must not run in a signal handler that interrupts this thread's
//     exit fold (it would spin); in practice: not from handlers at all
//     during thread exit.
//   * Destroying the counter while another thread is inside Add() or Sum()
//     of it is a contract violation (debug builds catch most late Add()
//     calls through a poisoned magic number). Destroying it while threads
//     that used it are still alive is fine: their exit hooks see that the
//     counter is gone (its generation is no longer registered) and do not
//     touch its memory.
//   * An Add() from a thread's C++ thread_local destructor is counted; an
//     Add() after the thread's pthread-key destructors ran re-registers the
//     thread (glibc runs key destructors again, up to
//     PTHREAD_DESTRUCTOR_ITERATIONS rounds).
//   * fork() is safe at any time (pthread_atfork handlers in per_thread.cc):
//     the child can construct counters, add and exit threads; the slots of
//     the parent's other threads, which do not exist in the child, are
//     folded into the accumulators in the child (their counts are kept).
//   * The main thread never exits through pthread_exit in most programs;
//     its slot stays registered until the counter is destroyed (its value is
//     still summed).
#ifndef PERCPU_PRIMITIVES_PER_THREAD_H_
#define PERCPU_PRIMITIVES_PER_THREAD_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "primitives/contract.h"
#include "primitives/internal/atomic.h"
#include "primitives/seqcount.h"

namespace percpu {
namespace internal {

// ---- The exit-fold protocol (model-checked by
// verification/per_thread_model_test.cc with these very functions). ----

// The owner's hot path. Precondition: the calling thread is the slot's only
// writer.
inline void PerThreadOwnerAdd(Atomic<uint64_t>& slot, uint64_t delta) {
  // Relaxed load: the only writer reads its own latest store.
  const uint64_t v = slot.load(std::memory_order_relaxed);
  // Relaxed store: no data is published with the count; a fold of this slot
  // is sequenced after it on the same thread (only the owner folds).
  slot.store(v + delta, std::memory_order_relaxed);
}

// Called by a thread that takes a slot (new or reused after another
// thread's exit fold), before its first store to it. The registry mutex
// orders the fold before this call, but the owner's relaxed stores are in
// no release sequence: without this fence a reader could see the new
// owner's value with the seqcount and accumulator from before the fold
// (acc_old + slot_new: a count from nowhere, e.g. Sum() == 4 where only
// {0, 1, 5} are consistent). The fence makes any reader that sees one of
// the owner's later stores see the fold too.
// Pairs with: acquire fence in SeqCount::ReadRetry() (PerThreadSum): a
// reader whose slot load read a store after this fence re-reads the
// seqcount after the fold's WriteEnd and retries.
inline void PerThreadTakeSlot() {
  ThreadFence(std::memory_order_release);  // Pairs with: ReadRetry's acquire fence.
}

// Moves the slot's count into acc inside a write section of seq.
// Preconditions: called by the slot's owner (its only writer) or after the
// owner is gone; folds of one counter are serialized by the caller.
inline void PerThreadExitFold(SeqCount& seq, Atomic<uint64_t>& acc,
                              Atomic<uint64_t>& slot) {
  seq.WriteBegin();
  // Relaxed loads/stores: the write section orders them for readers (the
  // seqcount's release fence/store); the folder is the only writer of the
  // slot (owner) and of acc (folds are serialized).
  const uint64_t v = slot.load(std::memory_order_relaxed);
  acc.store(acc.load(std::memory_order_relaxed) + v,
            std::memory_order_relaxed);
  slot.store(0, std::memory_order_relaxed);
  seq.WriteEnd();
}

// acc + every slot, consistent with respect to folds. for_each_slot(f) must
// call f(const Atomic<uint64_t>&) for every slot that may be non-zero
// (free slots hold 0, so visiting them is harmless).
template <typename ForEachSlot>
uint64_t PerThreadSum(const SeqCount& seq, const Atomic<uint64_t>& acc,
                      ForEachSlot&& for_each_slot) {
  for (;;) {
    const uint32_t start = seq.ReadBegin();
    // Relaxed: inside a seqcount read section (ReadBegin acquire / ReadRetry
    // fence order these loads).
    uint64_t total = acc.load(std::memory_order_relaxed);
    for_each_slot([&total](const Atomic<uint64_t>& s) {
      // Relaxed: as above.
      total += s.load(std::memory_order_relaxed);
    });
    if (!seq.ReadRetry(start)) return total;
    SpinPause();
  }
}

// ---- Registry plumbing (per_thread.cc). ----

struct alignas(64) PerThreadSlot {
  Atomic<uint64_t> value{0};
};

// One entry per counter id in a thread's state. serial identifies the
// counter incarnation (never reused); slot belongs to that incarnation.
struct PerThreadEntry {
  uint64_t serial = 0;
  PerThreadSlot* slot = nullptr;
};

class PerThreadRegistry;  // primitives/internal/per_thread_registry.h

struct PerThreadState {
  PerThreadEntry* entries = nullptr;  // capacity elements
  uint32_t capacity = 0;
  std::vector<PerThreadEntry> storage;
  // The registry whose list of states holds this one (the first it was
  // listed in; guarded by that registry's mutex). A thread's own state is
  // listed in the process's registry when it is created.
  const PerThreadRegistry* listed_in = nullptr;
};

// The hot path of an add by the thread whose entry table table() returns
// (a PerThreadTls or a PerThreadState: entries, capacity): true if the
// table holds a slot of the counter incarnation (id, serial) and delta was
// added to it; false if the caller must take a slot first
// (PerThreadRegistry::Attach). The table comes from a callable, and id and
// serial by reference, so that each is loaded only where a hand-written
// hot path loads it: a TLS table passed as an argument makes GCC 12
// materialize the thread pointer first (one instruction more per add).
template <typename GetTable>
inline bool PerThreadTryAdd(GetTable&& table, const uint32_t& id,
                            const uint64_t& serial, uint64_t delta) {
  const auto& t = table();
  if (__builtin_expect(id < t.capacity, 1)) {
    const PerThreadEntry& e = t.entries[id];
    if (__builtin_expect(e.serial == serial, 1)) {
      PerThreadOwnerAdd(e.slot->value, delta);
      return true;
    }
  }
  return false;
}

// The calling thread's state (nullptr until its first Add()). Constant
// initialization: no TLS guard on the hot path.
inline PerThreadState*& TlsPerThreadState() {
  static thread_local PerThreadState* state = nullptr;
  return state;
}

// A copy of the state's entries pointer and capacity kept in the TLS block
// itself, so the hot path reads both with thread-pointer-relative loads
// instead of first loading the state pointer (one dependent load and a
// null test fewer). capacity 0 = no state. Written only by the owning
// thread (AddSlow, its exit hook), always together with TlsPerThreadState.
struct PerThreadTls {
  PerThreadEntry* entries = nullptr;
  uint32_t capacity = 0;
};
inline PerThreadTls& TlsPerThreadFast() {
  static thread_local PerThreadTls fast;
  return fast;
}

}  // namespace internal

class PerThreadCounter {
 public:
  PerThreadCounter();
  // A counter registered with `registry` instead of the process's: for
  // model tests that own a registry per execution and add through
  // PerThreadRegistry::Add with explicit thread states
  // (primitives/internal/per_thread_registry.h). Add() works too (with the
  // calling thread's own state), but such a registry has no thread-exit
  // hook: that thread's slot stays owned, and summed, until the counter is
  // destroyed. `registry` must outlive the counter.
  explicit PerThreadCounter(internal::PerThreadRegistry& registry);
  ~PerThreadCounter();
  PerThreadCounter(const PerThreadCounter&) = delete;
  PerThreadCounter& operator=(const PerThreadCounter&) = delete;

  // Adds delta (mod 2^64) to the calling thread's slot.
  void Add(uint64_t delta) {
#if PERCPU_CONTRACT_CHECKS
    if (magic_ != kAliveMagic) {
      internal::ReportContractViolation(
          "PerThreadCounter::Add: counter used after destruction");
      return;
    }
#endif
    if (__builtin_expect(
            internal::PerThreadTryAdd(&internal::TlsPerThreadFast, id_,
                                      serial_, delta),
            1)) {
      return;
    }
    AddSlow(delta);
  }
  void Inc() { Add(1); }

  // Accumulator of exited threads + all live slots (see the contract).
  uint64_t Sum() const;

  // Diagnostics. Slots ever created (<= the maximum number of threads that
  // used the counter at the same time), and slots now owned by a thread.
  size_t SlotsCreated() const;
  size_t SlotsInUse() const;
  // The accumulated count of exited threads.
  uint64_t ExitedTotal() const;

 private:
  friend class internal::PerThreadRegistry;
  struct Chunk;
  static constexpr uint32_t kAliveMagic = 0x7e4d0a11u;
  static constexpr uint32_t kDeadMagic = 0xdead7e4du;

  [[gnu::noinline]] void AddSlow(uint64_t delta);

  internal::PerThreadRegistry* registry_;  // the process's, unless a test's
  uint32_t id_;  // index into every thread's entries (reused)
  uint32_t magic_ = kAliveMagic;
  uint64_t serial_;  // this incarnation (never reused)
  SeqCount seq_;     // write sections: exit folds
  internal::Atomic<uint64_t> acc_{0};
  // Singly linked list of slot chunks, newest first; published with a
  // release store, never shrinks until destruction.
  internal::Atomic<Chunk*> chunks_{nullptr};
  // The rest is protected by the registry mutex (per_thread.cc).
  std::vector<internal::PerThreadSlot*> free_slots_;
  size_t slots_created_ = 0;
  size_t slots_in_use_ = 0;
  uint32_t chunk_used_ = 0;  // slots handed out from the newest chunk
};

// The job name (README "Which type for which job"): a per-thread counter.
using ThreadCounter = PerThreadCounter;

}  // namespace percpu

#endif  // PERCPU_PRIMITIVES_PER_THREAD_H_
