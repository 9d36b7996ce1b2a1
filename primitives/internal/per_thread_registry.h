// PerThreadRegistry: the registry behind ThreadCounter (per_thread.h) --
// which counters are alive (id, serial), which thread states exist, and the
// slow paths that run under its mutex: a thread taking a slot of a counter
// (new, or reused after another thread's exit fold) and a thread's exit
// folding its slots into the counters' accumulators.
//
// The process has one registry (ThreadCounter's default constructor
// uses it; per_thread.cc adds the pthread-key exit hook and the fork()
// handlers around it). It is an object so that a model test can own one
// per execution (verification/per_thread_model_test.cc): under
// PERCPU_MODEL_CHECK its mutex is internal::Mutex = rl::mutex and the slots'
// atomics are rl::atomic, so the very same registry code is explored, with
// thread states the test passes explicitly (a checker thread has no
// thread_local storage or pthread-key destructors of its own).
//
// Memory-ordering contract:
//   * Every registry operation runs under mu_: a lock synchronizes-with the
//     previous unlock (POSIX 4.12, as std::mutex), so the registry's plain
//     fields, the counters' free lists and the thread states' entry tables
//     need no atomics. Exit folds of one counter are serialized by mu_ (the
//     counter's SeqCount has a single-writer contract).
//   * What a reader (ThreadCounter::Sum, lock-free) relies on is ordered
//     by the counter's own atomics: the chunk list's release store in
//     Attach, the take-slot fence, the fold's write section (see
//     per_thread.h and docs/writers.md).
//
// Usage constraints:
//   * A state passed to Add/Attach/Retire belongs to one thread, which
//     alone calls Add/Attach with it, and is used with one registry only;
//     Retire(st) runs on that thread (its exit) or after it is gone (fork()
//     child), and nothing uses st's slots afterwards. After Retire the
//     state may be reused (it is empty) or freed by its owner.
//   * A counter registered with a registry is destroyed before it.
//   * Not async-signal-safe (mutex, allocation).
#ifndef PERCPU_PRIMITIVES_INTERNAL_PER_THREAD_REGISTRY_H_
#define PERCPU_PRIMITIVES_INTERNAL_PER_THREAD_REGISTRY_H_

#include <cstdint>
#include <vector>

#include "primitives/internal/mutex.h"
#include "primitives/per_thread.h"

namespace percpu {
namespace internal {

class PerThreadRegistry {
 public:
  PerThreadRegistry() = default;
  PerThreadRegistry(const PerThreadRegistry&) = delete;
  PerThreadRegistry& operator=(const PerThreadRegistry&) = delete;

  // Counter lifetime (ThreadCounter's constructor and destructor): gives
  // c an id (reused after a counter is unregistered); Unregister clears
  // c's entry in every listed thread state, so no later add or exit fold
  // touches c's memory and the id can be reused.
  void Register(ThreadCounter* c);
  void Unregister(ThreadCounter* c);

  // The slow path of an add by the thread owning `st`: lists st (first
  // call), grows its entry table to c's id, and takes a slot of c (a free
  // one, or a new one from c's chunks) unless st's entry already holds one.
  // Returns the slot, which the caller then owns (its only writer).
  PerThreadSlot* Attach(PerThreadState* st, ThreadCounter* c);

  // Add(delta) by the thread owning `st` to c: the counter's hot path on
  // st's entries, else Attach and add. What ThreadCounter::Add does with
  // the calling thread's thread_local state and the process's registry;
  // model tests call it with a state per checker thread and the registry
  // they own (c must be registered here).
  void Add(ThreadCounter* c, PerThreadState* st, uint64_t delta);

  // A thread's exit: folds every slot of st whose counter is still alive
  // into that counter's accumulator, returns the slots for reuse, empties
  // st and forgets it.
  void Retire(PerThreadState* st);

  // fork() handlers (per_thread.cc): Prepare takes mu_; Parent releases
  // it; Child retires every listed state but `self` (their threads do not
  // exist in the child), deletes them (they were allocated by the global
  // registry's callers with new) and releases mu_.
  void ForkPrepare() { mu_.lock(); }
  void ForkParent() { mu_.unlock(); }
  void ForkChild(PerThreadState* self);

  // Diagnostics of c (under mu_).
  size_t SlotsCreated(const ThreadCounter* c);
  size_t SlotsInUse(const ThreadCounter* c);

 private:
  struct Record {
    uint64_t serial = 0;  // 0: id free
    ThreadCounter* counter = nullptr;
  };

  // Precondition: mu_ held.
  void ListLocked(PerThreadState* st);
  void RetireLocked(PerThreadState* st);

  Mutex mu_;
  std::vector<Record> records_;  // indexed by counter id
  std::vector<uint32_t> free_ids_;
  uint64_t next_serial_ = 1;
  // Every listed thread state, so that a fork() child can retire the states
  // of the threads it did not inherit.
  std::vector<PerThreadState*> states_;
};

}  // namespace internal
}  // namespace percpu

#endif  // PERCPU_PRIMITIVES_INTERNAL_PER_THREAD_REGISTRY_H_
