// Relacy-dialect programs that tools/relacy_speed.sh builds twice, against
// real Relacy (-DRL_REAL) and against this checker, and times side by side
// (docs/verification.md, "Speed against Relacy").
//
//   seqcount random N [SEED]  N random iterations of the two-writes
//                             seqcount (verification/seqcount_checker_test.cc
//                             in Relacy's dialect: a writer making two
//                             writes, a reader retrying until it sees a
//                             stable even sequence)
//   seqcount full             the exhaustive search of the same program
//   loads random N            N random iterations of one thread making 100
//                             relaxed loads: the cost of one operation
//   counter random N          N random iterations of four threads making 5
//                             fetch_adds each on one counter, seq_cst (the
//                             dialect's default order): a chain of RMWs
//   counter-relaxed random N  the same with relaxed fetch_adds
//   cas-counter random N      N random iterations of three threads bumping
//                             one counter 3 times each by CAS loops
//   peterson random N         N random iterations of Peterson's lock, every
//                             access in the default order (seq_cst)
//   mailbox random N          N random iterations of two publishers, each
//                             writing its plain data and then a release
//                             flag, and two readers spinning (acquire
//                             load, yield) on one flag each before reading
//                             the data
//   spsc random N             N random iterations of a single-producer,
//                             single-consumer ring of 4 slots passing 24
//                             items (acquire/release indices, relaxed
//                             slots; each side spins with a yield while
//                             the ring is full or empty): long executions,
//                             about 240 steps
//   stats random N            N random iterations of four writers each
//                             bumping its own slot 20 times (relaxed load
//                             and store, one writer per slot) and a reader
//                             folding the four slots 5 times: five threads
//   stack random N            N random iterations of a Treiber-style stack
//                             of 12 nodes: three threads each push 4 and
//                             then pop 4 by compare_exchange_weak loops
//
// Prints the executions run on a line of its own ("executions N"), then
// the retries their loops made ("retries N": the seqcount's reader tries
// after the first, Peterson's, the mailbox readers' and the ring's waits,
// the CAS loops' failed CASes), so the length of the executions each checker
// samples can be compared (random searches only; counted in the calling
// process, so 0 for a forked one).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "relacy/relacy.hpp"

// Plain: a checker runs one test thread at a time (both do), and both
// sides pay the same increment. Random searches only: a count that grows
// makes a spin loop one that keeps state, which the exhaustive search
// then runs on to its bound (docs/verification.md, "A loop that keeps a
// count": 28 million executions of the seqcount instead of 30,055).
bool g_count_retries = false;
unsigned long long g_retries = 0;
void CountRetry() {
  if (g_count_retries) ++g_retries;
}

struct SeqCount : rl::test_suite<SeqCount, 2> {
  rl::atomic<unsigned> seq, lo, hi;
  void before() {
    seq($) = 0;
    lo($) = 0;
    hi($) = 0;
  }
  void Write(uint64_t v) {
    const unsigned s = seq($).load(rl::memory_order_relaxed);
    seq($).store(s + 1, rl::memory_order_relaxed);
    rl::atomic_thread_fence(rl::memory_order_release, $);
    lo($).store(static_cast<unsigned>(v), rl::memory_order_relaxed);
    hi($).store(static_cast<unsigned>(v >> 32), rl::memory_order_relaxed);
    seq($).store(s + 2, rl::memory_order_release);
  }
  uint64_t Read() {
    for (;;) {
      const unsigned s1 = seq($).load(rl::memory_order_acquire);
      const unsigned l = lo($).load(rl::memory_order_relaxed);
      const unsigned h = hi($).load(rl::memory_order_relaxed);
      rl::atomic_thread_fence(rl::memory_order_acquire, $);
      const unsigned s2 = seq($).load(rl::memory_order_relaxed);
      if ((s1 & 1) == 0 && s1 == s2) return (uint64_t{h} << 32) | l;
      CountRetry();
      rl::yield(1, $);
    }
  }
  void thread(unsigned i) {
    if (i == 0) {
      Write((uint64_t{1} << 32) | 1);
      Write((uint64_t{2} << 32) | 2);
    } else {
      const uint64_t v = Read();
      RL_ASSERT(v == 0 || v == ((uint64_t{1} << 32) | 1) ||
                v == ((uint64_t{2} << 32) | 2));
    }
  }
};

struct Loads : rl::test_suite<Loads, 1> {
  rl::atomic<unsigned> a;
  void before() { a($) = 0; }
  void thread(unsigned) {
    for (int k = 0; k < 100; ++k) (void)a($).load(rl::memory_order_relaxed);
  }
};

