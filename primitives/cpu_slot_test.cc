// Tests of the per-CPU writers: mode choice, exact totals under preemption,
// migration and signals, in rseq mode and in the fallback.
//
// Expected mode (see docs/writers.md, "Which mode a test expects"):
//   * PERCPU_RSEQ=0 in the environment, or built without rseq support
//     (i686, armhf, -DPERCPU_NO_RSEQ)               -> must be fallback
//   * PERCPU_EXPECT_RSEQ=1 / =0                      -> must be rseq / fallback
//   * PERCPU_EXPECTED_TARGET=x86_64 (bazel host)     -> must be rseq
//   * PERCPU_EXPECTED_TARGET=<other> (qemu targets)  -> either; reported
//   * no variable, built for x86_64                  -> must be rseq
//   * no variable, other targets                     -> either; reported
// Built with -DPERCPU_TEST_FORCE_FALLBACK_ENV, the test sets PERCPU_RSEQ=0
// before the mode is first chosen (the cpu_slot_fallback_test target).
#include "primitives/cpu_slot.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "doctest/doctest.h"

// This file also tests CpuSlotCounter itself, deprecated but shipped until
// 0.3 (then its test cases go with it); only cpu_slot.h is included, so
// nothing else deprecated can hide behind this.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace percpu {
namespace {

#if defined(PERCPU_TEST_FORCE_FALLBACK_ENV)
// Runs before main(), hence before any CurrentWriterMode() call.
const bool g_forced = [] { return setenv("PERCPU_RSEQ", "0", 1) == 0; }();
#endif

bool EnvForcesOff() {
  const char* e = std::getenv("PERCPU_RSEQ");
  return e != nullptr && (!std::strcmp(e, "0") || !std::strcmp(e, "off") ||
                          !std::strcmp(e, "false") || !std::strcmp(e, "no"));
}

// 1 = must be rseq, 0 = must be fallback, -1 = either (reported).
int ExpectedRseq() {
  if (EnvForcesOff() || !PERCPU_HAVE_RSEQ_ASM) return 0;
  if (const char* e = std::getenv("PERCPU_EXPECT_RSEQ")) {
    return std::strcmp(e, "0") == 0 ? 0 : 1;
  }
  if (const char* t = std::getenv("PERCPU_EXPECTED_TARGET")) {
    return std::strcmp(t, "x86_64") == 0 ? 1 : -1;
  }
#if defined(__x86_64__)
  return 1;
#else
  return -1;
#endif
}

int NumSlots() {
  // Covers every CPU id the kernel can report on this machine.
  const long n = sysconf(_SC_NPROCESSORS_CONF);
  return n < 1 ? 1 : (n > 4096 ? 4096 : static_cast<int>(n));
}

struct alignas(64) PaddedSlot {
  internal::Atomic<uint64_t> v{0};
};

TEST_CASE("ChooseWriterMode covers every input") {
  RseqFacts f;
  f.compiled_in = true;
  f.rseq_size = 32;
  f.thread_cpu_id = 3;
  CHECK(internal::ChooseWriterMode(f).mode == WriterMode::kRseq);
  f.rseq_size = 20;  // glibc >= 2.40 reports the feature size
  CHECK(internal::ChooseWriterMode(f).mode == WriterMode::kRseq);
  f.env = "1";
  CHECK(internal::ChooseWriterMode(f).mode == WriterMode::kRseq);
  f.env = "0";
  internal::WriterModeChoice c = internal::ChooseWriterMode(f);
  CHECK(c.mode == WriterMode::kFallbackSchedGetcpu);
  CHECK(c.reason.find("PERCPU_RSEQ=0") != std::string::npos);
  f.env = "off";
  CHECK(internal::ChooseWriterMode(f).mode ==
        WriterMode::kFallbackSchedGetcpu);
  f.env = nullptr;
  f.rseq_size = 0;  // qemu-user, old kernel, tunable off
  c = internal::ChooseWriterMode(f);
  CHECK(c.mode == WriterMode::kFallbackSchedGetcpu);
  CHECK(c.reason.find("__rseq_size is 0") != std::string::npos);
  f.rseq_size = 32;
  f.thread_cpu_id = -2;  // RSEQ_CPU_ID_REGISTRATION_FAILED
  CHECK(internal::ChooseWriterMode(f).mode ==
        WriterMode::kFallbackSchedGetcpu);
  f.thread_cpu_id = 0;
  f.compiled_in = false;
  c = internal::ChooseWriterMode(f);
  CHECK(c.mode == WriterMode::kFallbackSchedGetcpu);
  CHECK(c.reason.find("not compiled in") != std::string::npos);
  CHECK(std::string(WriterModeName(WriterMode::kRseq)) == "rseq");
  CHECK(std::string(WriterModeName(WriterMode::kFallbackSchedGetcpu)) ==
        "fallback-sched_getcpu");
}

TEST_CASE("the process uses the expected writer mode") {
  const WriterMode m = CurrentWriterMode();
  const RseqFacts f = CurrentRseqFacts();
  MESSAGE("writer mode: " << WriterModeReason() << " (compiled_in="
                          << f.compiled_in << ", __rseq_size=" << f.rseq_size
                          << ", thread cpu_id=" << f.thread_cpu_id << ")");
  CHECK(CurrentWriterMode() == m);  // cached, stable
  const int expected = ExpectedRseq();
  if (expected == 1) {
    // The CI host (x86_64, Linux 6.x, glibc 2.36) registers rseq: glibc
    // exports __rseq_size >= 20 (this glibc reports 20, older 2.35-2.39
    // builds 32) and the thread's cpu_id is a real CPU.
    CHECK_MESSAGE(f.rseq_size >= 20,
                  "rseq expected on this target but glibc did not register "
                  "it (__rseq_size="
                      << f.rseq_size
                      << "); kernel or glibc lacks rseq. Set PERCPU_RSEQ=0 "
                         "to test the fallback deliberately.");
    CHECK_MESSAGE(m == WriterMode::kRseq,
                  "rseq expected on this target, got " << WriterModeReason());
  } else if (expected == 0) {
    CHECK(m == WriterMode::kFallbackSchedGetcpu);
  } else {
    MESSAGE("either mode is acceptable on this target; got "
            << std::string(WriterModeName(m)));
    CHECK((m == WriterMode::kRseq || m == WriterMode::kFallbackSchedGetcpu));
  }
}

// Hammers one cpu-major, 64-byte-strided array with more threads than
// CPUs for a fixed time, yielding now and then so threads are preempted and
// migrate between the CPU-id read and the commit. A missing restart (rseq)
// or a non-atomic fallback would lose updates. Returns the exact total the
// threads added (each thread sums its own deltas).
template <typename AddFn>
uint64_t Hammer(int threads, int millis, AddFn add) {
  std::atomic<bool> go{false}, stop{false};
  std::atomic<uint64_t> total{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&] {
      while (!go.load()) sched_yield();
      uint64_t mine = 0;
      for (uint64_t i = 0; !stop.load(std::memory_order_relaxed); ++i) {
        const uint64_t v = 1 + (i & 3);
        add(v);
        mine += v;
        if ((i & 255) == 0) sched_yield();
      }
      total.fetch_add(mine);
    });
  }
  go.store(true);
  usleep(static_cast<useconds_t>(millis) * 1000);
  stop.store(true);
  for (auto& t : ts) t.join();
  return total.load();
}

