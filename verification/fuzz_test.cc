// Random straight-line programs: the lazy deferral reduction must explore
// exactly the graphs (count and outcomes) of the eager exploration, and the
// number of graphs must not depend on the thread numbering.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <set>
#include <sstream>
#include <vector>

#include "doctest/doctest.h"
#include "relacy/relacy.hpp"

namespace {

enum OpKind { kLoad, kStore, kFetchAdd, kExchange, kCas, kFence, kSpin };

struct Op {
  OpKind kind;
  int loc;
  int value;
  rl::memory_order mo;
};

struct Program {
  std::vector<std::vector<Op>> threads;
};

Program g_program;
std::vector<int> g_perm;  // thread index -> program thread
// Whether kCas runs compare_exchange_weak (its spurious failures explored)
// instead of compare_exchange_strong (WeakCasScope).
bool g_weak_cas = false;
std::set<std::vector<int>> g_outcomes;

constexpr rl::memory_order kOrders[] = {rl::mo_relaxed, rl::mo_acquire,
                                        rl::mo_release, rl::mo_acq_rel,
                                        rl::mo_seq_cst};

Program Generate(std::mt19937& rng, int threads, int ops, int locs) {
  Program p;
  p.threads.resize(threads);
  for (auto& t : p.threads) {
    for (int i = 0; i < ops; ++i) {
      Op op;
      op.kind = static_cast<OpKind>(rng() % 6);
      op.loc = static_cast<int>(rng() % locs);
      op.value = static_cast<int>(rng() % 3) + 1;
      op.mo = kOrders[rng() % 5];
      if (op.kind == kLoad && op.mo == rl::mo_release) op.mo = rl::mo_acquire;
      if (op.kind == kLoad && op.mo == rl::mo_acq_rel) op.mo = rl::mo_acquire;
      if (op.kind == kStore && op.mo == rl::mo_acquire) op.mo = rl::mo_release;
      if (op.kind == kStore && op.mo == rl::mo_acq_rel) op.mo = rl::mo_release;
      if (op.kind == kFence && op.mo == rl::mo_relaxed) op.mo = rl::mo_seq_cst;
      t.push_back(op);
    }
  }
  return p;
}

// Turns about one operation in four into a retry loop (kSpin), drawing
// after Generate() so the programs without loops stay as they were.
void AddSpins(std::mt19937& rng, Program* p) {
  for (auto& t : p->threads)
    for (Op& op : t)
      if (rng() % 4 == 0) {
        op.kind = kSpin;
        if (op.mo == rl::mo_release || op.mo == rl::mo_acq_rel)
          op.mo = rl::mo_acquire;
      }
}

// Runs the generated threads under their own numbers (g_perm the
// identity).
void NumberAsGenerated(unsigned threads) {
  g_perm.resize(threads);
  for (unsigned i = 0; i < threads; ++i) g_perm[i] = static_cast<int>(i);
}

template <unsigned kThreads>
struct Interp : rl::test_suite<Interp<kThreads>, kThreads> {
  rl::atomic<int> loc[2] = {0, 0};
  std::vector<int> seen[kThreads];
  void thread(unsigned i) {
    for (const Op& op : g_program.threads[g_perm[i]]) {
      rl::atomic<int>& x = loc[op.loc];
      int r = 0;
      switch (op.kind) {
        case kLoad:
          r = x.load(op.mo);
          break;
        case kStore:
          x.store(op.value, op.mo);
          break;
        case kFetchAdd:
          r = x.fetch_add(op.value, op.mo);
          break;
        case kExchange:
          r = x.exchange(op.value, op.mo);
          break;
        case kCas: {
          int e = op.value - 1;
          if (g_weak_cas)
            x.compare_exchange_weak(e, op.value, op.mo, rl::mo_relaxed);
          else
            x.compare_exchange_strong(e, op.value, op.mo, rl::mo_relaxed);
          r = e;
          break;
        }
        case kFence:
          rl::atomic_thread_fence(op.mo);
          break;
        case kSpin: {
          // A retry loop that carries nothing from one try into the next:
          // each try reads both locations and retries while this one is 0.
          rl::atomic<int>& other = loc[1 - op.loc];
          for (;;) {
            r = x.load(op.mo);
            const int r2 = other.load(rl::mo_relaxed);
            if (r != 0) {
              r = r * 10 + r2;
              break;
            }
            rl::yield(1);
          }
          break;
        }
      }
      seen[g_perm[i]].push_back(r);
    }
  }
  void after() {
    std::vector<int> o;
    for (auto& s : seen) o.insert(o.end(), s.begin(), s.end());
    o.push_back(loc[0].load(rl::mo_relaxed));
    o.push_back(loc[1].load(rl::mo_relaxed));
    g_outcomes.insert(o);
  }
};

template <unsigned kThreads>
void FuzzOne(unsigned seed, int ops) {
  std::mt19937 rng(seed);
  g_program = Generate(rng, kThreads, ops, 2);
  unsigned long long first = 0;
  std::set<std::vector<int>> first_outcomes;
  NumberAsGenerated(kThreads);
  for (int round = 0; round < 3; ++round) {
    for (int eager = 0; eager < 2; ++eager) {
      g_outcomes.clear();
      rl::test_params p;
      p.search_type = rl::sched_full;  // exhaustive
      p.print_summary = false;
      p.lazy_deferral = eager == 0;
      CHECK(rl::simulate<Interp<kThreads>>(p));
      if (round == 0 && eager == 0) {
        first = p.executions;
        first_outcomes = g_outcomes;
      } else {
        INFO("seed " << seed << " round " << round << " eager " << eager);
        CHECK(p.executions == first);
        CHECK(g_outcomes == first_outcomes);
      }
    }
    std::shuffle(g_perm.begin(), g_perm.end(), rng);
  }
}

TEST_CASE("fuzz: lazy == eager, invariant under renumbering (2 threads)") {
  for (unsigned seed = 1; seed <= 150; ++seed) FuzzOne<2>(seed, 4);
}

TEST_CASE("fuzz: lazy == eager, invariant under renumbering (3 threads)") {
  for (unsigned seed = 1000; seed <= 1060; ++seed) FuzzOne<3>(seed, 3);
}

// Generates program `seed` (threads numbered as generated) and returns the
// outcomes of its exhaustive search, and the search's executions.
template <unsigned kThreads>
std::set<std::vector<int>> ExhaustiveOutcomes(unsigned seed, int ops,
                                              unsigned long long* executions) {
  std::mt19937 rng(seed);
  g_program = Generate(rng, kThreads, ops, 2);
  NumberAsGenerated(kThreads);
  g_outcomes.clear();
  rl::test_params full;
  full.search_type = rl::sched_full;
  full.print_summary = false;
  CHECK(rl::simulate<Interp<kThreads>>(full));
  *executions = full.executions;
  return g_outcomes;
}

// ---------------------------------------------------------------- random
// The random search (Relacy's default, sched_random) draws its own way
// (thread first, then one of its coherent actions without listing them,
// probing only the drawn one against the SC order). Checked against the
// exhaustive search, itself checked against the RC11 oracle below: every
// outcome a random run reaches is one the exhaustive search reaches (no
// execution C++20 forbids), and runs of 1000 iterations with new seeds
// reach all of them within a bound (no allowed execution is left with
// probability zero). Most programs need a few thousand iterations; the
// rarest outcome met (seed 1036: a relaxed load reading the value of four
// stores and RMWs in a row) came about once in 180,000 executions, hence
// the bound of 300 runs. This holds with any SC order C++20 allows
// (sc_order_as_executed false); with the default, the SC order as
// executed, a random run reaches a subset (the outcomes of executions
// whose SC order can be the order they run in), checked in 5 runs; the
// sc_check build (RL_SC_CHECK) then also checks every execution's order
// against the full SC check. Returns whether the subset was all.
template <unsigned kThreads>
bool RandomOne(unsigned seed, int ops, bool as_executed = false) {
  unsigned long long full_executions = 0;
  const std::set<std::vector<int>> all =
      ExhaustiveOutcomes<kThreads>(seed, ops, &full_executions);
  g_outcomes.clear();
  unsigned long long pruned = 0;
  const unsigned rounds = as_executed ? 5 : 300;
  for (unsigned round = 0; round < rounds && g_outcomes.size() < all.size();
       ++round) {
    rl::test_params p;
    p.search_type = rl::sched_random;
    p.sc_order_as_executed = as_executed;
    p.iteration_count = 1000;
    p.seed = seed * 1000 + round + 1;
    p.print_summary = false;
    CHECK(rl::simulate<Interp<kThreads>>(p));
    pruned += p.blocked_executions;
  }
  INFO("seed " << seed);
  CHECK(std::includes(all.begin(), all.end(), g_outcomes.begin(),
                      g_outcomes.end()));
  if (!as_executed) CHECK(g_outcomes.size() == all.size());
  CHECK(pruned == 0);  // a random run defers nothing: every run completes
  return g_outcomes.size() == all.size();
}

TEST_CASE("random search: only and all the exhaustive outcomes (2 threads)") {
  for (unsigned seed = 1; seed <= 150; ++seed) RandomOne<2>(seed, 4);
}

TEST_CASE("random search: only and all the exhaustive outcomes (3 threads)") {
  for (unsigned seed = 1000; seed <= 1060; ++seed) RandomOne<3>(seed, 3);
}

// The same programs with weak CASes: a CAS may also fail spuriously where
// it could succeed (at most once in a row per thread and location, in
// either search), and a random run draws among a CAS's successes, failures
// and spurious failures without listing them (Engine::CasActionsOn; the
// sc_check build compares each draw with the listing).
struct WeakCasScope {
  WeakCasScope() { g_weak_cas = true; }
  ~WeakCasScope() { g_weak_cas = false; }
};

TEST_CASE("random search, weak CASes: only and all the exhaustive outcomes") {
  WeakCasScope weak;
  for (unsigned seed = 1; seed <= 150; ++seed) RandomOne<2>(seed, 4);
  for (unsigned seed = 1000; seed <= 1030; ++seed) RandomOne<3>(seed, 3);
}

TEST_CASE("random search, SC order as executed: only exhaustive outcomes") {
  int all = 0, programs = 0;
  for (unsigned seed = 1; seed <= 150; ++seed, ++programs)
    all += RandomOne<2>(seed, 4, true);
  for (unsigned seed = 1000; seed <= 1060; ++seed, ++programs)
    all += RandomOne<3>(seed, 3, true);
  MESSAGE("programs whose every outcome 5 runs reached: " << all << " of "
                                                          << programs);
  // Most programs are reached whole in 5,000 executions, about as many as
  // with any SC order (measured: 192 of 211 here, 194 with any order; 206
  // in 100 runs here; docs/verification.md, "The SC order as executed"):
  // a check that the floors cut away no ordinary outcome.
  CHECK(all * 100 >= programs * 85);
}

// The bounded search (sched_bound: at most context_bound deferred reads per
// execution) explores a subset of the exhaustive search's graphs that grows
// with the bound, and all of them once the bound exceeds the reads a
// program has. Returns whether bound 0 explored fewer graphs (the bound
// bounds something).
template <unsigned kThreads>
bool BoundedOne(unsigned seed, int ops) {
  unsigned long long full_executions = 0;
  const std::set<std::vector<int>> all =
      ExhaustiveOutcomes<kThreads>(seed, ops, &full_executions);
  std::set<std::vector<int>> previous;
  unsigned long long previous_executions = 0, bound0_executions = 0;
  const unsigned bounds[] = {0, 1, 2, kThreads * ops};
  for (unsigned bound : bounds) {
    g_outcomes.clear();
    rl::test_params p;
    p.search_type = rl::sched_bound;
    p.context_bound = bound;
    p.print_summary = false;
    CHECK(rl::simulate<Interp<kThreads>>(p));
    INFO("seed " << seed << " bound " << bound);
    CHECK(std::includes(all.begin(), all.end(), g_outcomes.begin(),
                        g_outcomes.end()));
    CHECK(std::includes(g_outcomes.begin(), g_outcomes.end(), previous.begin(),
                        previous.end()));
    CHECK(p.executions >= previous_executions);
    if (bound == 0) bound0_executions = p.executions;
    previous = g_outcomes;
    previous_executions = p.executions;
  }
  INFO("seed " << seed);
  CHECK(previous == all);
  CHECK(previous_executions == full_executions);
  return bound0_executions < full_executions;
}

TEST_CASE("bounded search: a subset growing with the bound, all at the top") {
  int bounded = 0;
  for (unsigned seed = 1; seed <= 150; ++seed)
    bounded += BoundedOne<2>(seed, 4);
  for (unsigned seed = 1000; seed <= 1060; ++seed)
    bounded += BoundedOne<3>(seed, 3);
  MESSAGE("programs bound 0 explores fewer graphs of: " << bounded);
  CHECK(bounded > 50);
}

// test_params::stateless_spins on programs with retry loops that carry no
// state (kSpin): the same verdict, and the same outcomes, with the flag as
// without it. Counts the programs compared that passed (their outcomes
// compared too) and those the flag explored in fewer executions.
struct StatelessCounts {
  int passed = 0, fewer = 0;
};
template <unsigned kThreads>
void StatelessOne(unsigned seed, int ops, StatelessCounts* counts) {
  std::mt19937 rng(seed);
  g_program = Generate(rng, kThreads, ops, 2);
  AddSpins(rng, &g_program);
  NumberAsGenerated(kThreads);
  std::set<std::vector<int>> outcomes[2];
  rl::test_params p[2];
  for (int flag = 0; flag < 2; ++flag) {
    g_outcomes.clear();
    p[flag].search_type = rl::sched_full;
    p[flag].print_summary = false;
    p[flag].output_history = false;
    p[flag].stateless_spins = flag == 1;
    std::ostringstream out;  // failures (livelocks) are compared, not shown
    p[flag].output_stream = &out;
    rl::simulate<Interp<kThreads>>(p[flag]);
    outcomes[flag] = g_outcomes;
  }
  INFO("seed " << seed);
  CHECK(p[1].test_result == p[0].test_result);
  if (p[0].test_result == rl::test_result_success) {
    CHECK(outcomes[1] == outcomes[0]);
    ++counts->passed;
  }
  if (p[1].executions + p[1].blocked_executions <
      p[0].executions + p[0].blocked_executions)
    ++counts->fewer;
}

// Programs with retry loops (kSpin) under the random search with the SC
// order as executed: every outcome it reaches is one of the exhaustive
// search's, and a program the exhaustive search passes passes (a failure
// here would be an execution C++20 forbids). The sc_check build also
// checks each execution's order against the full SC check.
template <unsigned kThreads>
bool SpinAsExecutedOne(unsigned seed, int ops) {
  std::mt19937 rng(seed);
  g_program = Generate(rng, kThreads, ops, 2);
  AddSpins(rng, &g_program);
  NumberAsGenerated(kThreads);
  g_outcomes.clear();
  rl::test_params full;
  full.search_type = rl::sched_full;
  full.print_summary = false;
  full.output_history = false;
  std::ostringstream out;  // livelocks are compared, not shown
  full.output_stream = &out;
  rl::simulate<Interp<kThreads>>(full);
  if (full.test_result != rl::test_result_success) return false;
  const std::set<std::vector<int>> all = g_outcomes;
  g_outcomes.clear();
  rl::test_params p;
  p.search_type = rl::sched_random;
  p.iteration_count = 2000;
  p.seed = seed;
  p.print_summary = false;
  p.output_stream = &out;
  rl::simulate<Interp<kThreads>>(p);
  INFO("seed " << seed);
  CHECK(p.test_result == rl::test_result_success);
  CHECK(std::includes(all.begin(), all.end(), g_outcomes.begin(),
                      g_outcomes.end()));
  return true;
}

TEST_CASE("random search, SC order as executed: retry loops") {
  int compared = 0;
  for (unsigned seed = 1; seed <= 150; ++seed)
    compared += SpinAsExecutedOne<2>(seed, 4);
  for (unsigned seed = 1000; seed <= 1060; ++seed)
    compared += SpinAsExecutedOne<3>(seed, 3);
  MESSAGE("programs with retry loops compared: " << compared);
  CHECK(compared > 100);
}

TEST_CASE("stateless spins: the same verdicts and outcomes") {
  StatelessCounts counts;
  for (unsigned seed = 1; seed <= 150; ++seed)
    StatelessOne<2>(seed, 4, &counts);
  for (unsigned seed = 1000; seed <= 1060; ++seed)
    StatelessOne<3>(seed, 3, &counts);
  MESSAGE("programs passed (outcomes compared): "
          << counts.passed
          << "; explored in fewer executions with the flag: " << counts.fewer);
  CHECK(counts.passed > 50);
  CHECK(counts.fewer > 20);
}

// ---------------------------------------------------------------- oracle
// An independent brute-force reference: enumerate every rf and mo
// assignment of a straight-line program and keep those satisfying the RC11
// axioms, written directly as relation algebra from the paper (with C++20
// release sequences). The checker must find exactly the same number of
// graphs and the same outcomes.
using Rel = std::vector<std::vector<bool>>;

Rel Empty(size_t n) { return Rel(n, std::vector<bool>(n, false)); }
Rel Compose(const Rel& a, const Rel& b) {
  size_t n = a.size();
  Rel c = Empty(n);
  for (size_t i = 0; i < n; ++i)
    for (size_t k = 0; k < n; ++k)
      if (a[i][k])
        for (size_t j = 0; j < n; ++j)
          if (b[k][j]) c[i][j] = true;
  return c;
}
Rel Union(Rel a, const Rel& b) {
  for (size_t i = 0; i < a.size(); ++i)
    for (size_t j = 0; j < a.size(); ++j) a[i][j] = a[i][j] || b[i][j];
  return a;
}
Rel Plus(Rel a) {
  size_t n = a.size();
  for (size_t k = 0; k < n; ++k)
    for (size_t i = 0; i < n; ++i)
      if (a[i][k])
        for (size_t j = 0; j < n; ++j)
          if (a[k][j]) a[i][j] = true;
  return a;
}
Rel Opt(Rel a) {  // reflexive closure
  for (size_t i = 0; i < a.size(); ++i) a[i][i] = true;
  return a;
}
bool Irreflexive(const Rel& a) {
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i][i]) return false;
  return true;
}
bool Acyclic(const Rel& a) { return Irreflexive(Plus(a)); }

