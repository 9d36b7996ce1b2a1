// Google Benchmark view of the allocation kernel of bench/kernels.h
// (experiment 5 of the report): one iteration = free a pseudo-random live
// object and allocate a new one, with `live` objects live, on a
// PerCpuAllocator over 4 simulated CPUs.
//
//   bazel run --config=opt //bench:alloc_benchmark
//
// Arguments: {size, alignment argument of Allocate (0 = size-derived),
// live objects}.
#include <memory>

#include <benchmark/benchmark.h>

#include "bench/kernels.h"

namespace {

using percpu::bench::AllocFixture;

void BM_AllocFreeChurn(benchmark::State& state) {
  const size_t size = static_cast<size_t>(state.range(0));
  const size_t align = static_cast<size_t>(state.range(1));
  const size_t live = static_cast<size_t>(state.range(2));
  percpu::StatusOr<std::unique_ptr<AllocFixture>> f =
      AllocFixture::Create(4, size, align);
  if (!f.ok()) {
    state.SkipWithError(f.status().ToString().c_str());
    return;
  }
  percpu::Status s = (*f)->Fill(live);
  if (!s.ok()) {
    state.SkipWithError(s.ToString().c_str());
    return;
  }
  (*f)->TouchAll();
  for (auto _ : state) {
    s = (*f)->Churn(1);
    if (!s.ok()) {
      state.SkipWithError(s.ToString().c_str());
      break;
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
  state.counters["alignment"] =
      static_cast<double>((*f)->alignment_seen());
  state.counters["bytes_per_cpu"] = static_cast<double>(
      (*f)->allocator().stats().bytes_in_use_per_cpu);
}

// 16-byte stats objects: minimum request (8, lifted to 16 by the rule),
// size-derived (0), forced 64; and 200-byte objects (extent path) at 8/64.
BENCHMARK(BM_AllocFreeChurn)
    ->Args({16, 8, 1 << 14})
    ->Args({16, 0, 1 << 14})
    ->Args({16, 64, 1 << 14})
    ->Args({16, 8, 1 << 20})
    ->Args({16, 0, 1 << 20})
    ->Args({16, 64, 1 << 20})
    ->Args({200, 8, 100000})
    ->Args({200, 64, 100000});

}  // namespace

BENCHMARK_MAIN();