int StressThreads() {
  const unsigned hw = std::thread::hardware_concurrency();
  return static_cast<int>((hw == 0 ? 2 : hw) * 3 + 2);
}

TEST_CASE("exact totals: many threads on one per-CPU array (process mode)") {
  const int n = NumSlots();
  std::vector<PaddedSlot> slots(static_cast<size_t>(n));
  StatusOr<CpuSlots> s = CpuSlots::Create(&slots[0].v, sizeof(PaddedSlot), n);
  REQUIRE(s.ok());
  const CpuSlots view = *s;
  std::atomic<uint64_t> misses{0};
  const uint64_t expected =
      Hammer(StressThreads(), 700, [&](uint64_t v) {
        if (view.TryAddThisCpu(v) < 0) {
          misses.fetch_add(1, std::memory_order_relaxed);
        }
      });
  CHECK(misses.load() == 0);
  CHECK(view.Sum() == expected);
  int used = 0;
  for (int c = 0; c < n; ++c) used += view.on(c).load() != 0;
  MESSAGE("mode " << std::string(WriterModeName(CurrentWriterMode())) << ": " << used
                  << " of " << n << " CPU slots written, total " << expected);
  CHECK(used >= 1);
}

TEST_CASE("exact totals: the fallback writer used directly") {
  // A separate array: the fallback's atomic RMW never meets rseq stores.
  const int n = NumSlots();
  std::vector<PaddedSlot> slots(static_cast<size_t>(n));
  const uintptr_t base = reinterpret_cast<uintptr_t>(&slots[0].v);
  std::atomic<uint64_t> misses{0};
  const uint64_t expected = Hammer(StressThreads(), 500, [&](uint64_t v) {
    const uint32_t cpu = internal::FallbackAddU64(base, sizeof(PaddedSlot),
                                                  static_cast<uint32_t>(n), v);
    if (cpu >= static_cast<uint32_t>(n)) misses.fetch_add(1);
  });
  CHECK(misses.load() == 0);
  uint64_t sum = 0;
  for (auto& s : slots) sum += s.v.load();
  CHECK(sum == expected);
}

