// Replay of failing executions, search modes, and spin/livelock handling.
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>

#include "doctest/doctest.h"
#include "relacy/relacy.hpp"
#include "test_support.h"

namespace {

// Fails only when both threads see the other's store late (SB 0,0).
struct SbAssert : rl::test_suite<SbAssert, 2, rl::test_result_success> {
  rl::atomic<int> x{0}, y{0};
  int r0 = -1, r1 = -1;
  void thread(unsigned i) {
    if (i == 0) {
      x.store(1, rl::mo_relaxed);
      r0 = y.load(rl::mo_relaxed);
    } else {
      y.store(1, rl::mo_relaxed);
      r1 = x.load(rl::mo_relaxed);
    }
  }
  void after() { RL_ASSERT(r0 == 1 || r1 == 1); }
};

std::string TraceOf(const std::string& out) {
  // The trace starts at the failing-execution header.
  size_t at = out.find("---- failing execution");
  size_t end = out.find("replay with");
  REQUIRE(at != std::string::npos);
  REQUIRE(end != std::string::npos);
  return out.substr(at, end - at);
}

// Feeds a failed search's final_state back as initial_state: the replay
// must end in the same failure, as the same iteration, with the same state
// and trace (out1: the search's output). Returns the trace.
template <typename Suite>
std::string CheckReplay(const rl::test_params& p1, const std::string& out1) {
  std::ostringstream out2;
  rl::test_params p2;
  p2.output_stream = &out2;
  p2.initial_state = p1.final_state;
  CHECK(!rl::simulate<Suite>(p2));
  CHECK(p2.test_result == p1.test_result);
  CHECK(p2.stop_iteration == p1.stop_iteration);
  CHECK(p2.final_state == p1.final_state);
  CHECK(p2.executions + p2.blocked_executions == 0);  // only the replay ran
  const std::string trace = TraceOf(out2.str());
  CHECK(TraceOf(out1) == trace);
  return trace;
}

TEST_CASE("replay: final_state fed back as initial_state reproduces it") {
  std::ostringstream out1;
  rl::test_params p1;
  p1.output_stream = &out1;
  CHECK(!rl::simulate<SbAssert>(p1));
  CHECK(p1.test_result == rl::test_result_user_assert_failed);
  REQUIRE(!p1.final_state.empty());
  CheckReplay<SbAssert>(p1, out1.str());
  MESSAGE(out1.str());
}

TEST_CASE("replay: a random-mode failure replays too, with its seed printed") {
  std::ostringstream out1;
  rl::test_params p1;
  p1.output_stream = &out1;
  p1.search_type = rl::sched_random;
  p1.iteration_count = 10000;
  p1.seed = 12345;
  CHECK(!rl::simulate<SbAssert>(p1));
  CHECK(out1.str().find("seed 12345") != std::string::npos);
  CheckReplay<SbAssert>(p1, out1.str());
}

// A seqlock whose writer has no release fence before its data stores: a
// reader may see them torn. Its before() stores and the reader's acquire
// fence make no events in a random run (Engine::MainOp, Engine::Fence);
// the replay makes them, for the trace.
struct TornSeqlock : rl::test_suite<TornSeqlock, 2> {
  rl::atomic<unsigned> seq, lo, hi;
  void before() {
    // Pairs with: nothing; before() happens before every thread. Their
    // orders (seq_cst, release) are there for the random run to fold the
    // stores into the constructions whatever the order.
    seq.store(0);
    lo.store(0);
    hi.store(0, rl::mo_release);
  }
  void thread(unsigned i) {
    if (i == 0) {
      for (unsigned v = 1; v <= 2; ++v) {
        const unsigned s = seq.load(rl::mo_relaxed);
        seq.store(s + 1, rl::mo_relaxed);
        lo.store(v, rl::mo_relaxed);
        hi.store(v, rl::mo_relaxed);
        // Pairs with: the reader's acquire load of seq (s1).
        seq.store(s + 2, rl::mo_release);
      }
      return;
    }
    for (;;) {
      // Pairs with: the writer's release store of seq (s + 2).
      const unsigned s1 = seq.load(rl::mo_acquire);
      const unsigned l = lo.load(rl::mo_relaxed);
      const unsigned h = hi.load(rl::mo_relaxed);
      // Pairs with: a release fence before the writer's data stores, which
      // the writer lacks (the bug): the data read may be torn.
      rl::atomic_thread_fence(rl::mo_acquire);
      if ((s1 & 1) == 0 && s1 == seq.load(rl::mo_relaxed)) {
        RL_ASSERT(l == h);
        return;
      }
      rl::yield(1);
    }
  }
};

// A random search of Suite from `seed` that must fail with `result`, and
// the replay of its failure (CheckReplay). Returns the trace; the failing
// execution's number in *stop_iteration if asked.
template <typename Suite>
std::string RandomFailureReplayed(
    unsigned long long seed, unsigned iterations, rl::test_result_e result,
    unsigned long long* stop_iteration = nullptr) {
  std::ostringstream out1;
  rl::test_params p1;
  p1.output_stream = &out1;
  p1.search_type = rl::sched_random;
  p1.iteration_count = iterations;
  p1.seed = seed;
  CHECK(!rl::simulate<Suite>(p1));
  CHECK(p1.test_result == result);
  if (stop_iteration != nullptr) *stop_iteration = p1.stop_iteration;
  return CheckReplay<Suite>(p1, out1.str());
}

TEST_CASE("replay: a random run's events left unmade replay the same") {
  for (unsigned long long seed = 1; seed <= 8; ++seed) {
    CAPTURE(seed);
    const std::string trace = RandomFailureReplayed<TornSeqlock>(
        seed, 100000, rl::test_result_user_assert_failed);
    // The trace has the events the random run did not make.
    CHECK(trace.find("main: store(seq_cst)") != std::string::npos);
    CHECK(trace.find("main: store(release)") != std::string::npos);
    CHECK(trace.find("fence(acquire)") != std::string::npos);
    // And the writer's load of seq, whose only write to read is its own
    // latest store (Engine::ReadWithoutEvent).
    CHECK(trace.find("thread 0: load(relaxed)") != std::string::npos);
  }
}

struct Cell {
  rl::atomic<int> value{0};
};

// Thread 0 reads a cell built before the threads start: its load has one
// write to read, which it already knows, so a random run makes no event
// for it (Engine::ReadWithoutEvent). Thread 1 then frees the cell. With
// the relaxed flag the free does not happen after the read: a use after
// free, found at the free (the read came first). With release/acquire it
// does, and the run passes.
template <rl::memory_order kFlagStore, rl::memory_order kFlagLoad>
struct FreeAfterRead : rl::test_suite<FreeAfterRead<kFlagStore, kFlagLoad>, 2> {
  Cell* cell = nullptr;
  rl::atomic<int> read{0};
  void before() { cell = new Cell; }
  void thread(unsigned i) {
    if (i == 0) {
      (void)cell->value.load(rl::mo_relaxed);
      // Pairs with: the load of read below, where both are release/acquire.
      read.store(1, kFlagStore);
      return;
    }
    while (read.load(kFlagLoad) == 0) rl::yield(1);
    delete cell;
  }
};

TEST_CASE("replay: a random run's load without an event races with a free") {
  using Racy = FreeAfterRead<rl::mo_relaxed, rl::mo_relaxed>;
  for (unsigned long long seed = 1; seed <= 8; ++seed) {
    CAPTURE(seed);
    unsigned long long stop = 0;
    const std::string trace = RandomFailureReplayed<Racy>(
        seed, 1000, rl::test_result_access_to_freed_memory, &stop);
    CHECK(stop == 1);  // every execution has the race
    // The replay makes the load and names it.
    CHECK(trace.find("thread 0: load(relaxed)") != std::string::npos);
    CHECK(trace.find("is not ordered before") != std::string::npos);
  }
  using Ordered = FreeAfterRead<rl::mo_release, rl::mo_acquire>;
  CHECK(rl_test::RunRandom<Ordered>(2000) == rl::test_result_success);
}

// Thread 1 reads x's store relaxed, then again seq_cst, and says so in
// done. Its second load has one write to read, so a random run makes no
// event for it, but as a seq_cst load it still raises x's floor of the SC
// order as executed (Engine::ScReadWithoutEvent). Thread 2's seq_cst load,
// run after it, then cannot read the older 0. C++20 allows that read
// (thread 2 learns of thread 1's load through relaxed accesses only, so S
// may put its load first): the exhaustive search reports it; a random run
// samples only executions whose SC order is the order it runs ("The SC
// order as executed", docs/verification.md), and passes.
struct ScFloorWithoutEvent : rl::test_suite<ScFloorWithoutEvent, 3> {
  rl::atomic<int> x{0}, done{0};
  void thread(unsigned i) {
    if (i == 0) {
      x.store(1, rl::mo_relaxed);
    } else if (i == 1) {
      const bool seen = x.load(rl::mo_relaxed) == 1;
      if (seen) (void)x.load(rl::mo_seq_cst);
      done.store(seen ? 2 : 1, rl::mo_relaxed);
    } else {
      int d;
      while ((d = done.load(rl::mo_relaxed)) == 0) rl::yield(1);
      if (d == 2) RL_ASSERT(x.load(rl::mo_seq_cst) == 1);
    }
  }
};

TEST_CASE("replay: a seq_cst load without an event raises the SC floor") {
  CHECK(rl_test::RunRandom<ScFloorWithoutEvent>(5000) ==
        rl::test_result_success);
  CHECK(rl_test::RunFull<ScFloorWithoutEvent>() ==
        rl::test_result_user_assert_failed);
}

// Thread 2's seq_cst load reads thread 1's relaxed x = 1 and raises x's
// SC floor there; thread 0's seq_cst load then has one write to read, the
// floor's, though thread 0 has not seen it. The floor bounds only later
// seq_cst accesses: thread 0's relaxed re-read (and thread 3's, which
// learns of thread 0's load through y) is bounded by what the load itself
// added to the reader's coherence, so the load must make its event. Until
// it did, a random run reported r1 == 1, r2 == 0 (read-read coherence,
// [intro.races]/16, forbids it; the replay, which makes every event, then
// passed).
struct ScFloorAlone : rl::test_suite<ScFloorAlone, 4> {
  rl::atomic<int> x{0}, y{0};
  void thread(unsigned i) {
    if (i == 0) {
      const int r1 = x.load(rl::mo_seq_cst);
      y.store(r1, rl::mo_release);
      const int r2 = x.load(rl::mo_relaxed);
      RL_ASSERT(!(r1 == 1 && r2 == 0));
    } else if (i == 1) {
      x.store(1, rl::mo_relaxed);
    } else if (i == 2) {
      (void)x.load(rl::mo_seq_cst);
    } else if (y.load(rl::mo_acquire) == 1) {
      RL_ASSERT(x.load(rl::mo_relaxed) == 1);
    }
  }
};

TEST_CASE("replay: a seq_cst load held by the SC floor alone makes its event") {
  CHECK(rl_test::RunRandom<ScFloorAlone>(20000) == rl::test_result_success);
  CHECK(rl_test::RunFull<ScFloorAlone>() == rl::test_result_success);
}

TEST_CASE("replay: a seqcount-style race replays from its state") {
  // Reuse of the string after a full search in a fresh process is the same
  // operation: the string encodes decision indices only.
  rl::test_params p;
  p.search_type = rl::sched_full;  // exhaustive
  p.output_history = false;
  p.initial_state = "v1";  // all-first choices: a passing execution
  CHECK(rl::simulate<SbAssert>(p));
  CHECK(p.executions == 1);
}

// sched_bound: deferred reads are bounded; with bound 0 the reads only see
// writes of lower-numbered threads placed before them.
struct SbCount : rl::test_suite<SbCount, 2> {
  rl::atomic<int> x{0}, y{0};
  void thread(unsigned i) {
    if (i == 0) {
      x.store(1, rl::mo_relaxed);
      y.load(rl::mo_relaxed);
    } else {
      y.store(1, rl::mo_relaxed);
      x.load(rl::mo_relaxed);
    }
  }
};
TEST_CASE("search: sched_bound explores a subset, sched_full all") {
  rl::test_params full;
  full.search_type = rl::sched_full;  // exhaustive
  CHECK(rl::simulate<SbCount>(full));
  CHECK(full.executions == 4);
  rl::test_params b0;
  b0.search_type = rl::sched_bound;
  b0.context_bound = 0;
  CHECK(rl::simulate<SbCount>(b0));
  CHECK(b0.executions == 2);
  rl::test_params b1;
  b1.search_type = rl::sched_bound;
  b1.context_bound = 1;
  CHECK(rl::simulate<SbCount>(b1));
  CHECK(b1.executions == 4);
  rl::test_params rnd;
  rnd.search_type = rl::sched_random;
  rnd.iteration_count = 50;
  CHECK(rl::simulate<SbCount>(rnd));
  CHECK(rnd.executions + rnd.blocked_executions == 50);
}

// A waiter whose flag is never set: every thread is blocked spinning.
struct NeverSet : rl::test_suite<NeverSet, 2, rl::test_result_livelock> {
  rl::atomic<int> flag{0};
  rl::atomic<int> other{0};
  void thread(unsigned i) {
    if (i == 0) {
      other.store(1, rl::mo_relaxed);
    } else {
      while (flag.load(rl::mo_acquire) == 0) rl::yield(1);
    }
  }
};
TEST_CASE("spin: a wait that can never end is a livelock") {
  rl::test_params p;
  p.search_type = rl::sched_full;  // exhaustive
  p.output_history = false;
  CHECK(rl::simulate<NeverSet>(p));
}

// A spin loop without rl::yield hits the depth limit: Relacy's verdict is
// LIVELOCK.
struct NoYield : rl::test_suite<NoYield, 2, rl::test_result_livelock> {
  rl::atomic<int> flag{0};
  void thread(unsigned i) {
    if (i == 1) {
      while (flag.load(rl::mo_acquire) == 0) {
      }
    }
  }
};
TEST_CASE("spin: a loop without yield is a livelock at execution_depth_limit") {
  rl::test_params p;
  p.search_type = rl::sched_full;  // exhaustive
  p.output_history = false;
  p.execution_depth_limit = 200;
  CHECK(rl::simulate<NoYield>(p));
}

// Spin-wait for a flag set by another thread: finite, and the number of
// executions does not depend on the thread numbering.
template <unsigned kWaiter>
struct WaitFlag : rl::test_suite<WaitFlag<kWaiter>, 2> {
  rl::atomic<int> flag{0};
  rl::var<int> data{0};
  void thread(unsigned i) {
    if (i != kWaiter) {
      VAR(data) = 42;
      flag.store(1, rl::mo_release);
    } else {
      while (flag.load(rl::mo_acquire) == 0) rl::yield(1);
      RL_ASSERT(VAR(data) == 42);
    }
  }
};
TEST_CASE("spin: waiting for a flag is explored finitely") {
  rl::test_params a, b;
  CHECK(rl::simulate<WaitFlag<0>>(a));
  CHECK(rl::simulate<WaitFlag<1>>(b));
  CHECK(a.executions >= 1);
  CHECK(b.executions >= 1);
}

// Fails only if thread 1 makes all its kSteps stores before thread 0's
// one load: rare in a random search (about one iteration in 2^kSteps), so
// the first failure lies deep in a forked search's chunks.
struct LateFailure : rl::test_suite<LateFailure, 2> {
  static constexpr int kSteps = 9;
  rl::atomic<int> count{0};
  void thread(unsigned i) {
    if (i == 0) {
      RL_ASSERT(count.load(rl::mo_relaxed) != kSteps);
    } else {
      for (int k = 1; k <= kSteps; ++k) count.store(k, rl::mo_relaxed);
    }
  }
};

// The outcome of one random search of Suite with jobs processes.
struct SearchResult {
  bool passed;
  rl::test_result_e result;
  unsigned long long stop_iteration, executions, pruned;
  std::string state, trace;
};
template <typename Suite>
SearchResult RandomSearch(unsigned long long seed, unsigned iterations,
                          unsigned jobs) {
  std::ostringstream out;
  rl::test_params p;
  p.search_type = rl::sched_random;
  p.iteration_count = iterations;
  p.seed = seed;
  p.jobs = jobs;
  p.output_stream = &out;
  const bool passed = rl::simulate<Suite>(p);
  const std::string o = out.str();
  // The trace, up to the summary line (which has the run's seconds).
  const size_t at = o.find("---- failing execution");
  const size_t end = o.find('\n', o.find("replay with", at));
  return {passed,
          p.test_result,
          p.stop_iteration,
          p.executions,
          p.blocked_executions,
          p.final_state,
          at == std::string::npos ? "" : o.substr(at, end - at)};
}

template <typename Suite>
void SameWithJobs(unsigned long long seed, unsigned iterations, unsigned jobs) {
  CAPTURE(seed);
  CAPTURE(jobs);
  const SearchResult one = RandomSearch<Suite>(seed, iterations, 1);
  const SearchResult many = RandomSearch<Suite>(seed, iterations, jobs);
  CHECK(many.passed == one.passed);
  CHECK(many.result == one.result);
  CHECK(many.stop_iteration == one.stop_iteration);
  CHECK(many.executions == one.executions);
  CHECK(many.pruned == one.pruned);
  CHECK(many.state == one.state);
  CHECK(many.trace == one.trace);
}

TEST_CASE("search: a forked random search finds what one process finds") {
  // Each iteration has its own seed, so the lowest failing iteration, its
  // state and trace, and the counts before it do not depend on the number
  // of processes (nor on which process ran which chunk).
  int deep = 0;
  for (unsigned long long seed = 1; seed <= 6; ++seed) {
    const SearchResult one = RandomSearch<LateFailure>(seed, 20000, 1);
    REQUIRE(!one.passed);                  // found within 20,000 iterations
    if (one.stop_iteration > 200) ++deep;  // past a 2-job search's chunk 0
    for (unsigned jobs : {2u, 3u}) SameWithJobs<LateFailure>(seed, 20000, jobs);
  }
  CHECK(deep >= 3);  // most failures lie in a later chunk
  // With SIGCHLD ignored (workers reaped unseen, waitpid() fails) the
  // workers' end is still awaited and their records read.
  void (*saved)(int) = std::signal(SIGCHLD, SIG_IGN);
  std::ostringstream err;
  std::streambuf* saved_err = std::cerr.rdbuf(err.rdbuf());
  SameWithJobs<LateFailure>(4, 20000, 2);
  SameWithJobs<SbCount>(4, 3000, 2);
  std::cerr.rdbuf(saved_err);
  std::signal(SIGCHLD, saved);
  CHECK(err.str().empty());  // forked, not run again in this process
  // Passing searches, one with pruned iterations (a spin on a flag): every
  // iteration counted once.
  for (unsigned long long seed = 1; seed <= 3; ++seed) {
    SameWithJobs<SbCount>(seed, 3000, 2);
    SameWithJobs<WaitFlag<1>>(seed, 3000, 2);
    const SearchResult r = RandomSearch<WaitFlag<1>>(seed, 3000, 2);
    CHECK(r.passed);
    CHECK(r.executions + r.pruned == 3000);
  }
}

TEST_CASE("search: a forked search prints progress lines as it runs") {
  std::ostringstream progress, out;
  rl::test_params p;
  p.search_type = rl::sched_random;
  p.iteration_count = 100000;  // about 0.05 s in two processes
  p.seed = 7;
  p.jobs = 2;
  p.progress_output_period = 0;  // forked: every 10 ms
  p.progress_stream = &progress;
  p.output_stream = &out;
  CHECK(rl::simulate<SbCount>(p));
  CHECK(p.executions + p.blocked_executions == 100000);
  CHECK(progress.str().find(" pruned (2 worker processes)\n") !=
        std::string::npos);
  p.quiet_progress = true;
  std::ostringstream none;
  p.progress_stream = &none;
  CHECK(rl::simulate<SbCount>(p));
  CHECK(none.str().empty());
}

// Leaves the process when it is not the one that started the test: a
// forked search's workers die, the calling process runs on. kHow: exits
// with status 3, exits with 0 before the worker's end, or is killed.
int g_test_process = 0;
template <int kHow>
struct DiesInWorkers : rl::test_suite<DiesInWorkers<kHow>, 2> {
  rl::atomic<int> x{0};
  void thread(unsigned i) {
    if (getpid() != g_test_process) {
      if (kHow == 0) _exit(3);
      if (kHow == 1) _exit(0);
      raise(SIGKILL);
    }
    x.store(static_cast<int>(i), rl::mo_relaxed);
  }
};

// Whether a random search of DiesInWorkers<kHow> with `jobs` forked
// (its workers died and said so: "<said>; running the search in this
// process"), and that its result is the one-process search's.
template <int kHow>
bool ForkedAndRanHere(unsigned jobs, const char* said) {
  g_test_process = getpid();
  const SearchResult one = RandomSearch<DiesInWorkers<kHow>>(5, 2000, 1);
  std::ostringstream err;
  std::streambuf* saved = std::cerr.rdbuf(err.rdbuf());
  const SearchResult many = RandomSearch<DiesInWorkers<kHow>>(5, 2000, jobs);
  std::cerr.rdbuf(saved);
  CHECK(one.passed);
  CHECK(one.executions == 2000);
  CHECK(many.passed);
  CHECK(many.executions == one.executions);
  CHECK(many.pruned == one.pruned);
  return err.str().find(std::string(said) +
                        "; running the search in this process") !=
         std::string::npos;
}

TEST_CASE("search: a forked search whose worker dies runs in this process") {
  CHECK(ForkedAndRanHere<0>(2, "exited with status 3"));
  CHECK(ForkedAndRanHere<1>(2, "exited before its end"));
  CHECK(ForkedAndRanHere<2>(2, "died of signal 9"));
  CHECK(!ForkedAndRanHere<0>(1, "exited with status 3"));
}

TEST_CASE("search: RL_JOBS forks a search; jobs 0 takes every CPU") {
  REQUIRE(setenv("RL_JOBS", "2", 1) == 0);
  CHECK(ForkedAndRanHere<0>(1, "exited with status 3"));
  REQUIRE(setenv("RL_JOBS", "1", 1) == 0);
  CHECK(!ForkedAndRanHere<0>(2, "exited with status 3"));
  REQUIRE(unsetenv("RL_JOBS") == 0);
  CHECK(ForkedAndRanHere<0>(0, "exited with status 3") ==
        (sysconf(_SC_NPROCESSORS_ONLN) > 1));
}

}  // namespace
