#include "stress/harness.h"

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

namespace percpu {
namespace stress {
namespace {

std::mutex g_print_mu;

bool ParseInt(const char* text, int64_t min, int64_t max, int64_t* out) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || v < min || v > max) {
    return false;
  }
  *out = v;
  return true;
}

bool ParseFlag(const char* arg, const char* name, int64_t min, int64_t max,
               int64_t* out, bool* bad) {
  const size_t n = std::strlen(name);
  if (std::strncmp(arg, name, n) != 0 || arg[n] != '=') return false;
  if (!ParseInt(arg + n + 1, min, max, out)) *bad = true;
  return true;
}

}  // namespace

void Reporter::Fail(const std::string& what) {
  const uint64_t n = failures_.fetch_add(1, std::memory_order_relaxed);
  if (n < 10) {
    std::lock_guard<std::mutex> lock(g_print_mu);
    std::fprintf(stderr, "INVARIANT VIOLATED: %s\n", what.c_str());
  }
}

int RunStress(const char* name, int argc, char** argv, StressFn fn) {
  Options options;
  if (const char* env = std::getenv("STRESS_DURATION_MS")) {
    int64_t v;
    if (ParseInt(env, 1, 24 * 3600 * 1000LL, &v)) options.duration_ms = v;
  }
  for (int i = 1; i < argc; ++i) {
    int64_t v = 0;
    bool bad = false;
    if (ParseFlag(argv[i], "--duration_ms", 1, 24 * 3600 * 1000LL, &v, &bad)) {
      options.duration_ms = v;
    } else if (ParseFlag(argv[i], "--threads", 1, 256, &v, &bad)) {
      options.threads = static_cast<int>(v);
    } else if (ParseFlag(argv[i], "--ops", 0, INT64_MAX, &v, &bad)) {
      options.ops = static_cast<uint64_t>(v);
    } else if (ParseFlag(argv[i], "--seed", 0, INT64_MAX, &v, &bad)) {
      options.seed = static_cast<uint64_t>(v);
    } else {
      bad = true;
    }
    if (bad) {
      std::fprintf(stderr,
                   "%s: bad flag '%s'\nflags: --duration_ms=N (1..86400000) "
                   "--threads=N (1..256) --ops=N --seed=N\n",
                   name, argv[i]);
      return 2;
    }
  }
  if (options.seed == 0) {
    options.seed = static_cast<uint64_t>(
        std::chrono::steady_clock::now().time_since_epoch().count()) | 1;
  }
  char reproduce[256];
  std::snprintf(reproduce, sizeof(reproduce),
                "%s --seed=%llu --threads=%d --duration_ms=%lld --ops=%llu",
                name, static_cast<unsigned long long>(options.seed),
                options.threads, static_cast<long long>(options.duration_ms),
                static_cast<unsigned long long>(options.ops));
  std::printf("stress %s\n", reproduce);
  std::fflush(stdout);
  Reporter reporter(reproduce);
  fn(options, reporter);
  if (reporter.failed()) {
    std::printf("FAILED: %llu invariant violations\nreproduce with: %s\n",
                static_cast<unsigned long long>(reporter.failures()),
                reproduce);
    return 1;
  }
  std::printf("PASSED: all invariants held\n");
  return 0;
}

}  // namespace stress
}  // namespace percpu
