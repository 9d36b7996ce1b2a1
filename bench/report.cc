// The benchmark report: runs every experiment of the suite side by side in
// one process and prints a table of ratios, with the figure the original
// upstream thread reported beside ours and the project's goal (met /
// MISSED). docs/performance.md explains each row.
//
//   bazel run --config=opt //bench:report -- [--quick] [--format=text|csv|json]
//       [--csv_out=FILE] [--json_out=FILE] [--plot=FILE.svg]
//
// (Relative FILEs are relative to the workspace directory under bazel run.)
//
// Method: the variants of an experiment are measured round by round,
// interleaved (A B C, A B C, ...), so that noise from other processes hits
// every variant alike; each variant's figure is the median of its rounds
// (the best round is printed too). Ratios are computed from medians.
// Nothing is tuned to pass: goals are fixed thresholds checked against the
// measured ratio.
//
// Experiment 3 (reads) runs the read_kernels binaries (host, host with the
// forced seqcount path, i686) as subprocesses -- they are data dependencies
// of this target and found through the Bazel runfiles -- and counts their
// instructions with valgrind --tool=callgrind --toggle-collect=<kernel>.
#include <gnu/libc-version.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "bench/kernels.h"
#include "primitives/percpu_alloc.h"
#include "primitives/rseq.h"
#include "primitives/status.h"
#include "tools/cpp/runfiles/runfiles.h"

namespace percpu {
namespace bench {
namespace {

using Clock = std::chrono::steady_clock;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// ---------------------------------------------------------------------------
// Options.

enum class Format { kText, kCsv, kJson };

struct Options {
  bool quick = false;
  Format format = Format::kText;
  std::string csv_out;
  std::string json_out;
  // The plot: written by default (kDefaultPlot); --plot=none skips it.
  std::string plot = "bench-out/percpu_cost.svg";
};

void Usage(FILE* out) {
  std::fprintf(out,
               "usage: report [--quick] [--format=text|csv|json] "
               "[--csv_out=FILE] [--json_out=FILE] [--plot=FILE.svg]\n"
               "  --quick      short run (fewer rounds, 100k instead of 1M "
               "allocations)\n"
               "  --format     table format on stdout (default text)\n"
               "  --csv_out    also write the table as CSV to FILE\n"
               "  --json_out   also write the table as JSON to FILE\n"
               "  --plot       where to write the SVG plot of fold and "
               "allocation cost vs CPU count\n"
               "               and large-object cost vs live objects "
               "(default bench-out/percpu_cost.svg;\n"
               "               --plot=none: no plot; needs gnuplot)\n"
               "Relative FILEs are relative to the workspace under bazel "
               "run.\n");
}

bool StartsWith(const std::string& s, const char* prefix) {
  return s.compare(0, std::strlen(prefix), prefix) == 0;
}

StatusOr<Options> ParseOptions(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") {
      o.quick = true;
    } else if (a == "--format=text") {
      o.format = Format::kText;
    } else if (a == "--format=csv") {
      o.format = Format::kCsv;
    } else if (a == "--format=json") {
      o.format = Format::kJson;
    } else if (StartsWith(a, "--csv_out=")) {
      o.csv_out = a.substr(10);
    } else if (StartsWith(a, "--json_out=")) {
      o.json_out = a.substr(11);
    } else if (StartsWith(a, "--plot=")) {
      o.plot = a.substr(7);
      if (o.plot.empty()) {
        return InvalidArgumentError("report: --plot needs a file name");
      }
      if (o.plot == "none") o.plot.clear();
    } else {
      return InvalidArgumentError("report: unknown argument '" + a + "'");
    }
  }
  return o;
}

// ---------------------------------------------------------------------------
// Small helpers.

double Median(std::vector<double> v) {
  if (v.empty()) return kNaN;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double Best(const std::vector<double>& v) {
  if (v.empty()) return kNaN;
  return *std::min_element(v.begin(), v.end());
}

// The median over rounds of a[r] / b[r]: each pair was measured back to
// back, so slow drifts (frequency, a co-tenant's load) cancel in the ratio.
// This is the figure every ratio of the table uses.
double PairedRatio(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> r;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (b[i] > 0) r.push_back(a[i] / b[i]);
  }
  return Median(r);
}

// The spread of the per-round ratios a[r] / b[r] without the most extreme
// round at each end when there are at least 5 (one disturbed round on a
// shared machine would otherwise decide every verdict): {lo, hi}.
std::pair<double, double> PairedSpread(const std::vector<double>& a,
                                       const std::vector<double>& b) {
  std::vector<double> r;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (b[i] > 0) r.push_back(a[i] / b[i]);
  }
  if (r.empty()) return {kNaN, kNaN};
  std::sort(r.begin(), r.end());
  const size_t trim = r.size() >= 5 ? 1 : 0;
  return {r[trim], r[r.size() - 1 - trim]};
}

std::string Fmt(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string Fmt(const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  return buf;
}

// "1.23 us" / "456 ns" for a duration in ns.
std::string Ns(double ns) {
  if (std::isnan(ns)) return "n/a";
  if (ns >= 1e6) return Fmt("%.2f ms", ns / 1e6);
  if (ns >= 1e3) return Fmt("%.2f us", ns / 1e3);
  if (ns >= 10) return Fmt("%.1f ns", ns);
  return Fmt("%.2f ns", ns);
}

std::string Bytes(double b) {
  if (b >= 1024.0 * 1024) return Fmt("%.1f MiB", b / (1024.0 * 1024));
  if (b >= 1024.0) return Fmt("%.1f KiB", b / 1024.0);
  return Fmt("%.0f B", b);
}

bool ReadFile(const std::string& path, std::string* out) {
  std::ifstream in(path);
  if (!in) return false;
  std::stringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  return true;
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' ||
                        s.back() == '\t' || s.back() == '\r')) {
    s.pop_back();
  }
  size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  return s.substr(i);
}

// Single-quotes a string for /bin/sh.
std::string ShellQuote(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'') {
      q += "'\\''";
    } else {
      q += c;
    }
  }
  return q + "'";
}

// Runs a shell command and returns its stdout; exit status in *status.
std::string RunCommand(const std::string& cmd, int* status) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) {
    *status = -1;
    return out;
  }
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  const int rc = pclose(p);
  *status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  return out;
}

// The full path of `tool` on $PATH, or "" if not found.
std::string FindOnPath(const std::string& tool) {
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr && *path != '\0' ? path : "/usr/bin:/bin";
  std::stringstream ss(dirs);
  std::string dir;
  while (std::getline(ss, dir, ':')) {
    if (dir.empty()) continue;
    const std::string full = dir + "/" + tool;
    if (access(full.c_str(), X_OK) == 0) return full;
  }
  return "";
}

std::string TempDir() {
  const char* t = std::getenv("TEST_TMPDIR");
  std::string base = t != nullptr && *t != '\0' ? t : "/tmp";
  std::string tmpl = base + "/percpu_report.XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data()) == nullptr) return base;
  return buf.data();
}

// ---------------------------------------------------------------------------
// Interleaved measurement of single-threaded kernels.

struct Variant {
  Variant(std::string n, std::function<uint64_t()> f)
      : name(std::move(n)), fn(std::move(f)) {}
  std::string name;
  std::function<uint64_t()> fn;
  std::vector<double> ns;  // one sample (ns per call) per round
  long iters = 1;
};

// Calibrates each variant to about `sample_s` seconds per sample, then
// measures `rounds` rounds, interleaved. cpu_time: samples in thread CPU
// time (for paired ratios and their spread; needs samples of ~10 ms or
// more), else wall time (for best-of absolute figures).
void MeasureInterleaved(std::vector<Variant>* vs, int rounds, double sample_s,
                        bool cpu_time = false) {
  volatile uint64_t sink = 0;
  for (Variant& v : *vs) {
    sink = sink + v.fn();  // warm up (first touch, caches)
    long iters = 1;
    for (;;) {
      const Clock::time_point t0 = Clock::now();
      for (long i = 0; i < iters; ++i) sink = sink + v.fn();
      const double s =
          std::chrono::duration<double>(Clock::now() - t0).count();
      if (s >= sample_s / 4 || iters >= (1L << 30)) {
        v.iters = std::max(1L, static_cast<long>(iters * sample_s /
                                                 std::max(s, 1e-9)));
        break;
      }
      iters *= 2;
    }
  }
  for (int r = 0; r < rounds; ++r) {
    for (Variant& v : *vs) {
      // Wall time, best round: interference only ever adds time. (Thread
      // CPU time is not used here: on this kind of VM it excludes
      // hypervisor steal time in coarse chunks, so short samples can read
      // LOW, and a best-of would pick exactly those.)
      // With cpu_time, thread CPU time over >= ~10 ms instead: a
      // co-tenant's time slice inside a wall-time sample moved per-round
      // ratios by up to 10x on the shared machine, and 10 ms is long
      // enough for the VM's CPU-time accounting.
      const double c0 = cpu_time ? ThreadCpuSeconds() : 0;
      const Clock::time_point t0 = Clock::now();
      for (long i = 0; i < v.iters; ++i) sink = sink + v.fn();
      const double ns =
          cpu_time ? (ThreadCpuSeconds() - c0) * 1e9
                   : std::chrono::duration<double, std::nano>(Clock::now() -
                                                              t0)
                         .count();
      v.ns.push_back(ns / static_cast<double>(v.iters));
    }
  }
}

const Variant& Find(const std::vector<Variant>& vs, const std::string& name) {
  for (const Variant& v : vs) {
    if (v.name == name) return v;
  }
  std::fprintf(stderr, "report: internal error: no variant %s\n",
               name.c_str());
  std::abort();
}

// ---------------------------------------------------------------------------
// The table.

enum class GoalOp { kNone, kAtLeast, kAtMost, kEqual };

struct Row {
  std::string id;          // stable key, e.g. "2.cpu_vs_item_major"
  std::string experiment;  // what is compared
  double value = kNaN;     // our figure
  std::string unit;        // "x" (a ratio), "ns/op", "CPUs"
  std::string detail;      // the absolute numbers behind it
  std::string seed;        // the figure the upstream thread reported
  GoalOp op = GoalOp::kNone;
  double goal = 0;
  std::string note;        // e.g. why a goal cannot be measured
  // Spread of the per-round ratios (min, max) when the value is a paired
  // ratio; NaN otherwise. A verdict is given only when the whole spread is
  // on one side of the goal ("unclear" otherwise).
  double lo = kNaN;
  double hi = kNaN;
  bool lower_is_better = true;  // direction, printed in the table

