// Everything at once: writers hammer a hotplug-aware MIB, a percpu_counter,
// lazily allocated flow slots, an rseq/fallback per-CPU counter and a
// per-thread counter; readers fold continuously; a hotplug thread takes
// simulated CPUs offline and online; a churn thread allocates and frees
// per-CPU objects (and whole MIBs, registering and unregistering hotplug
// callbacks); short-lived threads add to the per-thread counter and exit.
//
// Readers check, for every monotonic total: it never goes backwards and
// never exceeds what writers had attempted when the read ended. At the end
// every total must equal exactly what was written.
//
// "Attempted" bounds: before each update a writer adds the delta to its
// `attempted` counter (relaxed) and issues a release fence; the update's
// relaxed store then carries that fence to any reader whose later acquire
// fence (the retry check of the hotplug or slot seqcount, or an explicit
// one below) follows a load that saw the update. So a reader that saw an
// update also sees it counted in `attempted`.
#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "primitives/cpu_slot.h"
#include "primitives/lazy_percpu.h"
#include "primitives/per_thread.h"
#include "primitives/percpu_alloc.h"
#include "primitives/percpu_counter.h"
#include "primitives/percpu_mib.h"
#include "primitives/percpu_pair.h"
#include "primitives/percpu_stats.h"
#include "primitives/topology.h"
#include "stress/harness.h"

