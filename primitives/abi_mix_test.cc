// A debug main (PERCPU_CONTRACT_CHECKS=1) linked with a release build of
// percpu_counter.cc (PERCPU_CONTRACT_CHECKS=0, NDEBUG): the normal case of
// a prebuilt library. The contract-check macro must change no layout, so
// the two kinds of translation unit agree on every struct and interoperate
// on the same objects. Before the fix SeqCount had its checker word in
// debug builds only: ApproxCounterSlot was 12 bytes here and 8 in the
// library, the debug inline flush wrote the neighbouring counter's delta,
// and a false "two writers" contract violation fired.
#include <atomic>
#include <cstddef>
#include <memory>
#include <utility>

#include "doctest/doctest.h"
#include "primitives/contract.h"
#include "primitives/percpu_alloc.h"
#include "primitives/percpu_counter.h"
#include "primitives/seqcount.h"
#include "primitives/topology.h"

#if !PERCPU_CONTRACT_CHECKS
#error "abi_mix_test's main must be a debug translation unit"
#endif

namespace percpu {
namespace abi_mix {
size_t ReleaseSeqCountSize();
size_t ReleaseCounterSlotSize();
size_t ReleaseCounterSlotAlign();
void ReleaseWriteSection(SeqCount& seq);
}  // namespace abi_mix

namespace {

std::atomic<int> g_violations{0};
void CountViolation(const char*) { g_violations.fetch_add(1); }

TEST_CASE("debug and release translation units agree on every layout") {
  CHECK(sizeof(SeqCount) == abi_mix::ReleaseSeqCountSize());
  CHECK(sizeof(ApproxCounterSlot) == abi_mix::ReleaseCounterSlotSize());
  CHECK(alignof(ApproxCounterSlot) == abi_mix::ReleaseCounterSlotAlign());
}

TEST_CASE("debug writers on counters created by a release library") {
  ContractViolationHandler old = SetContractViolationHandler(&CountViolation);
  g_violations.store(0);
  {
    auto topo = Topology::Simulated(4, 4, 4);
    REQUIRE(topo.ok());
    auto alloc = PerCpuAllocator::Create(&**topo);
    REQUIRE(alloc.ok());
    // Created (and slot-sized) by the release percpu_counter.cc; adjacent
    // slots in the allocator's units.
    constexpr int32_t kBatch = 4;
    std::unique_ptr<ApproxCounter> c[3];
    for (auto& p : c) {
      auto made = ApproxCounter::Create(**topo, **alloc, 0, kBatch);
      REQUIRE(made.ok());
      p = std::move(*made);
    }
    int64_t expect[3] = {0, 0, 0};
    for (int round = 0; round < 1000; ++round) {
      for (int cpu = 0; cpu < 4; ++cpu) {
        for (int i = 0; i < 3; ++i) {
          // Debug inline Add: every kBatch-th one flushes (a debug write
          // section) while the neighbours hold non-zero deltas.
          const int64_t amount = 1 + (round + cpu + i) % 3;
          c[i]->Add(cpu, amount);
          expect[i] += amount;
        }
      }
      // A release write section on a slot a debug writer also uses.
      abi_mix::ReleaseWriteSection(c[1]->slots().on(round % 4)->flush_seq);
    }
    for (int i = 0; i < 3; ++i) {
      CAPTURE(i);
      CHECK(c[i]->Sum() == expect[i]);
      int64_t deltas = 0;
      for (int cpu = 0; cpu < 4; ++cpu) {
        const int32_t d =
            c[i]->slots().on(cpu)->delta.load(std::memory_order_relaxed);
        CHECK(d < kBatch);
        CHECK(d > -kBatch);
        deltas += d;
      }
      CHECK(c[i]->Read() + deltas == expect[i]);
    }
  }
  CHECK(g_violations.load() == 0);
  SetContractViolationHandler(old);
}

}  // namespace
}  // namespace percpu