  std::string GoalText() const {
    switch (op) {
      case GoalOp::kNone:
        return "-";
      case GoalOp::kAtLeast:
        return Fmt(">= %g%s", goal, unit == "x" ? "x" : (" " + unit).c_str());
      case GoalOp::kAtMost:
        return Fmt("<= %g%s", goal, unit == "x" ? "x" : (" " + unit).c_str());
      case GoalOp::kEqual:
        return Fmt("= %g%s", goal, unit == "x" ? "x" : (" " + unit).c_str());
    }
    return "-";
  }
  std::string Status() const {
    if (op == GoalOp::kNone) return "-";
    if (std::isnan(value)) return "NOT MEASURED";
    if (!std::isnan(lo) && !std::isnan(hi) && op != GoalOp::kEqual) {
      const bool all_ok = op == GoalOp::kAtMost ? hi <= goal : lo >= goal;
      const bool all_bad = op == GoalOp::kAtMost ? lo > goal : hi < goal;
      if (all_ok) return "met";
      if (all_bad) return "MISSED";
      return "unclear";
    }
    bool ok = false;
    switch (op) {
      case GoalOp::kAtLeast:
        ok = value >= goal;
        break;
      case GoalOp::kAtMost:
        ok = value <= goal;
        break;
      case GoalOp::kEqual:
        ok = value == goal;
        break;
      case GoalOp::kNone:
        break;
    }
    return ok ? "met" : "MISSED";
  }
  std::string ValueText() const {
    if (std::isnan(value)) return "n/a";
    if (unit == "x") return Fmt("%.2fx", value);
    if (unit == "ns/op") return Fmt("%.2f ns/op", value);
    return Fmt("%g %s", value, unit.c_str());
  }
};

struct Machine {
  std::vector<std::pair<std::string, std::string>> facts;
};

struct Report {
  Machine machine;
  std::vector<Row> rows;
  std::vector<std::string> notes;  // printed under the table
  // --plot: one row per CPU count: possible CPUs, then us per fold for
  // item-major possible, cpu-major possible, cpu-major present, item-major
  // all backed, cpu-major all backed.
  std::vector<std::vector<double>> plot;
  // Allocation vs CPUs: {cpus, ns per Allocate (fill), ns per free +
  // allocate} for 16-byte objects.
  std::vector<std::vector<double>> alloc_cpus;
  // Large objects (200 bytes, 4 CPUs) vs live objects: {live, ns per
  // Allocate (fill), ns per free + allocate}.
  std::vector<std::vector<double>> alloc_large;
};

const char* const kPlotColumns =
    "possible item_major_possible cpu_major_possible cpu_major_present "
    "item_major_backed cpu_major_backed";

// ---------------------------------------------------------------------------
// Machine description.

std::string CpuinfoField(const std::string& cpuinfo, const std::string& key) {
  std::stringstream ss(cpuinfo);
  std::string line;
  while (std::getline(ss, line)) {
    if (StartsWith(line, key.c_str())) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) return Trim(line.substr(colon + 1));
    }
  }
  return "";
}

Machine DescribeMachine(const std::string& valgrind) {
  Machine m;
  std::string cpuinfo;
  ReadFile("/proc/cpuinfo", &cpuinfo);
  std::string model = CpuinfoField(cpuinfo, "model name");
  if (model.empty()) model = "unknown";
  const std::string family = CpuinfoField(cpuinfo, "cpu family");
  const std::string model_no = CpuinfoField(cpuinfo, "model\t");
  if (!family.empty()) {
    model += " (family " + family + ", model " +
             (model_no.empty() ? std::string("?") : model_no) + ")";
  }
  m.facts.push_back({"cpu", model});
  // Cache geometry of CPU 0 (the fold results depend on it).
  std::string caches;
  for (int i = 0; i < 8; ++i) {
    const std::string dir =
        "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    std::string level, type, size, ways;
    if (!ReadFile(dir + "level", &level) || !ReadFile(dir + "size", &size)) {
      break;
    }
    ReadFile(dir + "type", &type);
    ReadFile(dir + "ways_of_associativity", &ways);
    type = Trim(type);
    if (type == "Instruction") continue;
    if (!caches.empty()) caches += ", ";
    caches += "L" + Trim(level) + (type == "Data" ? "d" : "") + " " +
              Trim(size) + (ways.empty() ? "" : " " + Trim(ways) + "-way");
  }
  if (!caches.empty()) m.facts.push_back({"caches", caches});
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  std::string cores = CpuinfoField(cpuinfo, "cpu cores");
  std::string siblings = CpuinfoField(cpuinfo, "siblings");
  std::string possible, present;
  ReadFile("/sys/devices/system/cpu/possible", &possible);
  ReadFile("/sys/devices/system/cpu/present", &present);
  m.facts.push_back(
      {"cpus", Fmt("%ld online (possible %s, present %s; per package: %s "
                   "cores, %s logical)",
                   online, Trim(possible).c_str(), Trim(present).c_str(),
                   cores.empty() ? "?" : cores.c_str(),
                   siblings.empty() ? "?" : siblings.c_str())});
  int nodes = 0;
  for (;; ++nodes) {
    struct stat st;
    if (stat(("/sys/devices/system/node/node" + std::to_string(nodes)).c_str(),
             &st) != 0) {
      break;
    }
  }
  m.facts.push_back({"numa_nodes", std::to_string(nodes > 0 ? nodes : 1)});
  const std::string flags = CpuinfoField(cpuinfo, "flags");
  m.facts.push_back(
      {"virtualized",
       flags.find(" hypervisor") != std::string::npos ? "yes (hypervisor flag)"
                                                      : "no hypervisor flag"});
  struct utsname u;
  if (uname(&u) == 0) {
    m.facts.push_back(
        {"kernel", std::string(u.sysname) + " " + u.release + " " + u.machine});
  }
  m.facts.push_back({"glibc", gnu_get_libc_version()});
#if defined(__clang__)
  m.facts.push_back({"compiler", std::string("clang ") + __clang_version__});
#elif defined(__GNUC__)
  m.facts.push_back({"compiler", std::string("gcc ") + __VERSION__});
#endif
#if defined(NDEBUG) && defined(__OPTIMIZE__)
  m.facts.push_back({"build", "optimized (-O2 -DNDEBUG, --config=opt)"});
#else
  m.facts.push_back(
      {"build",
       "NOT an optimized build: numbers are not representative; use "
       "bazel run --config=opt //bench:report"});
#endif
  m.facts.push_back({"writer_mode", WriterModeName(CurrentWriterMode())});
  m.facts.push_back({"writer_mode_reason", WriterModeReason()});
  std::string thp;
  if (ReadFile("/sys/kernel/mm/transparent_hugepage/enabled", &thp)) {
    m.facts.push_back({"transparent_hugepages", Trim(thp)});
  }
  if (!valgrind.empty()) {
    int st = 0;
    const std::string v =
        Trim(RunCommand(ShellQuote(valgrind) + " --version 2>/dev/null", &st));
    m.facts.push_back({"valgrind", v.empty() ? valgrind : v});
  } else {
    m.facts.push_back({"valgrind", "not found (instruction counts n/a)"});
  }
  char when[64];
  const std::time_t now = std::time(nullptr);
  std::strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S %Z",
                std::localtime(&now));
  m.facts.push_back({"date", when});
  return m;
}

// ---------------------------------------------------------------------------
// Experiments 1, 2 and 6: folds.

struct Sizes {
  int rounds;
  double sample_s;
};

