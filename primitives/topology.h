// Topology: which CPU ids exist (possible), are plugged in (present) and run
// code (online), and CPU hotplug events with callbacks, as the kernel's
// cpu_possible/present/online masks and its cpuhp state machine.
//
// A Topology comes from sysfs (FromSysfs, updated by Rescan()) or is
// simulated (Simulated, driven by the caller through SetPresent/SetAbsent/
// Online/Offline). The possible set never changes: per-CPU memory is laid
// out for num_possible() CPUs once. Invariant at all times:
//   online  ⊆  present  ⊆  possible,   online is never empty.
//
// Hotplug events and their callbacks. Every mask change is one event for
// one CPU: kPresent (hot-add, absent -> present), kOnline (present ->
// online), kOffline (online -> present), kAbsent (hot-remove, present ->
// absent). Each registered pair of callbacks has two phases:
//   * prepare(event, cpu) -- the "setup/teardown" phase. It runs outside the
//     hotplug write section with the hotplug mutex held, and may allocate,
//     commit or release memory and block. For bring-up events (kPresent,
//     kOnline) it runs BEFORE the masks change; for teardown events
//     (kOffline, kAbsent) it runs AFTER the masks changed and the fold
//     callbacks ran (teardown mirrors bring-up, as cpuhp runs its states in
//     reverse), so memory is released only after the dying CPU's data was
//     folded. Bring-up prepare callbacks run in registration order,
//     teardown ones in reverse registration order.
//   * fold(event, cpu) -- runs INSIDE the hotplug seqcount write section
//     (hotplug_seq()), together with the mask-word update, in registration
//     order. It must be short, must not block, must not allocate; it is
//     where a dying CPU's counts are moved into an accumulator so that a
//     reader inside a hotplug_seq read section sees either the old masks and
//     the CPU's counts or the new masks and the moved counts, never both or
//     neither. Within the write section the fold callbacks run first and the
//     mask word is updated last -- except for kAbsent, where the present bit
//     is cleared first, then the rseq hotplug fence runs (membarrier, see
//     internal::RunRseqHotplugFence below), then the fold callbacks: rseq
//     writers test the present bit inside their restartable section, and
//     after the fence none that saw the old bit is still running.
//   Exceptions: a callback that throws is caught and reported as an
//   INTERNAL failure of that callback ("threw an exception"); the write
//   section is always closed. Nothing inside a write section allocates.
//   Failures: every callback runs even if an earlier one failed; the event
//   returns a Status (code of the first failure) whose message lists every
//   failed callback with its id and message. A failing prepare callback of
//   a bring-up event VETOES the event: the masks do not change and no fold
//   callback runs (so a CPU never becomes present/online without the memory
//   its users need); prepare callbacks that already succeeded are not
//   rolled back, so bring-up prepare work must be harmless if the event
//   does not happen (e.g. committing zeroed memory). Teardown events cannot
//   be vetoed: they always complete, failures are only reported. Fold
//   callback failures never stop an event.
//
// Ownership: FromSysfs/Simulated return a std::shared_ptr. Every object
// built on a Topology (a PerCpuAllocator, a counter) keeps a reference to
// it, so the Topology lives until the last of them is gone, whatever order
// they are declared or destroyed in.
//
// Rules: Offline() of the last online CPU and SetAbsent() of an online CPU
// are refused (FailedPrecondition); Online() requires present
// (FailedPrecondition); a request for the state a CPU is already in is a
// no-op returning OK and fires no event; a CPU id outside [0,
// num_possible()) is OutOfRange; an id inside that range but not in the
// possible mask (a hole in a sysfs "possible" list) is FailedPrecondition.
//
// Memory-ordering contract:
//   * Event methods, Register/UnregisterHotplugCallbacks and Rescan are
//     serialized by one internal mutex and may be called from any thread,
//     except from inside a hotplug callback of the same Topology (they then
//     return FailedPrecondition instead of deadlocking) -- with one
//     exception: UnregisterHotplugCallbacks works from inside a callback
//     (e.g. a counter destroyed by a user's callback); the registration
//     never runs again, also not later in the same event.
//   * After RegisterHotplugCallbacks() returns, every later event runs the
//     new callbacks, and every earlier event is complete (its mask changes
//     are visible to the registering thread). After
//     UnregisterHotplugCallbacks() returns the callbacks never run again and
//     are not running.
//   * The mask words are atomics. IsPresent/IsOnline/ForEachOnline/
//     ForEachPresent load them relaxed: a lone load is a hint that may be
//     stale. For a consistent view, read them inside a hotplug_seq() read
//     section (ReadBegin/ReadRetry); its acquire/fence pairing orders the
//     relaxed mask loads and any relaxed data the fold callbacks wrote.
//     possible()/present()/online() return snapshots taken under the same
//     seqcount, so each is a mask that really existed.
#ifndef PERCPU_PRIMITIVES_TOPOLOGY_H_
#define PERCPU_PRIMITIVES_TOPOLOGY_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "primitives/cpumask.h"
#include "primitives/internal/atomic.h"
#include "primitives/internal/callable.h"
#include "primitives/internal/mutex.h"
#include "primitives/seqcount.h"
#include "primitives/status.h"