struct OEvent {
  int tid;  // -1: init
  OpKind kind;
  int loc;  // -1: fence
  int value;
  rl::memory_order mo;
  bool IsRead() const {
    return kind == kLoad || kind == kFetchAdd || kind == kExchange;
  }
  bool IsWrite() const {
    return tid < 0 || kind == kStore || kind == kFetchAdd || kind == kExchange;
  }
  bool Rmw() const { return kind == kFetchAdd || kind == kExchange; }
  bool Sc() const { return tid >= 0 && mo == rl::mo_seq_cst; }
  bool Acq() const {
    return mo == rl::mo_acquire || mo == rl::mo_acq_rel || mo == rl::mo_seq_cst;
  }
  bool RelO() const {
    return mo == rl::mo_release || mo == rl::mo_acq_rel || mo == rl::mo_seq_cst;
  }
};

struct Oracle {
  std::vector<OEvent> ev;
  std::vector<int> reads;
  std::vector<int> writes_of[2];
  unsigned long long graphs = 0;
  std::set<std::vector<int>> outcomes;
  Rel sb;

  explicit Oracle(const Program& p) {
    for (int l = 0; l < 2; ++l)
      ev.push_back({-1, kStore, l, 0, rl::mo_relaxed});
    for (size_t t = 0; t < p.threads.size(); ++t)
      for (const Op& op : p.threads[t]) {
        OEvent e{static_cast<int>(t), op.kind, op.loc, op.value, op.mo};
        if (op.kind == kFence) e.loc = -1;
        ev.push_back(e);
      }
    size_t n = ev.size();
    sb = Empty(n);
    for (size_t i = 0; i < n; ++i)
      for (size_t j = 0; j < n; ++j)
        if (i != j && ((ev[i].tid < 0 && ev[j].tid >= 0) ||
                       (ev[i].tid >= 0 && ev[i].tid == ev[j].tid && i < j)))
          sb[i][j] = true;
    for (size_t i = 0; i < n; ++i) {
      if (ev[i].tid >= 0 && ev[i].IsRead())
        reads.push_back(static_cast<int>(i));
      if (ev[i].tid >= 0 && ev[i].IsWrite())
        writes_of[ev[i].loc].push_back(static_cast<int>(i));
    }
  }

