// Google Benchmark view of the fold kernels of bench/kernels.h (experiments
// 1, 2 and 6 of the report): a U64StatMib<90> per CPU from PerCpuAllocator
// over Topology::Simulated(possible, present, present).
//
//   bazel run --config=opt //bench:fold_benchmark
//
// Arguments of each benchmark: {possible CPUs, present CPUs}. Bytes/s is
// the bytes of the CPUs actually visited (90 x 8 per CPU).
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include <benchmark/benchmark.h>

#include "bench/kernels.h"

namespace {

using percpu::bench::FoldFixture;
using percpu::bench::kMibItems;

// One fixture per {possible, present}, kept for the life of the process.
const FoldFixture* GetFixture(benchmark::State& state) {
  static auto* cache =
      new std::map<std::pair<int, int>, std::unique_ptr<FoldFixture>>();
  const std::pair<int, int> key(static_cast<int>(state.range(0)),
                                static_cast<int>(state.range(1)));
  auto it = cache->find(key);
  if (it == cache->end()) {
    percpu::StatusOr<std::unique_ptr<FoldFixture>> f =
        FoldFixture::Create(key.first, key.second);
    if (!f.ok()) {
      state.SkipWithError(f.status().ToString().c_str());
      return nullptr;
    }
    it = cache->emplace(key, std::move(*f)).first;
  }
  return it->second.get();
}

void SetBytes(benchmark::State& state, int cpus) {
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * cpus *
                          static_cast<int64_t>(kMibItems * 8));
}

void BM_FoldCpuMajorPresent(benchmark::State& state) {
  const FoldFixture* f = GetFixture(state);
  if (f == nullptr) return;
  for (auto _ : state) {
    benchmark::DoNotOptimize(percpu::bench::FoldCpuMajorPresent(*f));
  }
  SetBytes(state, f->num_present());
}

void BM_FoldCpuMajorPossible(benchmark::State& state) {
  const FoldFixture* f = GetFixture(state);
  if (f == nullptr) return;
  for (auto _ : state) {
    benchmark::DoNotOptimize(percpu::bench::FoldCpuMajorPossible(*f));
  }
  SetBytes(state, f->num_possible());
}

void BM_FoldOnlineSnapshot(benchmark::State& state) {
  const FoldFixture* f = GetFixture(state);
  if (f == nullptr) return;
  for (auto _ : state) {
    benchmark::DoNotOptimize(percpu::bench::FoldOnlineSnapshot(*f));
  }
  SetBytes(state, f->num_present());
}

void BM_FoldItemMajorPresent(benchmark::State& state) {
  const FoldFixture* f = GetFixture(state);
  if (f == nullptr) return;
  for (auto _ : state) {
    benchmark::DoNotOptimize(percpu::bench::FoldItemMajorPresent(*f));
  }
  SetBytes(state, f->num_present());
}

void BM_FoldItemMajorPossible(benchmark::State& state) {
  const FoldFixture* f = GetFixture(state);
  if (f == nullptr) return;
  for (auto _ : state) {
    benchmark::DoNotOptimize(percpu::bench::FoldItemMajorPossible(*f));
  }
  SetBytes(state, f->num_possible());
}

// The limit: a contiguous sum of as many bytes as `cpus` CPUs' MIBs.
void BM_StreamSum(benchmark::State& state) {
  const int cpus = static_cast<int>(state.range(0));
  std::vector<uint64_t> data(static_cast<size_t>(cpus) * kMibItems, 1);
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        percpu::bench::StreamSum(data.data(), data.size()));
  }
  SetBytes(state, cpus);
}

// The report's layouts: 192 possible with 32 present, and 192 all present
// (every unit backed, as in the kernel).
BENCHMARK(BM_FoldCpuMajorPresent)->Args({192, 32});
BENCHMARK(BM_FoldOnlineSnapshot)->Args({192, 32});
BENCHMARK(BM_FoldCpuMajorPossible)->Args({192, 32})->Args({192, 192});
BENCHMARK(BM_FoldItemMajorPresent)->Args({192, 32});
BENCHMARK(BM_FoldItemMajorPossible)->Args({192, 32})->Args({192, 192});
BENCHMARK(BM_StreamSum)->Arg(32)->Arg(192);
// Scaling with the number of possible CPUs (all present).
BENCHMARK(BM_FoldCpuMajorPossible)
    ->Args({8, 8})
    ->Args({32, 32})
    ->Args({64, 64})
    ->Args({128, 128});

}  // namespace

BENCHMARK_MAIN();
