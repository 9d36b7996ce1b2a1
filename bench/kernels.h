// The measured code of the benchmark suite, shared by the report
// (bench/report.cc) and the Google Benchmark binaries
// (bench/*_benchmark.cc), so both measure exactly the same kernels.
//
//   * Fold kernels: a U64StatMib<90> per CPU from PerCpuAllocator over a
//     simulated topology, folded item-major (FoldField per item) or
//     cpu-major (FoldAll), over present, online or all possible CPUs; and a
//     contiguous streaming sum of the same number of bytes (the limit).
//   * Update kernels: one writer thread's loop of adds for each way of
//     counting (per-CPU rseq add, per-thread add, sched_getcpu fallback,
//     shared fetch_add, mutex, plain thread-local, OVS-style per-NUMA locked
//     pair, per-CPU pair), and a multi-threaded harness.
//   * Allocation kernels: fill / churn / teardown of many small per-CPU
//     objects at a given alignment.
//
// Benchmark code, not library code: it is not model-checked, so it uses
// std::atomic directly for its own harness flags (the primitives it
// measures use the internal::Atomic seam as always).
#ifndef PERCPU_BENCH_KERNELS_H_
#define PERCPU_BENCH_KERNELS_H_

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "primitives/cpu_slot.h"
#include "primitives/fold.h"
#include "primitives/per_thread.h"
#include "primitives/percpu_alloc.h"
#include "primitives/percpu_mib.h"
#include "primitives/status.h"
#include "primitives/topology.h"

namespace percpu {
namespace bench {

// ---------------------------------------------------------------------------
// Fold.

// Items of the benchmark MIB: about the size of the kernel's IP + TCP + UDP
// SNMP MIBs folded by one /proc/net/snmp read.
inline constexpr size_t kMibItems = 90;
using Mib = U64StatMib<kMibItems>;

// An LcoreStats<90> (so U64StatMib<90> blocks from a PerCpuAllocator with the
// default 64 KiB unit) over Topology::Simulated(possible, present, present),
// with every item of every present CPU written to a non-zero value. Units
// of absent CPUs are never touched: reading them faults in the shared zero
// page.
class FoldFixture {
 public:
  static StatusOr<std::unique_ptr<FoldFixture>> Create(int possible,
                                                       int present);
  FoldFixture(const FoldFixture&) = delete;
  FoldFixture& operator=(const FoldFixture&) = delete;

  const Topology& topology() const { return *topo_; }
  const LcoreStats<kMibItems>& mib() const { return *mib_; }
  const PerCpuPtr<Mib>& blocks() const { return mib_->blocks(); }
  PerCpuAllocator& allocator() { return *alloc_; }
  int num_possible() const { return possible_; }
  int num_present() const { return present_; }
  // The exact total of all items over the present CPUs (for checks).
  uint64_t expected_total() const { return expected_total_; }

  // The output buffer of the cpu-major folds, one fixed place for every
  // variant (so that a stack frame layout cannot favour one of them), at
  // page offset (MIB offset + 2048) % 4096: every CPU's copy of the MIB
  // has the same page offset, and the accumulator stays clear of the L1
  // sets they share. (Measured: placing it on top of them made no
  // difference on the reference machine; this only removes a variable.)
  std::array<uint64_t, kMibItems>& accumulator() const { return *acc_; }
  // Page offset of CPU 0's MIB (every CPU's copy has the same one).
  size_t mib_page_offset() const;