namespace percpu {

enum class HotplugEvent {
  kPresent,  // hot-add: absent -> present
  kOnline,   // present -> online
  kOffline,  // online -> present (offline)
  kAbsent,   // hot-remove: present -> absent
};

// "kPresent", "kOnline", "kOffline", "kAbsent".
const char* HotplugEventName(HotplugEvent event);

class Topology : public std::enable_shared_from_this<Topology> {
 public:
  // A copyable owning callable (internal/callable.h), constructible from
  // nullptr and from any callable invocable as Status(HotplugEvent, int),
  // as std::function was; <functional> is kept out of this header.
  using HotplugCallback = internal::Callable<Status(HotplugEvent, int cpu)>;

  // Reads <dir>/possible, <dir>/present and <dir>/online. Errors: NotFound
  // for a missing/unreadable file, InvalidArgument for malformed text
  // (message names the file), FailedPrecondition if the masks violate the
  // invariant above (e.g. online not within present, or possible empty).
  [[nodiscard]] static StatusOr<std::shared_ptr<Topology>> FromSysfs(
      const std::string& dir = "/sys/devices/system/cpu");
  // possible = {0..possible-1}, present = {0..present-1},
  // online = {0..online-1}. InvalidArgument unless
  // 1 <= online <= present <= possible <= kMaxCpus.
  [[nodiscard]] static StatusOr<std::shared_ptr<Topology>> Simulated(
      int possible, int present, int online);

  Topology(const Topology&) = delete;
  Topology& operator=(const Topology&) = delete;
  ~Topology();

  // Possible CPUs have ids in [0, num_possible()). Constant.
  int num_possible() const { return num_possible_; }
  // The sysfs directory, or "" for a simulated topology.
  const std::string& sysfs_dir() const { return dir_; }

  CpuMask possible() const { return possible_; }  // constant
  CpuMask present() const;                         // consistent snapshot
  CpuMask online() const;                          // consistent snapshot
  // Relaxed loads of the mask words; false for invalid ids.
  bool IsPresent(int cpu) const { return TestWord(present_words_.get(), cpu); }
  bool IsOnline(int cpu) const { return TestWord(online_words_.get(), cpu); }
  // OutOfRange unless 0 <= cpu < num_possible().
  [[nodiscard]] Status ValidateCpu(int cpu) const;

  // Hotplug events (see the header comment for the rules).
  [[nodiscard]] Status SetPresent(int cpu);
  [[nodiscard]] Status SetAbsent(int cpu);
  [[nodiscard]] Status Online(int cpu);
  [[nodiscard]] Status Offline(int cpu);
  // Re-reads the sysfs files and fires the differences in this order: new
  // present CPUs, new online CPUs, newly offline CPUs, newly absent CPUs.
  // FailedPrecondition for a simulated topology or if "possible" changed;
  // read/parse errors as FromSysfs (no event fired then). Event failures are
  // collected and returned; later events still fire.
  [[nodiscard]] Status Rescan();

  // Either callback may be empty. Returns the registration id (never 0).
  [[nodiscard]] StatusOr<uint64_t> RegisterHotplugCallbacks(
      HotplugCallback prepare, HotplugCallback fold);
  // NotFound for an unknown id. Works from inside a callback of this
  // topology (see the header comment).
  [[nodiscard]] Status UnregisterHotplugCallbacks(uint64_t id);

  // Readers' side of the hotplug protocol: the write section of every event
  // spans its fold callbacks and its mask-word update.
  const SeqCount& hotplug_seq() const { return seq_; }

  // Calls f(int cpu) for each online (present) CPU in ascending order, from
  // relaxed loads of the atomic mask words. Call inside a hotplug_seq() read
  // section for a consistent set.
  template <typename F>
  void ForEachOnline(F&& f) const {
    ForEachInWords(online_words_.get(), f);
  }
  template <typename F>
  void ForEachPresent(F&& f) const {
    ForEachInWords(present_words_.get(), f);
  }

  // The present-mask words, for rseq writers that test their CPU's bit
  // inside the restartable section (internal/rseq_asm.h): bit c of word
  // c / 64. Valid for the topology's lifetime; num_possible() bits.
  const internal::Atomic<uint64_t>* present_words() const {
    return present_words_.get();
  }

