// Google Benchmark view of the update kernels of bench/kernels.h
// (experiment 4 of the report): one iteration = 1024 updates of one kind
// by each benchmark thread.
//
//   bazel run --config=opt //bench:update_benchmark
#include <memory>

#include <benchmark/benchmark.h>

#include "bench/kernels.h"
#include "primitives/rseq.h"

namespace {

using percpu::bench::UpdateKind;
using percpu::bench::UpdateTargets;

// Shared by every benchmark and thread; created once (thread-safe static).
UpdateTargets* Targets() {
  static UpdateTargets* targets = [] {
    percpu::StatusOr<std::unique_ptr<UpdateTargets>> t =
        UpdateTargets::Create();
    return t.ok() ? t->release() : nullptr;
  }();
  return targets;
}

void BM_Update(benchmark::State& state, UpdateKind kind) {
  UpdateTargets* t = Targets();
  if (t == nullptr) {
    state.SkipWithError("UpdateTargets::Create failed");
    return;
  }
  for (auto _ : state) t->Run(kind, 1024);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * 1024);
  if (state.thread_index() == 0) {
    state.SetLabel(percpu::WriterModeName(percpu::CurrentWriterMode()));
  }
}

#define PERCPU_UPDATE_BENCHMARK(name, kind)   \
  BENCHMARK_CAPTURE(BM_Update, name, kind)     \
      ->Threads(1)                             \
      ->Threads(2)                             \
      ->UseRealTime()

PERCPU_UPDATE_BENCHMARK(plain_tls, UpdateKind::kPlainThreadLocal);
PERCPU_UPDATE_BENCHMARK(percpu_add, UpdateKind::kPerCpuRseq);
PERCPU_UPDATE_BENCHMARK(per_thread, UpdateKind::kPerThread);
PERCPU_UPDATE_BENCHMARK(fallback_getcpu, UpdateKind::kFallback);
PERCPU_UPDATE_BENCHMARK(shared_fetch_add, UpdateKind::kSharedAtomic);
PERCPU_UPDATE_BENCHMARK(mutex, UpdateKind::kMutex);
PERCPU_UPDATE_BENCHMARK(ovs_numa_locked, UpdateKind::kOvsNumaLocked);
PERCPU_UPDATE_BENCHMARK(percpu_pair, UpdateKind::kPerCpuPair);

}  // namespace

BENCHMARK_MAIN();
