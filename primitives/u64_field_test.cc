#include "primitives/u64_field.h"

#include <linux/if_link.h>  // struct rtnl_link_stats64: the kernel ABI layout
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <thread>
#include <type_traits>
#include <utility>

#include "doctest/doctest.h"
#include "primitives/contract.h"
#include "primitives/internal/test_work.h"

namespace percpu {
namespace {

// A port as a driver would keep it: the kernel's C struct, untouched, and
// the syncs beside it.
struct Port {
  struct rtnl_link_stats64 stats;
  U64StatsSync sync;             // untorn single fields
  U64StatsGroupSync group_sync;  // consistent (packets, bytes) pairs
};

TEST_CASE("C++17 builds use boost::atomic_ref, C++20 builds std::atomic_ref") {
#if __cplusplus >= 202002L
  CHECK(PERCPU_ATOMIC_REF_IS_STD == 1);
#else
  CHECK(PERCPU_ATOMIC_REF_IS_STD == 0);
#endif
}

TEST_CASE("the C layout is the kernel's: fields stay plain __u64") {
  using Field = decltype(rtnl_link_stats64::rx_packets);
  static_assert(std::is_same_v<Field, __u64>);
  static_assert(std::is_standard_layout_v<rtnl_link_stats64>);
  static_assert(std::is_trivially_copyable_v<rtnl_link_stats64>);
  CHECK(offsetof(rtnl_link_stats64, rx_packets) == 0);
  CHECK(offsetof(rtnl_link_stats64, tx_packets) == 8);
  CHECK(offsetof(rtnl_link_stats64, rx_bytes) == 16);
  CHECK(sizeof(rtnl_link_stats64) % 8 == 0);
}

TEST_CASE("set, add, inc, sub and read on every 8-byte unsigned type") {
  Port port{};
  {
    U64StatsUpdate<U64StatsSync> update(port.sync);
    U64FieldInc(port.stats.rx_packets);
    U64FieldAdd(port.stats.rx_bytes, 1500);
    U64FieldSet(port.stats.tx_bytes, 7);
    U64FieldSub(port.stats.tx_bytes, 2);
  }
  CHECK(FetchConsistent(port.sync, [&] {
          return U64FieldRead(port.stats.rx_packets);
        }) == 1);
  CHECK(U64FieldRead(port.stats.rx_bytes) == 1500);
  CHECK(U64FieldRead(port.stats.tx_bytes) == 5);
  // The fields are still plain memory: C code (or a memcpy) sees the value
  // once the writer is quiet.
  CHECK(port.stats.rx_bytes == 1500);

  uint64_t a = 0;
  unsigned long long b = 0;
  U64FieldSet(a, 42);
  U64FieldSet(b, 43);
  CHECK(U64FieldRead(a) == 42);
  CHECK(U64FieldRead(b) == 43);
}

TEST_CASE("carries cross the 32-bit word boundary and wrap modulo 2^64") {
  uint64_t field = 0xFFFFFFFFu;
  U64StatsSync sync;
  {
    U64StatsUpdate<U64StatsSync> update(sync);
    U64FieldInc(field);
  }
  CHECK(field == 0x100000000ull);
  CHECK(U64FieldRead(field) == 0x100000000ull);
  {
    U64StatsUpdate<U64StatsSync> update(sync);
    U64FieldSub(field, 1);
  }
  CHECK(U64FieldRead(field) == 0xFFFFFFFFull);
  {
    U64StatsUpdate<U64StatsSync> update(sync);
    U64FieldSet(field, UINT64_MAX);
    U64FieldAdd(field, 2);
  }
  CHECK(U64FieldRead(field) == 1);
}

TEST_CASE("reads work on memory mapped read-only") {
  const long page = sysconf(_SC_PAGESIZE);
  void* mem = mmap(nullptr, page, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(mem != MAP_FAILED);
  auto* stats = static_cast<rtnl_link_stats64*>(mem);
  stats->rx_packets = 0x123456789ull;  // written before anyone reads
  REQUIRE(mprotect(mem, page, PROT_READ) == 0);
  const rtnl_link_stats64& ro = *stats;
  CHECK(U64FieldRead(ro.rx_packets) == 0x123456789ull);
  CHECK(U64FieldRead(ro.tx_packets) == 0);
  munmap(mem, page);
}

struct Misaligned {};
void ThrowMisaligned(const char*) { throw Misaligned{}; }

TEST_CASE("debug builds report a misaligned field") {
  alignas(8) unsigned char buffer[24] = {};
  // 2 bytes off: misaligned for both the 8-byte and the 4-byte access.
  void* raw = buffer + 2;
  auto* field = static_cast<uint64_t*>(raw);
  ContractViolationHandler previous =
      SetContractViolationHandler(&ThrowMisaligned);
  // Under --config=ubsan the misaligned reference is reported by UBSan
  // itself (a stronger check) before the contract check can run: the
  // planted misalignment is left to the other debug configs there.
#if PERCPU_CONTRACT_CHECKS && !defined(PERCPU_TEST_UNDER_UBSAN)
  CHECK_THROWS_AS(U64FieldRead(*field), Misaligned);
  CHECK_THROWS_AS(U64FieldSet(*field, 1), Misaligned);
#else
  (void)field;
#endif
  // A well-aligned field is accepted.
  auto* aligned = reinterpret_cast<uint64_t*>(buffer + 8);
  CHECK_NOTHROW(U64FieldSet(*aligned, 9));
  CHECK(U64FieldRead(*aligned) == 9);
  SetContractViolationHandler(previous);
}

// One writer stores values whose two 32-bit words are equal; readers must
// never see them differ (a torn read) nor see the value go backwards.
TEST_CASE("concurrent readers never see a torn or backwards field") {
  const uint64_t kIters = testing::Work(uint64_t{200000});
  constexpr uint64_t kSplit = 0x100000001ull;  // hi word == lo word
  Port port{};
  std::atomic<bool> done{false};
  std::atomic<uint64_t> torn{0}, backwards{0}, reads{0};
  std::atomic<int> started{0};
  auto reader = [&] {
    started.fetch_add(1);
    uint64_t last = 0;
    while (!done.load(std::memory_order_acquire)) {  // Pairs with: the main thread's release store of done.
      const uint64_t v = FetchConsistent(
          port.sync, [&] { return U64FieldRead(port.stats.rx_bytes); });
      if ((v >> 32) != (v & 0xFFFFFFFFu)) torn.fetch_add(1);
      if (v < last) backwards.fetch_add(1);
      last = v;
      reads.fetch_add(1, std::memory_order_relaxed);
    }
  };
  std::thread r1(reader), r2(reader);
  while (started.load() < 2) std::this_thread::yield();
  // Writes until the readers have overlapped it for a while.
  uint64_t i = 0;
  while (i < kIters || reads.load(std::memory_order_relaxed) < 1000) {
    ++i;
    U64StatsUpdate<U64StatsSync> update(port.sync);
    U64FieldSet(port.stats.rx_bytes, i * kSplit);
  }
  done.store(true, std::memory_order_release);  // Pairs with: the reader's acquire load of done.
  r1.join();
  r2.join();
  CHECK(torn.load() == 0);
  CHECK(backwards.load() == 0);
  CHECK(reads.load() >= 1000);
  CHECK(U64FieldRead(port.stats.rx_bytes) == i * kSplit);
}

// A group sync gives (packets, bytes) of the same moment on every target.
TEST_CASE("a group read sees packets and bytes of the same moment") {
  const uint64_t kIters = testing::Work(uint64_t{200000});
  constexpr uint64_t kLen = 0x10000001ull;  // bytes cross the word boundary
  Port port{};
  std::atomic<bool> done{false};
  std::atomic<uint64_t> inconsistent{0}, reads{0};
  std::atomic<bool> started{false};
  std::thread reader([&] {
    started.store(true);
    while (!done.load(std::memory_order_acquire)) {  // Pairs with: the main thread's release store of done.
      const auto [packets, bytes] = FetchConsistent(port.group_sync, [&] {
        return std::make_pair(U64FieldRead(port.stats.rx_packets),
                              U64FieldRead(port.stats.rx_bytes));
      });
      if (bytes != packets * kLen) inconsistent.fetch_add(1);
      reads.fetch_add(1, std::memory_order_relaxed);
    }
  });
  while (!started.load()) std::this_thread::yield();
  uint64_t i = 0;
  while (i < kIters || reads.load(std::memory_order_relaxed) < 1000) {
    ++i;
    U64StatsUpdate<U64StatsGroupSync> update(port.group_sync);
    U64FieldInc(port.stats.rx_packets);
    U64FieldAdd(port.stats.rx_bytes, kLen);
  }
  done.store(true, std::memory_order_release);  // Pairs with: the reader's acquire load of done.
  reader.join();
  CHECK(inconsistent.load() == 0);
  CHECK(reads.load() >= 1000);
  CHECK(U64FieldRead(port.stats.rx_packets) == i);
  CHECK(U64FieldRead(port.stats.rx_bytes) == i * kLen);
}

}  // namespace
}  // namespace percpu
