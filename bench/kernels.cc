#include "bench/kernels.h"

#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>
#include <sstream>
#include <string>
#include <thread>
#include <utility>

#include "primitives/cpumask.h"
#include "primitives/internal/atomic.h"
#include "primitives/internal/rseq_asm.h"
#include "primitives/rseq.h"

namespace percpu {
namespace bench {
namespace {

// Keeps the compiler from merging or hoisting the adds of a loop: every
// iteration does its own load/add/store of the counter. The same barrier is
// in every update loop, so all kinds pay the same (zero-instruction) price.
inline void CompilerBarrier() { __asm__ __volatile__("" ::: "memory"); }

template <size_t N>
uint64_t SumOf(const std::array<uint64_t, N>& a) {
  uint64_t s = 0;
  for (uint64_t v : a) s += v;
  return s;
}

using Clock = std::chrono::steady_clock;

double SecondsBetween(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// Reads a whole small file; false if it cannot be opened.
bool ReadFile(const std::string& path, std::string* out) {
  std::ifstream in(path);
  if (!in) return false;
  std::stringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  return true;
}

// The plain thread-local counter of kPlainThreadLocal: constant-initialized,
// so no TLS guard is on its path.
thread_local uint64_t g_plain_tls = 0;
thread_local internal::Atomic<uint64_t> g_relaxed_tls{0};

// kPerThreadLookup's per-thread table (entries point at the thread's own
// slot) and the thread-local pointer to it, the shape of
// internal::TlsPerThreadEntries(). Constant-initialized: no TLS guard.
constexpr uint32_t kLookupIds = 8;
struct LookupSlot {
  internal::Atomic<uint64_t> value{0};
};
thread_local LookupSlot g_lookup_slot;
thread_local LookupSlot* g_lookup_entries[kLookupIds] = {};
thread_local LookupSlot* const* g_lookup_table = nullptr;

}  // namespace

// ---------------------------------------------------------------------------
// Fold.

StatusOr<std::unique_ptr<FoldFixture>> FoldFixture::Create(int possible,
                                                            int present) {
  std::unique_ptr<FoldFixture> f(new FoldFixture());
  StatusOr<std::shared_ptr<Topology>> topo =
      Topology::Simulated(possible, present, present);
  if (!topo.ok()) return topo.status();
  f->topo_ = std::move(*topo);
  StatusOr<std::shared_ptr<PerCpuAllocator>> alloc =
      PerCpuAllocator::Create(f->topo_.get());
  if (!alloc.ok()) return alloc.status();
  f->alloc_ = std::move(*alloc);
  StatusOr<std::unique_ptr<LcoreStats<kMibItems>>> mib =
      LcoreStats<kMibItems>::Create(*f->topo_, *f->alloc_);
  if (!mib.ok()) return mib.status();
  f->mib_ = std::move(*mib);
  f->possible_ = possible;
  f->present_ = present;
  // The accumulator, in a page of its own, clear of the MIB's page offsets.
  f->scratch_.reset(new char[2 * 4096]);
  const uintptr_t base = reinterpret_cast<uintptr_t>(f->scratch_.get());
  const uintptr_t page = (base + 4095) & ~uintptr_t{4095};
  const size_t mib_off = f->mib_page_offset();
  f->acc_ = new (reinterpret_cast<void*>(page + (mib_off + 2048) % 4096))
      std::array<uint64_t, kMibItems>();
  // Every item of every present CPU is non-zero, so a fold that skipped a
  // CPU or an item would give a wrong total.
  for (int cpu = 0; cpu < present; ++cpu) {
    for (size_t i = 0; i < kMibItems; ++i) {
      const uint64_t v = static_cast<uint64_t>(cpu) * 1000 + i + 1;
      f->mib_->Add(cpu, i, v);
      f->expected_total_ += v;
    }
  }
  return f;
}

size_t FoldFixture::mib_page_offset() const {
  return static_cast<size_t>(blocks().base_address() % 4096);
}

__attribute__((noinline)) uint64_t FoldCpuMajorPresent(const FoldFixture& f) {
  std::array<uint64_t, kMibItems>& out = f.accumulator();
  out.fill(0);
  FoldAll(f.blocks(), PresentCpus(f.topology()), out);
  return SumOf(out);
}

__attribute__((noinline)) uint64_t FoldCpuMajorFirstN(const FoldFixture& f,
                                                      int n) {
  std::array<uint64_t, kMibItems>& out = f.accumulator();
  out.fill(0);
  // PossibleCpusBaseline(n) is exactly "CPU ids 0..n-1".
  FoldAll(f.blocks(), PossibleCpusBaseline(n), out);
  return SumOf(out);
}

__attribute__((noinline)) uint64_t FoldCpuMajorPossible(const FoldFixture& f) {
  std::array<uint64_t, kMibItems>& out = f.accumulator();
  out.fill(0);
  FoldAllPossibleBaseline(f.blocks(), f.num_possible(), out);
  return SumOf(out);
}

__attribute__((noinline)) uint64_t FoldOnlineSnapshot(const FoldFixture& f) {
  std::array<uint64_t, kMibItems>& out = f.accumulator();
  f.mib().Snapshot(out);
  return SumOf(out);
}

__attribute__((noinline)) uint64_t FoldItemMajorPresent(const FoldFixture& f) {
  const PresentCpus cpus(f.topology());
  uint64_t sum = 0;
  for (size_t i = 0; i < kMibItems; ++i) sum += FoldField(f.blocks(), cpus, i);
  return sum;
}

__attribute__((noinline)) uint64_t FoldItemMajorPossible(
    const FoldFixture& f) {
  const PossibleCpusBaseline cpus(f.num_possible());
  uint64_t sum = 0;
  for (size_t i = 0; i < kMibItems; ++i) sum += FoldField(f.blocks(), cpus, i);
  return sum;
}

__attribute__((noinline)) uint64_t StreamSum(const uint64_t* data, size_t n) {
  uint64_t sum = 0;
  for (size_t i = 0; i < n; ++i) sum += data[i];
  return sum;
}

// ---------------------------------------------------------------------------
// Updates.

const char* UpdateKindName(UpdateKind kind) {
  switch (kind) {
    case UpdateKind::kPlainThreadLocal:
      return "plain_tls";
    case UpdateKind::kPerCpuRseq:
      return "percpu_add";
    case UpdateKind::kPerThread:
      return "per_thread";
    case UpdateKind::kFallback:
      return "fallback_getcpu";
    case UpdateKind::kSharedAtomic:
      return "shared_fetch_add";
    case UpdateKind::kMutex:
      return "mutex";
    case UpdateKind::kOvsNumaLocked:
      return "ovs_numa_locked";
    case UpdateKind::kPerCpuPair:
      return "percpu_pair";
    case UpdateKind::kRelaxedTls:
      return "relaxed_tls";
    case UpdateKind::kRseqFloor:
      return "rseq_floor";
    case UpdateKind::kLibrseqShape:
      return "librseq_shape";
    case UpdateKind::kPerThreadLookup:
      return "per_thread_lookup";
  }
  return "?";
}

StatusOr<std::unique_ptr<UpdateTargets>> UpdateTargets::Create() {
  std::unique_ptr<UpdateTargets> t(new UpdateTargets());
  StatusOr<std::shared_ptr<Topology>> topo = Topology::FromSysfs();
  if (!topo.ok()) {
    const long conf = sysconf(_SC_NPROCESSORS_CONF);
    topo = Topology::Simulated(static_cast<int>(conf > 0 ? conf : 1),
                               static_cast<int>(conf > 0 ? conf : 1),
                               static_cast<int>(conf > 0 ? conf : 1));
    if (!topo.ok()) return topo.status();
  }
  t->topo_ = std::move(*topo);
  t->num_cpus_ = t->topo_->num_possible();

  // NUMA nodes from sysfs (one node if there is no node directory).
  t->cpu_to_node_.assign(static_cast<size_t>(t->num_cpus_), 0);
  int nodes = 0;
  for (int node = 0; node < 1024; ++node) {
    std::string text;
    if (!ReadFile("/sys/devices/system/node/node" + std::to_string(node) +
                      "/cpulist",
                  &text)) {
      break;
    }
    ++nodes;
    StatusOr<CpuMask> mask = CpuMask::Parse(text);
    if (!mask.ok()) continue;
    mask->ForEach([&](int cpu) {
      if (cpu < t->num_cpus_) t->cpu_to_node_[static_cast<size_t>(cpu)] = node;
    });
  }
  t->num_nodes_ = nodes > 0 ? nodes : 1;

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  StatusOr<std::unique_ptr<CpuSlotCounter>> slot =
      CpuSlotCounter::Create(t->num_cpus_);
#pragma GCC diagnostic pop
  if (!slot.ok()) return slot.status();
  t->cpu_slot_ = std::move(*slot);
  t->per_thread_.reset(new ThreadCounter());
  t->fallback_slots_.reset(new PaddedSlot[static_cast<size_t>(t->num_cpus_)]);
  t->floor_slots_.reset(new PaddedSlot[static_cast<size_t>(t->num_cpus_)]);
  t->librseq_slots_.reset(
      new PaddedSlot[static_cast<size_t>(t->num_cpus_)]);
  t->nodes_.reset(new NodeStats[static_cast<size_t>(t->num_nodes_)]);

  StatusOr<std::shared_ptr<PerCpuAllocator>> alloc =
      PerCpuAllocator::Create(t->topo_.get());
  if (!alloc.ok()) return alloc.status();
  t->alloc_ = std::move(*alloc);
  StatusOr<PerCpuPtr<internal::Atomic<uint64_t>>> pair =
      t->alloc_->AllocateArray<internal::Atomic<uint64_t>>(2);
  if (!pair.ok()) return pair.status();
  t->pair_ = *pair;
  StatusOr<CpuSlots> packets =
      CpuSlots::Create(t->pair_.on(0), t->pair_.stride(), t->num_cpus_);
  if (!packets.ok()) return packets.status();
  StatusOr<CpuSlots> bytes =
      CpuSlots::Create(t->pair_.on(0) + 1, t->pair_.stride(), t->num_cpus_);
  if (!bytes.ok()) return bytes.status();
  t->packets_ = *packets;
  t->bytes_ = *bytes;
  return t;
}

UpdateTargets::~UpdateTargets() {
  // (void): a live allocation of this allocator; Free cannot fail.
  if (alloc_ != nullptr && pair_) (void)alloc_->Free(pair_);
}

void UpdateTargets::Run(UpdateKind kind, uint64_t iters) {
  switch (kind) {
    case UpdateKind::kPlainThreadLocal:
      return RunPlainThreadLocal(iters);
    case UpdateKind::kPerCpuRseq:
      return RunPerCpuRseq(iters);
    case UpdateKind::kPerThread:
      return RunPerThread(iters);
    case UpdateKind::kFallback:
      return RunFallback(iters);
    case UpdateKind::kSharedAtomic:
      return RunSharedAtomic(iters);
    case UpdateKind::kMutex:
      return RunMutex(iters);
    case UpdateKind::kOvsNumaLocked:
      return RunOvsNumaLocked(iters);
    case UpdateKind::kPerCpuPair:
      return RunPerCpuPair(iters);
    case UpdateKind::kRelaxedTls:
      return RunRelaxedTls(iters);
    case UpdateKind::kRseqFloor:
      return RunRseqFloor(iters);
    case UpdateKind::kLibrseqShape:
      return RunLibrseqShape(iters);
    case UpdateKind::kPerThreadLookup:
      return RunPerThreadLookup(iters);
  }
}

__attribute__((noinline)) void UpdateTargets::RunPlainThreadLocal(
    uint64_t iters) {
  for (uint64_t i = 0; i < iters; ++i) {
    g_plain_tls += 1;
    CompilerBarrier();
  }
}

__attribute__((noinline)) void UpdateTargets::RunPerCpuRseq(uint64_t iters) {
  auto& c = *cpu_slot_;  // the deprecated CpuSlotCounter (see kernels.h)
  for (uint64_t i = 0; i < iters; ++i) {
    c.Add(1);
    CompilerBarrier();
  }
}

__attribute__((noinline)) void UpdateTargets::RunPerThread(uint64_t iters) {
  ThreadCounter& c = *per_thread_;
  for (uint64_t i = 0; i < iters; ++i) {
    c.Add(1);
    CompilerBarrier();
  }
}

__attribute__((noinline)) void UpdateTargets::RunFallback(uint64_t iters) {
  const uintptr_t base = reinterpret_cast<uintptr_t>(fallback_slots_.get());
  const uint32_t n = static_cast<uint32_t>(num_cpus_);
  for (uint64_t i = 0; i < iters; ++i) {
    // The library's fallback add itself (what every per-CPU add does in
    // fallback mode), called directly so both modes run in one process.
    (void)internal::FallbackAddU64(base, sizeof(PaddedSlot), n, 1);
    CompilerBarrier();
  }
}

__attribute__((noinline)) void UpdateTargets::RunSharedAtomic(uint64_t iters) {
  for (uint64_t i = 0; i < iters; ++i) {
    // Relaxed suffices: a statistics counter; only atomicity is wanted.
    shared_.value.fetch_add(1, std::memory_order_relaxed);
    CompilerBarrier();
  }
}

__attribute__((noinline)) void UpdateTargets::RunMutex(uint64_t iters) {
  for (uint64_t i = 0; i < iters; ++i) {
    {
      std::lock_guard<std::mutex> lock(mutex_.mu);
      ++mutex_.value;
    }
    CompilerBarrier();
  }
}

__attribute__((noinline)) void UpdateTargets::RunOvsNumaLocked(
    uint64_t iters) {
  for (uint64_t i = 0; i < iters; ++i) {
    // numa_node_id(): the node of the CPU the thread runs on.
    const int cpu = sched_getcpu();
    const int node =
        cpu >= 0 && cpu < num_cpus_ ? cpu_to_node_[static_cast<size_t>(cpu)]
                                    : 0;
    NodeStats& ns = nodes_[static_cast<size_t>(node)];
    // spin_lock(): test-and-test-and-set; yields after a while, since a
    // userspace lock holder can be preempted (a kernel one cannot).
    for (;;) {
      const uint32_t was =
          ns.lock.exchange(1, std::memory_order_acquire);  // Pairs with: unlock.
      if (was == 0) break;
      int spins = 0;
      // Relaxed suffices: only a hint to retry the acquiring exchange.
      while (ns.lock.load(std::memory_order_relaxed) != 0) {
        if (++spins < 128) {
          internal::SpinPause();
        } else {
          sched_yield();
        }
      }
    }
    ns.packets += 1;
    ns.bytes += 64 + (i & 1023);
    ns.lock.store(0, std::memory_order_release);  // Pairs with: the acquire exchange above.
    CompilerBarrier();
  }
}

__attribute__((noinline)) void UpdateTargets::RunRelaxedTls(uint64_t iters) {
  for (uint64_t i = 0; i < iters; ++i) {
    // Relaxed load + store: the single-writer counter's cost floor without
    // any lookup (what goal 4 compares ThreadCounter::Add against).
    g_relaxed_tls.store(g_relaxed_tls.load(std::memory_order_relaxed) + 1,
                        std::memory_order_relaxed);
    CompilerBarrier();
  }
}

// The per-thread lookup floor (goal 4): what any per-thread counter
// created at run time pays to reach the calling thread's slot, in the shape
// of ThreadCounter::Add: the thread's table from TLS, the counter's id from
// the counter object, the slot pointer from the table, then load / add /
// store. It omits only ThreadCounter's null test (the branch that attaches
// a thread's slot on its first add), so it is not safe library code: the
// slot must exist before the first add. relaxed_tls needs no lookup at all
// because its variable is fixed at compile time, one per program.
__attribute__((noinline)) void UpdateTargets::RunPerThreadLookup(
    uint64_t iters) {
  for (uint32_t id = 0; id < kLookupIds; ++id) {
    g_lookup_entries[id] = &g_lookup_slot;
  }
  g_lookup_table = g_lookup_entries;
  CompilerBarrier();
  for (uint64_t i = 0; i < iters; ++i) {
    LookupSlot* const s = g_lookup_table[lookup_id_];
    // Relaxed suffices: the owning thread is the only writer (as in
    // internal::PerThreadOwnerAdd).
    s->value.store(s->value.load(std::memory_order_relaxed) + 1,
                   std::memory_order_relaxed);
    CompilerBarrier();
  }
}

// The rseq minimum, the shape of librseq's rseq_load_add_store__ptr with
// RSEQ_PERCPU_CPU_ID: arm rseq_cs, load cpu_id, address = base + cpu * 64,
// load / add / store (the commit), abort -> restart. No bounds check (the
// array has one slot per possible CPU id and the kernel's cpu_id is below
// that) and no fallback: a reference floor for goal 1, not library code.
// Falls back to a relaxed fetch_add where there is no rseq (then the row
// is not the floor; the report says so).
__attribute__((noinline)) void UpdateTargets::RunRseqFloor(uint64_t iters) {
  const uintptr_t base = reinterpret_cast<uintptr_t>(floor_slots_.get());
  static_assert(sizeof(PaddedSlot) == 64, "shift by 6 below");
#if PERCPU_HAVE_RSEQ_ASM && defined(__x86_64__)
  if (CurrentWriterMode() == WriterMode::kRseq) {
    const intptr_t off = __rseq_offset;
    for (uint64_t i = 0; i < iters; ++i) {
      uint64_t cpu, tmp;
      __asm__ __volatile__(
          ".pushsection __rseq_cs, \"aw?\"\n\t"
          ".balign 32\n\t"
          "3:\n\t"
          ".long 0, 0\n\t"
          ".quad 1f, (2f - 1f), 4f\n\t"
          ".popsection\n\t"
          "0:\n\t"
          "leaq 3b(%%rip), %[tmp]\n\t"
          "movq %[tmp], %%fs:8(%[off])\n\t"
          "1:\n\t"
          "movl %%fs:4(%[off]), %k[cpu]\n\t"
          "shlq $6, %[cpu]\n\t"
          "movq (%[base],%[cpu]), %[tmp]\n\t"
          "addq $1, %[tmp]\n\t"
          "movq %[tmp], (%[base],%[cpu])\n\t"
          "2:\n\t"
          ".pushsection __rseq_failure, \"ax?\"\n\t"
          ".byte 0x0f, 0xb9, 0x3d\n\t"
          ".long 0x53053053\n\t"
          "4:\n\t"
          "jmp 0b\n\t"
          ".popsection\n\t"
          : [cpu] "=&r"(cpu), [tmp] "=&r"(tmp)
          : [off] "r"(off), [base] "r"(base)
          : "memory", "cc");
    }
    return;
  }
#endif
  for (uint64_t i = 0; i < iters; ++i) {
    // Relaxed suffices: a statistics counter (no rseq on this machine).
    floor_slots_[0].value.fetch_add(1, std::memory_order_relaxed);
    CompilerBarrier();
  }
}

// librseq's per-CPU add as its callers write it (compudj/librseq's
// rseq_load_add_store__ptr with RSEQ_PERCPU_CPU_ID, read for its shape, no
// code copied): the caller reads cpu_id_start (always a valid CPU number),
// computes the slot address, then the sequence arms rseq_cs, compares
// cpu_id with that CPU (a mismatch, or an unregistered thread whose cpu_id
// is negative, aborts), and commits with one addq (librseq's x86 add); an
// abort returns to the caller, which retries. The registration check the
// floor above omits is this compare: what a safe rseq add cannot drop.
// librseq keeps the area's offset in its own variable (set when it
// registers, so not const): a librseq build (9.0, gcc 12 -O2) reloads it on
// every add, and so does this loop; the slots' base stays in a register,
// as librseq's static test array's address does.
// Read through a volatile access below: GCC hoists even an external one
// out of this loop, which it does not do in librseq's (its rseq_offset is
// defined in another object).
intptr_t g_librseq_style_offset = 0;
__attribute__((noinline)) void UpdateTargets::RunLibrseqShape(uint64_t iters) {
  const uintptr_t base = reinterpret_cast<uintptr_t>(librseq_slots_.get());
#if PERCPU_HAVE_RSEQ_ASM && defined(__x86_64__)
  if (CurrentWriterMode() == WriterMode::kRseq) {
    g_librseq_style_offset = __rseq_offset;
    for (uint64_t i = 0; i < iters; ++i) {
    retry:
      const intptr_t off =
          *static_cast<volatile intptr_t*>(&g_librseq_style_offset);
      uint32_t cpu;
      // cpu_id_start (offset 0 of struct rseq): a hint, re-checked inside.
      __asm__ __volatile__("movl %%fs:(%[off]), %[cpu]"
                           : [cpu] "=r"(cpu)
                           : [off] "r"(off));
      const uintptr_t slot = base + (uintptr_t{cpu} << 6);
      uint64_t tmp;
      // volatile: GCC drops an asm goto whose outputs are unused.
      __asm__ __volatile__ goto(
          ".pushsection __rseq_cs, \"aw?\"\n\t"
          ".balign 32\n\t"
          "3:\n\t"
          ".long 0, 0\n\t"
          ".quad 1f, (2f - 1f), 4f\n\t"
          ".popsection\n\t"
          "leaq 3b(%%rip), %[tmp]\n\t"
          "movq %[tmp], %%fs:8(%[off])\n\t"
          "1:\n\t"
          "cmpl %[cpu], %%fs:4(%[off])\n\t"
          "jnz 4f\n\t"
          "addq $1, (%[slot])\n\t"
          "2:\n\t"
          ".pushsection __rseq_failure, \"ax?\"\n\t"
          ".byte 0x0f, 0xb9, 0x3d\n\t"
          ".long 0x53053053\n\t"
          "4:\n\t"
          "jmp %l[aborted]\n\t"
          ".popsection\n\t"
          : [tmp] "=&r"(tmp)
          : [off] "r"(off), [cpu] "r"(cpu), [slot] "r"(slot)
          : "memory", "cc"
          : aborted);
      continue;
    aborted:
      goto retry;
    }
    return;
  }
#endif
  for (uint64_t i = 0; i < iters; ++i) {
    // Relaxed suffices: a statistics counter (no rseq on this machine).
    librseq_slots_[0].value.fetch_add(1, std::memory_order_relaxed);
    CompilerBarrier();
  }
  (void)base;
}

__attribute__((noinline)) void UpdateTargets::RunPerCpuPair(uint64_t iters) {
  for (uint64_t i = 0; i < iters; ++i) {
    (void)packets_.TryAddThisCpu(1);
    (void)bytes_.TryAddThisCpu(64 + (i & 1023));
    CompilerBarrier();
  }
}

uint64_t UpdateTargets::Total(UpdateKind kind) const {
  switch (kind) {
    case UpdateKind::kPlainThreadLocal:
      return 0;
    case UpdateKind::kPerCpuRseq:
      return cpu_slot_->Sum();
    case UpdateKind::kPerThread:
      return per_thread_->Sum();
    case UpdateKind::kFallback: {
      uint64_t s = 0;
      for (int c = 0; c < num_cpus_; ++c) {
        // Relaxed suffices: writers are quiescent (joined) when called.
        s += fallback_slots_[static_cast<size_t>(c)].value.load(
            std::memory_order_relaxed);
      }
      return s;
    }
    case UpdateKind::kSharedAtomic:
      // Relaxed suffices: writers are joined when called.
      return shared_.value.load(std::memory_order_relaxed);
    case UpdateKind::kMutex: {
      std::lock_guard<std::mutex> lock(const_cast<std::mutex&>(mutex_.mu));
      return mutex_.value;
    }
    case UpdateKind::kOvsNumaLocked: {
      uint64_t s = 0;
      for (int n = 0; n < num_nodes_; ++n) {
        s += nodes_[static_cast<size_t>(n)].packets;
      }
      return s;
    }
    case UpdateKind::kPerCpuPair:
      return packets_.Sum();
    case UpdateKind::kRelaxedTls:
    case UpdateKind::kPerThreadLookup:
      return 0;  // per thread, like kPlainThreadLocal
    case UpdateKind::kRseqFloor:
    case UpdateKind::kLibrseqShape: {
      const PaddedSlot* slots = kind == UpdateKind::kRseqFloor
                                    ? floor_slots_.get()
                                    : librseq_slots_.get();
      uint64_t s = 0;
      for (int c = 0; c < num_cpus_; ++c) {
        // Relaxed suffices: writers are quiescent (joined) when called.
        s += slots[c].value.load(std::memory_order_relaxed);
      }
      return s;
    }
  }
  return 0;
}

uint64_t PlainThreadLocalValue() { return g_plain_tls; }

double ThreadCpuSeconds() {
  struct timespec ts;
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0;
  return static_cast<double>(ts.tv_sec) +
         static_cast<double>(ts.tv_nsec) * 1e-9;
}

namespace {

std::vector<int> AllowedCpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
    }
  }
  return cpus;
}

}  // namespace