namespace percpu {
namespace stress {
namespace {

constexpr size_t kMibItems = 8;
constexpr int kFlows = 4;

std::string Str(uint64_t v) { return std::to_string(v); }

// Per simulated CPU: its writer parks on request so the hotplug thread can
// quiesce it before Offline() (the kernel's "the CPU is dead" precondition).
struct alignas(64) CpuControl {
  std::atomic<bool> park_request{false};
  std::atomic<bool> parked{false};
};

struct alignas(64) WriterTotals {
  std::atomic<uint64_t> mib{0};
  std::atomic<uint64_t> counter{0};
  std::atomic<uint64_t> flow{0};
  std::atomic<uint64_t> cpu_slot{0};
  std::atomic<uint64_t> per_thread{0};
  std::atomic<uint64_t> fam_single{0};
  std::atomic<uint64_t> fam_mib{0};
  std::atomic<uint64_t> fam_pair{0};  // packets; bytes = 3 * packets
};

template <typename T>
void Check(Reporter& reporter, const char* what, T value, T last, T bound) {
  if (value < last) {
    reporter.Fail(std::string(what) + " went backwards: " + Str(value) +
                  " after " + Str(last));
  }
  if (value > bound) {
    reporter.Fail(std::string(what) + " " + Str(value) +
                  " exceeds what was attempted, " + Str(bound));
  }
}

void Stress(const Options& options, Reporter& reporter) {
  const int writers = std::max(2, options.threads);
  // Simulated CPUs: one per writer, plus absent ones that churn never uses.
  auto topo_or = Topology::Simulated(writers + 4, writers, writers);
  if (!topo_or.ok()) return reporter.Fail(topo_or.status().ToString());
  Topology& topo = **topo_or;
  auto alloc_or = PerCpuAllocator::Create(&topo);
  if (!alloc_or.ok()) return reporter.Fail(alloc_or.status().ToString());
  PerCpuAllocator& alloc = **alloc_or;

  auto mib_or = LcoreStats<kMibItems>::Create(topo, alloc);
  auto counter_or = ApproxCounter::Create(topo, alloc, 0, 16);
// CpuSlotCounter is deprecated (removed in 0.3) but still shipped: stress it.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  auto cpu_slots_or = CpuSlotCounter::Create(64);
#pragma GCC diagnostic pop
  if (!mib_or.ok() || !counter_or.ok() || !cpu_slots_or.ok()) {
    return reporter.Fail("setup failed");
  }
  // The counter families (percpu_stats.h, percpu_pair.h): on this simulated
  // topology they use the fallback writer (sched_getcpu + hotplug-safe
  // slots), so writers are NOT quiesced for them: real CPU ids and random
  // stale ids race the hotplug thread's Offline/Online.
  auto fam_single_or = PerCpuU64::Create(topo, alloc);
  auto fam_mib_or = PerCpuU64Mib<kMibItems>::Create(topo, alloc);
  auto fam_pair_or = PerCpuPacketsBytes::Create(topo, alloc);
  if (!fam_single_or.ok() || !fam_mib_or.ok() || !fam_pair_or.ok()) {
    return reporter.Fail("family setup failed");
  }
  PerCpuU64& fam_single = **fam_single_or;
  PerCpuU64Mib<kMibItems>& fam_mib = **fam_mib_or;
  PerCpuPacketsBytes& fam_pair = **fam_pair_or;
  LcoreStats<kMibItems>& mib = **mib_or;
  ApproxCounter& counter = **counter_or;
  auto& cpu_slots = **cpu_slots_or;  // the deprecated CpuSlotCounter
  std::vector<std::unique_ptr<FlowStats>> flows;
  for (int f = 0; f < kFlows; ++f) {
    auto flow = FlowStats::Create(writers + 4);
    if (!flow.ok()) return reporter.Fail(flow.status().ToString());
    flows.push_back(std::move(*flow));
  }
  ThreadCounter per_thread;

  std::vector<CpuControl> control(writers);
  std::vector<WriterTotals> attempted(writers);
  std::atomic<uint64_t> churn_attempted{0};
  std::atomic<bool> stop{false};
  const Deadline deadline(options.duration_ms);

  std::vector<std::thread> threads;
  // Writers: writer w is the only writer of simulated CPU w.
  for (int w = 0; w < writers; ++w) {
    threads.emplace_back([&, w] {
      Rng rng(options.seed * 7919 + w);
      WriterTotals& mine = attempted[w];
      for (uint64_t op = 0; options.ops == 0 || op < options.ops; ++op) {
        if ((op & 63) == 0 && deadline.Passed()) break;
        CpuControl& ctl = control[w];
        if (ctl.park_request.load(std::memory_order_acquire)) {  // Pairs with: release store by the hotplug thread.
          // Release: this CPU's last updates happen-before the Offline()
          // that follows the hotplug thread's acquire load of parked.
          ctl.parked.store(true, std::memory_order_release);  // Pairs with: acquire load of parked in the hotplug thread.
          while (ctl.park_request.load(std::memory_order_acquire)) {  // Pairs with: release store of false by the hotplug thread.
            std::this_thread::yield();
          }
          ctl.parked.store(false, std::memory_order_relaxed);
          continue;
        }
        const uint64_t d = 1 + rng.Below(1000);
        switch (rng.Below(8)) {
          case 0:
            mine.mib.store(mine.mib.load(std::memory_order_relaxed) + d,
                           std::memory_order_relaxed);
            // Publishes `attempted` before the update. Pairs with: the
            // acquire fence of the reader's hotplug_seq retry check.
            std::atomic_thread_fence(std::memory_order_release);  // Pairs with: acquire fence in SeqCount::ReadRetry().
            mib.Add(w, op % kMibItems, d);
            break;
          case 1:
            mine.counter.store(mine.counter.load(std::memory_order_relaxed) + d,
                               std::memory_order_relaxed);
            std::atomic_thread_fence(std::memory_order_release);  // Pairs with: acquire fence in ApproxCounter::Sum().
            counter.Add(w, static_cast<int64_t>(d));
            break;
          case 2:
            mine.flow.store(mine.flow.load(std::memory_order_relaxed) + 1,
                            std::memory_order_relaxed);
            std::atomic_thread_fence(std::memory_order_release);  // Pairs with: acquire fence in the flow reader.
            flows[op % kFlows]->Update(w, d, op, 0x10);
            break;
          case 3:
            mine.cpu_slot.store(mine.cpu_slot.load(std::memory_order_relaxed) + d,
                                std::memory_order_relaxed);
            std::atomic_thread_fence(std::memory_order_release);  // Pairs with: acquire fence in the cpu-slot reader.
            cpu_slots.Add(d);
            break;
          case 4:
            mine.per_thread.store(
                mine.per_thread.load(std::memory_order_relaxed) + d,
                std::memory_order_relaxed);
            std::atomic_thread_fence(std::memory_order_release);  // Pairs with: acquire fence in the per-thread reader.
            per_thread.Add(d);
            break;
          case 5:
            mine.fam_single.store(
                mine.fam_single.load(std::memory_order_relaxed) + d,
                std::memory_order_relaxed);
            std::atomic_thread_fence(std::memory_order_release);  // Pairs with: acquire fence in the families' reader.
            if (rng.Below(2) == 0) {
              fam_single.Add(d);  // hot path: real CPU id
            } else {
              // A stale id: any writer's CPU, possibly going offline now.
              // (void): the id is < num_possible, so AddOnCpu cannot fail
              // (an offline CPU's add goes to the overflow word).
              (void)fam_single.AddOnCpu(static_cast<int>(rng.Below(writers)), d);
            }
            break;
          case 6:
            mine.fam_mib.store(mine.fam_mib.load(std::memory_order_relaxed) + d,
                               std::memory_order_relaxed);
            std::atomic_thread_fence(std::memory_order_release);  // Pairs with: acquire fence in the families' reader.
            if (rng.Below(2) == 0) {
              fam_mib.Add(op % kMibItems, d);
            } else {
              // (void): valid id and item; cannot fail (see case 5).
              (void)fam_mib.AddOnCpu(static_cast<int>(rng.Below(writers)),
                                     op % kMibItems, d);
            }
            break;
          case 7:
            mine.fam_pair.store(mine.fam_pair.load(std::memory_order_relaxed) + d,
                                std::memory_order_relaxed);
            std::atomic_thread_fence(std::memory_order_release);  // Pairs with: acquire fence in the families' reader.
            if (rng.Below(2) == 0) {
              fam_pair.Add(d, 3 * d);
            } else {
              // (void): valid id; cannot fail (see case 5).
              (void)fam_pair.AddOnCpu(static_cast<int>(rng.Below(writers)), d,
                                      3 * d);
            }
            break;
        }
        if (rng.Below(128) == 0) std::this_thread::yield();
      }
    });
  }

  auto attempted_sum = [&](std::atomic<uint64_t> WriterTotals::*field) {
    uint64_t sum = 0;
    for (WriterTotals& t : attempted) {
      sum += (t.*field).load(std::memory_order_relaxed);
    }
    return sum;
  };

  // Readers.
  std::vector<std::thread> readers;
  for (int r = 0; r < 2; ++r) {
    readers.emplace_back([&] {
      uint64_t last_mib = 0, last_counter = 0, last_flow = 0, last_slot = 0,
               last_thread = 0, last_fs = 0, last_fm = 0, last_fp = 0;
      std::array<uint64_t, kMibItems> fam_snapshot;
      std::array<uint64_t, kMibItems> snapshot;
      while (!stop.load(std::memory_order_relaxed) && !reporter.failed()) {
        mib.Snapshot(snapshot);  // ends with an acquire fence (retry check)
        uint64_t total = 0;
        for (uint64_t v : snapshot) total += v;
        Check(reporter, "MIB total", total, last_mib,
              attempted_sum(&WriterTotals::mib));
        last_mib = std::max(last_mib, total);

        const int64_t exact = counter.Sum();
        Check<uint64_t>(reporter, "percpu_counter Sum()", exact, last_counter,
                        attempted_sum(&WriterTotals::counter));
        last_counter = std::max<uint64_t>(last_counter, exact);
        // Read() is the shared count only. Counts only grow here, so it is
        // at least the count inside the earlier Sum(), which is at least
        // Sum() minus every online delta (each below batch), and at most
        // what was attempted.
        const int64_t approx = counter.Read();
        const int64_t bound = static_cast<int64_t>(counter.batch()) * writers;
        if (approx < exact - bound ||
            static_cast<uint64_t>(approx) >
                attempted_sum(&WriterTotals::counter)) {
          reporter.Fail("percpu_counter Read() " + std::to_string(approx) +
                        " outside [Sum() - batch * cpus, attempted], Sum() " +
                        std::to_string(exact));
        }

        uint64_t packets = 0;
        for (const auto& flow : flows) packets += flow->Read().packets;
        std::atomic_thread_fence(std::memory_order_acquire);  // Pairs with: release fence before Update() in the writers.
        Check(reporter, "flow packets", packets, last_flow,
              attempted_sum(&WriterTotals::flow));
        last_flow = std::max(last_flow, packets);

        const uint64_t slot_sum = cpu_slots.Sum();
        std::atomic_thread_fence(std::memory_order_acquire);  // Pairs with: release fence before cpu_slots.Add().
        Check(reporter, "cpu-slot counter", slot_sum, last_slot,
              attempted_sum(&WriterTotals::cpu_slot));
        last_slot = std::max(last_slot, slot_sum);

        const uint64_t thread_sum = per_thread.Sum();
        std::atomic_thread_fence(std::memory_order_acquire);  // Pairs with: release fence before per_thread.Add().
        Check(reporter, "per-thread counter", thread_sum, last_thread,
              attempted_sum(&WriterTotals::per_thread) +
                  churn_attempted.load(std::memory_order_relaxed));
        last_thread = std::max(last_thread, thread_sum);

        const uint64_t fs = fam_single.Sum();
        fam_mib.FoldAll(fam_snapshot);
        uint64_t fm = 0;
        for (uint64_t v : fam_snapshot) fm += v;
        const PacketsBytes fp = fam_pair.Sum();
        std::atomic_thread_fence(std::memory_order_acquire);  // Pairs with: release fence before the families' adds.
        Check(reporter, "PerCpuU64", fs, last_fs,
              attempted_sum(&WriterTotals::fam_single));
        Check(reporter, "PerCpuU64Mib total", fm, last_fm,
              attempted_sum(&WriterTotals::fam_mib));
        Check(reporter, "PerCpuPacketsBytes packets", fp.packets, last_fp,
              attempted_sum(&WriterTotals::fam_pair));
        if (fp.bytes != 3 * fp.packets) {
          reporter.Fail("PerCpuPacketsBytes pair torn: " + Str(fp.packets) +
                        " packets, " + Str(fp.bytes) + " bytes");
        }
        last_fs = std::max(last_fs, fs);
        last_fm = std::max(last_fm, fm);
        last_fp = std::max(last_fp, fp.packets);
      }
    });
  }

  // Hotplug: offline and online CPUs 1..writers-1, quiescing each first.
  std::thread hotplug([&] {
    Rng rng(options.seed * 31 + 1);
    uint64_t events = 0;
    while (!deadline.Passed() && !reporter.failed()) {
      const int cpu = 1 + static_cast<int>(rng.Below(writers - 1));
      CpuControl& ctl = control[cpu];
      ctl.park_request.store(true, std::memory_order_release);  // Pairs with: acquire load of park_request by the writer.
      // Wait until the writer parked, or finished (past the deadline).
      while (!ctl.parked.load(std::memory_order_acquire) &&  // Pairs with: release store of parked by the writer.
             !deadline.Passed()) {
        std::this_thread::yield();
      }
      if (ctl.parked.load(std::memory_order_acquire)) {  // Pairs with: release store of parked by the writer.
        Status s = topo.Offline(cpu);
        if (!s.ok()) reporter.Fail("Offline: " + s.ToString());
        std::this_thread::yield();
        s = topo.Online(cpu);
        if (!s.ok()) reporter.Fail("Online: " + s.ToString());
        ++events;
      }
      ctl.park_request.store(false, std::memory_order_release);  // Pairs with: acquire load in the writer's park loop.
    }
    if (events == 0) reporter.Fail("the hotplug thread fired no event");
  });

  // Churn: per-CPU objects of random sizes, each CPU's copy stamped and
  // verified before free; whole MIBs created and destroyed (callback
  // registration races the hotplug events); short-lived threads that add to
  // the per-thread counter and exit (its hotplug: the exit fold).
  std::thread churn([&] {
    Rng rng(options.seed * 131 + 7);
    struct Live {
      PerCpuPtr<void> ptr;
      size_t size;
      uint8_t stamp;
    };
    std::vector<Live> live;
    uint64_t rounds = 0;
    while (!deadline.Passed() && !reporter.failed()) {
      ++rounds;
      if (live.size() < 64 && rng.Below(2) == 0) {
        const size_t size = 1 + rng.Below(256);
        auto p = alloc.Allocate(size);
        if (!p.ok()) {
          reporter.Fail("churn Allocate: " + p.status().ToString());
          break;
        }
        const uint8_t stamp = static_cast<uint8_t>(1 + rng.Below(255));
        for (int cpu = 0; cpu < writers; ++cpu) {  // present CPUs only
          auto* bytes = static_cast<uint8_t*>(p->on(cpu));
          for (size_t i = 0; i < size; ++i) {
            if (bytes[i] != 0) {
              reporter.Fail("churn: fresh allocation not zeroed");
              break;
            }
          }
          std::fill(bytes, bytes + size, stamp);
        }
        live.push_back({*p, size, stamp});
      } else if (!live.empty()) {
        const size_t i = rng.Below(live.size());
        for (int cpu = 0; cpu < writers; ++cpu) {
          const auto* bytes = static_cast<const uint8_t*>(live[i].ptr.on(cpu));
          for (size_t b = 0; b < live[i].size; ++b) {
            if (bytes[b] != live[i].stamp) {
              reporter.Fail("churn: per-CPU object overwritten");
              break;
            }
          }
        }
        Status s = alloc.Free(live[i].ptr);
        if (!s.ok()) reporter.Fail("churn Free: " + s.ToString());
        live[i] = live.back();
        live.pop_back();
      }
      if (rounds % 16 == 0) {
        auto extra = LcoreStats<4>::Create(topo, alloc);
        if (!extra.ok()) reporter.Fail("churn MIB: " + extra.status().ToString());
      }
      if (rounds % 32 == 0) {
        std::thread shortlived([&] {
          churn_attempted.fetch_add(5, std::memory_order_relaxed);
          std::atomic_thread_fence(std::memory_order_release);  // Pairs with: acquire fence in the per-thread reader.
          per_thread.Add(5);
        });
        shortlived.join();
      }
    }
    // (void): live allocations of `alloc`; Free cannot fail.
    for (Live& l : live) (void)alloc.Free(l.ptr);
  });

  for (std::thread& t : threads) t.join();
  hotplug.join();
  churn.join();
  stop.store(true, std::memory_order_relaxed);
  for (std::thread& t : readers) t.join();

  // Every total equals exactly what was written.
  std::array<uint64_t, kMibItems> snapshot;
  mib.Snapshot(snapshot);
  uint64_t mib_total = 0;
  for (uint64_t v : snapshot) mib_total += v;
  uint64_t flow_packets = 0;
  for (const auto& flow : flows) flow_packets += flow->Read().packets;
  std::array<uint64_t, kMibItems> fam_snapshot;
  fam_mib.FoldAll(fam_snapshot);
  uint64_t fam_mib_total = 0;
  for (uint64_t v : fam_snapshot) fam_mib_total += v;
  const PacketsBytes fam_pair_total = fam_pair.Sum();
  if (fam_pair_total.bytes != 3 * fam_pair_total.packets) {
    reporter.Fail("final PerCpuPacketsBytes pair torn");
  }
  const struct {
    const char* what;
    uint64_t got, want;
  } finals[] = {
      {"MIB total", mib_total, attempted_sum(&WriterTotals::mib)},
      {"percpu_counter Sum()", static_cast<uint64_t>(counter.Sum()),
       attempted_sum(&WriterTotals::counter)},
      {"flow packets", flow_packets, attempted_sum(&WriterTotals::flow)},
      {"cpu-slot counter", cpu_slots.Sum(),
       attempted_sum(&WriterTotals::cpu_slot)},
      {"per-thread counter", per_thread.Sum(),
       attempted_sum(&WriterTotals::per_thread) +
           churn_attempted.load(std::memory_order_relaxed)},
      {"PerCpuU64", fam_single.Sum(), attempted_sum(&WriterTotals::fam_single)},
      {"PerCpuU64Mib total", fam_mib_total,
       attempted_sum(&WriterTotals::fam_mib)},
      {"PerCpuPacketsBytes packets", fam_pair_total.packets,
       attempted_sum(&WriterTotals::fam_pair)},
  };
  for (const auto& f : finals) {
    if (f.got != f.want) {
      reporter.Fail(std::string("final ") + f.what + " " + Str(f.got) +
                    " != written " + Str(f.want));
    }
    if (f.want == 0) {
      reporter.Fail(std::string("nothing was written to ") + f.what);
    }
  }
  std::printf("hotplug events: %llu; writer mode: %s\n",
              static_cast<unsigned long long>(topo.events_fired()),
              WriterModeName(CurrentWriterMode()));
}

}  // namespace
}  // namespace stress
}  // namespace percpu

int main(int argc, char** argv) {
  return percpu::stress::RunStress("percpu_stress", argc, argv,
                                   &percpu::stress::Stress);
}
