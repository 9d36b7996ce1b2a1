// The VM lane's guest-side tests (docs/vm_lane.md). A static binary run by
// vm_init inside a real kernel (qemu-system-x86_64 / -aarch64, TCG):
//
//   vm_test counters [--fallback] [--ms=N]
//       writer threads on every online CPU (one pinned per CPU plus as many
//       unpinned, which the scheduler migrates) through every public
//       per-CPU counter type; exact totals; prints the writer mode and the
//       kernel's rseq restart count (RseqAbortCount()).
//   vm_test hotplug [--fallback] [--ms=N] [--seed=S]
//       a HotplugMonitor (not the test) keeps a sysfs Topology in step while
//       a driver thread offlines/onlines random CPUs through
//       /sys/devices/system/cpu/cpuN/online, writers and readers run;
//       readers check that totals never decrease and pairs stay consistent;
//       exact totals at the end.
//   vm_test hotadd [--fallback] [--rounds=N]
//       x86_64 with -smp 1,maxcpus=4: possible > present; a
//       PerCpuU64Mib<90> keeps only present units resident (printed); real
//       ACPI hot-add / hot-remove requested from the host harness through
//       "PERCPU-VM-QMP: add|del" lines, the monitor follows, exact totals.
//
// --fallback sets PERCPU_RSEQ=0 before the writer mode is chosen. Every
// line the harness needs starts with "PERCPU-VM"; failures print
// "PERCPU-VM-FAIL: ..." and make the exit status non-zero.
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "primitives/cpu_slot.h"
#include "primitives/hotplug_monitor.h"
#include "primitives/percpu_alloc.h"
#include "primitives/percpu_pair.h"
#include "primitives/percpu_stats.h"
#include "primitives/rseq.h"
#include "primitives/topology.h"