UpdateRate MeasureUpdates(UpdateTargets& targets, UpdateKind kind,
                          int threads, double seconds, bool pin) {
  struct PerThread {
    uint64_t ops = 0;
    double seconds = 0;
    double cpu_seconds = 0;
  };
  const std::vector<int> allowed = pin ? AllowedCpus() : std::vector<int>();
  std::vector<PerThread> results(static_cast<size_t>(threads));
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::atomic<bool> stop{false};
  std::vector<std::thread> pool;
  pool.reserve(static_cast<size_t>(threads));
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      if (!allowed.empty()) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(allowed[static_cast<size_t>(t) % allowed.size()], &set);
        (void)pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
      }
      // Relaxed suffices: a count the starter only polls.
      ready.fetch_add(1, std::memory_order_relaxed);
      // Acquire: pairs with the starter's release store of go.
      while (!go.load(std::memory_order_acquire)) {  // Pairs with: go.store.
        internal::SpinPause();
      }
      const Clock::time_point t0 = Clock::now();
      const double c0 = ThreadCpuSeconds();
      uint64_t ops = 0;
      do {
        targets.Run(kind, 1024);
        ops += 1024;
        // Relaxed suffices: a stop hint; the results are published by
        // join().
      } while (!stop.load(std::memory_order_relaxed));
      const double c1 = ThreadCpuSeconds();
      const Clock::time_point t1 = Clock::now();
      results[static_cast<size_t>(t)] = {ops, SecondsBetween(t0, t1), c1 - c0};
    });
  }
  // Relaxed suffices: only waits until every thread is about to spin.
  while (ready.load(std::memory_order_relaxed) < threads) {
    std::this_thread::yield();
  }
  go.store(true, std::memory_order_release);  // Pairs with: the workers' acquire load of go.
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  // Relaxed suffices: see the workers' loop.
  stop.store(true, std::memory_order_relaxed);
  for (std::thread& th : pool) th.join();

  UpdateRate rate;
  double ns_sum = 0;
  double on_cpu_sum = 0;
  for (const PerThread& r : results) {
    rate.ops += r.ops;
    if (r.ops > 0 && r.seconds > 0) {
      ns_sum += r.cpu_seconds * 1e9 / static_cast<double>(r.ops);
      rate.mops_total += static_cast<double>(r.ops) / r.seconds / 1e6;
      on_cpu_sum += std::min(1.0, r.cpu_seconds / r.seconds);
    }
  }
  rate.ns_per_op = ns_sum / threads;
  rate.on_cpu = on_cpu_sum / threads;
  return rate;
}