 private:
  FoldFixture() = default;
  // Destroyed in reverse order: the MIB, then the allocator, then the
  // topology they reference.
  std::shared_ptr<Topology> topo_;
  std::shared_ptr<PerCpuAllocator> alloc_;
  std::unique_ptr<LcoreStats<kMibItems>> mib_;
  int possible_ = 0;
  int present_ = 0;
  uint64_t expected_total_ = 0;
  std::unique_ptr<char[]> scratch_;  // 2 pages; the accumulator
  std::array<uint64_t, kMibItems>* acc_ = nullptr;
};

// Each returns the sum of all folded items (so the work cannot be elided).
// Cpu-major FoldAll over the present CPUs / the first `n` CPUs / all
// possible CPUs (PossibleCpusBaseline).
uint64_t FoldCpuMajorPresent(const FoldFixture& f);
uint64_t FoldCpuMajorFirstN(const FoldFixture& f, int n);
uint64_t FoldCpuMajorPossible(const FoldFixture& f);
// The hotplug-aware production read: LcoreStats::Snapshot (online CPUs +
// offline accumulator, inside a hotplug_seq read section).
uint64_t FoldOnlineSnapshot(const FoldFixture& f);
// Item-major: FoldField once per item (90 passes over the CPUs).
uint64_t FoldItemMajorPresent(const FoldFixture& f);
uint64_t FoldItemMajorPossible(const FoldFixture& f);

// The limit: the sum of n contiguous uint64_t, compiled with the same flags
// as everything else (the compiler may vectorize it; the fold's relaxed
// atomic loads cannot be).
uint64_t StreamSum(const uint64_t* data, size_t n);

// ---------------------------------------------------------------------------
// Updates.

enum class UpdateKind {
  kPlainThreadLocal,  // thread_local uint64_t += 1 (the baseline)
  kPerCpuRseq,        // CpuSlotCounter::Add (the process's writer mode)
  kPerThread,         // ThreadCounter::Add
  kFallback,          // internal::FallbackAddU64: sched_getcpu + fetch_add
  kSharedAtomic,      // one std::atomic<uint64_t>, relaxed fetch_add
  kMutex,             // std::mutex + uint64_t
  kOvsNumaLocked,     // per-NUMA-node spinlock + {packets, bytes}
  kPerCpuPair,        // per-CPU {packets, bytes}: two CpuSlots adds
  kRelaxedTls,        // thread_local Atomic<uint64_t>: relaxed load + store
  kRseqFloor,         // the rseq minimum, written here (see RunRseqFloor)
  kLibrseqShape,      // librseq's load_add_store add, written here
  kPerThreadLookup,   // the per-thread lookup floor (see RunPerThreadLookup)
};
inline constexpr UpdateKind kAllUpdateKinds[] = {
    UpdateKind::kPlainThreadLocal, UpdateKind::kPerCpuRseq,
    UpdateKind::kPerThread,        UpdateKind::kFallback,
    UpdateKind::kSharedAtomic,     UpdateKind::kMutex,
    UpdateKind::kOvsNumaLocked,    UpdateKind::kPerCpuPair,
    UpdateKind::kRelaxedTls,       UpdateKind::kRseqFloor,
    UpdateKind::kLibrseqShape,     UpdateKind::kPerThreadLookup,
};
// Short stable names ("plain_tls", "percpu_rseq", ...).
const char* UpdateKindName(UpdateKind kind);

// Everything the update kernels write, shared by all threads of a run.
class UpdateTargets {
 public:
  // Sized for the machine's CPU ids (sysfs possible CPUs, or
  // sysconf(_SC_NPROCESSORS_CONF) if sysfs is unreadable).
  static StatusOr<std::unique_ptr<UpdateTargets>> Create();
  ~UpdateTargets();
  UpdateTargets(const UpdateTargets&) = delete;
  UpdateTargets& operator=(const UpdateTargets&) = delete;

  // Runs `iters` updates of `kind` on the calling thread.
  void Run(UpdateKind kind, uint64_t iters);

  // The total counted by `kind` so far (for checks: equals the number of
  // updates run, or packets for the pair kinds). Call with no writer
  // running. Plain thread-local counts are per thread and not summed here:
  // returns 0 for kPlainThreadLocal.
  uint64_t Total(UpdateKind kind) const;

  int num_cpus() const { return num_cpus_; }
  int num_nodes() const { return num_nodes_; }

 private:
  UpdateTargets() = default;
  struct alignas(64) PaddedSlot {
    internal::Atomic<uint64_t> value{0};
  };
  // OVS's per-NUMA-node flow stats before per-CPU stats: a lock and the
  // packets/bytes pair, shared by every thread of the node.
  struct alignas(64) NodeStats {
    std::atomic<uint32_t> lock{0};
    uint64_t packets = 0;
    uint64_t bytes = 0;
  };
  struct alignas(64) MutexCounter {
    std::mutex mu;
    uint64_t value = 0;
  };
  struct alignas(64) SharedAtomic {
    std::atomic<uint64_t> value{0};
  };

  int num_cpus_ = 0;
  int num_nodes_ = 1;
  std::vector<int> cpu_to_node_;
  // kPerCpuRseq measures CpuSlotCounter::Add, deprecated (removed in 0.3)
  // but still the per-CPU add of issue 14's goal 1.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  std::unique_ptr<CpuSlotCounter> cpu_slot_;
#pragma GCC diagnostic pop
  std::unique_ptr<ThreadCounter> per_thread_;
  std::unique_ptr<PaddedSlot[]> fallback_slots_;
  SharedAtomic shared_;
  MutexCounter mutex_;
  std::unique_ptr<NodeStats[]> nodes_;
  // The per-CPU pair lives in PerCpuAllocator memory (2 u64 per CPU).
  std::shared_ptr<Topology> topo_;
  std::shared_ptr<PerCpuAllocator> alloc_;
  PerCpuPtr<internal::Atomic<uint64_t>> pair_;
  CpuSlots packets_;
  CpuSlots bytes_;