namespace percpu {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

int g_failures = 0;

#define VM_CHECK(cond, ...)                                        \
  do {                                                             \
    if (!(cond)) {                                                 \
      ++g_failures;                                                \
      std::printf("PERCPU-VM-FAIL: %s:%d: %s: ", __FILE__, __LINE__, \
                  #cond);                                          \
      std::printf(__VA_ARGS__);                                    \
      std::printf("\n");                                           \
    }                                                              \
  } while (0)

struct Args {
  std::string cmd;
  bool fallback = false;
  int ms = 3000;
  uint64_t seed = 1;
  int rounds = 3;
  int poll_ms = 0;  // > 0: the monitor polls at this interval (no netlink)
  // After hot-removes, fail on zero-page mappings of absent units too.
  bool strict_residency = false;
};

Args Parse(int argc, char** argv) {
  Args a;
  if (argc > 1) a.cmd = argv[1];
  for (int i = 2; i < argc; ++i) {
    std::string s = argv[i];
    if (s == "--fallback") a.fallback = true;
    else if (s.rfind("--ms=", 0) == 0) a.ms = std::atoi(s.c_str() + 5);
    else if (s.rfind("--seed=", 0) == 0) a.seed = std::strtoull(s.c_str() + 7, nullptr, 10);
    else if (s.rfind("--rounds=", 0) == 0) a.rounds = std::atoi(s.c_str() + 9);
    else if (s.rfind("--poll-ms=", 0) == 0) a.poll_ms = std::atoi(s.c_str() + 10);
    else if (s == "--strict-residency") a.strict_residency = true;
    else std::printf("PERCPU-VM: ignoring argument %s\n", s.c_str());
  }
  return a;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

bool WriteFile(const std::string& path, const std::string& text) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return false;
  const bool ok = std::fputs(text.c_str(), f) >= 0;
  return (std::fclose(f) == 0) && ok;
}

const char* kCpuDir = "/sys/devices/system/cpu";

std::string CpuOnlineFile(int cpu) {
  return std::string(kCpuDir) + "/cpu" + std::to_string(cpu) + "/online";
}

void PrintMode() {
  std::printf("PERCPU-VM: writer mode %s (%s)\n",
              WriterModeName(CurrentWriterMode()), WriterModeReason().c_str());
}

void PrintRestarts(const char* what) {
  std::printf("PERCPU-VM-RSEQ-RESTARTS: %s %lld\n", what, RseqAbortCount());
}

void PinTo(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  (void)sched_setaffinity(0, sizeof(set), &set);
}

// Waits up to `ms` for pred().
template <typename Pred>
bool WaitFor(Pred pred, int ms = 10000) {
  const auto deadline = Clock::now() + milliseconds(ms);
  while (Clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(milliseconds(5));
  }
  return pred();
}

// Every public per-CPU counter type, written the same way by every writer.
struct Counters {
  std::unique_ptr<PerCpuU64> u64;
  std::unique_ptr<PerCpuU64Mib<8>> mib;
  std::unique_ptr<PerCpuPacketsBytes> pair;
// CpuSlotCounter is deprecated (removed in 0.3) but still shipped: test it
// on the real kernels too.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  std::unique_ptr<CpuSlotCounter> slot;  // no hotplug awareness: counters only
#pragma GCC diagnostic pop

  static constexpr uint64_t kBytesPerPacket = 1500;

  // One "operation": adds whose totals are known from the op count.
  void Op(uint64_t i) {
    u64->Inc();
    mib->Add(i % 8, 1);
    mib->Add(7, 2);
    pair->Add(1, kBytesPerPacket);
    if (slot) slot->Inc();
  }
};

bool MakeCounters(Topology& topo, PerCpuAllocator& alloc, bool with_slot,
                  Counters* c) {
  auto u = PerCpuU64::Create(topo, alloc);
  auto m = PerCpuU64Mib<8>::Create(topo, alloc);
  auto p = PerCpuPacketsBytes::Create(topo, alloc);
  VM_CHECK(u.ok() && m.ok() && p.ok(), "Create failed");
  if (!u.ok() || !m.ok() || !p.ok()) return false;
  c->u64 = std::move(*u);
  c->mib = std::move(*m);
  c->pair = std::move(*p);
  if (with_slot) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    auto s = CpuSlotCounter::Create(topo.num_possible());
#pragma GCC diagnostic pop
    VM_CHECK(s.ok(), "CpuSlotCounter::Create: %s", s.status().ToString().c_str());
    if (!s.ok()) return false;
    c->slot = std::move(*s);
  }
  std::printf("PERCPU-VM: objects: PerCpuU64 rseq=%d PerCpuU64Mib<8> rseq=%d "
              "PerCpuPacketsBytes rseq=%d CpuSlotCounter=%s\n",
              c->u64->uses_rseq(), c->mib->uses_rseq(), c->pair->uses_rseq(),
              with_slot ? "yes" : "no");
  return true;
}

void CheckTotals(const Counters& c, uint64_t ops, const char* when) {
  VM_CHECK(c.u64->Sum() == ops, "%s: PerCpuU64 %" PRIu64 " != %" PRIu64, when,
           c.u64->Sum(), ops);
  std::array<uint64_t, 8> mib{};
  c.mib->FoldAll(mib);
  uint64_t mib_total = 0;
  for (uint64_t v : mib) mib_total += v;
  VM_CHECK(mib_total == 3 * ops, "%s: MIB total %" PRIu64 " != %" PRIu64, when,
           mib_total, 3 * ops);
  const PacketsBytes pb = c.pair->Sum();
  VM_CHECK(pb.packets == ops && pb.bytes == ops * Counters::kBytesPerPacket,
           "%s: pair (%" PRIu64 ", %" PRIu64 ") != (%" PRIu64 ", ...)", when,
           pb.packets, pb.bytes, ops);
  if (c.slot) {
    VM_CHECK(c.slot->Sum() == ops, "%s: CpuSlotCounter %" PRIu64 " != %" PRIu64,
             when, c.slot->Sum(), ops);
  }
  std::printf("PERCPU-VM: %s: ops=%" PRIu64 " u64=%" PRIu64 " mib=%" PRIu64
              " pair=(%" PRIu64 ",%" PRIu64 ")%s\n",
              when, ops, c.u64->Sum(), mib_total, pb.packets, pb.bytes,
              c.slot ? (" slot=" + std::to_string(c.slot->Sum())).c_str() : "");
}

// Runs writers (each counting its ops) until stop; returns the total ops.
class Writers {
 public:
  Writers(Counters& c, int pinned, int unpinned) : c_(c) {
    for (int i = 0; i < pinned + unpinned; ++i) {
      const int pin = i < pinned ? i : -1;
      threads_.emplace_back([this, pin] {
        if (pin >= 0) PinTo(pin);
        uint64_t n = 0;
        // Relaxed: a stop flag; the join publishes the counts.
        while (!stop_.load(std::memory_order_relaxed)) {
          for (int k = 0; k < 64; ++k) c_.Op(n++);
        }
        ops_.fetch_add(n, std::memory_order_relaxed);
      });
    }
  }
  uint64_t StopAndJoin() {
    stop_.store(true, std::memory_order_relaxed);
    for (auto& t : threads_) t.join();
    threads_.clear();
    return ops_.load(std::memory_order_relaxed);
  }

