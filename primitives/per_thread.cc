#include "primitives/per_thread.h"

#include <pthread.h>

#include <algorithm>
#include <mutex>
#include <vector>

namespace percpu {

struct ThreadCounter::Chunk {
  static constexpr uint32_t kSlots = 8;
  internal::PerThreadSlot slots[kSlots];
  Chunk* next = nullptr;  // immutable once the chunk is published
};

namespace {

struct Record {
  uint64_t serial = 0;  // 0: id free
  ThreadCounter* counter = nullptr;
};

void ThreadExit(void* p);

// Process-wide registry of live counters. Leaked on purpose: threads may
// exit (and run ThreadExit) during or after static destruction.
struct Registry {
  std::mutex mu;
  std::vector<Record> records;  // indexed by counter id
  std::vector<uint32_t> free_ids;
  uint64_t next_serial = 1;
  pthread_key_t key{};
  // If pthread_key_create failed, exit folds never run: slots stay owned
  // (and summed) until the counter dies -- exact, only without reuse.
  bool key_ok = false;
  // Every live thread's state (guarded by mu), so that a fork() child can
  // retire the states of the threads it did not inherit.
  std::vector<internal::PerThreadState*> states;
};

Registry& GetRegistryNoFork();

// fork() safety (pthread_atfork). Without it, a fork while another thread
// holds mu leaves mu locked forever in the child (which has only the
// forking thread), so its first AddSlow, thread exit or counter
// construction deadlocks.
//   prepare: take mu, so no other thread is inside a registry operation
//            (in particular no exit fold is in a write section) at the fork;
//   parent:  release it;
//   child:   release it, then retire every thread state but the forking
//            thread's: those threads do not exist in the child, so, exactly
//            as their exit hooks would have, their slots are folded into
//            the counters' accumulators (counts kept, slots reusable) and
//            the states freed. The forking thread's state is kept.
// The child handler allocates and frees (vector growth, delete); glibc
// makes malloc usable in atfork child handlers.
void AtForkPrepare() { GetRegistryNoFork().mu.lock(); }
void AtForkParent() { GetRegistryNoFork().mu.unlock(); }
void AtForkChild();

Registry& GetRegistryNoFork() {
  static Registry* const r = [] {
    Registry* reg = new Registry;
    reg->key_ok = pthread_key_create(&reg->key, &ThreadExit) == 0;
    return reg;
  }();
  return *r;
}

Registry& GetRegistry() {
  // Registered once, after the registry exists (handlers run in reverse
  // registration order for prepare; nothing else here depends on that).
  static const bool atfork_ok =
      (GetRegistryNoFork(),
       pthread_atfork(&AtForkPrepare, &AtForkParent, &AtForkChild) == 0);
  (void)atfork_ok;  // if it failed, fork safety is lost, nothing else
  return GetRegistryNoFork();
}

}  // namespace

// Gives the registry functions access to the counter's private state.
struct ThreadCounterAccess {
  // Precondition: registry mutex held.
  static internal::PerThreadSlot* AcquireSlot(ThreadCounter* c) {
    internal::PerThreadSlot* s;
    if (!c->free_slots_.empty()) {
      s = c->free_slots_.back();
      c->free_slots_.pop_back();
    } else {
      // Relaxed: chunks_ is only stored under the registry mutex, which we
      // hold.
      ThreadCounter::Chunk* head =
          c->chunks_.load(std::memory_order_relaxed);
      if (head == nullptr || c->chunk_used_ == ThreadCounter::Chunk::kSlots) {
        auto* chunk = new ThreadCounter::Chunk;
        chunk->next = head;
        // Release: publishes the zeroed slots and chunk->next to Sum().
        c->chunks_.store(chunk, std::memory_order_release);  // Pairs with: acquire load of chunks_ in Sum().
        head = chunk;
        c->chunk_used_ = 0;
      }
      s = &head->slots[c->chunk_used_++];
      ++c->slots_created_;
    }
    ++c->slots_in_use_;
    // Orders the owner's first store after a previous owner's exit fold
    // (issue 12 item 1; see PerThreadTakeSlot).
    internal::PerThreadTakeSlot();
    return s;
  }