TEST_CASE("CpuSlotCounter: exact totals, Sum and OnCpu") {
  StatusOr<std::unique_ptr<CpuSlotCounter>> c =
      CpuSlotCounter::Create(NumSlots());
  REQUIRE(c.ok());
  CpuSlotCounter& ctr = **c;
  const uint64_t expected =
      Hammer(StressThreads(), 500, [&](uint64_t v) { ctr.Add(v); });
  CHECK(ctr.Sum() == expected);
  CHECK(ctr.overflow() == 0);
  uint64_t by_cpu = 0;
  for (int cpu = 0; cpu < ctr.num_cpus(); ++cpu) by_cpu += *ctr.OnCpu(cpu);
  CHECK(by_cpu == expected);
  CHECK(ctr.OnCpu(-1).status().code() == StatusCode::kOutOfRange);
  CHECK(ctr.OnCpu(ctr.num_cpus()).status().code() == StatusCode::kOutOfRange);
  CHECK(ctr.slots().Sum() == expected);
}

TEST_CASE("bad input: layouts and sizes are validated") {
  PaddedSlot slots[2];
  CHECK(CpuSlots::Create(nullptr, 64, 2).status().code() ==
        StatusCode::kInvalidArgument);
  CHECK(CpuSlots::Create(&slots[0].v, 4, 2).status().code() ==
        StatusCode::kInvalidArgument);
  CHECK(CpuSlots::Create(&slots[0].v, 64, 0).status().code() ==
        StatusCode::kOutOfRange);
  const Status bad = CpuSlots::Create(&slots[0].v, 64, 70000).status();
  CHECK(bad.code() == StatusCode::kOutOfRange);
  CHECK(bad.message().find("70000") != std::string::npos);
  CHECK(CpuSlots::Create(&slots[0].v, 64, 2).ok());
  CHECK(CpuSlotCounter::Create(0).status().code() == StatusCode::kOutOfRange);
  CHECK(CpuSlotCounter::Create(-5).status().message().find("-5") !=
        std::string::npos);
  StatusOr<CpuSlots> v = CpuSlots::Create(&slots[0].v, 64, 2);
  REQUIRE(v.ok());
  CHECK(v->At(2).status().code() == StatusCode::kOutOfRange);
  CHECK(v->At(1).ok());
}

// Pins the calling thread to `cpu`; false if not possible here.
bool PinTo(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof(set), &set) != 0) return false;
  sched_yield();
  return sched_getcpu() == cpu;
}

TEST_CASE("bad input: a CPU id beyond num_cpus never indexes out of bounds") {
  // Find a CPU other than 0 we may run on.
  cpu_set_t orig;
  REQUIRE(sched_getaffinity(0, sizeof(orig), &orig) == 0);
  int target = -1;
  for (int c = 1; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &orig)) {
      target = c;
      break;
    }
  }
  if (target < 0) {
    MESSAGE("only CPU 0 is usable: out-of-range path not exercised");
    CHECK(target == -1);
    return;
  }
  std::thread t([&] {
    if (!PinTo(target)) {
      MESSAGE("could not pin to CPU " << target << "; skipped");
      return;
    }
    // An array covering only CPU 0 (a topology smaller than the machine).
    PaddedSlot slots[1];
    StatusOr<CpuSlots> v = CpuSlots::Create(&slots[0].v, 64, 1);
    REQUIRE(v.ok());
    CHECK(v->TryAddThisCpu(5) == -1);
    const Status st = v->AddThisCpu(5);
    CHECK(st.code() == StatusCode::kOutOfRange);
    CHECK(st.message().find("CPU id " + std::to_string(target)) !=
          std::string::npos);
    CHECK(slots[0].v.load() == 0);  // nothing written
    StatusOr<std::unique_ptr<CpuSlotCounter>> c = CpuSlotCounter::Create(1);
    REQUIRE(c.ok());
    (*c)->Add(7);
    CHECK((*c)->overflow() == 7);
    CHECK((*c)->Sum() == 7);
    CHECK(*(*c)->OnCpu(0) == 0);
  });
  t.join();
}

// ---- Signals: a signal aborts an rseq section; the handler itself adds.
std::atomic<uint64_t> g_handler_adds{0};
CpuSlotCounter* g_sig_counter = nullptr;

void OnSignal(int) {
  g_sig_counter->Add(1000);  // async-signal-safe in both modes
  // Lock-free atomic: async-signal-safe.
  g_handler_adds.fetch_add(1000, std::memory_order_relaxed);
}

