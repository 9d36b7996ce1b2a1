// Compiles (and runs) every element of the supported Relacy dialect.
#include <cstdint>
#include <memory>
#include <set>
#include <sstream>
#include <string>

#include "doctest/doctest.h"
#include "relacy/relacy.hpp"

namespace {

enum class Color : uint8_t { kRed, kGreen, kBlue };
enum Plain { kPlainA, kPlainB };

struct Node {
  rl::atomic<int> value{0};
  rl::atomic<Node*> next{nullptr};
};

struct Everything : rl::test_suite<Everything, 3> {
  rl::atomic<uint32_t> u32{0};
  rl::atomic<uint64_t> u64{0};
  rl::atomic<int> i{0};
  rl::atomic<bool> b{false};
  rl::atomic<Node*> head{nullptr};
  rl::atomic<Color> color{Color::kRed};
  rl::atomic<Plain> plain{kPlainA};
  rl::atomic<int> defaulted;  // value-initialized, like C++20 std::atomic
  rl::var<int> v;
  VAR_T(long) w;
  Node node;
  int seen_rand = -1;

  void before() {
    VAR(v) = 0;
    w($) = 5;
    u32.store(1, rl::mo_relaxed, $);
    u64($).store(2, rl::mo_relaxed);
    head.store(&node, rl::mo_release);
  }

  void thread(unsigned index) {
    RL_ASSERT(rl::thread_index() == index);
    switch (index) {
      case 0: {
        // Loads and stores, both debug-info forms and the defaulted one.
        uint32_t a = u32.load(rl::mo_acquire, $);
        uint64_t c = u64($).load(rl::mo_relaxed);
        int d = i.load(std::memory_order_consume);
        RL_ASSERT(a <= 1 && c <= 2 && d >= 0);
        u32 = 3;
        uint32_t e = u32;
        RL_ASSERT(e == 3 || e == 10);
        ++i;
        i++;
        --i;
        i--;
        i += 5;
        i -= 1;
        i |= 8;
        i &= 0xff;
        i ^= 1;
        i.fetch_add(1, rl::mo_relaxed, $);
        i.fetch_sub(1, rl::mo_release);
        i.fetch_and(0xff, rl::mo_acq_rel);
        i.fetch_or(0, rl::mo_seq_cst);
        i.fetch_xor(0, rl::mo_relaxed);
        color.store(Color::kGreen, rl::mo_release);
        plain.exchange(kPlainB, rl::mo_acq_rel, $);
        rl::atomic_thread_fence(rl::mo_seq_cst, $);
        rl::atomic_thread_fence(rl::mo_acq_rel);
        VAR(v) = 1;  // ordered by the release below
        b.store(true, rl::mo_release);
        break;
      }
      case 1: {
        rl::backoff backoff;
        while (!b.load(rl::mo_acquire)) backoff();
        RL_ASSERT(VAR(v) == 1);
        Color c = color.load(rl::mo_relaxed);
        RL_ASSERT(c == Color::kGreen);
        // CAS forms.
        uint32_t expected = 3;
        u32.compare_exchange_strong(expected, 10, rl::mo_acq_rel, $);
        expected = 10;
        // A weak CAS may fail spuriously (leaving expected == 10): retry.
        while (!u32.compare_exchange_weak(expected, 11, rl::mo_acq_rel,
                                          rl::mo_relaxed, $) &&
               expected == 10) {
        }
        expected = 0;
        RL_ASSERT(!u32($).compare_exchange_strong(expected, 12));
        RL_ASSERT(expected == 11);
        bool was = b.exchange(false, rl::mo_acq_rel);
        RL_ASSERT(was);
        break;
      }
      case 2: {
        // Objects with atomics created and destroyed mid-execution.
        // unique_ptr: an abandoned execution unwinds this stack.
        std::unique_ptr<Node> owner(new Node);
        Node* local = owner.get();
        local->value.store(7, rl::mo_relaxed);
        Node* top = head.load(rl::mo_acquire);
        local->next.store(top, rl::mo_relaxed);
        while (!head.compare_exchange_weak(top, local, rl::mo_release,
                                           rl::mo_acquire)) {
          local->next.store(top, rl::mo_relaxed);
          rl::yield(1, $);
        }
        Node* got = head.exchange(nullptr, rl::mo_acquire);
        RL_ASSERT(got == local);
        RL_ASSERT(got->value.load(rl::mo_relaxed) == 7);
        seen_rand = static_cast<int>(rl::rand(3));
        rl::yield();
        rl::yield(2);
        {
          rl::atomic<uint64_t> stack_atomic{42};
          RL_ASSERT(stack_atomic.fetch_add(1) == 42);
        }
        break;
      }
    }
  }

  void after() {
    RL_ASSERT(defaulted.load() == 0);
    RL_ASSERT(VAR(w) == 5);
    RL_ASSERT(seen_rand >= 0 && seen_rand < 3);
    Rands().insert(seen_rand);
  }
  void invariant() { RL_ASSERT(true); }