  unsigned long long Size() const {
    unsigned long long s = 1;
    for (int r : reads) s *= writes_of[ev[r].loc].size() + 1;
    for (int l = 0; l < 2; ++l)
      for (size_t k = 2; k <= writes_of[l].size(); ++k) s *= k;
    return s;
  }

  void Run() {
    std::vector<int> rf(ev.size(), -1);
    std::vector<int> mo[2] = {writes_of[0], writes_of[1]};
    std::sort(mo[0].begin(), mo[0].end());
    std::sort(mo[1].begin(), mo[1].end());
    do {
      do {
        EnumRf(0, rf, mo);
      } while (std::next_permutation(mo[1].begin(), mo[1].end()));
    } while (std::next_permutation(mo[0].begin(), mo[0].end()));
  }

  void EnumRf(size_t k, std::vector<int>& rf, std::vector<int>* mo) {
    if (k == reads.size()) {
      Check(rf, mo);
      return;
    }
    int r = reads[k];
    int l = ev[r].loc;
    rf[r] = l;  // init write of the location
    EnumRf(k + 1, rf, mo);
    for (int w : writes_of[l]) {
      if (w == r) continue;
      rf[r] = w;
      EnumRf(k + 1, rf, mo);
    }
  }

  // Value written by w (RMW values follow their rf chain).
  bool Value(int w, const std::vector<int>& rf, int depth, int* out) const {
    if (depth > 20) return false;
    const OEvent& e = ev[w];
    if (e.tid < 0) {
      *out = 0;
      return true;
    }
    if (e.kind == kStore || e.kind == kExchange) {
      *out = e.value;
      return true;
    }
    int v;
    if (!Value(rf[w], rf, depth + 1, &v)) return false;
    *out = v + e.value;
    return true;
  }