Status RunFoldExperiments(const Sizes& sz, Report* rep) {
  constexpr int kPossible = 192;
  constexpr int kPresent = 32;
  StatusOr<std::unique_ptr<FoldFixture>> a =
      FoldFixture::Create(kPossible, kPresent);
  if (!a.ok()) return a.status();
  StatusOr<std::unique_ptr<FoldFixture>> b =
      FoldFixture::Create(kPossible, kPossible);
  if (!b.ok()) return b.status();
  const FoldFixture& fa = **a;
  const FoldFixture& fb = **b;

  std::vector<uint64_t> stream_a(kPresent * kMibItems, 1);
  std::vector<uint64_t> stream_b(kPossible * kMibItems, 1);

  // Results must be exact: a fold that is fast because it is wrong is not a
  // result.
  struct Check {
    const char* what;
    uint64_t got, want;
  };
  uint64_t first32_b = 0;
  for (int cpu = 0; cpu < kPresent; ++cpu) {
    for (size_t i = 0; i < kMibItems; ++i) {
      first32_b += static_cast<uint64_t>(cpu) * 1000 + i + 1;
    }
  }
  const Check checks[] = {
      {"cpu-major possible", FoldCpuMajorPossible(fa), fa.expected_total()},
      {"cpu-major present", FoldCpuMajorPresent(fa), fa.expected_total()},
      {"online snapshot", FoldOnlineSnapshot(fa), fa.expected_total()},
      {"item-major present", FoldItemMajorPresent(fa), fa.expected_total()},
      {"item-major possible", FoldItemMajorPossible(fa), fa.expected_total()},
      {"cpu-major 192 backed", FoldCpuMajorPossible(fb), fb.expected_total()},
      {"cpu-major first 32 of 192", FoldCpuMajorFirstN(fb, kPresent),
       first32_b},
      {"item-major 192 backed", FoldItemMajorPossible(fb),
       fb.expected_total()},
  };
  for (const Check& c : checks) {
    if (c.got != c.want) {
      return InternalError(Fmt("fold check %s: got %llu, want %llu", c.what,
                               static_cast<unsigned long long>(c.got),
                               static_cast<unsigned long long>(c.want)));
    }
  }

  std::vector<Variant> vs;
  vs.push_back({"a_possible", [&] { return FoldCpuMajorPossible(fa); }});
  vs.push_back({"a_present", [&] { return FoldCpuMajorPresent(fa); }});
  vs.push_back({"a_online", [&] { return FoldOnlineSnapshot(fa); }});
  vs.push_back({"a_item_present", [&] { return FoldItemMajorPresent(fa); }});
  vs.push_back({"a_stream",
                [&] { return StreamSum(stream_a.data(), stream_a.size()); }});
  vs.push_back({"b_possible", [&] { return FoldCpuMajorPossible(fb); }});
  vs.push_back(
      {"b_first32", [&] { return FoldCpuMajorFirstN(fb, kPresent); }});
  vs.push_back({"b_item_possible", [&] { return FoldItemMajorPossible(fb); }});
  vs.push_back({"b_stream",
                [&] { return StreamSum(stream_b.data(), stream_b.size()); }});
  MeasureInterleaved(&vs, sz.rounds, sz.sample_s, /*cpu_time=*/true);

  auto med = [&](const char* n) { return Median(Find(vs, n).ns); };
  auto best = [&](const char* n) { return Best(Find(vs, n).ns); };
  auto ratio = [&](const char* a, const char* b) {
    return PairedRatio(Find(vs, a).ns, Find(vs, b).ns);
  };
  // Every r.value = ratio(a, b) is followed by spread(r, a, b).
  auto spread = [&](Row& row, const char* a, const char* b) {
    std::tie(row.lo, row.hi) = PairedSpread(Find(vs, a).ns, Find(vs, b).ns);
  };
  // Absolute figures: the best round is the least disturbed one (other
  // processes only ever add time). Ratios: PairedRatio.
  auto both = [&](const char* n) {
    return Ns(best(n)) + " (median " + Ns(med(n)) + ")";
  };

  // One ratio row: rounds of kernel a over rounds of kernel b, with the
  // spread of the paired per-round ratios.
  auto add = [&](const char* id, const std::string& experiment, const char* a,
                 const char* b, bool lower_is_better, const std::string& detail,
                 const char* seed, GoalOp op = GoalOp::kNone, double goal = 0) {
    Row row;
    row.id = id;
    row.experiment = experiment;
    row.value = ratio(a, b);
    spread(row, a, b);
    row.lower_is_better = lower_is_better;
    row.unit = "x";
    row.detail = detail;
    row.seed = seed;
    row.op = op;
    row.goal = goal;
    rep->rows.push_back(row);
  };
  add("1.present_vs_possible",
      "fold 90-item MIB: all 192 possible CPUs / 32 present "
      "(absent units never touched: zero page)",
      "a_possible", "a_present", /*lower_is_better=*/false,
      "possible " + both("a_possible") + ", present " + both("a_present") +
          " per fold (cpu-major FoldAll)",
      "2.9x getifaddrs");
  add("1.online_vs_possible",
      "fold: 192 possible / 32 online via LcoreStats::Snapshot "
      "(hotplug-consistent production read)",
      "a_possible", "a_online", /*lower_is_better=*/false,
      "possible " + both("a_possible") + ", online snapshot " +
          both("a_online"),
      "2.9x getifaddrs");
  add("1.present_vs_possible_backed",
      "fold, kernel layout (all 192 units backed by real memory): 192 CPUs / "
      "32 CPUs",
      "b_possible", "b_first32", /*lower_is_better=*/false,
      "192 CPUs " + both("b_possible") + ", 32 CPUs " + both("b_first32"),
      "2.9x getifaddrs");
  add("2.cpu_vs_item_major",
      "fold 90 items over 32 present CPUs, 64 KiB stride: item-major "
      "(FoldField x90) / cpu-major (FoldAll)",
      "a_item_present", "a_present", /*lower_is_better=*/false,
      "item-major " + both("a_item_present") + ", cpu-major " +
          both("a_present"),
      "2x Docker snmp", GoalOp::kAtLeast, 4);
  add("2.cpu_vs_item_major_192",
      "same, 192 backed CPUs: item-major / cpu-major", "b_item_possible",
      "b_possible", /*lower_is_better=*/false,
      "item-major " + both("b_item_possible") + ", cpu-major " +
          both("b_possible"),
      "2x Docker snmp");

  const double bytes_a = kPresent * kMibItems * 8.0;
  const double bytes_b = kPossible * kMibItems * 8.0;
  add("6.fold_vs_stream",
      Fmt("fold cost vs limit: cpu-major fold of 32 CPUs (%s at 64 KiB "
          "stride) / contiguous sum of the same bytes",
          Bytes(bytes_a).c_str()),
      "a_present", "a_stream", /*lower_is_better=*/true,
      Fmt("fold %.2f GB/s, stream %.2f GB/s", bytes_a / best("a_present"),
          bytes_a / best("a_stream")),
      "-", GoalOp::kAtMost, 2);
  add("6.fold_vs_stream_192",
      Fmt("same, 192 backed CPUs (%s): fold / contiguous sum",
          Bytes(bytes_b).c_str()),
      "b_possible", "b_stream", /*lower_is_better=*/true,
      Fmt("fold %.2f GB/s, stream %.2f GB/s", bytes_b / best("b_possible"),
          bytes_b / best("b_stream")),
      "-", GoalOp::kAtMost, 2);
  return Status::Ok();
}

// ---------------------------------------------------------------------------
// Experiment 3: reads (subprocesses + callgrind).

struct ReadBinary {
  ReadBinary(std::string l, std::string p)
      : label(std::move(l)), path(std::move(p)) {}
  std::string label;  // "x86_64", "x86_64 forced seqcount", "i686"
  std::string path;
  std::map<std::string, double> ns;     // kernel -> ns per read
  std::map<std::string, double> insns;  // kernel -> instructions per read
  std::map<std::string, std::vector<double>> rounds;  // kernel -> every round
  std::string path_kind;                // "read_once" / "seqcount"
  std::string error;
};

const char* const kReadKernels[] = {"plain",     "read_once",
                                    "read_once_hoisted", "read_once_staged",
                                    "u64_stats", "u64_stats_group"};

// The extern "C" function of each kernel in read_kernels.cc.
std::string KernelSymbol(const std::string& k) {
  if (k == "plain") return "percpu_bench_read_plain";
  if (k == "read_once") return "percpu_bench_read_once";
  if (k == "read_once_hoisted") return "percpu_bench_read_once_hoisted";
  if (k == "read_once_staged") return "percpu_bench_read_once_staged";
  if (k == "u64_stats_group") return "percpu_bench_read_u64_stats_group";
  return "percpu_bench_read_u64_stats";
}

void RunReadBinary(ReadBinary* b, int rounds, const std::string& valgrind,
                   const std::string& tmp) {
  if (access(b->path.c_str(), X_OK) != 0) {
    b->error = "binary not found: " + b->path;
    return;
  }
  int st = 0;
  // The shell's own "Exec format error" (an i686 binary on a kernel without
  // IA32 emulation) would land in the middle of the report: exit status 126
  // says the same below.
  const std::string out = RunCommand(ShellQuote(b->path) + " --rounds=" +
                                         std::to_string(rounds) +
                                         " 2>/dev/null",
                                     &st);
  if (st != 0) {
    b->error = "exit status " + std::to_string(st);
    if (st == 126) {
      b->error += " (the kernel cannot execute this binary: for i686, a "
                  "kernel without IA32 emulation; its rows are n/a)";
    }
    return;
  }
  std::stringstream ss(out);
  std::string key;
  std::string val;
  while (ss >> key >> val) {
    if (key == "path") {
      b->path_kind = val;
    } else if (StartsWith(key, "rounds:")) {
      std::vector<double>& v = b->rounds[key.substr(7)];
      std::stringstream vs(val);
      std::string one;
      while (std::getline(vs, one, ',')) v.push_back(std::atof(one.c_str()));
    } else if (key != "pointer_bits") {
      b->ns[key] = std::atof(val.c_str());
    }
  }
  if (valgrind.empty()) return;
  for (const char* k : kReadKernels) {
    const std::string cg = tmp + "/callgrind." + std::to_string(getpid()) +
                           "." + k;
    const std::string cmd =
        ShellQuote(valgrind) + " --tool=callgrind --toggle-collect=" +
        KernelSymbol(k) + " --callgrind-out-file=" + ShellQuote(cg) + " " +
        ShellQuote(b->path) + " --insns=" + k + " >/dev/null 2>&1";
    RunCommand(cmd, &st);
    std::string text;
    if (st != 0 || !ReadFile(cg, &text)) continue;
    std::stringstream cs(text);
    std::string line;
    while (std::getline(cs, line)) {
      if (StartsWith(line, "totals:")) {
        const double total = std::atof(line.c_str() + 7);
        // 1000 calls of 32 CPUs x 4 counters (read_kernels.cc). Zero means
        // the toggle matched no function: n/a rather than a false 0.
        if (total > 0) b->insns[k] = total / (1000.0 * 128);
      }
    }
    unlink(cg.c_str());
  }
}

double MapGet(const std::map<std::string, double>& m, const std::string& k) {
  auto it = m.find(k);
  return it == m.end() ? kNaN : it->second;
}

std::string InsnText(const ReadBinary& b, const std::string& k) {
  const double v = MapGet(b.insns, k);
  return std::isnan(v) ? "n/a" : Fmt("%.2f", v);
}