  static std::set<int>& Rands() {
    static std::set<int> s;
    return s;
  }
};

TEST_CASE("dialect: every API element compiles and runs") {
  Everything::Rands().clear();
  rl::test_params params;
  params.search_type = rl::sched_full;
  params.iteration_count = 100;
  params.context_bound = 2;
  params.execution_depth_limit = 5000;
  std::ostringstream out, progress;
  params.output_stream = &out;
  params.progress_stream = &progress;
  bool ok = rl::simulate<Everything>(params);
  CHECK(ok);
  CHECK(params.test_result == rl::test_result_success);
  CHECK(params.final_state.empty());
  CHECK(params.stop_iteration >= params.executions);
  CHECK(Everything::Rands() == std::set<int>{0, 1, 2});
  MESSAGE(out.str());
}

TEST_CASE("dialect: simulate without params") {
  Everything::Rands().clear();
  CHECK(rl::simulate<Everything>());
}

TEST_CASE("dialect: test_result_str") {
  CHECK(std::string(rl::test_result_str(rl::test_result_success)) == "SUCCESS");
  for (int r = rl::test_result_success; r <= rl::test_result_livelock; ++r)
    CHECK(std::string(rl::test_result_str(static_cast<rl::test_result_e>(r)))
              .size() > 0);
  CHECK(std::string(rl::test_result_str(rl::test_result_data_race)) ==
        "DATA RACE");
  (void)rl::test_result_until_condition_hit;
  (void)rl::test_result_inconsistent_test_suite;
  (void)rl::test_result_user_invariant_failed;
  (void)rl::test_result_access_to_freed_memory;
  (void)rl::test_result_double_free;
  (void)rl::test_result_memory_leak;
  (void)rl::test_result_resource_leak;
  (void)rl::test_result_unitialized_access;
  (void)rl::test_result_deadlock;
  (void)rl::test_result_unhandled_exception;
  (void)rl::sched_random;
  (void)rl::sched_bound;
}

// RL_UNTIL: the search stops when the condition holds in some execution.
struct UntilSB
    : rl::test_suite<UntilSB, 2, rl::test_result_until_condition_hit> {
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
  void after() { RL_UNTIL(r0 == 0 && r1 == 0); }
};
TEST_CASE("dialect: RL_UNTIL finds a state") {
  rl::test_params p;
  p.search_type = rl::sched_full;  // exhaustive
  p.output_history = false;
  CHECK(rl::simulate<UntilSB>(p));
  CHECK(p.test_result == rl::test_result_until_condition_hit);
}

// Invariant failures are reported as such.
struct BadInvariant
    : rl::test_suite<BadInvariant, 1, rl::test_result_user_invariant_failed> {
  rl::atomic<int> x{0};
  void thread(unsigned) { x.store(1, rl::mo_relaxed); }
  void invariant() { RL_ASSERT(x.load(rl::mo_relaxed) == 0); }
};
TEST_CASE("dialect: invariant() failure") {
  rl::test_params p;
  p.search_type = rl::sched_full;  // exhaustive
  p.output_history = false;
  CHECK(rl::simulate<BadInvariant>(p));
}

// A thread that throws.
struct Throws : rl::test_suite<Throws, 2, rl::test_result_unhandled_exception> {
  rl::atomic<int> x{0};
  void thread(unsigned i) {
    if (i == 0) x.store(1, rl::mo_relaxed);
    if (i == 1 && x.load(rl::mo_relaxed) == 1) throw 42;
  }
};
TEST_CASE("dialect: unhandled exception") {
  rl::test_params p;
  p.search_type = rl::sched_full;  // exhaustive
  p.output_history = false;
  CHECK(rl::simulate<Throws>(p));
}

// An abandoned (pruned) execution ends its threads mid-way. The engine drops
// a thread's frames without unwinding only when unwinding would run none of
// their code; a frame holding an object with a destructor, or inside a
// try/catch, must still be unwound. Counted outside the heap model.
int g_guards_made = 0;
int g_guards_destroyed = 0;
int g_catch_blocks = 0;
struct Guard {
  Guard() { ++g_guards_made; }
  ~Guard() { ++g_guards_destroyed; }
  Guard(const Guard&) = delete;
  Guard& operator=(const Guard&) = delete;
};
template <bool kTryCatch>
struct AbandonedFrames : rl::test_suite<AbandonedFrames<kTryCatch>, 2> {
  rl::atomic<int> flag{0};
  int Spin() {
    // Spins run on and prune (spin_bound), so many executions end with
    // this thread suspended here, a Guard live one frame up.
    while (flag.load(rl::mo_acquire) == 0) rl::yield(1, $);
    return 1;
  }
  int GuardedSpin() {
    Guard g;
    return Spin();
  }
  void thread(unsigned i) {
    if (i == 0) {
      flag.store(1, rl::mo_release);
      return;
    }
    if (kTryCatch) {
      try {
        Spin();
      } catch (...) {
        ++g_catch_blocks;
        throw;
      }
    } else {
      RL_ASSERT(GuardedSpin() == 1);
    }
  }
};
TEST_CASE("dialect: an abandoned thread's destructors and handlers run") {
  g_guards_made = g_guards_destroyed = g_catch_blocks = 0;
  rl::test_params p;
  p.search_type = rl::sched_full;
  p.output_history = false;
  CHECK(rl::simulate<AbandonedFrames<false>>(p));
  CHECK(p.blocked_executions > 0);  // some executions were abandoned
  CHECK(g_guards_made > 0);
  CHECK(g_guards_made == g_guards_destroyed);
  rl::test_params q;
  q.search_type = rl::sched_full;
  q.output_history = false;
  CHECK(rl::simulate<AbandonedFrames<true>>(q));
  CHECK(q.blocked_executions > 0);
  // Every abandoned execution had thread 1 inside the try block.
  CHECK(g_catch_blocks >= static_cast<int>(q.blocked_executions));
}

}  // namespace
