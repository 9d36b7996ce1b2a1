#include "primitives/per_thread.h"

#include <pthread.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <mutex>  // std::lock_guard
#include <vector>

#include "primitives/internal/per_thread_registry.h"

namespace percpu {

struct ThreadCounter::Chunk {
  static constexpr uint32_t kSlots = 8;
  internal::PerThreadSlot slots[kSlots];
  Chunk* next = nullptr;  // immutable once the chunk is published
};

namespace internal {

namespace {
constexpr size_t kPerThreadTableBytes =
    sizeof(PerThreadSlot*) * size_t{kPerThreadFastIds};
}  // namespace

PerThreadState& PerThreadState::operator=(PerThreadState&& other) noexcept {
  if (this != &other) {
    this->~PerThreadState();
    entries = std::exchange(other.entries, nullptr);
    high_water = std::exchange(other.high_water, 0);
    listed = std::exchange(other.listed, false);
  }
  return *this;
}

PerThreadState::~PerThreadState() {
  if (entries != nullptr) munmap(entries, kPerThreadTableBytes);
  entries = nullptr;
}

bool PerThreadState::MapTable() {
  if (entries != nullptr) return true;
  // Anonymous pages read as zero (null entries) and cost memory only once
  // touched: a thread's RSS grows by a page per 512 (64-bit) ids it uses.
  void* p = mmap(nullptr, kPerThreadTableBytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return false;
  entries = static_cast<PerThreadSlot**>(p);
  return true;
}

void PerThreadRegistry::Register(ThreadCounter* c) {
  std::lock_guard<Mutex> lock(mu_);
  if (!free_ids_.empty()) {
    c->id_ = free_ids_.back();
    free_ids_.pop_back();
  } else if (records_.size() < kPerThreadOverflowId) {
    c->id_ = static_cast<uint32_t>(records_.size());
    records_.emplace_back();
  } else {
    // Every fast id is taken: the counter counts through overflow_ (its
    // id's entry is null in every table, so every add takes AddSlow).
    c->id_ = kPerThreadOverflowId;
    c->serial_ = next_serial_++;
    return;
  }
  c->serial_ = next_serial_++;
  records_[c->id_] = Record{c->serial_, c};
}

void PerThreadRegistry::ListLocked(PerThreadState* st) {
  if (st->listed) return;
  // For the destructors' clearing of entries and a fork() child's reset.
  states_.push_back(st);
  st->listed = true;
}

void PerThreadRegistry::Unregister(ThreadCounter* c) {
  std::lock_guard<Mutex> lock(mu_);
  // From now on no exit fold touches c, and no thread's entry refers to it:
  // the id may be reused by the next counter.
  c->magic_ = ThreadCounter::kDeadMagic;
  if (c->id_ == kPerThreadOverflowId) return;
  for (PerThreadState* st : states_) {
    if (c->id_ < st->high_water) st->entries[c->id_] = nullptr;
  }
  records_[c->id_] = Record{};
  free_ids_.push_back(c->id_);
}

PerThreadSlot* PerThreadRegistry::Attach(PerThreadState* st,
                                         ThreadCounter* c) {
  if (c->id_ == kPerThreadOverflowId) return nullptr;
  std::lock_guard<Mutex> lock(mu_);
  if (!st->MapTable()) return nullptr;
  ListLocked(st);
  st->high_water = std::max(st->high_water, c->id_ + 1);
  PerThreadSlot*& e = st->entries[c->id_];
  if (e != nullptr) return e;
  // Take a slot of c (a destroyed counter that had the same id cleared its
  // entry).
  PerThreadSlot* s;
  if (!c->free_slots_.empty()) {
    s = c->free_slots_.back();
    c->free_slots_.pop_back();
  } else {
    // Relaxed: chunks_ is only stored under the registry mutex, which we
    // hold.
    ThreadCounter::Chunk* head = c->chunks_.load(std::memory_order_relaxed);
    if (head == nullptr || c->chunk_used_ == ThreadCounter::Chunk::kSlots) {
      auto* chunk = new ThreadCounter::Chunk;
      chunk->next = head;
#if defined(PERCPU_MUTANT_PER_THREAD_RELAXED_CHUNK)  // model-test mutant only
      // Relaxed does NOT suffice: the planted bug that
      // per_thread_registry_chunk_mutant_model_test must catch.
      c->chunks_.store(chunk, std::memory_order_relaxed);
#else
      // Release: publishes the zeroed slots and chunk->next to Sum().
      c->chunks_.store(chunk, std::memory_order_release);  // Pairs with: acquire load of chunks_ in Sum().
#endif
      head = chunk;
      c->chunk_used_ = 0;
    }
    s = &head->slots[c->chunk_used_++];
    ++c->slots_created_;
  }
  ++c->slots_in_use_;
  // Orders the owner's first store after a previous owner's exit fold
  // (issue 12 item 1; see PerThreadTakeSlot).
  PerThreadTakeSlot();
  e = s;
  return s;
}

void PerThreadRegistry::Add(ThreadCounter* c, PerThreadState* st,
                            uint64_t delta) {
  // ThreadCounter::Add's hot path on st's table.
  PerThreadSlot* s = st->entries != nullptr ? st->entries[c->id_] : nullptr;
  if (s == nullptr) s = Attach(st, c);
  if (s == nullptr) {
    c->AddOverflow(delta);
    return;
  }
  PerThreadOwnerAdd(s->value, delta);
}

void PerThreadRegistry::RetireLocked(PerThreadState* st) {
  for (uint32_t id = 0; id < st->high_water; ++id) {
    PerThreadSlot* const slot = st->entries[id];
    if (slot == nullptr) continue;
    // Non-null entries belong to the live counter with that id: a
    // destructor clears its id in every listed state (st is listed until
    // the end of this function).
    ThreadCounter* c = records_[id].counter;
    PerThreadExitFold(c->seq_, c->acc_, slot->value);
    c->free_slots_.push_back(slot);
    --c->slots_in_use_;
    st->entries[id] = nullptr;
  }
  st->high_water = 0;
  if (st->listed) {
    auto it = std::find(states_.begin(), states_.end(), st);
    if (it != states_.end()) {
      *it = states_.back();
      states_.pop_back();
    }
    st->listed = false;
  }
}

void PerThreadRegistry::Retire(PerThreadState* st) {
#if defined(PERCPU_MUTANT_PER_THREAD_UNLOCKED_RETIRE)  // model-test mutant only
  // The planted bug per_thread_registry_mutant_model_test must catch.
  RetireLocked(st);
#else
  std::lock_guard<Mutex> lock(mu_);
  RetireLocked(st);
#endif
}

void PerThreadRegistry::ForkChild(PerThreadState* self) {
  std::vector<PerThreadState*> others;
  for (PerThreadState* st : states_) {
    if (st != self) others.push_back(st);
  }
  for (PerThreadState* st : others) {
    RetireLocked(st);
    delete st;
  }
  mu_.unlock();
}

size_t PerThreadRegistry::SlotsCreated(const ThreadCounter* c) {
  std::lock_guard<Mutex> lock(mu_);
  return c->slots_created_;
}

size_t PerThreadRegistry::SlotsInUse(const ThreadCounter* c) {
  std::lock_guard<Mutex> lock(mu_);
  return c->slots_in_use_;
}

}  // namespace internal

namespace {

void ThreadExit(void* p);

// The process's registry, with the thread-exit hook (a pthread key whose
// destructor retires the exiting thread's state). Leaked on purpose:
// threads may exit (and run ThreadExit) during or after static destruction.
struct GlobalRegistry {
  internal::PerThreadRegistry registry;
  pthread_key_t key{};
  // If pthread_key_create failed, exit folds never run: slots stay owned
  // (and summed) until the counter dies -- exact, only without reuse.
  bool key_ok = false;
};

GlobalRegistry& GetRegistryNoFork();

// fork() safety (pthread_atfork). Without it, a fork while another thread
// holds the registry mutex leaves it locked forever in the child (which has
// only the forking thread), so its first AddSlow, thread exit or counter
// construction deadlocks.
//   prepare: take the mutex, so no other thread is inside a registry
//            operation (in particular no exit fold is in a write section)
//            at the fork;
//   parent:  release it;
//   child:   retire every thread state but the forking thread's: those
//            threads do not exist in the child, so, exactly as their exit
//            hooks would have, their slots are folded into the counters'
//            accumulators (counts kept, slots reusable) and the states
//            freed; then release it. The forking thread's state is kept.
// The child handler allocates and frees (vector growth, delete); glibc
// makes malloc usable in atfork child handlers.
void AtForkPrepare() { GetRegistryNoFork().registry.ForkPrepare(); }
void AtForkParent() { GetRegistryNoFork().registry.ForkParent(); }
void AtForkChild() {
  GetRegistryNoFork().registry.ForkChild(internal::TlsPerThreadState());
}

GlobalRegistry& GetRegistryNoFork() {
  static GlobalRegistry* const r = [] {
    auto* reg = new GlobalRegistry;
    reg->key_ok = pthread_key_create(&reg->key, &ThreadExit) == 0;
    return reg;
  }();
  return *r;
}

GlobalRegistry& GetRegistry() {
  // Registered once, after the registry exists (handlers run in reverse
  // registration order for prepare; nothing else here depends on that).
  static const bool atfork_ok =
      (GetRegistryNoFork(),
       pthread_atfork(&AtForkPrepare, &AtForkParent, &AtForkChild) == 0);
  (void)atfork_ok;  // if it failed, fork safety is lost, nothing else
  return GetRegistryNoFork();
}

// The pthread-key destructor: runs on the exiting thread after its C++
// thread_local destructors. The thread is still the only writer of its
// slots, so it folds them itself.
void ThreadExit(void* p) {
  auto* st = static_cast<internal::PerThreadState*>(p);
  if (st == nullptr) return;
  GetRegistry().registry.Retire(st);
  if (internal::TlsPerThreadState() == st) {
    internal::TlsPerThreadState() = nullptr;
    internal::TlsPerThreadEntries() = internal::g_per_thread_null_entries;
  }
  delete st;
}

}  // namespace

ThreadCounter::ThreadCounter()
    : ThreadCounter(GetRegistry().registry) {}

ThreadCounter::ThreadCounter(internal::PerThreadRegistry& registry)
    : registry_(&registry) {
  registry_->Register(this);
}

ThreadCounter::~ThreadCounter() {
  registry_->Unregister(this);
  // Relaxed: no other thread may use the counter any more (contract).
  Chunk* c = chunks_.load(std::memory_order_relaxed);
  while (c != nullptr) {
    Chunk* next = c->next;
    delete c;
    c = next;
  }
}

void ThreadCounter::AddSlow(uint64_t delta) {
  if (registry_ != &GetRegistry().registry) {
    // A test registry's counter is added to through PerThreadRegistry::Add
    // with the test's thread states; the calling thread's own state belongs
    // to the process's registry (its destructors and exit hook could not
    // clear or retire it consistently).
    internal::ReportContractViolation(
        "ThreadCounter::Add on a counter of a test-owned registry (use "
        "PerThreadRegistry::Add)");
    return;
  }
  internal::PerThreadState* st = internal::TlsPerThreadState();
  if (st == nullptr) {
    st = new internal::PerThreadState;
    internal::TlsPerThreadState() = st;
    GlobalRegistry& g = GetRegistry();
    if (g.key_ok) pthread_setspecific(g.key, st);
  }
  internal::PerThreadSlot* slot = registry_->Attach(st, this);
  if (slot == nullptr) {
    // Overflow id, or st's table could not be mapped: exact, only slower.
    AddOverflow(delta);
    return;
  }
  // Attach mapped the table on the thread's first call: the hot path's copy.
  internal::TlsPerThreadEntries() = st->entries;
  internal::PerThreadOwnerAdd(slot->value, delta);
}

void ThreadCounter::AddOverflow(uint64_t delta) {
  // Relaxed: a statistics count shared by the adding threads; only
  // atomicity is needed (nothing is published with it).
  overflow_.fetch_add(delta, std::memory_order_relaxed);
}

uint64_t ThreadCounter::Sum() const {
  // Relaxed: as in AddOverflow; never folded, so no seqcount is needed.
  const uint64_t overflow = overflow_.load(std::memory_order_relaxed);
  return overflow + internal::PerThreadSum(seq_, acc_, [this](auto&& f) {
    for (const Chunk* c = chunks_.load(std::memory_order_acquire);  // Pairs with: release store of chunks_ in PerThreadRegistry::Attach().
         c != nullptr; c = c->next) {
      for (const internal::PerThreadSlot& s : c->slots) f(s.value);
    }
  });
}

size_t ThreadCounter::SlotsCreated() const {
  return registry_->SlotsCreated(this);
}

size_t ThreadCounter::SlotsInUse() const {
  return registry_->SlotsInUse(this);
}

uint64_t ThreadCounter::ExitedTotal() const {
  // Relaxed: a single diagnostic value.
  return acc_.load(std::memory_order_relaxed);
}

}  // namespace percpu