void RunReadExperiments(int rounds, const std::string& valgrind,
                        const std::vector<std::string>& names,
                        const std::vector<std::string>& paths,
                        const std::string& tmp, Report* rep) {
  ReadBinary host{"x86_64", paths[0]};
  ReadBinary seq{"x86_64 forced seqcount", paths[1]};
  ReadBinary i686{"i686", paths[2]};
  for (ReadBinary* b : {&host, &seq, &i686}) {
    RunReadBinary(b, rounds, valgrind, tmp);
    if (!b->error.empty()) {
      rep->notes.push_back("read_kernels (" + b->label + "): " + b->error);
    }
  }
  rep->notes.push_back(
      "Experiment 3 ran the read_kernels binaries as subprocesses (" +
      names[0] + ", " + names[1] + ", " + names[2] +
      ", data dependencies of //bench:report found through the Bazel "
      "runfiles): best of " + std::to_string(rounds) +
      " interleaved rounds each; instructions per read from valgrind "
      "--tool=callgrind --toggle-collect=<kernel> over 1000 calls (" +
      (valgrind.empty() ? std::string("valgrind not found: n/a")
                        : valgrind) +
      ").");

  auto ns = [](const ReadBinary& b, const char* k) { return MapGet(b.ns, k); };

  Row r;
  r.id = "3.read_once_vs_plain";
  r.experiment =
      "per-CPU per-counter read, x86_64: READ_ONCE (relaxed atomic load) / "
      "plain load";
  r.value = ns(host, "read_once") / ns(host, "plain");
  r.unit = "x";
  r.detail = Fmt("read_once %.3f ns (%s insns), plain %.3f ns (%s insns) "
                 "per read; read_once with the base pointer hoisted by hand "
                 "%.3f ns (%s insns)",
                 ns(host, "read_once"), InsnText(host, "read_once").c_str(),
                 ns(host, "plain"), InsnText(host, "plain").c_str(),
                 ns(host, "read_once_hoisted"),
                 InsnText(host, "read_once_hoisted").c_str());
  r.seed = "ipvs (no figure)";
  rep->rows.push_back(r);

  r = Row();
  r.id = "3.u64_stats_vs_read_once";
  r.experiment =
      "x86_64: u64_stats group read (FetchBegin/FetchRetry loop, empty on "
      "64-bit) / READ_ONCE read";
  // Paired per-round ratio (the kernels run interleaved in one process).
  auto paired = [&](Row& row, const ReadBinary& b, const char* k1,
                    const char* k2) {
    auto a = b.rounds.find(k1);
    auto c = b.rounds.find(k2);
    if (a == b.rounds.end() || c == b.rounds.end()) {
      row.value = kNaN;
      return;
    }
    row.value = PairedRatio(a->second, c->second);
    std::tie(row.lo, row.hi) = PairedSpread(a->second, c->second);
  };
  paired(r, host, "u64_stats", "read_once");
  r.unit = "x";
  r.detail = Fmt("u64_stats %.3f ns (%s insns), read_once %.3f ns (%s insns)",
                 ns(host, "u64_stats"), InsnText(host, "u64_stats").c_str(),
                 ns(host, "read_once"), InsnText(host, "read_once").c_str());
  r.seed = "ipvs (no figure)";
  r.op = GoalOp::kAtMost;
  r.goal = 1.1;
  rep->rows.push_back(r);

  r = Row();
  r.id = "3.group_vs_read_once";
  r.experiment =
      "x86_64: U64StatsGroupSync read (a seqcount FetchBegin/FetchRetry "
      "loop around 4 counters per CPU: a consistent group) / READ_ONCE read";
  paired(r, host, "u64_stats_group", "read_once");
  r.unit = "x";
  r.detail = Fmt("group %.3f ns (%s insns), read_once %.3f ns (%s insns)",
                 ns(host, "u64_stats_group"),
                 InsnText(host, "u64_stats_group").c_str(),
                 ns(host, "read_once"), InsnText(host, "read_once").c_str());
  r.seed = "-";
  r.op = GoalOp::kAtMost;
  r.goal = 1.1;
  rep->rows.push_back(r);

  // The rows above compare loops of different shapes (read_once reloads
  // the array's base per counter; the group reads stage a CPU's counters in
  // locals). These two divide by READ_ONCE in the group reads' own shape
  // (read_once_staged), so the sync is the only difference.
  r = Row();
  r.id = "3.u64_stats_vs_staged";
  r.experiment =
      "x86_64: u64_stats group read / READ_ONCE read in the same loop shape "
      "(the sync's own cost)";
  paired(r, host, "u64_stats", "read_once_staged");
  r.unit = "x";
  r.detail = Fmt("u64_stats %.3f ns (%s insns), staged read_once %.3f ns "
                 "(%s insns)",
                 ns(host, "u64_stats"), InsnText(host, "u64_stats").c_str(),
                 ns(host, "read_once_staged"),
                 InsnText(host, "read_once_staged").c_str());
  r.seed = "-";
  r.op = GoalOp::kAtMost;
  r.goal = 1.1;
  rep->rows.push_back(r);

  r = Row();
  r.id = "3.group_vs_staged";
  r.experiment =
      "x86_64: U64StatsGroupSync read / READ_ONCE read in the same loop "
      "shape (the seqcount's own cost)";
  paired(r, host, "u64_stats_group", "read_once_staged");
  r.unit = "x";
  r.detail = Fmt("group %.3f ns (%s insns), staged read_once %.3f ns "
                 "(%s insns)",
                 ns(host, "u64_stats_group"),
                 InsnText(host, "u64_stats_group").c_str(),
                 ns(host, "read_once_staged"),
                 InsnText(host, "read_once_staged").c_str());
  r.seed = "-";
  r.op = GoalOp::kAtMost;
  r.goal = 1.1;
  rep->rows.push_back(r);

  r = Row();
  r.id = "3.insns_group_vs_read_once";
  r.experiment =
      "x86_64: instructions per counter read (callgrind), U64StatsGroupSync "
      "read / READ_ONCE read";
  r.value = MapGet(host.insns, "u64_stats_group") /
            MapGet(host.insns, "read_once");
  r.unit = "x";
  r.detail = Fmt("group %s insns, read_once %s insns per counter read",
                 InsnText(host, "u64_stats_group").c_str(),
                 InsnText(host, "read_once").c_str());
  r.seed = "-";
  rep->rows.push_back(r);

  r = Row();
  r.id = "3.seqcount_i686_vs_64bit";
  r.experiment =
      "32-bit seqcount read (i686 build) / 64-bit read (x86_64 build), "
      "u64_stats kernel";
  r.value = ns(i686, "u64_stats") / ns(host, "u64_stats");
  r.unit = "x";
  r.detail = Fmt("i686 %.3f ns (%s insns), x86_64 %.3f ns (%s insns) per "
                 "read; i686 path: %s",
                 ns(i686, "u64_stats"), InsnText(i686, "u64_stats").c_str(),
                 ns(host, "u64_stats"), InsnText(host, "u64_stats").c_str(),
                 i686.path_kind.empty() ? "?" : i686.path_kind.c_str());
  r.seed = "ipvs (no figure)";
  rep->rows.push_back(r);

  r = Row();
  r.id = "3.seqcount_forced_vs_64bit";
  r.experiment =
      "x86_64 with -DPERCPU_FORCE_SEQCOUNT / x86_64 64-bit path, u64_stats "
      "kernel";
  r.value = ns(seq, "u64_stats") / ns(host, "u64_stats");
  r.unit = "x";
  r.detail = Fmt("forced seqcount %.3f ns (%s insns), 64-bit %.3f ns (%s "
                 "insns)",
                 ns(seq, "u64_stats"), InsnText(seq, "u64_stats").c_str(),
                 ns(host, "u64_stats"), InsnText(host, "u64_stats").c_str());
  r.seed = "-";
  rep->rows.push_back(r);
}

// ---------------------------------------------------------------------------
// Experiment 4: updates.