// tools/run_i686.sh sets PERCPU_QEMU_I386 where it runs the i686 tests
// under qemu-i386 (Debian 12: QEMU 7.2). There a thread of this case's
// process crashed in glibc's thread-exit path (SIGSEGV at the exit syscall
// or at the madvise of its own stack, both reached through its TLS) in 4
// of 60 runs, two processes at a time; never without the signals (0 of 50
// for the many-threads case), and never in the native or the other
// emulated lanes. QEMU's user mode had a crash mixing signals and threads
// (launchpad bug 1907969, still in 6.1, reported gone in 9.0). So the case
// is skipped there, reported as skipped; it runs wherever run_i686.sh can
// run the i686 tests natively.
bool UnderQemuI386() {
  const char* e = std::getenv("PERCPU_QEMU_I386");
  return e != nullptr && *e != '\0';
}

TEST_CASE("signals during adds (SIGALRM timer + targeted SIGUSR1): exact" *
          doctest::skip(UnderQemuI386())) {
  StatusOr<std::unique_ptr<CpuSlotCounter>> c =
      CpuSlotCounter::Create(NumSlots());
  REQUIRE(c.ok());
  g_sig_counter = c->get();
  g_handler_adds.store(0);
  struct sigaction sa;
  std::memset(&sa, 0, sizeof(sa));
  sa.sa_handler = &OnSignal;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  struct sigaction old_alrm, old_usr1;
  REQUIRE(sigaction(SIGALRM, &sa, &old_alrm) == 0);
  REQUIRE(sigaction(SIGUSR1, &sa, &old_usr1) == 0);

  // The main thread blocks both so process-directed SIGALRMs hit workers.
  sigset_t block, old_mask;
  sigemptyset(&block);
  sigaddset(&block, SIGALRM);
  sigaddset(&block, SIGUSR1);
  REQUIRE(pthread_sigmask(SIG_BLOCK, &block, &old_mask) == 0);

  const int kThreads = StressThreads();
  std::atomic<uint64_t> worker_adds{0};
  std::atomic<bool> stop{false};
  std::atomic<bool> stop_adding{false};
  std::vector<pthread_t> handles(static_cast<size_t>(kThreads));
  std::atomic<int> ready{0};
  std::atomic<int> done{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t) {
    ts.emplace_back([&, t] {
      handles[static_cast<size_t>(t)] = pthread_self();
      sigset_t unblock;
      sigemptyset(&unblock);
      sigaddset(&unblock, SIGALRM);
      sigaddset(&unblock, SIGUSR1);
      pthread_sigmask(SIG_UNBLOCK, &unblock, nullptr);
      ready.fetch_add(1);
      uint64_t mine = 0;
      while (!stop_adding.load(std::memory_order_relaxed)) {
        for (int i = 0; i < 4096; ++i) (*c)->Add(1);
        mine += 4096;
        sched_yield();
      }
      worker_adds.fetch_add(mine);
      // Block before exiting so no signal targets a dead thread's handler
      // frame; pending ones are discarded with the thread.
      pthread_sigmask(SIG_BLOCK, &unblock, nullptr);
      done.fetch_add(1);
    });
  }
  while (ready.load() < kThreads) sched_yield();
  struct itimerval it;
  std::memset(&it, 0, sizeof(it));
  it.it_interval.tv_usec = 200;
  it.it_value.tv_usec = 200;
  REQUIRE(setitimer(ITIMER_REAL, &it, nullptr) == 0);
  std::thread killer([&] {
    unsigned k = 0;
    while (!stop.load()) {
      // No worker is joined before this thread stops, so every handle is
      // valid (a finished, unjoined thread just gets ESRCH or a discarded
      // signal).
      pthread_kill(handles[k++ % handles.size()], SIGUSR1);
      usleep(50);
    }
  });
  usleep(1500 * 1000);  // 1.5 s of adds under signals
  stop_adding.store(true);
  while (done.load() < kThreads) usleep(1000);
  stop.store(true);
  killer.join();
  for (auto& t : ts) t.join();
  std::memset(&it, 0, sizeof(it));
  REQUIRE(setitimer(ITIMER_REAL, &it, nullptr) == 0);
  // Drain a pending SIGALRM/SIGUSR1 aimed at the main thread: ignore them
  // before unblocking.
  struct sigaction ign;
  std::memset(&ign, 0, sizeof(ign));
  ign.sa_handler = SIG_IGN;
  sigaction(SIGALRM, &ign, nullptr);
  sigaction(SIGUSR1, &ign, nullptr);
  pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  sigaction(SIGALRM, &old_alrm, nullptr);
  sigaction(SIGUSR1, &old_usr1, nullptr);

  const uint64_t handler = g_handler_adds.load();
  MESSAGE("mode " << std::string(WriterModeName(CurrentWriterMode())) << ": "
                  << handler / 1000 << " signals handled during the adds");
  CHECK(handler > 0);
  MESSAGE(worker_adds.load() << " adds by " << kThreads << " threads");
  CHECK(worker_adds.load() > 0);
  CHECK((*c)->Sum() == worker_adds.load() + handler);
  g_sig_counter = nullptr;
}

}  // namespace
}  // namespace percpu

#pragma GCC diagnostic pop