  void Check(const std::vector<int>& rf, const std::vector<int>* mo) {
    size_t n = ev.size();
    Rel rfr = Empty(n), mor = Empty(n), rmw_id = Empty(n);
    for (int r : reads) rfr[rf[r]][r] = true;
    for (int l = 0; l < 2; ++l) {
      std::vector<int> order = {l};
      order.insert(order.end(), mo[l].begin(), mo[l].end());
      for (size_t i = 0; i < order.size(); ++i)
        for (size_t j = i + 1; j < order.size(); ++j)
          mor[order[i]][order[j]] = true;
    }
    // no-thin-air: sb U rf acyclic.
    if (!Acyclic(Union(sb, rfr))) return;
    // fr = rf^-1; mo minus identity.
    Rel fr = Empty(n);
    for (int r : reads)
      for (size_t w = 0; w < n; ++w)
        if (mor[rf[r]][w] && static_cast<int>(w) != r) fr[r][w] = true;
    // Atomicity: no fr;mo between an RMW's source and the RMW.
    for (int r : reads)
      if (ev[r].Rmw() && Compose(fr, mor)[r][r]) return;
    // Single-event RMWs: the source must also be mo-before the RMW (in the
    // paper's two-event form this follows from coherence, rmw being in sb).
    for (int r : reads)
      if (ev[r].Rmw() && !mor[rf[r]][r]) return;
    for (int r : reads)
      if (ev[r].Rmw())
        for (size_t w = 0; w < n; ++w)
          if (mor[rf[r]][w] && mor[w][r]) return;
    // sw (C++20 release sequences: rs = [W]; (rf; rmw)*).
    Rel rs = Opt(Empty(n));
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t a = 0; a < n; ++a)
        for (int r : reads)
          if (ev[r].Rmw() && rs[a][rf[r]] && !rs[a][r]) {
            rs[a][r] = true;
            changed = true;
          }
    }
    Rel sw = Empty(n);
    for (size_t a = 0; a < n; ++a) {
      if (ev[a].tid < 0) continue;
      // Release side: a release write, or a release fence sb-before a write.
      std::vector<size_t> heads;
      if (ev[a].kind == kFence && ev[a].RelO()) {
        for (size_t w = 0; w < n; ++w)
          if (sb[a][w] && ev[w].IsWrite()) heads.push_back(w);
      } else if (ev[a].IsWrite() && ev[a].RelO()) {
        heads.push_back(a);
      } else {
        continue;
      }
      for (size_t h : heads)
        for (int r : reads) {
          if (!rs[h][rf[r]]) continue;
          // Acquire side: the read itself or an acquire fence after it.
          if (ev[r].Acq()) sw[a][r] = true;
          for (size_t f = 0; f < n; ++f)
            if (ev[f].kind == kFence && ev[f].Acq() && sb[r][f])
              sw[a][f] = true;
        }
    }
    Rel hb = Plus(Union(sb, sw));
    Rel eco = Plus(Union(Union(rfr, mor), fr));
    // Coherence: hb;eco? irreflexive.
    if (!Irreflexive(hb) || !Irreflexive(Compose(hb, eco))) return;
    // SC: psc acyclic.
    auto same_loc = [&](size_t a, size_t b) {
      return ev[a].loc >= 0 && ev[a].loc == ev[b].loc;
    };
    Rel sb_nl = Empty(n), hb_l = Empty(n);
    for (size_t a = 0; a < n; ++a)
      for (size_t b = 0; b < n; ++b) {
        if (sb[a][b] && !same_loc(a, b)) sb_nl[a][b] = true;
        if (hb[a][b] && same_loc(a, b)) hb_l[a][b] = true;
      }
    Rel scb = Union(
        Union(Union(sb, Compose(Compose(sb_nl, hb), sb_nl)), Union(hb_l, mor)),
        fr);
    Rel esc = Empty(n), fsc = Empty(n);
    for (size_t a = 0; a < n; ++a) {
      if (ev[a].Sc()) esc[a][a] = true;
      if (ev[a].Sc() && ev[a].kind == kFence) fsc[a][a] = true;
    }
    Rel left = Union(esc, Compose(fsc, Opt(hb)));
    Rel right = Union(esc, Compose(Opt(hb), fsc));
    Rel psc_base = Compose(Compose(left, scb), right);
    Rel psc_f =
        Compose(Compose(fsc, Union(hb, Compose(Compose(hb, eco), hb))), fsc);
    if (!Acyclic(Union(psc_base, psc_f))) return;
    // Consistent: record the outcome in the interpreter's format.
    std::vector<int> o;
    for (size_t i = 2; i < n; ++i) {
      int v = 0;
      if (ev[i].IsRead() && !Value(rf[i], rf, 0, &v)) return;
      o.push_back(ev[i].IsRead() ? v : 0);
    }
    for (int l = 0; l < 2; ++l) {
      int last = mo[l].empty() ? l : mo[l].back();
      int v = 0;
      Value(last, rf, 0, &v);
      o.push_back(v);
    }
    ++graphs;
    outcomes.insert(o);
  }
};