// ---------------------------------------------------------------------------
// Allocation.

StatusOr<std::unique_ptr<AllocFixture>> AllocFixture::Create(int cpus,
                                                              size_t size,
                                                              size_t align) {
  std::unique_ptr<AllocFixture> f(new AllocFixture());
  StatusOr<std::shared_ptr<Topology>> topo =
      Topology::Simulated(cpus, cpus, cpus);
  if (!topo.ok()) return topo.status();
  f->topo_ = std::move(*topo);
  StatusOr<std::shared_ptr<PerCpuAllocator>> alloc =
      PerCpuAllocator::Create(f->topo_.get());
  if (!alloc.ok()) return alloc.status();
  f->alloc_ = std::move(*alloc);
  f->cpus_ = cpus;
  f->size_ = size;
  f->align_ = align;
  return f;
}

// (void): a destructor cannot report; the benchmark checked every free.
AllocFixture::~AllocFixture() { (void)FreeAll(); }

void AllocFixture::Reserve(size_t live) { objs_.reserve(live); }

Status AllocFixture::Fill(size_t live) {
  // Geometric growth: reserving exactly `live` on every call reallocated
  // (and page-faulted in) the whole handle array per call, which a fill in
  // chunks then timed as allocator cost (300-550 ns "per allocation").
  if (objs_.capacity() < live) {
    objs_.reserve(std::max(live, 2 * objs_.capacity()));
  }
  while (objs_.size() < live) {
    StatusOr<PerCpuPtr<void>> p = alloc_->Allocate(size_, align_);
    if (!p.ok()) return p.status();
    low_bits_ |= p->base_address();
    objs_.push_back(*p);
  }
  return Status::Ok();
}

