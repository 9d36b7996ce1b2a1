// Per-CPU per-counter read cost: the kernels of experiment 3 of the report.
// Built three times (bench/BUILD): for the host (64-bit READ_ONCE path),
// for the host with the forced seqcount path, and for i686 (the real 32-bit
// seqcount path). Each build prints one line per kernel:
//   <kernel> <ns per CPU-counter read>
// and one line per kernel with every round ("rounds:<kernel> v1,v2,...").
// The kernels are measured round by round, interleaved (so noise hits them
// alike), and the best round of each is printed; --rounds=N sets the number
// of rounds (default 15).
// With --insns (all kernels) or --insns=<kernel> it instead runs the
// kernel(s) 1000 times so that valgrind --tool=callgrind
// --toggle-collect=<kernel> can count its instructions (the report does).
#include <time.h>

#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "primitives/u64_stats.h"

namespace {

constexpr int kCpus = 32;
constexpr int kCountersPerCpu = 4;

// One CPU's slot as a driver keeps it: a few counters and their sync.
struct alignas(64) Slot {
  percpu::U64Stat counters[kCountersPerCpu];
  percpu::U64StatsSync sync;
};

// The same counters covered by a U64StatsGroupSync: a seqcount on every
// target, so a reader gets the group of one moment on 64-bit too.
struct alignas(64) GroupSlot {
  percpu::U64Stat counters[kCountersPerCpu];
  percpu::U64StatsGroupSync sync;
};

struct alignas(64) PlainSlot {
  uint64_t counters[kCountersPerCpu];
};

std::vector<Slot> g_slots(kCpus);
std::vector<PlainSlot> g_plain(kCpus);
std::vector<GroupSlot> g_groups(kCpus);

// The kernels are extern "C" and noinline so callgrind can toggle on them.
extern "C" __attribute__((noinline)) uint64_t percpu_bench_read_plain() {
  uint64_t sum = 0;
  for (int cpu = 0; cpu < kCpus; ++cpu) {
    for (int i = 0; i < kCountersPerCpu; ++i) {
      sum += g_plain[cpu].counters[i];
    }
  }
  return sum;
}

// READ_ONCE of each counter without a sync object: what a 64-bit reader of
// independent counters does (on the seqcount path a bare Read() may tear, so
// this kernel is only meaningful on 64-bit builds).
extern "C" __attribute__((noinline)) uint64_t percpu_bench_read_once() {
  uint64_t sum = 0;
  for (int cpu = 0; cpu < kCpus; ++cpu) {
    for (int i = 0; i < kCountersPerCpu; ++i) {
      sum += g_slots[cpu].counters[i].Read();
    }
  }
  return sum;
}

// The same READ_ONCE reads with the array's base pointer loaded once by
// hand. GCC treats every atomic load as an optimization barrier for other
// memory accesses, so in read_once it reloads g_slots' data pointer before
// every counter; this kernel separates the cost of the load itself from
// the cost of that lost optimization.
extern "C" __attribute__((noinline)) uint64_t
percpu_bench_read_once_hoisted() {
  const Slot* const slots = g_slots.data();
  uint64_t sum = 0;
  for (int cpu = 0; cpu < kCpus; ++cpu) {
    for (int i = 0; i < kCountersPerCpu; ++i) {
      sum += slots[cpu].counters[i].Read();
    }
  }
  return sum;
}

// READ_ONCE of each counter in the loop shape of the group reads below (a
// reference to the CPU's slot, the counters copied to locals, then summed),
// without a sync: the baseline that leaves the sync as the only difference
// (the shapes of read_once and the group reads differ, see report.cc).
extern "C" __attribute__((noinline)) uint64_t
percpu_bench_read_once_staged() {
  uint64_t sum = 0;
  for (int cpu = 0; cpu < kCpus; ++cpu) {
    const Slot& slot = g_slots[cpu];
    uint64_t one[kCountersPerCpu];
    for (int i = 0; i < kCountersPerCpu; ++i) one[i] = slot.counters[i].Read();
    for (int i = 0; i < kCountersPerCpu; ++i) sum += one[i];
  }
  return sum;
}

// The consistent per-CPU group read: FetchBegin/FetchRetry around the
// CPU's counters (compiles to the plain loads on 64-bit, where the sync is
// empty; a seqcount loop on 32-bit).
extern "C" __attribute__((noinline)) uint64_t percpu_bench_read_u64_stats() {
  uint64_t sum = 0;
  for (int cpu = 0; cpu < kCpus; ++cpu) {
    const Slot& slot = g_slots[cpu];
    uint64_t one[kCountersPerCpu];
    uint32_t start;
    do {
      start = slot.sync.FetchBegin();
      for (int i = 0; i < kCountersPerCpu; ++i) one[i] = slot.counters[i].Read();
    } while (slot.sync.FetchRetry(start));
    for (int i = 0; i < kCountersPerCpu; ++i) sum += one[i];
  }
  return sum;
}

// The consistent group read with U64StatsGroupSync (a real seqcount loop
// on every target): what a reader of packets+bytes of one moment pays.
extern "C" __attribute__((noinline)) uint64_t
percpu_bench_read_u64_stats_group() {
  uint64_t sum = 0;
  for (int cpu = 0; cpu < kCpus; ++cpu) {
    const GroupSlot& slot = g_groups[cpu];
    uint64_t one[kCountersPerCpu];
    uint32_t start;
    do {
      start = slot.sync.FetchBegin();
      for (int i = 0; i < kCountersPerCpu; ++i) one[i] = slot.counters[i].Read();
    } while (slot.sync.FetchRetry(start));
    for (int i = 0; i < kCountersPerCpu; ++i) sum += one[i];
  }
  return sum;
}

using Kernel = uint64_t (*)();

struct NamedKernel {
  const char* name;    // printed name
  const char* symbol;  // the extern "C" function (for callgrind)
  Kernel kernel;
};

constexpr NamedKernel kKernels[] = {
    {"plain", "percpu_bench_read_plain", &percpu_bench_read_plain},
    {"read_once", "percpu_bench_read_once", &percpu_bench_read_once},
    {"read_once_hoisted", "percpu_bench_read_once_hoisted",
     &percpu_bench_read_once_hoisted},
    {"read_once_staged", "percpu_bench_read_once_staged",
     &percpu_bench_read_once_staged},
    {"u64_stats", "percpu_bench_read_u64_stats",
     &percpu_bench_read_u64_stats},
    {"u64_stats_group", "percpu_bench_read_u64_stats_group",
     &percpu_bench_read_u64_stats_group},
};
constexpr int kNumKernels = sizeof(kKernels) / sizeof(kKernels[0]);

double ThreadCpuNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e9 + double(ts.tv_nsec);
}