Status RunUpdateExperiments(int rounds, double window_s, Report* rep) {
  StatusOr<std::unique_ptr<UpdateTargets>> t = UpdateTargets::Create();
  if (!t.ok()) return t.status();
  UpdateTargets& targets = **t;
  const int kThreads[] = {1, 2};
  // samples[threads index][kind] -> per-round rates
  std::map<std::pair<int, UpdateKind>, std::vector<UpdateRate>> samples;
  uint64_t expected[16] = {};  // by UpdateKind
  static_assert(sizeof(kAllUpdateKinds) / sizeof(kAllUpdateKinds[0]) <= 16,
                "expected[] holds one total per update kind");
  // Warm-up round (thread start, first-use slow paths), not recorded.
  for (UpdateKind kind : kAllUpdateKinds) {
    const UpdateRate w = MeasureUpdates(targets, kind, 1, window_s / 4, true);
    expected[static_cast<int>(kind)] += w.ops;
  }
  for (int r = 0; r < rounds; ++r) {
    for (int threads : kThreads) {
      for (UpdateKind kind : kAllUpdateKinds) {
        const UpdateRate u =
            MeasureUpdates(targets, kind, threads, window_s, true);
        samples[{threads, kind}].push_back(u);
        expected[static_cast<int>(kind)] += u.ops;
      }
    }
  }
  // Every shared counter must hold exactly the updates made.
  for (UpdateKind kind : kAllUpdateKinds) {
    if (kind == UpdateKind::kPlainThreadLocal ||
        kind == UpdateKind::kRelaxedTls ||
        kind == UpdateKind::kPerThreadLookup) {
      continue;
    }
    const uint64_t got = targets.Total(kind);
    if (got != expected[static_cast<int>(kind)]) {
      return InternalError(Fmt("update check %s: total %llu != %llu updates",
                               UpdateKindName(kind),
                               static_cast<unsigned long long>(got),
                               static_cast<unsigned long long>(
                                   expected[static_cast<int>(kind)])));
    }
  }
  auto mops = [&](int threads, UpdateKind k) {
    std::vector<double> v;
    for (const UpdateRate& u : samples[{threads, k}]) v.push_back(u.mops_total);
    return Median(v);
  };
  auto nsop_rounds = [&](int threads, UpdateKind k) {
    std::vector<double> v;
    for (const UpdateRate& u : samples[{threads, k}]) v.push_back(u.ns_per_op);
    return v;
  };
  auto nsop = [&](int threads, UpdateKind k) {
    return Median(nsop_rounds(threads, k));
  };
  auto cost_ratio = [&](int threads, UpdateKind a, UpdateKind b) {
    return PairedRatio(nsop_rounds(threads, a), nsop_rounds(threads, b));
  };
  auto on_cpu = [&](int threads, UpdateKind k) {
    std::vector<double> v;
    for (const UpdateRate& u : samples[{threads, k}]) v.push_back(u.on_cpu);
    return Median(v);
  };
  auto desc = [&](int threads, UpdateKind k) {
    return Fmt("%s %.2f ns/op (CPU time per update), %.1f M/s total",
               UpdateKindName(k), nsop(threads, k), mops(threads, k));
  };
  const std::string mode = WriterModeName(CurrentWriterMode());

  // Absolute costs of every kind.
  for (int threads : kThreads) {
    for (UpdateKind kind : kAllUpdateKinds) {
      Row r;
      r.id = Fmt("4.cost.%s.t%d", UpdateKindName(kind), threads);
      r.experiment = Fmt("update cost, %d thread%s: %s", threads,
                         threads > 1 ? "s" : "", UpdateKindName(kind));
      r.value = nsop(threads, kind);
      r.unit = "ns/op";
      r.detail = Fmt("%.1f M updates/s total; threads on CPU %.0f%% of "
                     "the time (median of %d rounds)",
                     mops(threads, kind), 100 * on_cpu(threads, kind),
                     rounds);
      r.seed = "-";
      rep->rows.push_back(r);
    }
  }

  using K = UpdateKind;
  // Speed-up of `fast` over `slow`: ratio of CPU time per update.
  auto add_ratio = [&](const std::string& id, const std::string& what,
                       int threads, K slow, K fast, const std::string& seed,
                       GoalOp op, double goal) {
    Row r;
    r.id = id;
    r.experiment = what;
    r.value = cost_ratio(threads, slow, fast);
    std::tie(r.lo, r.hi) = PairedSpread(nsop_rounds(threads, slow),
                                        nsop_rounds(threads, fast));
    r.lower_is_better = false;
    r.unit = "x";
    r.detail = desc(threads, fast) + "; " + desc(threads, slow);
    r.seed = seed;
    r.op = op;
    r.goal = goal;
    rep->rows.push_back(r);
  };
  // Cost ratios, lower is better: ours / the reference, 1 thread.
  auto add_cost = [&](const std::string& id, const std::string& what, K ours,
                      K ref, const std::string& seed, GoalOp op, double goal) {
    Row r;
    r.id = id;
    r.experiment = what;
    r.value = cost_ratio(1, ours, ref);
    std::tie(r.lo, r.hi) =
        PairedSpread(nsop_rounds(1, ours), nsop_rounds(1, ref));
    r.unit = "x";
    r.detail = desc(1, ours) + "; " + desc(1, ref);
    r.seed = seed;
    r.op = op;
    r.goal = goal;
    rep->rows.push_back(r);
  };
  add_cost("4.percpu_vs_librseq_shape",
           "per-CPU add (CpuSlotCounter::Add, " + mode +
               ") cost / librseq's load_add_store add written in the bench "
               "(cpu_id_start, compare cpu_id, load/add/store), 1 thread",
           K::kPerCpuRseq, K::kLibrseqShape, "1.52x librseq",
           GoalOp::kAtMost, 1.0);
  add_cost("4.percpu_vs_rseq_floor",
           "per-CPU add (CpuSlotCounter::Add, " + mode +
               ") cost / the rseq minimum without librseq's registration "
               "compare (unsafe in a library), 1 thread",
           K::kPerCpuRseq, K::kRseqFloor, "-", GoalOp::kNone, 0);
  add_cost("4.percpu_vs_plain_tls",
           "per-CPU add (CpuSlotCounter::Add, " + mode +
               ") cost / plain thread-local +=, 1 thread",
           K::kPerCpuRseq, K::kPlainThreadLocal, "-", GoalOp::kAtMost, 1.5);
  add_cost("4.librseq_shape_vs_plain_tls",
           "librseq's add (above) cost / plain thread-local +=: what any "
           "safe rseq add pays, 1 thread",
           K::kLibrseqShape, K::kPlainThreadLocal, "-", GoalOp::kNone, 0);
  add_cost("4.rseq_floor_vs_plain_tls",
           "rseq minimum (no registration compare) cost / plain "
           "thread-local +=, 1 thread",
           K::kRseqFloor, K::kPlainThreadLocal, "-", GoalOp::kNone, 0);
  add_cost("4.per_thread_vs_relaxed_tls",
           "per-thread add (ThreadCounter::Add) cost / relaxed "
           "thread-local atomic load+store, 1 thread",
           K::kPerThread, K::kRelaxedTls, "~5x (issue 14)", GoalOp::kAtMost,
           2.0);
  add_cost("4.per_thread_vs_lookup_floor",
           "per-thread add (ThreadCounter::Add) cost / the lookup floor: "
           "the same table lookup and load/add/store without the null test "
           "that attaches a slot (unsafe in a library), 1 thread",
           K::kPerThread, K::kPerThreadLookup, "-", GoalOp::kNone, 0);
  add_cost("4.lookup_floor_vs_relaxed_tls",
           "per-thread lookup floor (above) cost / relaxed thread-local "
           "load+store: what finding a run-time counter's slot costs, "
           "1 thread",
           K::kPerThreadLookup, K::kRelaxedTls, "-", GoalOp::kNone, 0);
  add_cost("4.per_thread_vs_plain_tls",
           "per-thread add (ThreadCounter::Add) cost / plain thread-local "
           "+=, 1 thread",
           K::kPerThread, K::kPlainThreadLocal, "-", GoalOp::kNone, 0);
  add_ratio("4.percpu_vs_shared_atomic.t1",
            "per-CPU add speed-up over shared std::atomic fetch_add, 1 thread",
            1, K::kSharedAtomic, K::kPerCpuRseq, "-", GoalOp::kAtLeast, 1.5);
  add_ratio("4.percpu_vs_shared_atomic.t2",
            "per-CPU add speed-up over shared std::atomic fetch_add, 2 "
            "threads",
            2, K::kSharedAtomic, K::kPerCpuRseq, "-", GoalOp::kAtLeast, 2);
  add_ratio("4.percpu_vs_fallback.t1",
            "per-CPU add (" + mode +
                ") speed-up over the sched_getcpu + fetch_add fallback, 1 "
                "thread",
            1, K::kFallback, K::kPerCpuRseq, "-", GoalOp::kNone, 0);
  add_ratio("4.percpu_vs_fallback.t2",
            "same, 2 threads", 2, K::kFallback, K::kPerCpuRseq, "-",
            GoalOp::kNone, 0);
  add_ratio("4.percpu_vs_mutex.t1",
            "per-CPU add speed-up over a mutex-protected counter, 1 thread", 1,
            K::kMutex, K::kPerCpuRseq, "-", GoalOp::kNone, 0);
  add_ratio("4.percpu_vs_mutex.t2",
            "per-CPU add speed-up over a mutex-protected counter, 2 threads",
            2, K::kMutex, K::kPerCpuRseq, "-", GoalOp::kNone, 0);
  add_ratio("4.ovs_percpu_vs_numa_locked.t1",
            "per-CPU stats pair speed-up over OVS per-NUMA locked "
            "{packets,bytes}, 1 thread",
            1, K::kOvsNumaLocked, K::kPerCpuPair,
            "3.75x OVS", GoalOp::kNone, 0);
  add_ratio("4.ovs_percpu_vs_numa_locked.t2",
            "per-CPU stats pair speed-up over OVS per-NUMA locked "
            "{packets,bytes}, 2 threads",
            2, K::kOvsNumaLocked, K::kPerCpuPair,
            "3.75x OVS", GoalOp::kNone, 0);
  rep->notes.push_back(Fmt(
      "Experiment 4: each sample runs the threads for %.0f ms (batches of "
      "1024 updates; thread t pinned to the t-th allowed CPU); %d "
      "interleaved rounds; costs are medians, speed-ups medians of "
      "per-round ratios, both from each thread's "
      "CPU time per update (time taken by other processes is not "
      "counted; spinning and lock waits are), throughput uses wall time. "
      "This "
      "machine has %ld online CPUs and %d NUMA node(s): 2 threads is the "
      "most that can run in parallel, and other processes share the CPUs "
      "(the 'on CPU' figure of each cost row shows how much of the time "
      "the threads actually ran; contention between the 2 threads is only "
      "measured while both ran).",
      window_s * 1e3, rounds, sysconf(_SC_NPROCESSORS_ONLN),
      targets.num_nodes()));
  return Status::Ok();
}

// ---------------------------------------------------------------------------
// Experiment 5: allocation and resident memory.

