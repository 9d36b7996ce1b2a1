// ThreadCounter: a 64-bit statistics counter with one slot per thread --
// the single-writer counter without rseq. The per-thread domain is to
// threads what the per-CPU domain is to CPUs: a thread's slot has exactly
// one writer (the thread), so its hot path is a relaxed load and a relaxed
// store, no lock prefix; and thread exit is this domain's CPU hotplug: the
// exiting thread's count is folded into the counter's accumulator.
// Formerly PerThreadCounter, now a deprecated alias (removed in 0.3).
//
//   ThreadCounter c;
//   c.Add(1);             // any thread; first use per thread registers a slot
//   uint64_t n = c.Sum(); // any thread: accumulator + all slots
//
// Hot path after a thread's first Add() on a counter: the counter's id, the
// thread's table (a TLS load), the slot pointer at the id (an indexed load),
// a null test, and the owner's add (x86_64: one unlocked "addq" to the slot;
// elsewhere a relaxed load and a relaxed store). No bounds check: every
// thread's table has kPerThreadFastIds entries (a thread that has not
// registered reads a shared all-null table of that size), and counter ids
// stay below it. A destroyed counter's id is cleared in every live thread's
// table (under the registry mutex) before the id can be reused, so a
// non-null entry always belongs to the live counter with that id: no
// generation compare on the hot path.
//
// Beyond kPerThreadFastIds - 1 live counters (or if a thread's table cannot
// be mapped) a counter still counts exactly, through one shared relaxed
// atomic add (a lock-prefixed instruction, contended across threads):
// slower, never wrong. SlotsCreated() tells which mode a counter is in.
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
//     Counter (counter.h), or PerCpuU64 (percpu_stats.h) for an explicit
//     topology, which are async-signal-safe, instead.
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
#include <utility>
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
#if defined(__SANITIZE_THREAD__)
#define PERCPU_PER_THREAD_TSAN_ 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define PERCPU_PER_THREAD_TSAN_ 1
#endif
#endif
inline void PerThreadOwnerAdd(Atomic<uint64_t>& slot, uint64_t delta) {
#if defined(__x86_64__) && !defined(PERCPU_MODEL_CHECK) && \
    !defined(PERCPU_PER_THREAD_TSAN_)
  // The same relaxed load + store fused into one unlocked read-modify-write
  // instruction, as the kernel's this_cpu_add(): the owner is the only
  // writer, so no other store can fall between its load and store halves;
  // its store is one aligned 64-bit store (single-copy atomic: readers see
  // the old or the new value). No ordering beyond the relaxed pair's (plain
  // x86 stores are already release stores, nothing else is implied here).
  // The model checker and TSan builds run the load + store below, the
  // protocol the model test checks.
  static_assert(sizeof(Atomic<uint64_t>) == sizeof(uint64_t));
  __asm__("addq %[d], %[s]" : [s] "+m"(slot) : [d] "er"(delta) : "cc");
#else
  // Relaxed load: the only writer reads its own latest store.
  const uint64_t v = slot.load(std::memory_order_relaxed);
  // Relaxed store: no data is published with the count; a fold of this slot
  // is sequenced after it on the same thread (only the owner folds).
  slot.store(v + delta, std::memory_order_relaxed);
#endif
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

// Ids a thread's table holds. Tables are mapped lazily (anonymous pages,
// zero until touched), so a thread pays RSS only for the pages holding the
// ids it uses: 64 KiB (32-bit) / 128 KiB (64-bit) of address space each.
// The model checker's builds use a small table (the protocol is the same).
#if defined(PERCPU_MODEL_CHECK)
inline constexpr uint32_t kPerThreadFastIds = 64;
#else
inline constexpr uint32_t kPerThreadFastIds = 1u << 14;
#endif
// The id of counters registered when every fast id is taken: its entry is
// null in every table (never attached), so each Add() takes the slow path,
// which counts it in the counter's shared overflow atomic.
inline constexpr uint32_t kPerThreadOverflowId = kPerThreadFastIds - 1;

// The table of a thread that has no state yet (and after its exit): all
// null, so its first Add() to any counter takes the slow path. Never
// written (zero-initialized, in .bss: its untouched pages cost no memory).
inline PerThreadSlot* g_per_thread_null_entries[kPerThreadFastIds] = {};

// A thread's state: entries[id] is the thread's slot of the live counter
// with that id, or nullptr. Entries are written only under the registry
// mutex: by the owning thread (AddSlow) and by a counter's destructor,
// which clears its id in every live thread's table before the id can be
// reused (a thread never reads the entry of a counter being destroyed:
// the contract forbids Add() during destruction, and a later counter with
// the same id is published to the thread after the destructor's unlock).
class PerThreadState {
 public:
  PerThreadState() = default;
  PerThreadState(PerThreadState&& other) noexcept { *this = std::move(other); }
  PerThreadState& operator=(PerThreadState&& other) noexcept;
  ~PerThreadState();

  // Maps the table (kPerThreadFastIds null entries) if it is not mapped.
  // False if the mapping failed (the caller counts without a slot).
  bool MapTable();

  PerThreadSlot** entries = nullptr;  // kPerThreadFastIds entries, or null
  uint32_t high_water = 0;  // entries at and above it are all null
  bool listed = false;  // in its registry's list of states (registry mutex)
};

class PerThreadRegistry;  // primitives/internal/per_thread_registry.h

// The calling thread's state (nullptr until its first Add()). Constant
// initialization: no TLS guard on the hot path.
inline PerThreadState*& TlsPerThreadState() {
  static thread_local PerThreadState* state = nullptr;
  return state;
}

// The hot path's table: the state's entries, or the shared null table while
// the thread has no state. Kept in the TLS block itself, so the hot path
// reads it with one thread-pointer-relative load. Written only by the owning
// thread (AddSlow, its exit hook, a fork child), together with
// TlsPerThreadState. Constant initialization: no TLS guard.
inline PerThreadSlot* const*& TlsPerThreadEntries() {
  static thread_local PerThreadSlot* const* entries =
      g_per_thread_null_entries;
  return entries;
}

}  // namespace internal