template <rl::memory_order kOrder>
struct Counter : rl::test_suite<Counter<kOrder>, 4> {
  rl::atomic<unsigned> count;
  void before() { count($) = 0; }
  void thread(unsigned) {
    for (int k = 0; k < 5; ++k) count($).fetch_add(1, kOrder);
  }
  void after() { RL_ASSERT(count($).load(rl::memory_order_relaxed) == 20); }
};

// Peterson's lock as Relacy's examples write it: every access in the
// dialect's default order (seq_cst), the shared data an rl::var.
struct Peterson : rl::test_suite<Peterson, 2> {
  rl::atomic<int> flag0, flag1, turn;
  rl::var<int> data;
  void before() {
    flag0($) = 0;
    flag1($) = 0;
    turn($) = 0;
  }
  void thread(unsigned i) {
    rl::atomic<int>& mine = i == 0 ? flag0 : flag1;
    rl::atomic<int>& other = i == 0 ? flag1 : flag0;
    mine($) = 1;
    turn($) = static_cast<int>(1 - i);
    while (other($) == 1 && turn($) == static_cast<int>(1 - i)) {
      CountRetry();
      rl::yield(1, $);
    }
    data($) = static_cast<int>(i);
    mine($) = 0;
  }
};

// Publication, the shape of most Relacy tests: threads 0 and 1 each write
// their rl::var and then set their flag (release); threads 2 and 3 each
// spin on one flag (acquire load, yield) and then read that data.
struct Mailbox : rl::test_suite<Mailbox, 4> {
  rl::atomic<int> flag[2];
  rl::var<int> data[2];
  void before() {
    flag[0]($) = 0;
    flag[1]($) = 0;
  }
  void thread(unsigned i) {
    if (i < 2) {
      data[i]($) = 42;
      flag[i]($).store(1, rl::memory_order_release);
      return;
    }
    const unsigned k = i - 2;
    while (flag[k]($).load(rl::memory_order_acquire) == 0) {
      CountRetry();
      rl::yield(1, $);
    }
    RL_ASSERT(data[k]($) == 42);
  }
};

// The ring of a per-CPU log or a work queue: the producer publishes a
// slot by a release store of the tail, the consumer frees it by a release
// store of the head; each waits (yield) while the ring is full or empty.
struct Spsc : rl::test_suite<Spsc, 2> {
  static constexpr unsigned kSlots = 4, kItems = 24;
  rl::atomic<unsigned> head, tail;
  rl::atomic<unsigned> slot[kSlots];
  void before() {
    head($) = 0;
    tail($) = 0;
    for (auto& s : slot) s($) = 0;
  }
  void thread(unsigned i) {
    for (unsigned k = 1; k <= kItems; ++k) {
      if (i == 0) {
        const unsigned t = tail($).load(rl::memory_order_relaxed);
        while (t - head($).load(rl::memory_order_acquire) == kSlots) {
          CountRetry();
          rl::yield(1, $);
        }
        slot[t % kSlots]($).store(k, rl::memory_order_relaxed);
        tail($).store(t + 1, rl::memory_order_release);
      } else {
        const unsigned h = head($).load(rl::memory_order_relaxed);
        while (tail($).load(rl::memory_order_acquire) == h) {
          CountRetry();
          rl::yield(1, $);
        }
        RL_ASSERT(slot[h % kSlots]($).load(rl::memory_order_relaxed) == k);
        head($).store(h + 1, rl::memory_order_release);
      }
    }
  }
};

// Per-CPU statistics: one writer per slot (a relaxed load and store, no
// RMW), a reader summing every slot now and then.
struct Stats : rl::test_suite<Stats, 5> {
  static constexpr unsigned kWriters = 4, kBumps = 20, kFolds = 5;
  rl::atomic<unsigned> slot[kWriters];
  void before() {
    for (auto& s : slot) s($) = 0;
  }
  void thread(unsigned i) {
    if (i < kWriters) {
      for (unsigned k = 0; k < kBumps; ++k) {
        const unsigned v = slot[i]($).load(rl::memory_order_relaxed);
        slot[i]($).store(v + 1, rl::memory_order_relaxed);
      }
      return;
    }
    for (unsigned r = 0; r < kFolds; ++r) {
      unsigned sum = 0;
      for (auto& s : slot) sum += s($).load(rl::memory_order_relaxed);
      RL_ASSERT(sum <= kWriters * kBumps);
    }
  }
};

