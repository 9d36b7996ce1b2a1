// fork() while other threads use the per-thread registry (issue 12 item 7).
// A hammer thread keeps taking the registry mutex (constructing and
// destroying counters, first Adds, diagnostics) and short-lived threads
// exit (exit folds) while the main thread forks repeatedly. Each child must
// construct a counter, add (first use: AddSlow), run a thread that adds and
// exits, and sum, within a bounded time; the parent checks with waitpid and
// a deadline. Without the pthread_atfork handlers a child inherits the
// registry mutex locked by a thread that does not exist in it and hangs.
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <thread>
#include <vector>

#include "doctest/doctest.h"
#include "primitives/per_thread.h"

namespace percpu {
namespace {

constexpr int kForks = 150;
constexpr auto kChildDeadline = std::chrono::seconds(20);

// The child's work; returns its exit code (0 = all checks passed).
int ChildBody(ThreadCounter& shared, uint64_t shared_before) {
  ThreadCounter fresh;  // construction: takes the registry mutex
  fresh.Add(3);            // first Add on this counter: AddSlow
  shared.Add(5);
  std::thread t([&] {
    fresh.Add(4);   // AddSlow on a new thread
    shared.Add(6);  // and its exit fold at thread exit
  });
  t.join();
  if (fresh.Sum() != 7) return 2;
  if (fresh.ExitedTotal() != 4) return 3;
  // The parent's other threads do not exist here: the child handler folded
  // their slots, so only the forking thread still owns one.
  if (shared.SlotsInUse() > 1) return 4;
  // Nothing the parent counted before the fork is lost or doubled (the
  // hammer may have added more between the parent's read and the fork).
  const uint64_t s = shared.Sum();
  if (s < shared_before + 11) return 5;
  return 0;
}

TEST_CASE("fork while other threads hold the registry mutex") {
  ThreadCounter shared;
  shared.Add(1);  // the main thread owns a slot before the forks
  std::atomic<bool> stop{false};
  std::thread hammer([&] {
    while (!stop.load(std::memory_order_relaxed)) {
      ThreadCounter tmp;  // constructor and destructor take the mutex
      tmp.Add(1);            // AddSlow takes it
      shared.Add(1);
      (void)tmp.SlotsInUse();  // takes it (value irrelevant)
    }
  });
  std::thread churn([&] {
    while (!stop.load(std::memory_order_relaxed)) {
      std::thread([&] { shared.Add(1); }).join();  // exit folds
    }
  });

  int hung = 0, failed = 0;
  for (int i = 0; i < kForks; ++i) {
    const uint64_t before = shared.Sum();
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) _exit(ChildBody(shared, before));
    const auto deadline = std::chrono::steady_clock::now() + kChildDeadline;
    int status = 0;
    pid_t got = 0;
    while ((got = waitpid(pid, &status, WNOHANG)) == 0 &&
           std::chrono::steady_clock::now() < deadline) {
      const timespec ms{0, 1000 * 1000};
      nanosleep(&ms, nullptr);
    }
    if (got == 0) {
      ++hung;
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      continue;
    }
    REQUIRE(got == pid);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      ++failed;
      std::fprintf(stderr, "child %d: status %#x\n", i, status);
    }
  }
  stop.store(true);
  hammer.join();
  churn.join();
  CHECK(hung == 0);
  CHECK(failed == 0);
  // The parent is unaffected: its own count is intact and its registry
  // still works.
  ThreadCounter after;
  after.Add(2);
  CHECK(after.Sum() == 2);
  CHECK(shared.Sum() >= 1);
}

}  // namespace
}  // namespace percpu