Status RunAllocExperiments(bool quick, Report* rep) {
  constexpr int kCpus = 4;
  const size_t live = quick ? 100000 : 1000000;
  const size_t live_large = quick ? 20000 : 100000;
  // Fill and churn run in chunks, interleaved across the variants (round
  // robin), so that noise hits every variant alike; medians of the chunks.
  // Samples of ~10 ms or more (thread CPU time, see elapsed_ns below).
  const int fill_chunks = quick ? 5 : 10;
  const int churn_chunks = quick ? 6 : 15;
  const size_t churn_chunk = quick ? 4000 : 50000;
  const size_t churn_chunk_large = quick ? 1000 : 10000;
  struct AllocVariant {
    const char* name;
    size_t size, align, live, churn_chunk;
    std::unique_ptr<AllocFixture> f;
    std::vector<double> fill_ns, churn_ns;
    double teardown_ns = kNaN;
    size_t bytes_in_use = 0, slab_bytes = 0;
  };
  std::vector<AllocVariant> vs;
  vs.push_back({"min8", 16, 8, live, churn_chunk, nullptr, {}, {}});
  vs.push_back({"derived", 16, 0, live, churn_chunk, nullptr, {}, {}});
  // Issue 14's librseq comparison: 200,000 and 1,000,000 live objects,
  // also with --quick (the row ids name the count).
  vs.push_back({"derived_200k", 16, 0, 200000, churn_chunk, nullptr, {}, {}});
  vs.push_back({"derived_1M", 16, 0, 1000000, churn_chunk, nullptr, {}, {}});
  vs.push_back({"forced64", 16, 64, live, churn_chunk, nullptr, {}, {}});
  vs.push_back(
      {"large_min8", 200, 8, live_large, churn_chunk_large, nullptr, {}, {}});
  vs.push_back({"large_forced64", 200, 64, live_large, churn_chunk_large,
                nullptr, {}, {}});
  for (AllocVariant& v : vs) {
    StatusOr<std::unique_ptr<AllocFixture>> f =
        AllocFixture::Create(kCpus, v.size, v.align);
    if (!f.ok()) return f.status();
    v.f = std::move(*f);
    v.f->Reserve(v.live);
  }
  // Per-operation cost from thread CPU time (see elapsed_ns).
  // Thread CPU time: on this shared machine a co-tenant's time slice would
  // otherwise land in a sample (wall-time medians moved 10x between runs).
  // Samples are >= ~10 ms, long enough for the VM's CPU-time accounting
  // (docs/performance.md, Method).
  auto elapsed_ns = [](double t0) { return (ThreadCpuSeconds() - t0) * 1e9; };
  for (int c = 1; c <= fill_chunks; ++c) {
    for (AllocVariant& v : vs) {
      const size_t target = v.live * static_cast<size_t>(c) /
                            static_cast<size_t>(fill_chunks);
      const size_t n = target - v.f->live();
      const double t0 = ThreadCpuSeconds();
      Status st = v.f->Fill(target);
      const double ns = elapsed_ns(t0);
      if (!st.ok()) return st;
      if (n > 0) v.fill_ns.push_back(ns / static_cast<double>(n));
    }
  }
  for (AllocVariant& v : vs) {
    v.f->TouchAll();
    const PerCpuAllocatorStats st = v.f->allocator().stats();
    v.bytes_in_use = st.bytes_in_use_per_cpu;
    v.slab_bytes = st.slab_bytes_per_cpu;
  }
  for (int c = 0; c < churn_chunks; ++c) {
    for (AllocVariant& v : vs) {
      const double t0 = ThreadCpuSeconds();
      Status st = v.f->Churn(v.churn_chunk);
      const double ns = elapsed_ns(t0);
      if (!st.ok()) return st;
      v.churn_ns.push_back(ns / static_cast<double>(v.churn_chunk));
    }
  }
  for (AllocVariant& v : vs) {
    const size_t n = v.f->live();
    const double t0 = ThreadCpuSeconds();
    Status st = v.f->FreeAll();
    const double ns = elapsed_ns(t0);
    if (!st.ok()) return st;
    v.teardown_ns = ns / static_cast<double>(n);
  }
  auto get = [&](const char* name) -> const AllocVariant& {
    for (const AllocVariant& v : vs) {
      if (std::strcmp(v.name, name) == 0) return v;
    }
    std::abort();
  };
  auto desc = [&](const AllocVariant& v) {
    return Fmt("%s: Allocate(%zu, %zu) -> %zu-aligned, %s/CPU placed; fill "
               "%.0f ns, alloc+free %.0f ns (median %.0f), free %.0f ns",
               v.name, v.size, v.align, v.f->alignment_seen(),
               Bytes(static_cast<double>(v.bytes_in_use)).c_str(),
               Best(v.fill_ns), Best(v.churn_ns), Median(v.churn_ns),
               v.teardown_ns);
  };
  const char* seed = "0.66x tc";

  // Absolute costs of the librseq comparison (issue 14): 4 CPUs, 16-byte
  // objects. librseq cannot be built into the project, so its figures (the
  // issue's, same machine class) are the goal; spread = chunk medians
  // without the extreme chunk at each end.
  auto add_abs = [&](const std::string& id, const std::string& what,
                     const std::vector<double>& v, const std::string& detail,
                     const std::string& librseq, double goal) {
    Row r;
    r.id = id;
    r.experiment = what;
    r.value = Median(v);
    std::vector<double> sorted = v;
    std::sort(sorted.begin(), sorted.end());
    if (!sorted.empty()) {
      const size_t trim = sorted.size() >= 5 ? 1 : 0;
      r.lo = sorted[trim];
      r.hi = sorted[sorted.size() - 1 - trim];
    }
    r.unit = "ns/op";
    r.detail = detail;
    r.seed = librseq;
    r.op = GoalOp::kAtMost;
    r.goal = goal;
    rep->rows.push_back(r);
  };
  add_abs("5.fill_16B_200k",
          Fmt("allocator fill to %zu live 16-byte objects, %d CPUs (Allocate "
              "only), ns per allocation",
              get("derived_200k").live, kCpus),
          get("derived_200k").fill_ns, desc(get("derived_200k")),
          "115-169 librseq", 169);
  add_abs("5.fill_16B_1M",
          Fmt("allocator fill to %zu live 16-byte objects, %d CPUs, ns per "
              "allocation",
              get("derived_1M").live, kCpus),
          get("derived_1M").fill_ns, desc(get("derived_1M")),
          "115-169 librseq@200k", 169);
  add_abs("5.churn_16B_200k",
          Fmt("allocator random free + allocate at %zu live 16-byte objects, "
              "%d CPUs, ns per pair",
              get("derived_200k").live, kCpus),
          get("derived_200k").churn_ns, desc(get("derived_200k")),
          "218-422 librseq", 422);
  add_abs("5.churn_16B_1M",
          Fmt("allocator random free + allocate at %zu live 16-byte objects, "
              "%d CPUs, ns per pair",
              get("derived_1M").live, kCpus),
          get("derived_1M").churn_ns, desc(get("derived_1M")),
          "218-422 librseq@200k", 422);

  Row r;
  r.id = "5.alloc_derived_vs_min";
  r.experiment = Fmt(
      "alloc+free rate at %zu live 16-byte objects, %d CPUs: size-derived "
      "alignment (16) / minimum (8)",
      live, kCpus);
  r.value = PairedRatio(get("min8").churn_ns, get("derived").churn_ns);
  std::tie(r.lo, r.hi) = PairedSpread(get("min8").churn_ns, get("derived").churn_ns);
  r.lower_is_better = false;
  r.unit = "x";
  r.detail = desc(get("derived")) + "; " + desc(get("min8"));
  r.seed = seed;
  r.op = GoalOp::kAtLeast;
  r.goal = 0.95;
  rep->rows.push_back(r);

  r = Row();
  r.id = "5.fill_derived_vs_min";
  r.experiment = Fmt(
      "insertion rate (filling to %zu live): derived alignment / minimum",
      live);
  r.value = PairedRatio(get("min8").fill_ns, get("derived").fill_ns);
  std::tie(r.lo, r.hi) = PairedSpread(get("min8").fill_ns, get("derived").fill_ns);
  r.lower_is_better = false;
  r.unit = "x";
  r.detail = Fmt("derived %.0f ns, minimum %.0f ns per Allocate",
                 Best(get("derived").fill_ns), Best(get("min8").fill_ns));
  r.seed = seed;
  rep->rows.push_back(r);

  r = Row();
  r.id = "5.alloc_forced64_vs_min";
  r.experiment =
      "alloc+free rate, 16-byte objects: forced 64-byte alignment / minimum";
  r.value = PairedRatio(get("min8").churn_ns, get("forced64").churn_ns);
  std::tie(r.lo, r.hi) = PairedSpread(get("min8").churn_ns, get("forced64").churn_ns);
  r.lower_is_better = false;
  r.unit = "x";
  r.detail = desc(get("forced64"));
  r.seed = seed;
  rep->rows.push_back(r);

  r = Row();
  r.id = "5.alloc_large_forced64_vs_min";
  r.experiment = Fmt(
      "alloc+free rate at %zu live 200-byte objects (extent path): "
      "alignment 64 / alignment 8",
      live_large);
  r.value =
      PairedRatio(get("large_min8").churn_ns, get("large_forced64").churn_ns);
  std::tie(r.lo, r.hi) = PairedSpread(get("large_min8").churn_ns,
                                      get("large_forced64").churn_ns);
  r.lower_is_better = false;
  r.unit = "x";
  r.detail = desc(get("large_forced64")) + "; " + desc(get("large_min8"));
  r.seed = seed;
  rep->rows.push_back(r);

  rep->notes.push_back(Fmt(
      "Experiment 5: %d simulated CPUs. Allocate(16, 8) is lifted to "
      "16-byte alignment by the size-derived rule (the alignment argument "
      "is a lower bound), so the 'minimum' and 'derived' 16-byte variants "
      "run the same size class: their ratio shows the noise floor, not a "
      "difference. Forced 64 uses the 64-byte class (4x the memory). Every "
      "copy is written before the timed alloc+free loop (free a "
      "pseudo-random live object, allocate one); fill and alloc+free run "
      "in %d / %d chunks interleaved across the variants (best chunk "
      "shown; ratios: median of per-chunk ratios).",
      kCpus, fill_chunks, churn_chunks));

  // Resident memory: 192 possible, 32 present.
  StatusOr<ResidentReport> res = MeasureResident(192, 32, 64);
  if (!res.ok()) return res.status();
  r = Row();
  r.id = "5.rss_present_units";
  r.experiment =
      "resident per-CPU memory, 192 possible / 32 present CPUs, 64 "
      "U64StatMib<90> written on every present CPU: CPUs with resident "
      "units (mincore)";
  r.value = res->cpus_resident;
  r.unit = "CPUs";
  r.detail = Fmt(
      "%s resident (%s per present CPU), RSS +%s (statm); after a fold over "
      "all 192 possible CPUs: mincore reports %d CPUs resident (zero-page "
      "mappings count as resident), RSS +%s",
      Bytes(static_cast<double>(res->resident_bytes)).c_str(),
      Bytes(static_cast<double>(res->bytes_per_present_cpu)).c_str(),
      Bytes(static_cast<double>(res->statm_delta_bytes)).c_str(),
      res->cpus_resident_after_possible_fold,
      Bytes(static_cast<double>(res->statm_delta_after_possible_fold))
          .c_str());
  r.seed = "-";
  r.op = GoalOp::kEqual;
  r.goal = 32;
  rep->rows.push_back(r);
  return Status::Ok();
}

// ---------------------------------------------------------------------------
// The plot: fold cost vs CPU count.

// Allocation cost curves: 16-byte objects as CPUs grow (every CPU
// present, so a free zeroes every copy), and 200-byte objects (the extent
// map) as live objects grow. Fixtures of one curve are measured round by
// round, interleaved; each point is the median of its rounds.
Status RunAllocCurves(bool quick, Report* rep) {
  // Thread CPU time, as in RunAllocExperiments.
  auto elapsed_ns = [](double t0) { return (ThreadCpuSeconds() - t0) * 1e9; };
  struct Point {
    int cpus;
    size_t size, live;
    std::unique_ptr<AllocFixture> f;
    std::vector<double> fill, churn;
  };
  // churn_ops / cpus free+allocate pairs per sample: a free zeroes every
  // present CPU's copy, so this keeps samples near 10-20 ms.
  auto run = [&](std::vector<Point>& pts, int rounds, size_t churn_ops,
                 std::vector<std::vector<double>>* out, bool by_cpus) {
    for (Point& p : pts) {
      StatusOr<std::unique_ptr<AllocFixture>> f =
          AllocFixture::Create(p.cpus, p.size, 0);
      if (!f.ok()) return f.status();
      p.f = std::move(*f);
      p.f->Reserve(p.live);
    }
    for (int r = 1; r <= rounds; ++r) {
      for (Point& p : pts) {
        const size_t target = p.live * static_cast<size_t>(r) /
                              static_cast<size_t>(rounds);
        const size_t n = target - p.f->live();
        const double t0 = ThreadCpuSeconds();
        Status st = p.f->Fill(target);
        if (!st.ok()) return st;
        if (n > 0) p.fill.push_back(elapsed_ns(t0) / static_cast<double>(n));
      }
    }
    for (Point& p : pts) p.f->TouchAll();
    for (int r = 0; r < rounds; ++r) {
      for (Point& p : pts) {
        const size_t churn_n =
            std::max<size_t>(64, churn_ops / static_cast<size_t>(p.cpus));
        const double t0 = ThreadCpuSeconds();
        Status st = p.f->Churn(churn_n);
        if (!st.ok()) return st;
        p.churn.push_back(elapsed_ns(t0) / static_cast<double>(churn_n));
      }
    }
    for (Point& p : pts) {
      out->push_back({static_cast<double>(by_cpus ? p.cpus : p.live),
                      Median(p.fill), Median(p.churn)});
      Status st = p.f->FreeAll();
      if (!st.ok()) return st;
      p.f.reset();
    }
    return Status::Ok();
  };
  std::vector<Point> cpus;
  for (int n : {4, 32, 64, 192, 1024}) {
    cpus.push_back(
        {n, 16, quick ? size_t{4096} : size_t{100000}, nullptr, {}, {}});
  }
  Status st = run(cpus, quick ? 3 : 9, quick ? 2000 : 400000,
                  &rep->alloc_cpus, true);
  if (!st.ok()) return st;
  std::vector<Point> large;
  for (size_t live : {size_t{1000}, size_t{10000}, size_t{100000}}) {
    large.push_back({4, 200, live, nullptr, {}, {}});
  }
  if (!quick) large.push_back({4, 200, 300000, nullptr, {}, {}});
  return run(large, quick ? 3 : 9, quick ? 2000 : 40000, &rep->alloc_large,
             false);
}