void AllocFixture::TouchAll() {
  for (const PerCpuPtr<void>& p : objs_) {
    for (int cpu = 0; cpu < cpus_; ++cpu) {
      static_cast<volatile char*>(p.on(cpu))[0] = 1;
    }
  }
}

Status AllocFixture::Churn(size_t n) {
  if (objs_.empty()) {
    return FailedPreconditionError("AllocFixture::Churn: no live objects");
  }
  for (size_t k = 0; k < n; ++k) {
    // xorshift64: a cheap, reproducible pseudo-random victim.
    rng_ ^= rng_ << 13;
    rng_ ^= rng_ >> 7;
    rng_ ^= rng_ << 17;
    const size_t idx = static_cast<size_t>(rng_ % objs_.size());
    Status s = alloc_->Free(objs_[idx]);
    if (!s.ok()) return s;
    StatusOr<PerCpuPtr<void>> p = alloc_->Allocate(size_, align_);
    if (!p.ok()) return p.status();
    low_bits_ |= p->base_address();
    objs_[idx] = *p;
  }
  return Status::Ok();
}

Status AllocFixture::FreeAll() {
  Status first;
  for (const PerCpuPtr<void>& p : objs_) {
    Status s = alloc_->Free(p);
    if (!s.ok() && first.ok()) first = s;
  }
  objs_.clear();
  return first;
}