  void RunPlainThreadLocal(uint64_t iters);
  void RunPerCpuRseq(uint64_t iters);
  void RunPerThread(uint64_t iters);
  void RunFallback(uint64_t iters);
  void RunSharedAtomic(uint64_t iters);
  void RunMutex(uint64_t iters);
  void RunOvsNumaLocked(uint64_t iters);
  void RunPerCpuPair(uint64_t iters);
  void RunRelaxedTls(uint64_t iters);
  void RunRseqFloor(uint64_t iters);
  void RunLibrseqShape(uint64_t iters);
  void RunPerThreadLookup(uint64_t iters);
  std::unique_ptr<PaddedSlot[]> floor_slots_;  // kRseqFloor, one per CPU id
  std::unique_ptr<PaddedSlot[]> librseq_slots_;  // kLibrseqShape, likewise
  // kPerThreadLookup: the id the loop looks up, read from this object on
  // every add as ThreadCounter::Add reads its id_.
  uint32_t lookup_id_ = 3;
};

// The calling thread's plain thread-local count (kPlainThreadLocal).
uint64_t PlainThreadLocalValue();

struct UpdateRate {
  double ns_per_op = 0;   // mean over threads of (thread CPU time / its ops)
  double mops_total = 0;  // sum over threads of ops / wall time, in M/s
  double on_cpu = 0;      // mean over threads of thread CPU time / wall time
  uint64_t ops = 0;       // all threads' ops
};

// Starts `threads` threads, releases them together, lets each run `kind` in
// batches of 1024 updates for about `seconds`, and returns the rates. Each
// thread times itself from its release to its last batch. With `pin`,
// thread t is bound to the (t mod n)-th CPU the process may run on, so
// that 2 threads on a 2-CPU machine really run on different CPUs (the
// scheduler may otherwise stack them on one when other processes load the
// other); on_cpu < 1 shows time taken by other processes.
UpdateRate MeasureUpdates(UpdateTargets& targets, UpdateKind kind,
                          int threads, double seconds, bool pin);

// ---------------------------------------------------------------------------
// Allocation.

// Many live small per-CPU objects of one size and alignment request, on a
// PerCpuAllocator over Topology::Simulated(cpus, cpus, cpus).
class AllocFixture {
 public:
  static StatusOr<std::unique_ptr<AllocFixture>> Create(int cpus, size_t size,
                                                        size_t align);
  ~AllocFixture();
  AllocFixture(const AllocFixture&) = delete;
  AllocFixture& operator=(const AllocFixture&) = delete;

  // Room for `live` handles, so that a timed Fill does not grow the
  // fixture's own array.
  void Reserve(size_t live);
  // Allocates Allocate(size, align) until `live` objects are live.
  Status Fill(size_t live);
  // Writes one byte of every CPU's copy of every live object (a user
  // initializing its stats), so later frees zero resident memory.
  void TouchAll();
  // n times: frees a pseudo-random live object and allocates a new one in
  // its place (the allocator's LIFO size classes hand the slot back).
  Status Churn(size_t n);
  // Frees every live object.
  Status FreeAll();

  PerCpuAllocator& allocator() { return *alloc_; }
  size_t live() const { return objs_.size(); }
  // The largest power of two dividing every address handed out so far.
  size_t alignment_seen() const;

 private:
  AllocFixture() = default;
  std::shared_ptr<Topology> topo_;
  std::shared_ptr<PerCpuAllocator> alloc_;
  std::vector<PerCpuPtr<void>> objs_;
  int cpus_ = 0;
  size_t size_ = 0;
  size_t align_ = 0;
  uintptr_t low_bits_ = 0;
  uint64_t rng_ = 0x9e3779b97f4a7c15ull;
};

// Resident memory of per-CPU stats with many possible and few present
// CPUs.
struct ResidentReport {
  int possible = 0;
  int present = 0;
  size_t objects = 0;            // U64StatMib<90> objects allocated
  int cpus_resident = 0;         // CPUs with any resident byte (mincore)
  size_t resident_bytes = 0;     // sum over CPUs (mincore)
  size_t bytes_per_present_cpu = 0;
  long long statm_delta_bytes = 0;  // RSS growth over the writes
  // After folding all possible CPUs (reading absent CPUs' units):
  int cpus_resident_after_possible_fold = 0;
  long long statm_delta_after_possible_fold = 0;
};
StatusOr<ResidentReport> MeasureResident(int possible, int present,
                                         size_t objects);

// CPU time of the calling thread (CLOCK_THREAD_CPUTIME_ID), in seconds:
// unlike wall time it does not grow while other processes of the guest
// run. Caveat: with paravirtualized steal-time accounting it also excludes
// hypervisor steal time, accounted in chunks, so a SHORT interval can read
// too low; use it over long intervals (tens of ms) and with medians, never
// with a best-of over short samples.
double ThreadCpuSeconds();

// Resident set size of this process from /proc/self/statm, in bytes (-1 if
// unreadable).
long long StatmResidentBytes();

}  // namespace bench
}  // namespace percpu

#endif  // PERCPU_BENCH_KERNELS_H_