 private:
  Counters& c_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> ops_{0};
  std::vector<std::thread> threads_;
};

// Readers: a monotonic total never decreases; a pair stays consistent.
class Readers {
 public:
  Readers(Counters& c, int n) : c_(c) {
    for (int i = 0; i < n; ++i) {
      threads_.emplace_back([this] {
        uint64_t last_u64 = 0, last_packets = 0, reads = 0;
        while (!stop_.load(std::memory_order_relaxed)) {
          const uint64_t s = c_.u64->Sum();
          if (s < last_u64) bad_monotonic_.fetch_add(1);
          last_u64 = s;
          const PacketsBytes pb = c_.pair->Sum();
          if (pb.bytes != pb.packets * Counters::kBytesPerPacket) {
            bad_pair_.fetch_add(1);
          }
          if (pb.packets < last_packets) bad_monotonic_.fetch_add(1);
          last_packets = pb.packets;
          ++reads;
        }
        reads_.fetch_add(reads);
      });
    }
  }
  void StopAndJoin() {
    stop_.store(true);
    for (auto& t : threads_) t.join();
    threads_.clear();
    std::printf("PERCPU-VM: readers: %" PRIu64 " reads, %" PRIu64
                " decreases, %" PRIu64 " inconsistent pairs\n",
                reads_.load(), bad_monotonic_.load(), bad_pair_.load());
    VM_CHECK(bad_monotonic_.load() == 0, "a reader saw a total decrease");
    VM_CHECK(bad_pair_.load() == 0, "a reader saw an inconsistent pair");
  }