template <unsigned kThreads>
int OracleOne(unsigned seed, int ops, unsigned long long max_size = 200000) {
  std::mt19937 rng(seed);
  g_program = Generate(rng, kThreads, ops, 2);
  for (auto& t : g_program.threads)
    for (Op& op : t)
      if (op.kind == kCas) op.kind = kExchange;  // oracle has no CAS
  Oracle oracle(g_program);
  if (oracle.Size() > max_size) return 0;
  oracle.Run();
  NumberAsGenerated(kThreads);
  g_outcomes.clear();
  rl::test_params p;
  p.search_type = rl::sched_full;  // exhaustive
  p.print_summary = false;
  CHECK(rl::simulate<Interp<kThreads>>(p));
  INFO("seed " << seed);
  CHECK(p.executions == oracle.graphs);
  CHECK(g_outcomes == oracle.outcomes);
  return 1;
}

TEST_CASE("oracle: checker == brute-force RC11 axioms (2 threads)") {
  int checked = 0;
  for (unsigned seed = 1; seed <= 300; ++seed) checked += OracleOne<2>(seed, 3);
  MESSAGE("programs compared: " << checked);
  CHECK(checked > 100);
}

TEST_CASE("oracle: checker == brute-force RC11 axioms (3 threads)") {
  int checked = 0;
  for (unsigned seed = 5000; seed <= 5150; ++seed)
    checked += OracleOne<3>(seed, 2);
  MESSAGE("programs compared: " << checked);
  CHECK(checked > 50);
}

// Exhaustive tier (PERCPU_MC_EXHAUSTIVE=1): larger random programs.
// Reported as skipped, not passed, without the variable.
TEST_CASE("oracle: larger programs (exhaustive tier)" *
          doctest::skip(std::getenv("PERCPU_MC_EXHAUSTIVE") == nullptr)) {
  int checked = 0;
  for (unsigned seed = 20000; seed < 20150; ++seed)
    checked += OracleOne<2>(seed, 4, 3000000);
  for (unsigned seed = 30000; seed < 30060; ++seed)
    checked += OracleOne<3>(seed, 3, 3000000);
  MESSAGE("programs compared: " << checked);
  CHECK(checked > 100);
}

}  // namespace
