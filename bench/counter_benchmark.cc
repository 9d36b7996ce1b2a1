// The cost of the three-line API's adds (Counter::Inc: the rseq sequence
// inline in rseq mode, else one call into counter.cc; PacketCounter::Add:
// one call into counter.cc, then the type underneath) against the writers
// they run on (PerCpuU64, PerCpuPacketsBytes), single thread, on this
// machine's sysfs topology.
//
//   bazel run --config=opt //bench:counter_benchmark
#include <cstdint>
#include <cstdio>
#include <memory>

#include "benchmark/benchmark.h"
#include "primitives/counter.h"
#include "primitives/domain.h"
#include "primitives/percpu_pair.h"
#include "primitives/percpu_stats.h"

namespace {

void BM_CounterInc(benchmark::State& state) {
  percpu::Counter c("bench_counter");
  for (auto _ : state) c.Inc();
  benchmark::DoNotOptimize(c.Read());
}
BENCHMARK(BM_CounterInc);

void BM_PerCpuU64Inc(benchmark::State& state) {
  percpu::Domain& d = percpu::Domain::Default();
  auto c = percpu::PerCpuU64::Create(*d.topology(), *d.allocator());
  if (!c.ok()) {
    state.SkipWithError("PerCpuU64::Create failed");
    return;
  }
  for (auto _ : state) (*c)->Inc();
  benchmark::DoNotOptimize((*c)->Sum());
}
BENCHMARK(BM_PerCpuU64Inc);

void BM_PacketCounterAdd(benchmark::State& state) {
  percpu::PacketCounter c("bench_pair");
  for (auto _ : state) c.Add(1, 64);
  benchmark::DoNotOptimize(c.Read().bytes);
}
BENCHMARK(BM_PacketCounterAdd);

void BM_PerCpuPacketsBytesAdd(benchmark::State& state) {
  percpu::Domain& d = percpu::Domain::Default();
  auto c = percpu::PerCpuPacketsBytes::Create(*d.topology(), *d.allocator());
  if (!c.ok()) {
    state.SkipWithError("PerCpuPacketsBytes::Create failed");
    return;
  }
  for (auto _ : state) (*c)->Add(1, 64);
  benchmark::DoNotOptimize((*c)->Sum().bytes);
}
BENCHMARK(BM_PerCpuPacketsBytesAdd);

}  // namespace

BENCHMARK_MAIN();