Status WritePlot(const std::string& file, bool quick, Report* rep) {
  const std::string gnuplot = FindOnPath("gnuplot");
  if (gnuplot.empty()) {
    std::fprintf(stderr,
                 "report: error: --plot: gnuplot not found on PATH (Debian "
                 "package gnuplot-nox); continuing without the plot\n");
    rep->notes.push_back("plot NOT written: gnuplot not found");
    return Status::Ok();
  }
  const std::vector<int> xs =
      quick ? std::vector<int>{8, 32, 64, 192, 1024}
            : std::vector<int>{8, 16, 32, 48, 64, 96, 128, 160, 192, 512,
                               1024};
  const int rounds = quick ? 3 : 11;
  const double sample = quick ? 0.0005 : 0.002;
  for (int n : xs) {
    const int present = std::min(n, 32);
    StatusOr<std::unique_ptr<FoldFixture>> a =
        FoldFixture::Create(n, present);
    if (!a.ok()) return a.status();
    StatusOr<std::unique_ptr<FoldFixture>> b = FoldFixture::Create(n, n);
    if (!b.ok()) return b.status();
    const FoldFixture& fa = **a;
    const FoldFixture& fb = **b;
    std::vector<Variant> vs;
    vs.push_back({"item_possible", [&] { return FoldItemMajorPossible(fa); }});
    vs.push_back({"cpu_possible", [&] { return FoldCpuMajorPossible(fa); }});
    vs.push_back({"cpu_present", [&] { return FoldCpuMajorPresent(fa); }});
    vs.push_back({"item_backed", [&] { return FoldItemMajorPossible(fb); }});
    vs.push_back({"cpu_backed", [&] { return FoldCpuMajorPossible(fb); }});
    MeasureInterleaved(&vs, rounds, sample);
    std::vector<double> row = {static_cast<double>(n)};
    for (const Variant& v : vs) row.push_back(Best(v.ns) / 1e3);
    rep->plot.push_back(row);
  }
  // gnuplot reads data files and a script from a temporary directory,
  // removed afterwards (the data are also in the report's output).
  const std::string tmp = TempDir();
  auto write_data = [&](const std::string& name,
                        const std::vector<std::vector<double>>& rows) {
    std::ofstream out(tmp + "/" + name);
    for (const std::vector<double>& row : rows) {
      for (size_t i = 0; i < row.size(); ++i) {
        out << (i > 0 ? " " : "") << row[i];
      }
      out << "\n";
    }
    return tmp + "/" + name;
  };
  const std::string data = write_data("fold_cost.dat", rep->plot);
  const std::string data_cpus = write_data("alloc_cpus.dat", rep->alloc_cpus);
  const std::string data_large =
      write_data("alloc_large.dat", rep->alloc_large);
  // The output directory (bench-out/ by default) is created if needed.
  const size_t slash = file.rfind('/');
  if (slash != std::string::npos && slash > 0) {
    int mk = 0;
    RunCommand("mkdir -p " + ShellQuote(file.substr(0, slash)), &mk);
  }
  const std::string script = tmp + "/fold_cost.gp";
  std::ofstream gp(script);
  gp << "set terminal svg size 900,1500 dynamic enhanced font 'sans,12'\n"
     << "set output '" << file << "'\n"
     << "set multiplot layout 3,1\n"
     << "set title 'Folding a 90-item u64 MIB (PerCpuAllocator, 64 KiB "
        "units)'\n"
     << "set xlabel 'possible CPUs (present = min(possible, 32), except "
        "\"all backed\")'\n"
     << "set ylabel 'microseconds per fold'\n"
     << "set logscale y\n"
     << "set grid\n"
     << "set key top left\n"
     << "plot '" << data
     << "' using 1:2 with linespoints lw 2 title 'item-major, all possible "
        "(absent = zero page)', \\\n"
     << "  '' using 1:3 with linespoints lw 2 title 'cpu-major, all possible "
        "(absent = zero page)', \\\n"
     << "  '' using 1:4 with linespoints lw 2 title 'cpu-major, present "
        "only', \\\n"
     << "  '' using 1:5 with linespoints lw 2 dt 2 title 'item-major, all "
        "possible backed (kernel layout)', \\\n"
     << "  '' using 1:6 with linespoints lw 2 dt 2 title 'cpu-major, all "
        "possible backed (kernel layout)'\n"
     << "set title 'PerCpuAllocator, 16-byte objects: cost vs CPUs (all "
        "present)'\n"
     << "set xlabel 'possible = present CPUs'\n"
     << "set ylabel 'nanoseconds per operation'\n"
     << "set logscale xy\n"
     << "plot '" << data_cpus
     << "' using 1:2 with linespoints lw 2 title 'Allocate (fill)', \\\n"
     << "  '' using 1:3 with linespoints lw 2 title 'Free + Allocate "
        "(zeroes every present copy)'\n"
     << "set title 'PerCpuAllocator, 200-byte objects (extent map), 4 "
        "CPUs: cost vs live objects'\n"
     << "set xlabel 'live objects'\n"
     << "plot '" << data_large
     << "' using 1:2 with linespoints lw 2 title 'Allocate (fill)', \\\n"
     << "  '' using 1:3 with linespoints lw 2 title 'Free + Allocate, "
        "random victim'\n"
     << "unset multiplot\n";
  gp.close();
  int st = 0;
  const std::string msg =
      RunCommand(ShellQuote(gnuplot) + " " + ShellQuote(script) + " 2>&1", &st);
  unlink(data.c_str());
  unlink(data_cpus.c_str());
  unlink(data_large.c_str());
  unlink(script.c_str());
  rmdir(tmp.c_str());
  if (st != 0) {
    std::fprintf(stderr, "report: error: gnuplot failed (%d): %s\n", st,
                 msg.c_str());
    rep->notes.push_back("plot NOT written: gnuplot failed");
    return Status::Ok();
  }
  rep->notes.push_back("plot written to " + file +
                       " (its data are printed above the path)");
  return Status::Ok();
}

// ---------------------------------------------------------------------------
// Output.

std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) {
    if (c == '"') q += '"';
    q += c;
  }
  return q + "\"";
}

std::string JsonString(const std::string& s) {
  std::string q = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        q += "\\\"";
        break;
      case '\\':
        q += "\\\\";
        break;
      case '\n':
        q += "\\n";
        break;
      case '\t':
        q += "\\t";
        break;
      default:
        if (c < 0x20) {
          q += Fmt("\\u%04x", c);
        } else {
          q += static_cast<char>(c);
        }
    }
  }
  return q + "\"";
}

std::string JsonNumber(double v) {
  if (std::isnan(v) || std::isinf(v)) return "null";
  return Fmt("%.6g", v);
}

std::string ToCsv(const Report& rep) {
  std::string s = "id,experiment,value,unit,seed,goal,status,detail\n";
  for (const Row& r : rep.rows) {
    s += CsvField(r.id) + "," + CsvField(r.experiment) + "," +
         (std::isnan(r.value) ? "" : Fmt("%.6g", r.value)) + "," +
         CsvField(r.unit) + "," + CsvField(r.seed) + "," +
         CsvField(r.GoalText()) + "," + CsvField(r.Status()) + "," +
         CsvField(r.detail) + "\n";
  }
  return s;
}

std::string ToJson(const Report& rep) {
  std::string s = "{\n  \"machine\": {\n";
  for (size_t i = 0; i < rep.machine.facts.size(); ++i) {
    s += "    " + JsonString(rep.machine.facts[i].first) + ": " +
         JsonString(rep.machine.facts[i].second) +
         (i + 1 < rep.machine.facts.size() ? ",\n" : "\n");
  }
  s += "  },\n  \"rows\": [\n";
  for (size_t i = 0; i < rep.rows.size(); ++i) {
    const Row& r = rep.rows[i];
    s += "    {\"id\": " + JsonString(r.id) +
         ", \"experiment\": " + JsonString(r.experiment) +
         ", \"value\": " + JsonNumber(r.value) +
         ", \"unit\": " + JsonString(r.unit) +
         ", \"seed\": " + JsonString(r.seed) +
         ", \"goal\": " + JsonString(r.GoalText()) +
         ", \"status\": " + JsonString(r.Status()) +
         ", \"detail\": " + JsonString(r.detail) + "}" +
         (i + 1 < rep.rows.size() ? ",\n" : "\n");
  }
  s += "  ],\n  \"notes\": [\n";
  for (size_t i = 0; i < rep.notes.size(); ++i) {
    s += "    " + JsonString(rep.notes[i]) +
         (i + 1 < rep.notes.size() ? ",\n" : "\n");
  }
  s += "  ],\n  \"plot_columns\": " + JsonString(kPlotColumns) +
       ",\n  \"plot_data\": [";
  for (size_t i = 0; i < rep.plot.size(); ++i) {
    s += i > 0 ? ", [" : "[";
    for (size_t j = 0; j < rep.plot[i].size(); ++j) {
      s += (j > 0 ? ", " : "") + JsonNumber(rep.plot[i][j]);
    }
    s += "]";
  }
  s += "]\n}\n";
  return s;
}

// Wraps `text` to `width` columns: the first line starts with `indent`,
// the others with as many spaces.
std::string Wrap(const std::string& text, size_t width,
                 const std::string& indent) {
  std::string out, line = indent;
  const std::string cont(indent.size(), ' ');
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find(' ', pos);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(pos, end - pos);
    if (line.size() > cont.size() && line.size() + 1 + word.size() > width) {
      out += line + "\n";
      line = cont;
    }
    if (line.size() > cont.size()) line += " ";
    line += word;
    pos = end + 1;
  }
  if (line.size() > cont.size()) out += line + "\n";
  return out;
}

std::string SpreadText(const Row& r) {
  if (std::isnan(r.lo) || std::isnan(r.hi)) return "-";
  if (r.unit == "x") return Fmt("%.2f-%.2f", r.lo, r.hi);
  return Fmt("%.0f-%.0f", r.lo, r.hi);
}