size_t AllocFixture::alignment_seen() const {
  return static_cast<size_t>(low_bits_ & (~low_bits_ + 1));
}

long long StatmResidentBytes() {
  std::string text;
  if (!ReadFile("/proc/self/statm", &text)) return -1;
  std::istringstream in(text);
  long long size = 0, resident = 0;
  if (!(in >> size >> resident)) return -1;
  return resident * static_cast<long long>(sysconf(_SC_PAGESIZE));
}

StatusOr<ResidentReport> MeasureResident(int possible, int present,
                                         size_t objects) {
  StatusOr<std::shared_ptr<Topology>> topo =
      Topology::Simulated(possible, present, present);
  if (!topo.ok()) return topo.status();
  StatusOr<std::shared_ptr<PerCpuAllocator>> alloc =
      PerCpuAllocator::Create(topo->get());
  if (!alloc.ok()) return alloc.status();
  PerCpuAllocator& a = **alloc;
  std::vector<PerCpuPtr<Mib>> mibs;
  for (size_t k = 0; k < objects; ++k) {
    StatusOr<PerCpuPtr<Mib>> p = a.Allocate<Mib>();
    if (!p.ok()) return p.status();
    mibs.push_back(*p);
  }
  ResidentReport r;
  r.possible = possible;
  r.present = present;
  r.objects = objects;

  const long long before = StatmResidentBytes();
  for (const PerCpuPtr<Mib>& p : mibs) {
    for (int cpu = 0; cpu < present; ++cpu) {
      Mib& m = *p.on(cpu);
      m.syncp.UpdateBegin();
      for (size_t i = 0; i < kMibItems; ++i) m.items[i].Set(i + 1);
      m.syncp.UpdateEnd();
    }
  }
  const long long after_writes = StatmResidentBytes();
  StatusOr<std::vector<size_t>> res = a.ResidentBytesPerCpu();
  if (!res.ok()) return res.status();
  for (size_t b : *res) {
    if (b > 0) ++r.cpus_resident;
    r.resident_bytes += b;
  }
  r.bytes_per_present_cpu = present > 0 ? r.resident_bytes / present : 0;
  r.statm_delta_bytes =
      before >= 0 && after_writes >= 0 ? after_writes - before : -1;

  // Read every possible CPU's copy (the baseline fold): absent CPUs' pages
  // get the shared zero page mapped.
  uint64_t total = 0;
  for (const PerCpuPtr<Mib>& p : mibs) {
    std::array<uint64_t, kMibItems> out{};
    FoldAllPossibleBaseline(p, possible, out);
    total += SumOf(out);
  }
  const long long after_fold = StatmResidentBytes();
  res = a.ResidentBytesPerCpu();
  if (!res.ok()) return res.status();
  for (size_t b : *res) {
    if (b > 0) ++r.cpus_resident_after_possible_fold;
  }
  r.statm_delta_after_possible_fold =
      before >= 0 && after_fold >= 0 ? after_fold - before : -1;
  const uint64_t expected = static_cast<uint64_t>(present) * objects *
                            (kMibItems * (kMibItems + 1) / 2);
  if (total != expected) {
    return InternalError("MeasureResident: folded total " +
                         std::to_string(total) + " != expected " +
                         std::to_string(expected));
  }
  // (void): live allocations of `a`; Free cannot fail.
  for (const PerCpuPtr<Mib>& p : mibs) (void)a.Free(p);
  return r;
}

}  // namespace bench
}  // namespace percpu