class ThreadCounter {
 public:
  ThreadCounter();
  // A counter registered with `registry` instead of the process's: for
  // model tests that own a registry per execution and add through
  // PerThreadRegistry::Add with explicit thread states
  // (primitives/internal/per_thread_registry.h). Add() on such a counter is
  // a contract violation (reported; the add is dropped): a thread's own
  // state belongs to the process's registry. `registry` must outlive the
  // counter.
  explicit ThreadCounter(internal::PerThreadRegistry& registry);
  ~ThreadCounter();
  ThreadCounter(const ThreadCounter&) = delete;
  ThreadCounter& operator=(const ThreadCounter&) = delete;

  // Adds delta (mod 2^64) to the calling thread's slot.
  void Add(uint64_t delta) {
#if PERCPU_CONTRACT_CHECKS
    if (magic_ != kAliveMagic) {
      internal::ReportContractViolation(
          "ThreadCounter::Add: counter used after destruction");
      return;
    }
#endif
    // id_ < kPerThreadFastIds, the size of every table: no bounds check.
    internal::PerThreadSlot* const s = internal::TlsPerThreadEntries()[id_];
    if (__builtin_expect(s != nullptr, 1)) {
      internal::PerThreadOwnerAdd(s->value, delta);
      return;
    }
    AddSlow(delta);
  }
  void Inc() { Add(1); }

  // Accumulator of exited threads + all live slots (see the contract).
  uint64_t Sum() const;

  // Diagnostics. Slots ever created (<= the maximum number of threads that
  // used the counter at the same time; 0 for a counter in overflow mode,
  // see above), and slots now owned by a thread.
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
  void AddOverflow(uint64_t delta);

  uint32_t id_;       // index into every thread's entries (reused), or
                      // kPerThreadOverflowId
  uint32_t magic_ = kAliveMagic;
  uint64_t serial_;   // this incarnation (never reused)
  SeqCount seq_;      // write sections: exit folds
  internal::Atomic<uint64_t> acc_{0};
  // Adds counted without a slot (overflow id, or a thread whose table could
  // not be mapped): shared, fetch_add.
  internal::Atomic<uint64_t> overflow_{0};
  // Singly linked list of slot chunks, newest first; published with a
  // release store, never shrinks until destruction.
  internal::Atomic<Chunk*> chunks_{nullptr};
  // The rest is protected by the registry mutex (per_thread.cc).
  std::vector<internal::PerThreadSlot*> free_slots_;
  size_t slots_created_ = 0;
  size_t slots_in_use_ = 0;
  uint32_t chunk_used_ = 0;  // slots handed out from the newest chunk
  internal::PerThreadRegistry* registry_;  // the process's, unless a test's
};

// The old name (0.1). Removed in 0.3.
using PerThreadCounter [[deprecated("use ThreadCounter; removed in 0.3")]] =
    ThreadCounter;

}  // namespace percpu

#endif  // PERCPU_PRIMITIVES_PER_THREAD_H_