// One round of one kernel: ns per CPU-counter read. Thread CPU time over
// ~10 ms (100,000 calls of 128 reads): a co-tenant's time slice is not
// counted, and the sample is long enough for the VM's CPU-time accounting
// (2 ms wall-time rounds gave per-round ratios from 0.2x to 10x).
double OneRound(Kernel kernel) {
  volatile uint64_t sink = 0;
  constexpr int kIters = 100000;
  const double t0 = ThreadCpuNs();
  for (int i = 0; i < kIters; ++i) {
    sink = sink + kernel();
    // Keep the compiler from hoisting the plain loads out of the loop.
    __asm__ __volatile__("" ::: "memory");
  }
  const double ns = ThreadCpuNs() - t0;
  return ns / (double(kIters) * kCpus * kCountersPerCpu);
}

}  // namespace

int main(int argc, char** argv) {
  for (int cpu = 0; cpu < kCpus; ++cpu) {
    for (int i = 0; i < kCountersPerCpu; ++i) {
      g_plain[cpu].counters[i] = cpu + i;
      g_slots[cpu].sync.UpdateBegin();
      g_slots[cpu].counters[i].Set(cpu + i);
      g_slots[cpu].sync.UpdateEnd();
      g_groups[cpu].sync.UpdateBegin();
      g_groups[cpu].counters[i].Set(cpu + i);
      g_groups[cpu].sync.UpdateEnd();
    }
  }
  int rounds = 15;
  const char* insns = nullptr;  // "" = all kernels
  for (int a = 1; a < argc; ++a) {
    if (std::strcmp(argv[a], "--insns") == 0) {
      insns = "";
    } else if (std::strncmp(argv[a], "--insns=", 8) == 0) {
      insns = argv[a] + 8;
    } else if (std::strncmp(argv[a], "--rounds=", 9) == 0) {
      rounds = std::atoi(argv[a] + 9);
      if (rounds < 1) {
        std::fprintf(stderr, "read_kernels: --rounds must be >= 1\n");
        return 2;
      }
    } else {
      std::fprintf(stderr,
                   "read_kernels: unknown argument %s (use --rounds=N, "
                   "--insns or --insns=<kernel>)\n",
                   argv[a]);
      return 2;
    }
  }
  if (insns != nullptr) {
    // A fixed amount of work: 1000 calls of each selected kernel; callgrind
    // (toggled on the kernel's symbol) divides by the reads.
    bool any = false;
    volatile uint64_t sink = 0;
    for (const NamedKernel& k : kKernels) {
      if (*insns != '\0' && std::strcmp(insns, k.name) != 0 &&
          std::strcmp(insns, k.symbol) != 0) {
        continue;
      }
      any = true;
      for (int i = 0; i < 1000; ++i) sink = sink + k.kernel();
    }
    if (!any) {
      std::fprintf(stderr, "read_kernels: unknown kernel %s\n", insns);
      return 2;
    }
    std::printf("calls_per_kernel 1000\n");
    std::printf("reads_per_kernel_call %d\n", kCpus * kCountersPerCpu);
    return 0;
  }
  // Best of `rounds` rounds, interleaved: the machines are noisy; the
  // minimum is the least disturbed measurement.
  double best[kNumKernels];
  for (double& b : best) b = 1e30;
  std::vector<double> all[kNumKernels];
  for (int round = 0; round < rounds; ++round) {
    for (int k = 0; k < kNumKernels; ++k) {
      const double per = OneRound(kKernels[k].kernel);
      all[k].push_back(per);
      if (per < best[k]) best[k] = per;
    }
  }
  std::printf("path %s\n",
              percpu::kU64StatsUseSeqcount ? "seqcount" : "read_once");
  std::printf("pointer_bits %d\n", int(sizeof(void*) * 8));
  for (int k = 0; k < kNumKernels; ++k) {
    std::printf("%s %.4f\n", kKernels[k].name, best[k]);
  }
  // Every round, for paired ratios: "rounds:<kernel> v1,v2,...".
  for (int k = 0; k < kNumKernels; ++k) {
    std::printf("rounds:%s ", kKernels[k].name);
    for (size_t r = 0; r < all[k].size(); ++r) {
      std::printf("%s%.4f", r == 0 ? "" : ",", all[k][r]);
    }
    std::printf("\n");
  }
  return 0;
}
