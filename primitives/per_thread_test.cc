#include "primitives/per_thread.h"

#include <pthread.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "doctest/doctest.h"

namespace percpu {
namespace {

TEST_CASE("single thread: Add, Inc, Sum, wrap") {
  ThreadCounter c;
  CHECK(c.Sum() == 0);
  c.Add(5);
  c.Inc();
  CHECK(c.Sum() == 6);
  c.Add(~uint64_t{0});  // -1 mod 2^64
  CHECK(c.Sum() == 5);
  CHECK(c.SlotsCreated() == 1);
  CHECK(c.SlotsInUse() == 1);
}

TEST_CASE("exited threads fold exactly into the accumulator") {
  ThreadCounter c;
  std::thread t([&] {
    for (int i = 0; i < 1000; ++i) c.Inc();
  });
  t.join();
  CHECK(c.Sum() == 1000);
  CHECK(c.ExitedTotal() == 1000);
  CHECK(c.SlotsInUse() == 0);
  CHECK(c.SlotsCreated() == 1);
}

// More live counters than a thread's table has ids: the extra counters
// count exactly through the shared overflow add (no slot), the last fast
// id works like any other, and a freed fast id is reused by the next
// counter, which gets slots again. Two threads add to every counter; one
// exits (its slots are folded), the other stays.
TEST_CASE("counters beyond the fast ids count exactly (overflow mode)") {
  std::vector<std::unique_ptr<ThreadCounter>> fast;
  // Take every fast id this process has free (other tests' counters are
  // destroyed, so that is all of them but the overflow id).
  for (uint32_t i = 0; i + 1 < internal::kPerThreadFastIds; ++i) {
    fast.push_back(std::make_unique<ThreadCounter>());
  }
  std::vector<std::unique_ptr<ThreadCounter>> extra;
  for (int i = 0; i < 3; ++i) {
    extra.push_back(std::make_unique<ThreadCounter>());
  }
  auto add_all = [&](uint64_t k) {
    fast.back()->Add(k);
    fast.front()->Add(k);
    for (auto& c : extra) {
      for (int i = 0; i < 100; ++i) c->Add(k);
    }
  };
  std::thread t([&] { add_all(2); });
  t.join();
  add_all(1);
  for (auto& c : extra) {
    CHECK(c->Sum() == 300);
    CHECK(c->SlotsCreated() == 0);  // overflow mode: no slot
  }
  CHECK(fast.back()->Sum() == 3);   // the last fast id: slots as usual
  CHECK(fast.back()->SlotsCreated() == 1);
  CHECK(fast.front()->Sum() == 3);
  // Freeing a fast counter frees its id: the next counter takes it.
  fast.pop_back();
  ThreadCounter again;
  std::thread u([&] { again.Add(5); });
  u.join();
  again.Add(7);
  CHECK(again.Sum() == 12);
  CHECK(again.SlotsCreated() == 1);  // reused the exited thread's slot
  CHECK(again.ExitedTotal() == 5);
}

// 200 short-lived threads in waves of kLive, each adding, while a reader
// sums continuously: the sum never goes backwards, never exceeds what was
// written so far, and ends exact. Slots are reused: created <= kLive.
TEST_CASE("200 short-lived threads, concurrent reader, slot reuse") {
  ThreadCounter c;
  constexpr int kThreads = 200;
  constexpr int kLive = 8;
  constexpr int kAdds = 2000;
  // written is raised BEFORE each add, so it bounds the sum from above.
  std::atomic<uint64_t> written{0};
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> reads{0}, backwards{0}, exceeded{0};
  std::thread reader([&] {
    uint64_t last = 0;
    while (!stop.load()) {
      const uint64_t s = c.Sum();
      // Acquire fence: every add whose value Sum() saw was preceded (in its
      // thread, before a release fence) by its raise of `written`.
      // Pairs with: release fence in the writer loop below.
      std::atomic_thread_fence(std::memory_order_acquire);  // Pairs with: release fence in the writers.
      // Relaxed: ordered by the fence above.
      const uint64_t w = written.load(std::memory_order_relaxed);
      if (s < last) backwards.fetch_add(1);
      if (s > w) exceeded.fetch_add(1);
      last = s;
      reads.fetch_add(1);
    }
  });
  for (int wave = 0; wave < kThreads / kLive; ++wave) {
    std::vector<std::thread> ts;
    std::atomic<int> registered{0};
    for (int i = 0; i < kLive; ++i) {
      ts.emplace_back([&] {
        for (int k = 0; k < kAdds; ++k) {
          if (k == 1) {
            // All kLive threads of the wave own a slot at the same time.
            registered.fetch_add(1);
            while (registered.load() < kLive) std::this_thread::yield();
          }
          // Relaxed: ordered before the add by the fence below.
          written.fetch_add(1, std::memory_order_relaxed);
          // Pairs with: acquire fence in the reader.
          std::atomic_thread_fence(std::memory_order_release);  // Pairs with: reader's acquire fence.
          c.Inc();
        }
      });
    }
    for (auto& t : ts) t.join();
  }
  stop.store(true);
  reader.join();
  MESSAGE(reads.load() << " concurrent sums; slots created "
                       << c.SlotsCreated());
  CHECK(reads.load() > 0);
  CHECK(backwards.load() == 0);
  CHECK(exceeded.load() == 0);
  CHECK(c.Sum() == uint64_t{kThreads} * kAdds);
  CHECK(c.ExitedTotal() == uint64_t{kThreads} * kAdds);
  // Exactly one wave's worth: every later wave reused the folded slots.
  CHECK(c.SlotsCreated() == static_cast<size_t>(kLive));
  CHECK(c.SlotsInUse() == 0);
}

TEST_CASE("live threads are summed; several counters per thread") {
  ThreadCounter a, b;
  std::atomic<int> phase{0};
  std::thread t([&] {
    a.Add(10);
    b.Add(20);
    phase.store(1);
    while (phase.load() != 2) std::this_thread::yield();
  });
  while (phase.load() != 1) std::this_thread::yield();
  CHECK(a.Sum() == 10);  // live slot
  CHECK(b.Sum() == 20);
  CHECK(a.ExitedTotal() == 0);
  phase.store(2);
  t.join();
  CHECK(a.ExitedTotal() == 10);
  CHECK(b.ExitedTotal() == 20);
}

TEST_CASE("counter destroyed before its threads exit") {
  auto c = std::make_unique<ThreadCounter>();
  std::atomic<int> phase{0};
  std::thread t([&] {
    c->Add(3);
    phase.store(1);
    while (phase.load() != 2) std::this_thread::yield();
    // Exits now: the exit hook must skip the destroyed counter, and must not
    // fold into the new counter that reuses its id.
  });
  while (phase.load() != 1) std::this_thread::yield();
  CHECK(c->Sum() == 3);
  c.reset();
  ThreadCounter reused;  // very likely the same id, a new generation
  reused.Add(1);
  phase.store(2);
  t.join();
  CHECK(reused.Sum() == 1);
  CHECK(reused.ExitedTotal() == 0);
  CHECK(reused.SlotsCreated() == 1);
}

TEST_CASE("a thread that used a destroyed counter can use its successor") {
  auto c = std::make_unique<ThreadCounter>();
  c->Add(1);  // main thread's entry for c's id
  c.reset();
  ThreadCounter d;  // reuses the id; the stale entry must not match
  d.Add(2);
  CHECK(d.Sum() == 2);
  CHECK(d.SlotsCreated() == 1);
}

thread_local struct LateAdder {
  ThreadCounter* c = nullptr;
  ~LateAdder() {
    if (c != nullptr) c->Add(100);
  }
} late_adder;

TEST_CASE("an Add from a thread_local destructor is still counted") {
  ThreadCounter c;
  std::thread t([&] {
    late_adder.c = &c;
    c.Add(1);
  });
  t.join();
  CHECK(c.Sum() == 101);
  CHECK(c.ExitedTotal() == 101);
  CHECK(c.SlotsInUse() == 0);
}

}  // namespace
}  // namespace percpu