 private:
  Counters& c_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> reads_{0}, bad_monotonic_{0}, bad_pair_{0};
  std::vector<std::thread> threads_;
};

std::shared_ptr<Topology> SysfsTopology() {
  auto t = Topology::FromSysfs(kCpuDir);
  VM_CHECK(t.ok(), "FromSysfs: %s", t.status().ToString().c_str());
  if (!t.ok()) return nullptr;
  std::printf("PERCPU-VM: topology possible=%s present=%s online=%s\n",
              (*t)->possible().ToString().c_str(),
              (*t)->present().ToString().c_str(),
              (*t)->online().ToString().c_str());
  return std::move(*t);
}

std::shared_ptr<PerCpuAllocator> MakeAlloc(Topology& topo) {
  auto a = PerCpuAllocator::Create(&topo);
  VM_CHECK(a.ok(), "PerCpuAllocator::Create: %s", a.status().ToString().c_str());
  return a.ok() ? std::move(*a) : nullptr;
}

int Counters_(const Args& a) {
  auto topo = SysfsTopology();
  if (!topo) return 1;
  auto alloc = MakeAlloc(*topo);
  if (!alloc) return 1;
  PrintMode();
  Counters c;
  if (!MakeCounters(*topo, *alloc, /*with_slot=*/true, &c)) return 1;
  const int online = topo->online().Count();
  const long long restarts0 = RseqAbortCount();
  Writers w(c, online, online);
  std::this_thread::sleep_for(milliseconds(a.ms));
  const uint64_t ops = w.StopAndJoin();
  CheckTotals(c, ops, "counters");
  const long long restarts = RseqAbortCount();
  PrintRestarts(restarts < 0 ? "not-counted" : "counters");
  if (CurrentWriterMode() == WriterMode::kRseq && restarts >= 0) {
    std::printf("PERCPU-VM: rseq restarts during the run: %lld\n",
                restarts - restarts0);
    // Twice as many writers as CPUs for seconds: the kernel preempts them
    // inside the sequence; zero restarts would mean the abort path (or its
    // counting) never ran.
    VM_CHECK(restarts - restarts0 > 0, "no rseq restart counted");
  }
  return g_failures == 0 ? 0 : 1;
}

// The CPUs whose online file exists (cpu0 on x86 usually has none).
std::vector<int> OfflinableCpus(const Topology& topo) {
  std::vector<int> v;
  topo.present().ForEach([&](int cpu) {
    if (access(CpuOnlineFile(cpu).c_str(), W_OK) == 0) v.push_back(cpu);
  });
  return v;
}

// Waits until the monitor brought the Topology's masks to the kernel's.
bool TopologyFollows(const Topology& topo) {
  return WaitFor([&] {
    return topo.online().ToString() == ReadFile(std::string(kCpuDir) + "/online") &&
           topo.present().ToString() == ReadFile(std::string(kCpuDir) + "/present");
  });
}

// poll_ms > 0: the polling path at that interval, so the Topology lags the
// kernel by up to poll_ms (writers run on a hot-added CPU before kPresent).
std::unique_ptr<HotplugMonitor> StartMonitor(Topology& topo, int poll_ms = 0) {
  HotplugMonitor::Options o;
  if (poll_ms > 0) {
    o.source = HotplugMonitor::Options::Source::kPollOnly;
    o.poll_interval = milliseconds(poll_ms);
  }
  auto m = HotplugMonitor::Start(topo, o);
  VM_CHECK(m.ok(), "HotplugMonitor::Start: %s", m.status().ToString().c_str());
  if (!m.ok()) return nullptr;
  std::printf("PERCPU-VM: monitor netlink=%d %s\n", (*m)->using_netlink(),
              (*m)->netlink_error().c_str());
  if (poll_ms <= 0) {
    VM_CHECK((*m)->using_netlink(), "no netlink uevents in the guest: %s",
             (*m)->netlink_error().c_str());
  }
  return std::move(*m);
}

void PrintMonitor(const HotplugMonitor& m) {
  std::printf("PERCPU-VM-MONITOR: rescans=%" PRIu64 " cpu_uevents=%" PRIu64
              " errors=%" PRIu64 " last_error=%s\n",
              m.rescans(), m.cpu_uevents(), m.rescan_errors(),
              m.last_error().ToString().c_str());
}

int Hotplug(const Args& a) {
  auto topo = SysfsTopology();
  if (!topo) return 1;
  auto alloc = MakeAlloc(*topo);
  if (!alloc) return 1;
  PrintMode();
  auto mon = StartMonitor(*topo);
  if (!mon) return 1;
  Counters c;
  if (!MakeCounters(*topo, *alloc, /*with_slot=*/false, &c)) return 1;
  const std::vector<int> cpus = OfflinableCpus(*topo);
  VM_CHECK(!cpus.empty(), "no CPU can be offlined");
  const int online = topo->online().Count();
  Writers w(c, 0, 2 * online);
  Readers r(c, 2);
  std::mt19937_64 rng(a.seed);
  int offlines = 0, onlines = 0, refused = 0;
  const auto end = Clock::now() + milliseconds(a.ms);
  while (Clock::now() < end && !cpus.empty()) {
    const int cpu = cpus[rng() % cpus.size()];
    const bool is_on = ReadFile(CpuOnlineFile(cpu)) == "1";
    if (WriteFile(CpuOnlineFile(cpu), is_on ? "0" : "1")) {
      (is_on ? offlines : onlines)++;
      // Half of the offlines are undone at once: the monitor's Rescan then
      // may read the masks while the CPU is already back online and writers
      // run on it (the topology lags the kernel by one event).
      if (is_on && rng() % 2 == 0 && WriteFile(CpuOnlineFile(cpu), "1")) {
        ++onlines;
      }
    } else {
      ++refused;  // e.g. the kernel refuses to offline the last CPU
    }
    std::this_thread::sleep_for(milliseconds(20 + rng() % 80));
  }
  // Everything back online, writers still running.
  for (int cpu : cpus) WriteFile(CpuOnlineFile(cpu), "1");
  VM_CHECK(TopologyFollows(*topo), "the monitor did not follow: topology %s, kernel %s",
           topo->online().ToString().c_str(),
           ReadFile(std::string(kCpuDir) + "/online").c_str());
  const uint64_t ops = w.StopAndJoin();
  r.StopAndJoin();
  std::printf("PERCPU-VM: hotplug driver: %d offlines, %d onlines, %d refused, "
              "%" PRIu64 " topology events\n",
              offlines, onlines, refused, topo->events_fired());
  VM_CHECK(offlines > 0 && onlines > 0, "the driver changed nothing");
  PrintMonitor(*mon);
  VM_CHECK(mon->cpu_uevents() > 0, "the monitor saw no CPU uevent");
  // An offline undone at once may be coalesced into no event at all (the
  // Rescan saw the CPU online both times), so only require that events fired.
  VM_CHECK(topo->events_fired() > 0, "no topology event fired");
  CheckTotals(c, ops, a.fallback ? "hotplug fallback" : "hotplug");
  PrintRestarts("hotplug");
  return g_failures == 0 ? 0 : 1;
}

// The page frame behind addr from /proc/self/pagemap (reading it does not
// touch the page): 0 if not mapped, else the PFN (root sees real PFNs).
uint64_t PfnOf(const void* addr) {
  const long page = sysconf(_SC_PAGESIZE);
  FILE* f = std::fopen("/proc/self/pagemap", "rb");
  if (f == nullptr) return 0;
  uint64_t e = 0;
  const long off =
      static_cast<long>(reinterpret_cast<uintptr_t>(addr) / page * 8);
  if (std::fseek(f, off, SEEK_SET) != 0 || std::fread(&e, 8, 1, f) != 1) e = 0;
  std::fclose(f);
  if (((e >> 63) & 1) == 0) return 0;  // not present
  return e & ((uint64_t{1} << 55) - 1);
}

// The PFN of the shared zero page: what a read fault of untouched private
// anonymous memory maps.
uint64_t ZeroPagePfn() {
  static const uint64_t pfn = [] {
    const long page = sysconf(_SC_PAGESIZE);
    void* m = mmap(nullptr, page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return uint64_t{0};
    volatile const char* c = static_cast<const char*>(m);
    (void)*c;  // read fault: maps the zero page
    const uint64_t z = PfnOf(m);
    munmap(m, page);
    return z;
  }();
  return pfn;
}

// Prints each possible CPU's resident bytes (mincore). With strict, an
// absent CPU must have no page of its own: at boot (never present), after
// the adds, and after the hot-removes. A page mincore counts may be the
// shared zero page (a reader whose read section overlapped a removal read
// the released unit: no memory of its own); the probe objects' pages of
// each absent CPU with resident bytes are classified through pagemap and
// only "own" pages fail.
struct Probe {
  uintptr_t base;
  size_t stride;
};
void PrintResident(PerCpuAllocator& alloc, const Topology& topo,
                   const char* when, bool strict,
                   const std::vector<Probe>& probes,
                   bool even_zero_page = false) {
  auto r = alloc.ResidentBytesPerCpu();
  VM_CHECK(r.ok(), "ResidentBytesPerCpu: %s", r.status().ToString().c_str());
  if (!r.ok()) return;
  std::string s;
  for (size_t cpu = 0; cpu < r->size(); ++cpu) {
    s += " cpu" + std::to_string(cpu) + "=" + std::to_string((*r)[cpu]);
    if ((*r)[cpu] == 0 || topo.IsPresent(static_cast<int>(cpu))) continue;
    int own = 0, zero = 0, unmapped = 0;
    for (const Probe& p : probes) {
      const uint64_t pfn = PfnOf(reinterpret_cast<const void*>(p.base + cpu * p.stride));
      if (pfn == 0) ++unmapped;
      else if (pfn == ZeroPagePfn()) ++zero;
      else ++own;
    }
    s += "(probes: own=" + std::to_string(own) + " zero-page=" +
         std::to_string(zero) + " unmapped=" + std::to_string(unmapped) + ")";
    if (strict) {
      VM_CHECK(own == 0 && (!even_zero_page || zero == 0),
               "%s: absent cpu%zu has %zu resident bytes, %d probe page(s) "
               "of its own, %d zero-page", when, cpu, (*r)[cpu], own, zero);
    }
  }
  std::printf("PERCPU-VM-RESIDENT: %s present=%s%s\n", when,
              topo.present().ToString().c_str(), s.c_str());
}

int HotAdd(const Args& a) {
  auto topo = SysfsTopology();
  if (!topo) return 1;
  VM_CHECK(topo->num_possible() > topo->present().Count(),
           "expected possible > present (boot with -smp 1,maxcpus=4)");
  auto alloc = MakeAlloc(*topo);
  if (!alloc) return 1;
  PrintMode();
  auto mon = StartMonitor(*topo, a.poll_ms);
  if (!mon) return 1;
  auto big = PerCpuU64Mib<90>::Create(*topo, *alloc);
  VM_CHECK(big.ok(), "PerCpuU64Mib<90>: %s", big.status().ToString().c_str());
  if (!big.ok()) return 1;
  for (int i = 0; i < 90; ++i) (*big)->Add(static_cast<size_t>(i), 1);
  Counters c;
  if (!MakeCounters(*topo, *alloc, /*with_slot=*/false, &c)) return 1;
  const std::vector<Probe> probes = {
      {(*big)->slots().base_address(), (*big)->slots().stride()},
      {c.mib->slots().base_address(), c.mib->slots().stride()},
      {c.pair->slots().base_address(), c.pair->slots().stride()},
  };
  PrintResident(*alloc, *topo, "boot", /*strict=*/true, probes);
  Writers w(c, 0, 4);
  Readers r(c, 1);
  int adds = 0, dels = 0;
  const int base_present = topo->present().Count();
  for (int round = 0; round < a.rounds; ++round) {
    const int want = topo->num_possible() - base_present;
    for (int k = 0; k < want; ++k) {
      const int before = topo->present().Count();
      const std::string present_file = std::string(kCpuDir) + "/present";
      const std::string kernel_before = ReadFile(present_file);
      std::printf("PERCPU-VM-QMP: add\n");
      std::fflush(stdout);
      // As udev's auto-online rules do: online the new CPU as soon as the
      // kernel reports it present, without waiting for the Topology, so
      // writers may run on it while the Topology still says absent.
      const bool kernel_ok = WaitFor(
          [&] { return ReadFile(present_file) != kernel_before; }, 20000);
      VM_CHECK(kernel_ok, "hot-add not seen by the kernel");
      if (!kernel_ok) break;
      if (auto m = CpuMask::Parse(ReadFile(present_file)); m.ok()) {
        m->ForEach([&](int cpu) {
          if (ReadFile(CpuOnlineFile(cpu)) == "0") {
            WriteFile(CpuOnlineFile(cpu), "1");
          }
        });
      }
      // The monitor, not the test, rescans.
      const bool ok = WaitFor([&] { return topo->present().Count() > before; }, 20000);
      VM_CHECK(ok, "hot-add not seen: present %s", topo->present().ToString().c_str());
      if (!ok) break;
      ++adds;
      VM_CHECK(TopologyFollows(*topo), "online not followed");
      std::this_thread::sleep_for(milliseconds(200));
    }
    if (round == 0) {
      for (int i = 0; i < 90; ++i) (*big)->Add(static_cast<size_t>(i), 1);
      PrintResident(*alloc, *topo, "all-added", /*strict=*/true, probes);
    }
    // One CPU offlined through sysfs before its removal, the others removed
    // while online (the kernel offlines then removes: kOffline + kAbsent).
    for (int k = 0; k < want; ++k) {
      const int before = topo->present().Count();
      if (k == 0) {
        int last = -1;
        topo->online().ForEach([&](int cpu) { last = cpu; });
        if (last > 0) WriteFile(CpuOnlineFile(last), "0");
        VM_CHECK(TopologyFollows(*topo), "offline not followed");
      }
      std::printf("PERCPU-VM-QMP: del\n");
      std::fflush(stdout);
      const bool ok = WaitFor([&] { return topo->present().Count() < before; }, 20000);
      VM_CHECK(ok, "hot-remove not seen: present %s", topo->present().ToString().c_str());
      if (!ok) break;
      ++dels;
      std::this_thread::sleep_for(milliseconds(200));
    }
  }
  VM_CHECK(TopologyFollows(*topo), "final state not followed");
  const uint64_t ops = w.StopAndJoin();
  r.StopAndJoin();
  std::printf("PERCPU-VM: hot-add %d, hot-remove %d, %" PRIu64 " topology events\n",
              adds, dels, topo->events_fired());
  VM_CHECK(adds > 0 && dels > 0, "no real hot-add/remove happened");
  PrintMonitor(*mon);
  CheckTotals(c, ops, a.fallback ? "hotadd fallback" : "hotadd");
  uint64_t big_total = 0;
  for (int i = 0; i < 90; ++i) big_total += (*big)->Read(static_cast<size_t>(i));
  VM_CHECK(big_total == 180, "PerCpuU64Mib<90> total %" PRIu64 " != 180", big_total);
  PrintResident(*alloc, *topo, "after-remove", /*strict=*/true, probes,
                /*even_zero_page=*/a.strict_residency);
  PrintRestarts("hotadd");
  return g_failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace percpu

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  const percpu::Args a = percpu::Parse(argc, argv);
  if (a.fallback) setenv("PERCPU_RSEQ", "0", 1);
  int rc = 2;
  if (a.cmd == "counters") rc = percpu::Counters_(a);
  else if (a.cmd == "hotplug") rc = percpu::Hotplug(a);
  else if (a.cmd == "hotadd") rc = percpu::HotAdd(a);
  else std::printf("PERCPU-VM-FAIL: unknown command '%s'\n", a.cmd.c_str());
  std::printf("PERCPU-VM: %s %s: %s\n", a.cmd.c_str(),
              a.fallback ? "fallback" : "default",
              rc == 0 ? "PASS" : "FAIL");
  return rc;
}