std::string ToText(const Report& rep) {
  std::string s = "percpu benchmark report\n\nMachine:\n";
  for (const auto& f : rep.machine.facts) {
    // "  <fact padded to 22> <value>", continuation lines indented to the
    // value's column.
    std::string w = Wrap(f.second, 100, std::string(25, ' '));
    if (w.size() >= 25) w.replace(0, 25, Fmt("  %-22s ", f.first.c_str()));
    s += w;
  }
  s += "\n";
  // One line per row, at most 100 columns. better: which direction of the
  // figure is better (ratios are named <ours>_vs_<other>).
  const char* const kHead = "%-31s %13s %11s %6s %10s %-8s %s\n";
  s += Fmt(kHead, "id", "ours", "spread", "better", "goal", "verdict",
           "upstream");
  s += std::string(100, '-') + "\n";
  for (const Row& r : rep.rows) {
    std::string seed = r.seed.empty() ? "-" : r.seed;
    std::string line =
        Fmt(kHead, r.id.c_str(), r.ValueText().c_str(),
            SpreadText(r).c_str(),
            r.op == GoalOp::kEqual ? "=" : r.lower_is_better ? "lower"
                                                             : "higher",
            r.GoalText().c_str(), r.Status().c_str(), seed.c_str());
    if (line.size() > 101) line = line.substr(0, 97) + "...\n";
    s += line;
  }
  s += std::string(100, '-') + "\n";
  int met = 0, missed = 0, unclear = 0;
  std::string missed_ids, unclear_ids;
  for (const Row& r : rep.rows) {
    const std::string st = r.Status();
    if (st == "met") ++met;
    if (st == "unclear") {
      ++unclear;
      unclear_ids += " " + r.id;
    }
    if (st == "MISSED" || st == "NOT MEASURED") {
      ++missed;
      missed_ids += " " + r.id;
    }
  }
  s += Wrap(Fmt("goals: %d met, %d missed or not measured%s%s; %d unclear "
                "(the spread straddles the goal)%s%s",
                met, missed, missed > 0 ? ":" : "", missed_ids.c_str(),
                unclear, unclear > 0 ? ":" : "", unclear_ids.c_str()),
            100, "");
  s += "\nWhat each row measures (details with the absolute figures: "
       "--format=csv or json):\n";
  for (const Row& r : rep.rows) {
    if (r.id.rfind("4.cost.", 0) == 0) continue;  // described once below
    s += Wrap(r.id + ": " + r.experiment + ".", 100, "  ");
  }
  s += Wrap("4.cost.<kind>.t<n>: CPU time per update of <kind> with n "
            "threads (kinds: bench/kernels.h, UpdateKind).",
            100, "  ");
  s += "\nUpstream experiments (the 'upstream' column):\n";
  // The seed threads as issue 7 names them; the project recorded no links
  // for them, so none is invented here.
  static const char* const kLegend[] = {
      "getifaddrs thread (Linux netdev, net/ipv6/addrconf.c): folding "
      "per-CPU IPv6 stats over all possible instead of present CPUs made "
      "getifaddrs() 2.9x slower (rows 1.*; link not recorded, issue 7).",
      "Docker snmp thread (Linux netdev): reading a ~90-item SNMP MIB "
      "item-major (one pass over the CPUs per item) cost 2x a CPU-major "
      "fold (rows 2.*; link not recorded, issue 7).",
      "ipvs u64_stats_t thread (Linux netdev): converting ipvs counters to "
      "u64_stats_t, reviewers feared extra movs and registers on 64-bit; "
      "no figure (rows 3.*; link not recorded, issue 7).",
      "OVS: per-CPU flow stats instead of per-NUMA-node locked stats took "
      "Open vSwitch from 4 to 15 Mpps on many cores (rows 4.ovs_*; link "
      "not recorded, issue 7).",
      "tc thread (\"tc filter insertion rate degradation\", Linux "
      "netdev): stricter per-CPU alignment cut tc rule insertion from 65k "
      "to 43k rules/s (rows 5.*_vs_min; link not recorded, issue 3).",
      "librseq (https://github.com/compudj/librseq): its "
      "rseq_load_add_store__ptr add and rseq_mempool percpu_zmalloc/free, "
      "measured in issue 14 on this machine class; not built here (rows "
      "4.percpu_vs_librseq_shape, 5.fill_16B_*, 5.churn_16B_*).",
  };
  for (const char* l : kLegend) s += Wrap(l, 100, "  ");
  if (!rep.notes.empty()) {
    s += "\nNotes:\n";
    for (const std::string& n : rep.notes) s += Wrap(n, 100, "  * ");
  }
  if (!rep.alloc_cpus.empty()) {
    s += "\nAllocation vs CPUs (16-byte objects, every CPU present; ns per "
         "operation, median of rounds):\n  cpus  allocate  free+allocate\n";
    for (const std::vector<double>& row : rep.alloc_cpus) {
      s += Fmt("  %4.0f  %8.0f  %13.0f\n", row[0], row[1], row[2]);
    }
  }
  if (!rep.alloc_large.empty()) {
    s += "\nLarge objects vs live objects (200 bytes, 4 CPUs, extent map; "
         "ns per operation):\n    live  allocate  free+allocate\n";
    for (const std::vector<double>& row : rep.alloc_large) {
      s += Fmt("  %6.0f  %8.0f  %13.0f\n", row[0], row[1], row[2]);
    }
  }
  if (!rep.plot.empty()) {
    s += std::string("\nFold vs CPUs (us per fold of 90 items; present "
                     "= min(possible, 32), 'backed' = all present):\n") +
         Wrap(kPlotColumns, 100, "  ");
    for (const std::vector<double>& row : rep.plot) {
      s += " ";
      for (double v : row) s += Fmt(" %.3f", v);
      s += "\n";
    }
  }
  return s;
}

bool WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  if (!out) return false;
  out << text;
  return static_cast<bool>(out);
}

// The read_kernels binaries: their runfiles names and where the Bazel
// runfiles put them (fallback: beside this binary).
struct ReadKernelBinaries {
  std::vector<std::string> names;  // runfiles paths, e.g. percpu/bench/...
  std::vector<std::string> paths;  // absolute or argv0-relative paths
};

ReadKernelBinaries FindReadKernels(const char* argv0) {
  ReadKernelBinaries b;
  std::string error;
  std::unique_ptr<bazel::tools::cpp::runfiles::Runfiles> rf(
      bazel::tools::cpp::runfiles::Runfiles::Create(argv0, &error));
  std::string dir = argv0;
  const size_t slash = dir.rfind('/');
  dir = slash == std::string::npos ? "." : dir.substr(0, slash);
  for (const char* n : {"read_kernels", "read_kernels_seqcount",
                        "read_kernels_i686"}) {
    const std::string name = std::string("percpu/bench/") + n;
    std::string p;
    if (rf != nullptr) p = rf->Rlocation(name);
    if (p.empty() || access(p.c_str(), X_OK) != 0) p = dir + "/" + n;
    b.names.push_back(name);
    b.paths.push_back(p);
  }
  return b;
}

// Under `bazel run` the working directory is the runfiles tree: relative
// output paths are taken relative to the workspace the command ran in.
std::string OutputPath(const std::string& path) {
  const char* ws = std::getenv("BUILD_WORKSPACE_DIRECTORY");
  if (path.empty() || path[0] == '/' || ws == nullptr || *ws == '\0') {
    return path;
  }
  return std::string(ws) + "/" + path;
}

int Main(int argc, char** argv) {
  StatusOr<Options> opt = ParseOptions(argc, argv);
  if (!opt.ok()) {
    std::fprintf(stderr, "%s\n", opt.status().message().c_str());
    Usage(stderr);
    return 2;
  }
  const Options& o = *opt;
  const Clock::time_point start = Clock::now();
  const std::string valgrind = FindOnPath("valgrind");
  Report rep;
  rep.machine = DescribeMachine(valgrind);
  const Sizes fold_sizes = o.quick ? Sizes{7, 0.002} : Sizes{21, 0.01};
  auto progress = [&](const char* what) {
    std::fprintf(stderr, "report: %s (%.1f s)\n", what,
                 std::chrono::duration<double>(Clock::now() - start).count());
  };

  int failures = 0;
  auto check = [&](const Status& s, const char* what) {
    if (!s.ok()) {
      ++failures;
      std::fprintf(stderr, "report: %s failed: %s\n", what,
                   s.ToString().c_str());
      rep.notes.push_back(std::string(what) + " FAILED: " + s.ToString());
    }
  };
  progress("folds (experiments 1, 2, 6)");
  check(RunFoldExperiments(fold_sizes, &rep), "fold experiments");
  progress("reads (experiment 3, subprocesses + callgrind)");
  const std::string tmp = TempDir();
  const ReadKernelBinaries rk = FindReadKernels(argv[0]);
  RunReadExperiments(o.quick ? 3 : 15, valgrind, rk.names, rk.paths, tmp,
                     &rep);
  progress("updates (experiment 4)");
  check(RunUpdateExperiments(o.quick ? 3 : 15, o.quick ? 0.01 : 0.04, &rep),
        "update experiments");
  progress("allocation (experiment 5)");
  check(RunAllocExperiments(o.quick, &rep), "allocation experiments");
  progress("allocation curves (CPUs, live large objects)");
  check(RunAllocCurves(o.quick, &rep), "allocation curves");
  if (!o.plot.empty()) {
    progress("plot");
    check(WritePlot(OutputPath(o.plot), o.quick, &rep), "plot");
  }
  rmdir(tmp.c_str());
  rep.notes.push_back(
      Fmt("Method: variants interleaved round by round. Every ratio in the "
          "table is the median over rounds of the ratio of the two "
          "variants measured back to back in that round (so drifts cancel). "
          "Absolute single-threaded figures (experiments 1, 2, 5, 6) are "
          "the best round of wall time (interference only adds time); "
          "experiment 3 prints each binary's best round; experiment 4 "
          "shows medians of per-thread CPU time. %s run, %.1f s in total.",
          o.quick ? "--quick" : "full",
          std::chrono::duration<double>(Clock::now() - start).count()));
  progress("done");
  // Experiments in numeric order (they run in a different order).
  std::stable_sort(rep.rows.begin(), rep.rows.end(),
                   [](const Row& x, const Row& y) {
                     return std::atoi(x.id.c_str()) < std::atoi(y.id.c_str());
                   });

  std::string table;
  switch (o.format) {
    case Format::kText:
      table = ToText(rep);
      break;
    case Format::kCsv:
      table = ToCsv(rep);
      break;
    case Format::kJson:
      table = ToJson(rep);
      break;
  }
  std::fputs(table.c_str(), stdout);
  if (!o.csv_out.empty() && !WriteFile(OutputPath(o.csv_out), ToCsv(rep))) {
    std::fprintf(stderr, "report: cannot write %s\n", o.csv_out.c_str());
    ++failures;
  }
  if (!o.json_out.empty() &&
      !WriteFile(OutputPath(o.json_out), ToJson(rep))) {
    std::fprintf(stderr, "report: cannot write %s\n", o.json_out.c_str());
    ++failures;
  }
  if (!o.plot.empty()) {
    // Last line of the text table; stderr for CSV/JSON (stdout stays
    // machine-readable).
    std::fprintf(o.format == Format::kText ? stdout : stderr,
                 "\nPlot: %s\n", OutputPath(o.plot).c_str());
  }
  // A missed goal is a result, not an error; a failed experiment is.
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace bench
}  // namespace percpu

int main(int argc, char** argv) { return percpu::bench::Main(argc, argv); }