  // Number of events fired so far (diagnostics; relaxed).
  uint64_t events_fired() const;

 private:
  struct Registration {
    uint64_t id;
    HotplugCallback prepare;
    HotplugCallback fold;
    // Set by UnregisterHotplugCallbacks() called from inside a callback of
    // this topology: never run again; erased when the event ends (erasing
    // it at once could destroy the callable that is running).
    bool dead = false;
  };
  // A callback failure recorded inside a write section: no formatting, no
  // allocation there (failures_ has its capacity reserved beforehand).
  struct Failure {
    const char* phase;
    uint64_t id;
    Status status;      // moved from the callback's result (no allocation)
    bool threw = false;  // the callback threw; status is empty then
  };

  Topology(std::string dir, const CpuMask& possible, const CpuMask& present,
           const CpuMask& online);

  bool TestWord(const internal::Atomic<uint64_t>* words, int cpu) const {
    if (cpu < 0 || cpu >= num_possible_) return false;
    // Relaxed suffices: a lone test is documented as a hint; consistent
    // views come from a hotplug_seq read section, which orders this load.
    return (words[cpu / 64].load(std::memory_order_relaxed) >>
            (cpu % 64)) & 1u;
  }

  template <typename F>
  void ForEachInWords(const internal::Atomic<uint64_t>* words, F&& f) const {
    for (int w = 0; w < num_words_; ++w) {
      // Relaxed suffices: callers wanting consistency read inside a
      // hotplug_seq read section, whose fences order these loads.
      uint64_t bits = words[w].load(std::memory_order_relaxed);
      while (bits != 0) {
        const int bit = __builtin_ctzll(bits);
        bits &= bits - 1;
        f(w * 64 + bit);
      }
    }
  }

  CpuMask SnapshotWords(const internal::Atomic<uint64_t>* words) const;
  bool InCallbackOfThis() const;
  // The core of every event; requires mu_ held.
  [[nodiscard]] Status FireLocked(HotplugEvent event, int cpu);
  // Runs one callback, recording a failure or an exception into failures_
  // without allocating (capacity reserved by FireLocked).
  void RunCallbackLocked(const char* phase, const Registration& r,
                         const HotplugCallback& cb, HotplugEvent event,
                         int cpu);
  // The mask-word update of an event (inside its write section).
  void UpdateMaskLocked(HotplugEvent event, int cpu);
  void EraseDeadLocked();
  [[nodiscard]] Status CheckCpuLocked(const char* op, int cpu) const;

  const std::string dir_;
  const CpuMask possible_;
  const int num_possible_;
  const int num_words_;
  std::unique_ptr<internal::Atomic<uint64_t>[]> present_words_;
  std::unique_ptr<internal::Atomic<uint64_t>[]> online_words_;
  SeqCount seq_;
  internal::Atomic<uint64_t> events_fired_{0};

  internal::SystemMutex mu_;  // serializes events, (un)registration, Rescan
  std::vector<Registration> regs_;  // guarded by mu_
  std::vector<Failure> failures_;   // guarded by mu_; FireLocked's scratch
  bool has_dead_ = false;           // guarded by mu_
  uint64_t next_id_ = 1;            // guarded by mu_
};

namespace internal {

// The rseq hotplug fence: membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ)
// (Linux >= 5.10). An rseq writer whose restartable section tests its CPU's
// present bit (internal/rseq_asm.h) may have read the bit before a kAbsent
// event cleared it; after the fence returns, every such section has either
// committed or been aborted (it restarts and reads the new mask). Topology
// runs the fence at every kAbsent, between clearing the present bit and the
// fold callbacks (docs/fold_and_hotplug.md, "rseq writers and hotplug").
//
// EnableRseqHotplugFence() registers the process once
// (MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ) and returns whether the
// fence is available; thread-safe, idempotent. An object may use an rseq
// writer bounded by a topology's present mask only if it returned true.
// Always false under the model checker.
bool EnableRseqHotplugFence();
bool RseqHotplugFenceEnabled();
// Runs the fence if it is enabled (a no-op otherwise). Returns false if the
// syscall failed (it cannot once registered; reported as an event failure).
bool RunRseqHotplugFence();
#if defined(PERCPU_MODEL_CHECK)
// The model checker's stand-in for membarrier (verification/
// rseq_hotplug_model_test.cc installs it): RunRseqHotplugFence calls it.
extern void (*g_model_rseq_fence)();
#endif

}  // namespace internal

}  // namespace percpu

#endif  // PERCPU_PRIMITIVES_TOPOLOGY_H_
