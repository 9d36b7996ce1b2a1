// A consumer of percpu: counts requests per worker thread and prints the
// folded total. Exits non-zero if the total is wrong.
#include <cstdint>
#include <cstdio>
#include <thread>
#include <vector>

#include "primitives/u64_stats.h"

namespace {

struct alignas(64) WorkerStats {
  percpu::U64Stat requests;
  percpu::U64StatsSync sync;
};

}  // namespace

int main() {
  constexpr int kWorkers = 2;
  constexpr uint64_t kRequests = 100000;
  std::vector<WorkerStats> stats(kWorkers);
  std::vector<std::thread> workers;
  for (int w = 0; w < kWorkers; ++w) {
    workers.emplace_back([&stats, w] {
      for (uint64_t i = 0; i < kRequests; ++i) {
        percpu::U64StatsUpdate<percpu::U64StatsSync> update(stats[w].sync);
        stats[w].requests.Inc();
      }
    });
  }
  for (std::thread& t : workers) t.join();
  uint64_t total = 0;
  for (const WorkerStats& s : stats) {
    total += percpu::FetchConsistent(s.sync, [&] { return s.requests.Read(); });
  }
  std::printf("requests: %llu\n", static_cast<unsigned long long>(total));
  return total == kWorkers * kRequests ? 0 : 1;
}