  // Precondition: registry mutex held; the calling thread owns `slot`.
  static void FoldAndRelease(ThreadCounter* c,
                             internal::PerThreadSlot* slot) {
    internal::PerThreadExitFold(c->seq_, c->acc_, slot->value);
    c->free_slots_.push_back(slot);
    --c->slots_in_use_;
  }
};

namespace {

// Folds and releases every slot of `st` whose counter is still alive and
// forgets `st`. Precondition: r.mu held; no thread writes st's slots any
// more (it is the caller's own, or its thread is gone).
void RetireStateLocked(Registry& r, internal::PerThreadState* st) {
  for (uint32_t id = 0; id < st->capacity; ++id) {
    internal::PerThreadSlot* const slot = st->entries[id];
    if (slot == nullptr) continue;
    // Non-null entries belong to the live counter with that id: a
    // destructor clears its id in every registered state (st is registered
    // until the end of this function).
    ThreadCounterAccess::FoldAndRelease(r.records[id].counter, slot);
  }
  auto it = std::find(r.states.begin(), r.states.end(), st);
  if (it != r.states.end()) {
    *it = r.states.back();
    r.states.pop_back();
  }
}

void AtForkChild() {
  Registry& r = GetRegistryNoFork();
  internal::PerThreadState* const self = internal::TlsPerThreadState();
  std::vector<internal::PerThreadState*> others;
  for (internal::PerThreadState* st : r.states) {
    if (st != self) others.push_back(st);
  }
  for (internal::PerThreadState* st : others) {
    RetireStateLocked(r, st);
    delete st;
  }
  r.mu.unlock();
}

// The pthread-key destructor: runs on the exiting thread after its C++
// thread_local destructors. The thread is still the only writer of its
// slots, so it folds them itself.
void ThreadExit(void* p) {
  auto* st = static_cast<internal::PerThreadState*>(p);
  if (st == nullptr) return;
  Registry& r = GetRegistry();
  {
    std::lock_guard<std::mutex> lock(r.mu);
    RetireStateLocked(r, st);
  }
  if (internal::TlsPerThreadState() == st) {
    internal::TlsPerThreadState() = nullptr;
    internal::TlsPerThreadFast() = internal::PerThreadTls{};
  }
  delete st;
}

}  // namespace

ThreadCounter::ThreadCounter() {
  Registry& r = GetRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  if (!r.free_ids.empty()) {
    id_ = r.free_ids.back();
    r.free_ids.pop_back();
  } else {
    id_ = static_cast<uint32_t>(r.records.size());
    r.records.emplace_back();
  }
  serial_ = r.next_serial++;
  r.records[id_] = Record{serial_, this};
}

ThreadCounter::~ThreadCounter() {
  Registry& r = GetRegistry();
  {
    std::lock_guard<std::mutex> lock(r.mu);
    // From now on no exit hook folds into this counter, and no thread's
    // entry refers to it: the id may be reused by the next counter.
    for (internal::PerThreadState* st : r.states) {
      if (id_ < st->capacity) st->entries[id_] = nullptr;
    }
    r.records[id_] = Record{};
    r.free_ids.push_back(id_);
    magic_ = kDeadMagic;
  }
  // Relaxed: no other thread may use the counter any more (contract).
  Chunk* c = chunks_.load(std::memory_order_relaxed);
  while (c != nullptr) {
    Chunk* next = c->next;
    delete c;
    c = next;
  }
}

void ThreadCounter::AddSlow(uint64_t delta) {
  Registry& r = GetRegistry();
  internal::PerThreadState* st = internal::TlsPerThreadState();
  internal::PerThreadSlot* slot;
  {
    std::lock_guard<std::mutex> lock(r.mu);
    if (st == nullptr) {
      st = new internal::PerThreadState;
      internal::TlsPerThreadState() = st;
      if (r.key_ok) pthread_setspecific(r.key, st);
      r.states.push_back(st);  // for a fork() child's reset
    }
    if (id_ >= st->capacity) {
      const size_t n = std::max<size_t>(
          {size_t{id_} + 1, size_t{st->capacity} * 2, size_t{8}});
      st->storage.resize(n);
      st->entries = st->storage.data();
      st->capacity = static_cast<uint32_t>(n);
      internal::TlsPerThreadFast() =
          internal::PerThreadTls{st->entries, st->capacity};
    }
    internal::PerThreadSlot*& e = st->entries[id_];
    if (e == nullptr) e = ThreadCounterAccess::AcquireSlot(this);
    slot = e;
  }
  internal::PerThreadOwnerAdd(slot->value, delta);
}

uint64_t ThreadCounter::Sum() const {
  return internal::PerThreadSum(seq_, acc_, [this](auto&& f) {
    for (const Chunk* c = chunks_.load(std::memory_order_acquire);  // Pairs with: release store of chunks_ in AcquireSlot().
         c != nullptr; c = c->next) {
      for (const internal::PerThreadSlot& s : c->slots) f(s.value);
    }
  });
}

size_t ThreadCounter::SlotsCreated() const {
  std::lock_guard<std::mutex> lock(GetRegistry().mu);
  return slots_created_;
}

size_t ThreadCounter::SlotsInUse() const {
  std::lock_guard<std::mutex> lock(GetRegistry().mu);
  return slots_in_use_;
}

uint64_t ThreadCounter::ExitedTotal() const {
  // Relaxed: a single diagnostic value.
  return acc_.load(std::memory_order_relaxed);
}

}  // namespace percpu