// A Treiber-style stack of node indices (next[] holds the links): each
// thread pushes its four nodes, then pops four, by weak CAS loops.
struct Stack : rl::test_suite<Stack, 3> {
  static constexpr int kPerThread = 4;
  rl::atomic<int> top;
  rl::atomic<int> next[3 * kPerThread];
  void before() {
    top($) = -1;
    for (auto& n : next) n($) = -1;
  }
  void thread(unsigned i) {
    for (int k = 0; k < kPerThread; ++k) {
      const int node = static_cast<int>(i) * kPerThread + k;
      int t = top($).load(rl::memory_order_relaxed);
      for (;;) {
        next[node]($).store(t, rl::memory_order_relaxed);
        if (top($).compare_exchange_weak(t, node, rl::memory_order_release,
                                         rl::memory_order_relaxed))
          break;
        CountRetry();
      }
    }
    for (int k = 0; k < kPerThread; ++k) {
      int t = top($).load(rl::memory_order_acquire);
      while (t >= 0 && !top($).compare_exchange_weak(
                           t, next[t]($).load(rl::memory_order_relaxed),
                           rl::memory_order_acquire, rl::memory_order_acquire))
        CountRetry();
    }
  }
};

// A counter bumped by CAS loops, as lock-free code retries: each thread
// reads, then tries to swap in the next value until no other thread got
// there first.
struct CasCounter : rl::test_suite<CasCounter, 3> {
  rl::atomic<unsigned> count;
  void before() { count($) = 0; }
  void thread(unsigned) {
    for (int k = 0; k < 3; ++k) {
      unsigned v = count($).load(rl::memory_order_relaxed);
      while (!count($).compare_exchange_strong(
          v, v + 1, rl::memory_order_acq_rel, rl::memory_order_relaxed)) {
        CountRetry();
      }
    }
  }
  void after() { RL_ASSERT(count($).load(rl::memory_order_relaxed) == 9); }
};

template <typename Suite>
int Run(bool full, unsigned long long iterations, unsigned long long seed,
        unsigned jobs) {
  rl::test_params p;
  if (full) {
    p.search_type = rl::sched_full;
  } else {
    p.search_type = rl::sched_random;
    p.iteration_count = static_cast<unsigned>(iterations);
    g_count_retries = true;
  }
#ifdef RL_REAL
  (void)seed;  // Relacy seeds iteration i with i
  (void)jobs;  // Relacy runs in one process
#else
  p.seed = seed;
  p.jobs = jobs;
  p.print_summary = false;
#endif
  const bool ok = rl::simulate<Suite>(p);
  std::printf("executions %llu\n",
              static_cast<unsigned long long>(p.stop_iteration));
  std::printf("retries %llu\n", g_retries);
  return ok ? 0 : 1;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(
        stderr,
        "usage: %s seqcount|loads|counter|counter-relaxed|cas-counter|peterson|"
        "mailbox|spsc|stats|stack random N "
        "[SEED] | seqcount full\n",
        argv[0]);
    return 2;
  }
  const bool full = std::strcmp(argv[2], "full") == 0;
  const unsigned long long n =
      argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 1000;
  const unsigned long long seed =
      argc > 4 ? std::strtoull(argv[4], nullptr, 10) : 1;
  const unsigned jobs =
      argc > 5 ? static_cast<unsigned>(std::strtoul(argv[5], nullptr, 10)) : 1;
  if (std::strcmp(argv[1], "seqcount") == 0)
    return Run<SeqCount>(full, n, seed, jobs);
  if (std::strcmp(argv[1], "loads") == 0 && !full)
    return Run<Loads>(false, n, seed, jobs);
  if (std::strcmp(argv[1], "counter") == 0 && !full)
    return Run<Counter<rl::memory_order_seq_cst>>(false, n, seed, jobs);
  if (std::strcmp(argv[1], "counter-relaxed") == 0 && !full)
    return Run<Counter<rl::memory_order_relaxed>>(false, n, seed, jobs);
  if (std::strcmp(argv[1], "cas-counter") == 0 && !full)
    return Run<CasCounter>(false, n, seed, jobs);
  if (std::strcmp(argv[1], "mailbox") == 0 && !full)
    return Run<Mailbox>(false, n, seed, jobs);
  if (std::strcmp(argv[1], "peterson") == 0 && !full)
    return Run<Peterson>(false, n, seed, jobs);
  if (std::strcmp(argv[1], "spsc") == 0 && !full)
    return Run<Spsc>(false, n, seed, jobs);
  if (std::strcmp(argv[1], "stats") == 0 && !full)
    return Run<Stats>(false, n, seed, jobs);
  if (std::strcmp(argv[1], "stack") == 0 && !full)
    return Run<Stack>(false, n, seed, jobs);
  std::fprintf(stderr, "unknown program %s %s\n", argv[1], argv[2]);
  return 2;
}
