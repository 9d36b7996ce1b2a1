// Litmus tests: checks the checker against the C++20 (RC11) memory model.
// For each shape, every allowed outcome must be found and no forbidden one.
#include <algorithm>
#include <cstdint>
#include <set>
#include <vector>

#include "doctest/doctest.h"
#include "relacy/relacy.hpp"

namespace {

using Outcome = std::vector<int>;
using OutcomeSet = std::set<Outcome>;

constexpr rl::memory_order kRlx = rl::mo_relaxed;
constexpr rl::memory_order kAcq = rl::mo_acquire;
constexpr rl::memory_order kRel = rl::mo_release;
constexpr rl::memory_order kSc = rl::mo_seq_cst;

// Outcomes are recorded by after(), which runs once per complete execution.
template <typename T>
OutcomeSet& Sink() {
  static OutcomeSet s;
  return s;
}

// Explores T with lazy deferral (the default) and again with eager
// deferral: both must visit the same number of graphs with the same
// outcomes (a check of the lazy reduction).
template <typename T>
OutcomeSet Explore(unsigned long long* executions = nullptr) {
  OutcomeSet result[2];
  unsigned long long n[2];
  for (int eager = 0; eager < 2; ++eager) {
    Sink<T>().clear();
    rl::test_params p;
    p.search_type = rl::sched_full;  // exhaustive
    p.print_summary = false;
    p.lazy_deferral = eager == 0;
    CHECK(rl::simulate<T>(p));
    CHECK(p.test_result == rl::test_result_success);
    n[eager] = p.executions;
    result[eager] = Sink<T>();
  }
  CHECK(n[0] == n[1]);
  CHECK(result[0] == result[1]);
  if (executions != nullptr) *executions = n[0];
  return result[0];
}

bool Has(const OutcomeSet& s, const Outcome& o) { return s.count(o) != 0; }

// ---------------------------------------------------------------- SB
// Store buffering: x=1; r0=y || y=1; r1=x. Outcome (r0, r1).
// kFence: 0 none, 1 SC fence in both threads, 2 SC fence only in thread 0
// (thread 1 uses the given orders).
template <rl::memory_order kStore, rl::memory_order kLoad, int kFence,
          rl::memory_order kStore1 = kStore, rl::memory_order kLoad1 = kLoad>
struct SB : rl::test_suite<SB<kStore, kLoad, kFence, kStore1, kLoad1>, 2> {
  rl::atomic<int> x{0}, y{0};
  int r[2] = {-1, -1};
  void thread(unsigned i) {
    if (i == 0) {
      x.store(1, kStore);
      if (kFence != 0) rl::atomic_thread_fence(kSc);
      r[0] = y.load(kLoad);
    } else {
      y.store(1, kStore1);
      if (kFence == 1) rl::atomic_thread_fence(kSc);
      r[1] = x.load(kLoad1);
    }
  }
  void after() { Sink<SB>().insert({r[0], r[1]}); }
};

TEST_CASE("SB relaxed: 0,0 allowed; exactly the 4 graphs explored") {
  unsigned long long n = 0;
  auto s = Explore<SB<kRlx, kRlx, 0>>(&n);
  CHECK(s == OutcomeSet{{0, 0}, {0, 1}, {1, 0}, {1, 1}});
  CHECK(n == 4);
}
TEST_CASE("SB release/acquire: 0,0 allowed") {
  auto s = Explore<SB<kRel, kAcq, 0>>();
  CHECK(Has(s, {0, 0}));
  CHECK(s.size() == 4);
}
TEST_CASE("SB seq_cst: 0,0 forbidden") {
  auto s = Explore<SB<kSc, kSc, 0>>();
  CHECK(s == OutcomeSet{{0, 1}, {1, 0}, {1, 1}});
}
TEST_CASE("SB relaxed with SC fences in both threads: 0,0 forbidden") {
  auto s = Explore<SB<kRlx, kRlx, 1>>();
  CHECK(s == OutcomeSet{{0, 1}, {1, 0}, {1, 1}});
}
TEST_CASE("SB C++20: SC fence in one thread, SC accesses in other: forbidden") {
  auto s = Explore<SB<kRlx, kRlx, 2, kSc, kSc>>();
  CHECK(s == OutcomeSet{{0, 1}, {1, 0}, {1, 1}});
}
TEST_CASE("SB: SC fence in one thread only, relaxed other: 0,0 allowed") {
  auto s = Explore<SB<kRlx, kRlx, 2>>();
  CHECK(Has(s, {0, 0}));
}

// The main thread's seq_cst operations (before() re-initializing with
// seq_cst stores and an SC fence, as Relacy tests write `x($) = 0`; after()
// reading back with seq_cst loads) are left out of the SC-order graph: they
// can lie on no cycle (MainOutsideThreads() in the engine). The outcomes
// and the executions explored must be those of the shape without them; the
// _sc_check build compares every verdict with the full graph, which keeps
// them as nodes.
template <typename Base>
struct MainScSuite
    : rl::test_suite<MainScSuite<Base>, Base::params::thread_count> {
  Base inner;
  // These seq_cst stores, loads and fences pair with nothing in the test
  // threads: before() happens before them and they happen before after()
  // through thread start and join; they only add SC events outside them.
  void before() {
    inner.x.store(0, kSc);
    inner.y.store(0, kSc);
    rl::atomic_thread_fence(kSc);
  }
  void thread(unsigned i) { inner.thread(i); }
  void after() {
    rl::atomic_thread_fence(kSc);
    RL_ASSERT(inner.x.load(kSc) == 1);
    RL_ASSERT(inner.y.load(kSc) == 1);
    inner.after();  // records into Sink<Base>()
  }
};
template <typename Base>
void CheckMainScChangesNothing() {
  unsigned long long n_base = 0, n_main = 0;
  OutcomeSet base = Explore<Base>(&n_base);
  Sink<Base>().clear();
  Explore<MainScSuite<Base>>(&n_main);
  CHECK(Sink<Base>() == base);
  CHECK(n_main == n_base);
}

TEST_CASE("SB seq_cst with the main thread's SC ops in before/after") {
  CheckMainScChangesNothing<SB<kSc, kSc, 0>>();
}
TEST_CASE("SB SC fences with the main thread's SC ops in before/after") {
  CheckMainScChangesNothing<SB<kRlx, kRlx, 1>>();
  CheckMainScChangesNothing<SB<kRlx, kRlx, 2, kSc, kSc>>();
  CheckMainScChangesNothing<SB<kRel, kAcq, 0>>();
}

// ---------------------------------------------------------------- MP
// Message passing: data=1; flag=1 || r0=flag; r1=data. Outcome (r0, r1).
// kFences: release fence before the flag store and acquire fence after the
// flag load.
template <rl::memory_order kW, rl::memory_order kR, bool kFences = false>
struct MP : rl::test_suite<MP<kW, kR, kFences>, 2> {
  rl::atomic<int> data{0}, flag{0};
  int r[2] = {-1, -1};
  void thread(unsigned i) {
    if (i == 0) {
      data.store(1, kRlx);
      if (kFences) rl::atomic_thread_fence(kRel);
      flag.store(1, kW);
    } else {
      r[0] = flag.load(kR);
      if (kFences) rl::atomic_thread_fence(kAcq);
      r[1] = data.load(kRlx);
    }
  }
  void after() { Sink<MP>().insert({r[0], r[1]}); }
};

TEST_CASE("MP relaxed: stale data allowed") {
  auto s = Explore<MP<kRlx, kRlx>>();
  CHECK(s == OutcomeSet{{0, 0}, {0, 1}, {1, 0}, {1, 1}});
}
TEST_CASE("MP release/acquire: stale data forbidden") {
  auto s = Explore<MP<kRel, kAcq>>();
  CHECK(s == OutcomeSet{{0, 0}, {0, 1}, {1, 1}});
}
TEST_CASE("MP release fence + acquire fence, relaxed accesses: forbidden") {
  auto s = Explore<MP<kRlx, kRlx, true>>();
  CHECK(s == OutcomeSet{{0, 0}, {0, 1}, {1, 1}});
}
TEST_CASE("MP release store, relaxed load without fence: stale allowed") {
  auto s = Explore<MP<kRel, kRlx>>();
  CHECK(Has(s, {1, 0}));
}

// ---------------------------------------------------------------- LB
// Load buffering: r0=x; y=1 || r1=y; x=1. (1,1) is excluded because the
// checker forbids porf cycles (no out-of-thin-air; RC11, stronger than the
// C++20 text, which allows it for relaxed accesses).
template <rl::memory_order kR, rl::memory_order kW>
struct LB : rl::test_suite<LB<kR, kW>, 2> {
  rl::atomic<int> x{0}, y{0};
  int r[2] = {-1, -1};
  void thread(unsigned i) {
    if (i == 0) {
      r[0] = x.load(kR);
      y.store(1, kW);
    } else {
      r[1] = y.load(kR);
      x.store(1, kW);
    }
  }
  void after() { Sink<LB>().insert({r[0], r[1]}); }
};

TEST_CASE("LB relaxed: 1,1 forbidden (no out-of-thin-air, porf acyclic)") {
  auto s = Explore<LB<kRlx, kRlx>>();
  CHECK(s == OutcomeSet{{0, 0}, {0, 1}, {1, 0}});
}
TEST_CASE("LB acquire/release: 1,1 forbidden") {
  auto s = Explore<LB<kAcq, kRel>>();
  CHECK(s == OutcomeSet{{0, 0}, {0, 1}, {1, 0}});
}

// ---------------------------------------------------------------- IRIW
// x=1 || y=1 || r0=x; r1=y || r2=y; r3=x. Disagreement: (1,0,1,0).
// kFences: SC fence between the two reads of each reader.
template <rl::memory_order kW, rl::memory_order kR, bool kFences = false>
struct IRIW : rl::test_suite<IRIW<kW, kR, kFences>, 4> {
  rl::atomic<int> x{0}, y{0};
  int r[4] = {-1, -1, -1, -1};
  void thread(unsigned i) {
    switch (i) {
      case 0:
        x.store(1, kW);
        break;
      case 1:
        y.store(1, kW);
        break;
      case 2:
        r[0] = x.load(kR);
        if (kFences) rl::atomic_thread_fence(kSc);
        r[1] = y.load(kR);
        break;
      case 3:
        r[2] = y.load(kR);
        if (kFences) rl::atomic_thread_fence(kSc);
        r[3] = x.load(kR);
        break;
    }
  }
  void after() { Sink<IRIW>().insert({r[0], r[1], r[2], r[3]}); }
};

TEST_CASE("IRIW release/acquire: readers may disagree") {
  auto s = Explore<IRIW<kRel, kAcq>>();
  CHECK(Has(s, {1, 0, 1, 0}));
  CHECK(s.size() == 16);
}
TEST_CASE("IRIW seq_cst: readers agree") {
  auto s = Explore<IRIW<kSc, kSc>>();
  CHECK(!Has(s, {1, 0, 1, 0}));
  CHECK(s.size() == 15);
}
TEST_CASE("IRIW relaxed with SC fences between the reads: readers agree") {
  auto s = Explore<IRIW<kRlx, kRlx, true>>();
  CHECK(!Has(s, {1, 0, 1, 0}));
  CHECK(s.size() == 15);
}
TEST_CASE("IRIW seq_cst writes, acquire reads: readers may disagree") {
  auto s = Explore<IRIW<kSc, kAcq>>();
  CHECK(Has(s, {1, 0, 1, 0}));
}
TEST_CASE("IRIW with the main thread's SC ops in before/after") {
  CheckMainScChangesNothing<IRIW<kSc, kSc>>();
  CheckMainScChangesNothing<IRIW<kRlx, kRlx, true>>();
  CheckMainScChangesNothing<IRIW<kSc, kAcq>>();
}

// ---------------------------------------------------------------- coherence
// CoRR: x=1 || r0=x; r1=x. (1,0) forbidden.
struct CoRR : rl::test_suite<CoRR, 2> {
  rl::atomic<int> x{0};
  int r[2] = {-1, -1};
  void thread(unsigned i) {
    if (i == 0) {
      x.store(1, kRlx);
    } else {
      r[0] = x.load(kRlx);
      r[1] = x.load(kRlx);
    }
  }
  void after() { Sink<CoRR>().insert({r[0], r[1]}); }
};
TEST_CASE("CoRR: reads do not go back in modification order") {
  auto s = Explore<CoRR>();
  CHECK(s == OutcomeSet{{0, 0}, {0, 1}, {1, 1}});
}

// CoRR2: x=1 || x=2 || r0=x; r1=x || r2=x; r3=x. Readers must not see the
// two writes in opposite orders.
struct CoRR2 : rl::test_suite<CoRR2, 4> {
  rl::atomic<int> x{0};
  int r[4] = {-1, -1, -1, -1};
  void thread(unsigned i) {
    if (i < 2) {
      x.store(static_cast<int>(i) + 1, kRlx);
    } else {
      r[(i - 2) * 2] = x.load(kRlx);
      r[(i - 2) * 2 + 1] = x.load(kRlx);
    }
  }
  void after() { Sink<CoRR2>().insert({r[0], r[1], r[2], r[3]}); }
};
TEST_CASE("CoRR2: all threads agree on the modification order") {
  auto s = Explore<CoRR2>();
  CHECK(!Has(s, {1, 2, 2, 1}));
  CHECK(!Has(s, {2, 1, 1, 2}));
  CHECK(Has(s, {1, 2, 1, 2}));
  CHECK(Has(s, {2, 1, 2, 1}));
  CHECK(Has(s, {1, 1, 2, 2}));
}

// CoWW: x=1; x=2 in one thread; the final value is 2.
// CoRW: r0=x; x=1 || x=2: r0 never reads its own later write, and if it
// read 2 then 2 is mo-before 1 (final 1).
// CoWR: x=1; r0=x || x=2: if r0 reads 2, then 1 is mo-before 2 (final 2).
struct CoWW : rl::test_suite<CoWW, 2> {
  rl::atomic<int> x{0};
  void thread(unsigned i) {
    if (i == 0) {
      x.store(1, kRlx);
      x.store(2, kRlx);
    } else {
      x.store(3, kRlx);
    }
  }
  void after() { Sink<CoWW>().insert({x.load(kRlx)}); }
};
TEST_CASE("CoWW: program order of writes is modification order") {
  auto s = Explore<CoWW>();
  CHECK(s == OutcomeSet{{2}, {3}});
}

struct CoRW : rl::test_suite<CoRW, 2> {
  rl::atomic<int> x{0};
  int r0 = -1;
  void thread(unsigned i) {
    if (i == 0) {
      r0 = x.load(kRlx);
      x.store(1, kRlx);
    } else {
      x.store(2, kRlx);
    }
  }
  void after() { Sink<CoRW>().insert({r0, x.load(kRlx)}); }
};
TEST_CASE("CoRW: a read is not affected by a po-later write") {
  auto s = Explore<CoRW>();
  CHECK(s == OutcomeSet{{0, 1}, {0, 2}, {2, 1}});
}

struct CoWR : rl::test_suite<CoWR, 2> {
  rl::atomic<int> x{0};
  int r0 = -1;
  void thread(unsigned i) {
    if (i == 0) {
      x.store(1, kRlx);
      r0 = x.load(kRlx);
    } else {
      x.store(2, kRlx);
    }
  }
  void after() { Sink<CoWR>().insert({r0, x.load(kRlx)}); }
};
TEST_CASE("CoWR: a read sees its own po-earlier write or a later one") {
  auto s = Explore<CoWR>();
  CHECK(s == OutcomeSet{{1, 1}, {1, 2}, {2, 2}});
}

// ---------------------------------------------------------------- 2+2W
// x=1; y=2 || y=1; x=2. Final (x, y) == (1, 1) needs mo against po order
// in both threads' "second" writes.
template <rl::memory_order kMo>
struct TwoPlusTwoW : rl::test_suite<TwoPlusTwoW<kMo>, 2> {
  rl::atomic<int> x{0}, y{0};
  void thread(unsigned i) {
    if (i == 0) {
      x.store(1, kMo);
      y.store(2, kMo);
    } else {
      y.store(1, kMo);
      x.store(2, kMo);
    }
  }
  void after() { Sink<TwoPlusTwoW>().insert({x.load(kRlx), y.load(kRlx)}); }
};
TEST_CASE("2+2W relaxed: allowed (mo differs from execution order)") {
  auto s = Explore<TwoPlusTwoW<kRlx>>();
  CHECK(s == OutcomeSet{{1, 1}, {1, 2}, {2, 1}, {2, 2}});
}
TEST_CASE("2+2W release: allowed") {
  auto s = Explore<TwoPlusTwoW<kRel>>();
  CHECK(Has(s, {1, 1}));
}
TEST_CASE("2+2W seq_cst: forbidden") {
  auto s = Explore<TwoPlusTwoW<kSc>>();
  CHECK(s == OutcomeSet{{1, 2}, {2, 1}, {2, 2}});
}

// ---------------------------------------------------------------- WRC
// x=1 || r0=x; y=1 || r1=y; r2=x. (1,1,0) forbidden with rel/acq.
template <rl::memory_order kW, rl::memory_order kR>
struct WRC : rl::test_suite<WRC<kW, kR>, 3> {
  rl::atomic<int> x{0}, y{0};
  int r[3] = {-1, -1, -1};
  void thread(unsigned i) {
    if (i == 0) {
      x.store(1, kW);
    } else if (i == 1) {
      r[0] = x.load(kR);
      y.store(1, kW);
    } else {
      r[1] = y.load(kR);
      r[2] = x.load(kR);
    }
  }
  void after() { Sink<WRC>().insert({r[0], r[1], r[2]}); }
};
TEST_CASE("WRC release/acquire: causality respected") {
  auto s = Explore<WRC<kRel, kAcq>>();
  CHECK(!Has(s, {1, 1, 0}));
  CHECK(Has(s, {1, 1, 1}));
}
TEST_CASE("WRC relaxed: causality violation allowed") {
  auto s = Explore<WRC<kRlx, kRlx>>();
  CHECK(Has(s, {1, 1, 0}));
}

// ---------------------------------------------------------------- R
// x=1; y=1 || y=2; r0=x. (final y == 2, r0 == 0) forbidden only with SC.
template <rl::memory_order kMo>
struct R : rl::test_suite<R<kMo>, 2> {
  rl::atomic<int> x{0}, y{0};
  int r0 = -1;
  void thread(unsigned i) {
    if (i == 0) {
      x.store(1, kMo);
      y.store(1, kMo);
    } else {
      y.store(2, kMo);
      r0 = x.load(kMo);
    }
  }
  void after() { Sink<R>().insert({y.load(kRlx), r0}); }
};
TEST_CASE("R seq_cst: forbidden") {
  auto s = Explore<R<kSc>>();
  CHECK(!Has(s, {2, 0}));
  CHECK(s.size() == 3);
}
TEST_CASE("R release/acquire: allowed") {
  auto s = Explore<R<kAcq == kAcq ? kRel : kRel>>();
  CHECK(Has(s, {2, 0}));
}

// ---------------------------------------------------------------- S
// x=2; y=1 (release) || r0=y (acquire); x=1. (r0 == 1, final x == 2)
// forbidden with rel/acq (x=2 happens before x=1).
template <rl::memory_order kW, rl::memory_order kR>
struct S : rl::test_suite<S<kW, kR>, 2> {
  rl::atomic<int> x{0}, y{0};
  int r0 = -1;
  void thread(unsigned i) {
    if (i == 0) {
      x.store(2, kRlx);
      y.store(1, kW);
    } else {
      r0 = y.load(kR);
      x.store(1, kRlx);
    }
  }
  void after() { Sink<S>().insert({r0, x.load(kRlx)}); }
};
TEST_CASE("S release/acquire: forbidden") {
  auto s = Explore<S<kRel, kAcq>>();
  CHECK(s == OutcomeSet{{0, 1}, {0, 2}, {1, 1}});
}
TEST_CASE("S relaxed: allowed") {
  auto s = Explore<S<kRlx, kRlx>>();
  CHECK(Has(s, {1, 2}));
}

// ---------------------------------------------------------------- release
// sequences (C++20: continued by RMWs only).
struct RelSeqRmw : rl::test_suite<RelSeqRmw, 3> {
  rl::atomic<int> data{0}, flag{0};
  int r[2] = {-1, -1};
  void thread(unsigned i) {
    if (i == 0) {
      data.store(1, kRlx);
      flag.store(1, kRel);
    } else if (i == 1) {
      flag.fetch_add(1, kRlx);
    } else {
      r[0] = flag.load(kAcq);
      r[1] = data.load(kRlx);
    }
  }
  void after() { Sink<RelSeqRmw>().insert({r[0], r[1]}); }
};
TEST_CASE("release sequence continued by a relaxed RMW synchronizes") {
  auto s = Explore<RelSeqRmw>();
  CHECK(!Has(s, {2, 0}));
  CHECK(Has(s, {2, 1}));
  CHECK(Has(s, {1, 0}));  // reading the RMW that read the initial value
}

struct RelSeqStore : rl::test_suite<RelSeqStore, 2> {
  rl::atomic<int> data{0}, flag{0};
  int r[2] = {-1, -1};
  void thread(unsigned i) {
    if (i == 0) {
      data.store(1, kRlx);
      flag.store(1, kRel);
      flag.store(2, kRlx);
    } else {
      r[0] = flag.load(kAcq);
      r[1] = data.load(kRlx);
    }
  }
  void after() { Sink<RelSeqStore>().insert({r[0], r[1]}); }
};
TEST_CASE("C++20: a same-thread relaxed store does not continue it") {
  auto s = Explore<RelSeqStore>();
  CHECK(Has(s, {2, 0}));  // allowed since C++20 (P0982)
  CHECK(!Has(s, {1, 0}));
}

// A release sequence through a chain of RMWs of several orders: the reader
// of the chain's end synchronizes with the head however far back it is.
// Build() walks only the chain's releases and stops after an acquire RMW
// (which already joined the clocks before it): the outcomes must be those
// of a walk over the whole chain. r[0] == 3 means both RMWs ran after the
// head, so data is 1.
// With kFenceFirst, a release fence precedes the first RMW: an acquire RMW
// after it is in the walk (its fence synchronizes) but is no release, so
// the walk must not stop there.
template <rl::memory_order kFirst, rl::memory_order kSecond,
          bool kFenceFirst = false>
struct RelSeqChain
    : rl::test_suite<RelSeqChain<kFirst, kSecond, kFenceFirst>, 4> {
  rl::atomic<int> data{0}, flag{0};
  int r[2] = {-1, -1};
  void thread(unsigned i) {
    if (i == 0) {
      data.store(1, kRlx);
      flag.store(1, kRel);  // Pairs with: the reader's kAcq load (via RMWs)
    } else if (i == 1) {
      // Pairs with: the reader's kAcq load of this RMW's chain.
      if (kFenceFirst) rl::atomic_thread_fence(kRel);
      flag.fetch_add(1, kFirst);
    } else if (i == 2) {
      flag.fetch_add(1, kSecond);
    } else {
      // Pairs with: thread 0's kRel store and thread 1's fence (through
      // the RMW chain).
      r[0] = flag.load(kAcq);
      r[1] = data.load(kRlx);
    }
  }
  void after() { Sink<RelSeqChain>().insert({r[0], r[1]}); }
};
template <rl::memory_order kFirst, rl::memory_order kSecond,
          bool kFenceFirst = false>
void CheckRelSeqChain() {
  auto s = Explore<RelSeqChain<kFirst, kSecond, kFenceFirst>>();
  CHECK(Has(s, {3, 1}));
  CHECK(!Has(s, {3, 0}));
  CHECK(Has(s, {2, 0}));  // both RMWs before the head in modification order
}
TEST_CASE("release sequence through a chain of RMWs of any order") {
  CheckRelSeqChain<kRlx, kRlx>();
  CheckRelSeqChain<kAcq, kRlx>();
  CheckRelSeqChain<kRlx, kAcq>();
  CheckRelSeqChain<kRel, kRlx>();
  CheckRelSeqChain<kRlx, kRel>();
  CheckRelSeqChain<rl::mo_acq_rel, kRlx>();
  CheckRelSeqChain<kRel, rl::mo_acq_rel>();
  CheckRelSeqChain<rl::mo_seq_cst, kRlx>();
  CheckRelSeqChain<kRlx, rl::mo_seq_cst>();
  CheckRelSeqChain<rl::mo_seq_cst, rl::mo_seq_cst>();
  CheckRelSeqChain<kAcq, kRlx, true>();
  CheckRelSeqChain<kAcq, kAcq, true>();
  CheckRelSeqChain<rl::mo_acq_rel, kRlx, true>();
}

// Release fence + relaxed store, read through an RMW chain, acquire fence.
struct FenceRelSeq : rl::test_suite<FenceRelSeq, 3> {
  rl::atomic<int> data{0}, flag{0};
  int r[2] = {-1, -1};
  void thread(unsigned i) {
    if (i == 0) {
      data.store(1, kRlx);
      rl::atomic_thread_fence(kRel);
      flag.store(1, kRlx);
    } else if (i == 1) {
      flag.exchange(5, kRlx);
    } else {
      r[0] = flag.load(kRlx);
      rl::atomic_thread_fence(kAcq);
      r[1] = data.load(kRlx);
    }
  }
  void after() { Sink<FenceRelSeq>().insert({r[0], r[1]}); }
};
TEST_CASE("fence synchronization through a hypothetical release sequence") {
  auto s = Explore<FenceRelSeq>();
  CHECK(!Has(s, {1, 0}));
  CHECK(Has(s, {5, 0}));  // exchange read the initial value
  CHECK(Has(s, {5, 1}));
}

// ---------------------------------------------------------------- RMW
// Atomicity: two fetch_adds never both read the same value.
struct RmwAtomicity : rl::test_suite<RmwAtomicity, 3> {
  rl::atomic<int> x{0};
  int r[3] = {-1, -1, -1};
  void thread(unsigned i) { r[i] = x.fetch_add(1, kRlx); }
  void after() {
    Outcome o(r, r + 3);
    std::sort(o.begin(), o.end());
    o.push_back(x.load(kRlx));
    Sink<RmwAtomicity>().insert(o);
  }
};
TEST_CASE("RMW atomicity: fetch_add never loses an update") {
  unsigned long long n = 0;
  auto s = Explore<RmwAtomicity>(&n);
  CHECK(s == OutcomeSet{{0, 1, 2, 3}});
  CHECK(n == 6);  // 3! orders of the RMW chain
}

// CAS: exactly one of two CAS(0 -> i) succeeds; the loser sees the winner.
struct CasRace : rl::test_suite<CasRace, 2> {
  rl::atomic<int> x{0};
  int got[2] = {-1, -1};
  bool ok[2] = {false, false};
  void thread(unsigned i) {
    int expected = 0;
    ok[i] = x.compare_exchange_strong(expected, static_cast<int>(i) + 1,
                                      rl::mo_acq_rel, rl::mo_acquire);
    got[i] = expected;
  }
  void after() {
    Sink<CasRace>().insert({ok[0], ok[1], got[0], got[1], x.load(kRlx)});
  }
};
TEST_CASE("CAS: exactly one winner") {
  auto s = Explore<CasRace>();
  CHECK(s == OutcomeSet{{1, 0, 0, 1, 1}, {0, 1, 2, 0, 2}});
}

// SC fence pairs: x=1; Fsc; r0=y || y=1; Fsc; r1=x, with an SC store seen
// through a third thread... (the dedicated C++20 case is in the SB tests).
// Mixed SC/acquire: SC store, acquire load and a later SC load do not get
// ordered by hb alone (C++20 strongly-happens-before, RC11 Z6.U-like).
struct ScReadAfterAcq : rl::test_suite<ScReadAfterAcq, 2> {
  rl::atomic<int> x{0}, y{0};
  int r[2] = {-1, -1};
  void thread(unsigned i) {
    if (i == 0) {
      x.store(1, kSc);
      r[0] = y.load(kSc);
    } else {
      y.store(1, kSc);
      r[1] = x.load(kSc);
    }
  }
  void after() { Sink<ScReadAfterAcq>().insert({r[0], r[1]}); }
};
TEST_CASE("Dekker with seq_cst: at least one thread sees the other") {
  auto s = Explore<ScReadAfterAcq>();
  CHECK(!Has(s, {0, 0}));
}

// ---------------------------------------------------------------- POR
// Each execution graph must be explored exactly once whatever the thread
// numbering: the number of complete executions is invariant under
// permuting the threads (checks the canonical-order exploration).
template <int kPerm>
struct PermutedIriw : rl::test_suite<PermutedIriw<kPerm>, 4> {
  rl::atomic<int> x{0}, y{0};
  int r[4] = {-1, -1, -1, -1};
  void thread(unsigned i) {
    int perm[4] = {0, 1, 2, 3};
    for (int k = 0; k < kPerm; ++k) std::next_permutation(perm, perm + 4);
    switch (perm[i]) {
      case 0:
        x.store(1, kRlx);
        x.store(2, kRlx);
        break;
      case 1:
        y.store(1, kRel);
        break;
      case 2:
        r[0] = x.load(kAcq);
        r[1] = y.fetch_add(1, kRlx);
        break;
      case 3:
        r[2] = y.load(kRlx);
        r[3] = x.load(kRlx);
        break;
    }
  }
  void after() { Sink<PermutedIriw>().insert({r[0], r[1], r[2], r[3]}); }
};

template <int kPerm>
void CheckPerm(unsigned long long expected_execs, const OutcomeSet& expected) {
  unsigned long long n = 0;
  auto s = Explore<PermutedIriw<kPerm>>(&n);
  CHECK(n == expected_execs);
  CHECK(s == expected);
  if constexpr (kPerm < 23) CheckPerm<kPerm + 1>(expected_execs, expected);
}

TEST_CASE("exploration is invariant under thread renumbering") {
  unsigned long long n = 0;
  auto s = Explore<PermutedIriw<0>>(&n);
  MESSAGE("PermutedIriw graphs: " << n);
  CheckPerm<1>(n, s);
}

// ---------------------------------------------------------------- random
// The random search with the SC order as executed (the default,
// test_params::sc_order_as_executed): the SC order is the order the run
// executes its seq_cst operations and fences in, kept by floors instead
// of an SC-order graph (engine: ScFloor). On the shapes above whose
// outcomes the SC order decides, its runs must reach exactly the
// exhaustive search's outcomes: none it forbids (the floors keep S a valid
// order), all it allows (they do not cut away more). The sc_check build
// also compares each execution's order with the full SC check.
template <typename T>
OutcomeSet Sample(bool as_executed) {
  Sink<T>().clear();
  for (unsigned long long seed = 1; seed <= 20; ++seed) {
    rl::test_params p;
    p.search_type = rl::sched_random;
    p.sc_order_as_executed = as_executed;
    p.iteration_count = 500;
    p.seed = seed;
    p.print_summary = false;
    CHECK(rl::simulate<T>(p));
  }
  return Sink<T>();
}
template <typename T>
void CheckSampledAsExplored() {
  const OutcomeSet all = Explore<T>();
  CHECK(Sample<T>(true) == all);
  CHECK(Sample<T>(false) == all);
}
TEST_CASE("random search, SC order as executed: the SC shapes' outcomes") {
  CheckSampledAsExplored<SB<kSc, kSc, 0>>();
  CheckSampledAsExplored<SB<kRlx, kRlx, 1>>();
  CheckSampledAsExplored<SB<kRlx, kRlx, 2, kSc, kSc>>();
  CheckSampledAsExplored<SB<kRlx, kRlx, 2>>();
  CheckSampledAsExplored<SB<kSc, kSc, 1>>();
  CheckSampledAsExplored<IRIW<kSc, kSc>>();
  CheckSampledAsExplored<IRIW<kRlx, kRlx, true>>();
  CheckSampledAsExplored<IRIW<kSc, kAcq>>();
  CheckSampledAsExplored<IRIW<kRel, kSc>>();
  CheckSampledAsExplored<TwoPlusTwoW<kSc>>();
  CheckSampledAsExplored<R<kSc>>();
  CheckSampledAsExplored<RelSeqChain<rl::mo_seq_cst, rl::mo_seq_cst>>();
  CheckSampledAsExplored<RelSeqChain<rl::mo_seq_cst, kRlx>>();
}

// What the SC order as executed gives up (fuzz_test's program 106, made
// small): x=1 (relaxed); SC fence; y=1 (seq_cst) || r0=y (relaxed);
// r1=x (seq_cst). (1, 0) is allowed: the relaxed read of y orders nothing,
// so S may put the load of x before the fence (it must: it reads the x
// before the fenced store). A run reaches that load only after the store
// to y it read, which comes after the fence, so the order run never has
// it: only sc_order_as_executed = false (and Relacy neither) samples it.
struct ScBeforeWhatItSaw : rl::test_suite<ScBeforeWhatItSaw, 2> {
  rl::atomic<int> x{0}, y{0};
  int r[2] = {-1, -1};
  void thread(unsigned i) {
    if (i == 0) {
      x.store(1, kRlx);
      // Pairs with: nothing in thread 1 (no fence, no acquire: the point
      // of the shape); in S after the load of x below when that reads 0.
      rl::atomic_thread_fence(kSc);
      // Pairs with: nothing (read by a relaxed load, it synchronizes with
      // no one).
      y.store(1, kSc);
    } else {
      r[0] = y.load(kRlx);  // relaxed: what it reads orders nothing in S
      // Pairs with: nothing (no release reaches it); reading 0, it
      // precedes thread 0's fence in S.
      r[1] = x.load(kSc);
    }
  }
  void after() { Sink<ScBeforeWhatItSaw>().insert({r[0], r[1]}); }
};
TEST_CASE("random search, SC order as executed: an SC order it cannot run") {
  const OutcomeSet all = Explore<ScBeforeWhatItSaw>();
  CHECK(all == OutcomeSet{{0, 0}, {0, 1}, {1, 0}, {1, 1}});
  CHECK(Sample<ScBeforeWhatItSaw>(false) == all);
  CHECK(Sample<ScBeforeWhatItSaw>(true) == OutcomeSet{{0, 0}, {0, 1}, {1, 1}});
}

}  // namespace
