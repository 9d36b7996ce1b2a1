// The README's first example: a per-CPU counter in three lines (declare,
// Add, read) on the process-wide default domain. Run as a test: it exits
// non-zero unless the total equals what was added.
#include <cstdint>
#include <cstdio>
#include <thread>
#include <vector>

// [README first example]
#include "primitives/counter.h"

percpu::Counter requests("requests", "Requests served.");  // 1. declare

void HandleRequest() { requests.Inc(); }  // 2. add: any thread, no lock

uint64_t RequestsServed() { return requests.Read(); }  // 3. read: exact
// [/README first example]

int main() {
  std::vector<std::thread> workers;
  for (int t = 0; t < 4; ++t) {
    workers.emplace_back([] {
      for (int i = 0; i < 100000; ++i) HandleRequest();
    });
  }
  for (std::thread& w : workers) w.join();
  const uint64_t served = RequestsServed();
  std::printf("requests served: %llu%s\n",
              static_cast<unsigned long long>(served),
              requests.degraded() ? " (degraded: shared atomic word)" : "");
  return served == 400000 ? 0 : 1;
}
