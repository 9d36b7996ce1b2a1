// Model tests of PerCpuAllocator (primitives/percpu_alloc.{h,cc}) compiled
// with PERCPU_MODEL_CHECK: the allocator's mutex is internal::Mutex, i.e.
// the checker's rl::mutex, so every order in which concurrent Allocate and
// Free calls take it is explored, and a lock synchronizes-with the previous
// unlock exactly as C++20 specifies for std::mutex.
//
// Proof obligations (percpu_alloc.h, thread-safety contract):
//   * concurrent Allocate calls return disjoint, zeroed memory on every
//     CPU, whether they share a slab (small objects) or each needs a new
//     chunk (chunk publication: the chunk a thread creates under the mutex
//     is seen complete by the next thread that takes it);
//   * a Free racing with them neither loses nor hands out live memory;
//   * the statistics count every call exactly once.
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <memory>

#include "doctest/doctest.h"
#include "model_params.h"
#include "primitives/percpu_alloc.h"
#include "primitives/topology.h"
#include "relacy/relacy.hpp"

namespace percpu {
namespace {

constexpr int kCpus = 2;

bool AllBytes(const void* p, size_t n, unsigned char v) {
  const auto* b = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < n; ++i)
    if (b[i] != v) return false;
  return true;
}

// Threads 0 and 1 each allocate kSize bytes per CPU, check them zeroed and
// fill them with their own pattern; thread 2 frees an allocation made in
// before(). kChunkSized: the unit is one page and kSize a whole unit, so
// every Allocate maps and publishes a chunk of its own.
template <bool kChunkSized>
struct ConcurrentAllocate
    : rl::test_suite<ConcurrentAllocate<kChunkSized>, 3> {
  std::shared_ptr<Topology> topo;
  std::shared_ptr<PerCpuAllocator> alloc;
  size_t size = 8;
  PerCpuPtr<void> pre;
  PerCpuPtr<void> got[2];
  bool zeroed[2] = {false, false};

  void before() {
    topo = std::move(*Topology::Simulated(kCpus, kCpus, kCpus));
    PerCpuAllocatorOptions options;
    if (kChunkSized) {
      options.unit_size = static_cast<size_t>(sysconf(_SC_PAGESIZE));
      size = options.unit_size;
    }
    alloc = std::move(*PerCpuAllocator::Create(topo.get(), options));
    pre = *alloc->Allocate(size);
  }
  void thread(unsigned i) {
    if (i == 2) {
      RL_ASSERT(alloc->Free(pre).ok());
      return;
    }
    StatusOr<PerCpuPtr<void>> p = alloc->Allocate(size);
    RL_ASSERT(p.ok());
    got[i] = *p;
    bool z = true;
    for (int cpu = 0; cpu < kCpus; ++cpu) {
      z = z && AllBytes(got[i].on(cpu), size, 0);
      std::memset(got[i].on(cpu), 0xA0 + static_cast<int>(i), size);
    }
    zeroed[i] = z;
  }
  void after() {
    for (unsigned i = 0; i < 2; ++i) {
      RL_ASSERT(zeroed[i]);
      for (int cpu = 0; cpu < kCpus; ++cpu)
        RL_ASSERT(AllBytes(got[i].on(cpu), size, 0xA0 + i));
    }
    RL_ASSERT(got[0].base_address() != got[1].base_address());
    PerCpuAllocatorStats s = alloc->stats();
    RL_ASSERT(s.allocations == 3);
    RL_ASSERT(s.frees == 1);
    RL_ASSERT(s.live_objects == 2);
    if (kChunkSized) RL_ASSERT(s.chunks >= 2);
    alloc.reset();
    topo.reset();
  }
};

TEST_CASE("alloc model: concurrent small allocations share a slab safely") {
  CHECK(model::CheckExhaustive<ConcurrentAllocate<false>>());
}

TEST_CASE("alloc model: chunk publication between concurrent allocations") {
  CHECK(model::CheckExhaustive<ConcurrentAllocate<true>>());
}

// The mutex really is the checker's: two threads allocating is more than
// one execution (both lock orders), so the model explores the allocator's
// critical sections instead of running them once.
TEST_CASE("alloc model: the allocator's mutex is explored") {
  rl::test_params params;
  params.search_type = rl::sched_full;
  params.print_summary = false;
  params.quiet_progress = true;
  CHECK(rl::simulate<ConcurrentAllocate<false>>(params));
  CHECK(params.executions >= 2);
}

}  // namespace
}  // namespace percpu
