// Shared driver of the stress tests: flags, seeds, bounded defaults, and
// failure reports that say how to reproduce.
//
// Every stress binary accepts
//   --duration_ms=N  how long the hostile phase runs (default 1500; the
//                    STRESS_DURATION_MS environment variable overrides the
//                    default, which is how CI bounds each config's time)
//   --threads=N      writer threads (default 3: more than the 2 CI cores, so
//                    writers are preempted mid-update)
//   --ops=N          stop each writer after N operations (0: duration only)
//   --seed=N         seed of the operation mix and timing jitter (default:
//                    from the clock; always printed)
// and exits 0 on success, 1 when an invariant failed, 2 on bad flags.
#ifndef PERCPU_STRESS_HARNESS_H_
#define PERCPU_STRESS_HARNESS_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

namespace percpu {
namespace stress {

struct Options {
  int64_t duration_ms = 1500;
  int threads = 3;
  uint64_t ops = 0;
  uint64_t seed = 0;
};

// A small, fast PRNG (SplitMix64) for operation mixes and jitter.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n).
  uint64_t Below(uint64_t n) { return n == 0 ? 0 : Next() % n; }

 private:
  uint64_t state_;
};

// Collects invariant violations from any thread; the first few are printed.
class Reporter {
 public:
  explicit Reporter(std::string reproduce) : reproduce_(std::move(reproduce)) {}
  // Thread-safe. Records a violation and prints it (the first 10).
  void Fail(const std::string& what);
  bool failed() const { return failures_.load(std::memory_order_relaxed) != 0; }
  uint64_t failures() const { return failures_.load(std::memory_order_relaxed); }
  const std::string& reproduce() const { return reproduce_; }

 private:
  std::string reproduce_;
  std::atomic<uint64_t> failures_{0};
};

// Tells the hostile threads when to stop.
class Deadline {
 public:
  explicit Deadline(int64_t duration_ms)
      : end_(std::chrono::steady_clock::now() +
             std::chrono::milliseconds(duration_ms)) {}
  bool Passed() const { return std::chrono::steady_clock::now() >= end_; }

 private:
  std::chrono::steady_clock::time_point end_;
};

using StressFn = void (*)(const Options&, Reporter&);

// Parses flags, prints the parameters and seed, runs `fn`, prints the
// verdict and a reproduce line on failure. Returns the process exit code.
int RunStress(const char* name, int argc, char** argv, StressFn fn);

}  // namespace stress
}  // namespace percpu

#endif  // PERCPU_STRESS_HARNESS_H_
