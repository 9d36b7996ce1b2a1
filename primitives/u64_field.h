// U64Field*: READ_ONCE / WRITE_ONCE on plain 64-bit unsigned fields whose
// type cannot change, as the kernel does on the u64 fields of its stats
// structs.
//
// What it is for: counters that live in a layout you do not own, so they
// cannot be percpu::U64Stat: a C-layout stats struct shared with C code
// (for example the kernel ABI's struct rtnl_link_stats64 from
// <linux/if_link.h>, whose fields are __u64), or memory mapped from another
// process or a device. The field stays a plain uint64_t / __u64; every
// concurrent access goes through these functions, which view it through
// std::atomic_ref (C++20) or boost::atomic_ref (C++17, header-only
// Boost.Atomic >= 1.73) via internal/atomic_ref.h.
//
//   struct Port {                       // the C struct is untouched
//     struct rtnl_link_stats64 stats;
//     percpu::U64StatsSync sync;        // a seqcount only on 32-bit
//   };
//   // Writer (the port's only writer):
//   {
//     percpu::U64StatsUpdate<percpu::U64StatsSync> update(port.sync);
//     percpu::U64FieldInc(port.stats.rx_packets);
//     percpu::U64FieldAdd(port.stats.rx_bytes, len);
//   }
//   // Reader (any thread): both values of one moment on 32-bit targets.
//   percpu::FetchConsistent(port.sync, [&] {
//     return std::make_pair(percpu::U64FieldRead(port.stats.rx_packets),
//                           percpu::U64FieldRead(port.stats.rx_bytes));
//   });
//
// Two implementations, chosen at compile time exactly like U64Stat's
// (kU64StatsUseSeqcount, u64_stats.h):
//   * 64-bit targets: one relaxed 64-bit atomic load (READ_ONCE) or store
//     (WRITE_ONCE) of the field. A single read is untorn without any sync;
//     U64StatsSync is empty and compiles away.
//   * 32-bit targets and PERCPU_FORCE_SEQCOUNT builds: the field is accessed
//     as its two 32-bit words with relaxed atomic loads and stores, which is
//     what a 32-bit CPU does with a u64 anyway, without paying for a 64-bit
//     atomic (cmpxchg8b on i686, ldrexd/strexd on armv7). An untorn value
//     needs the covering U64StatsSync: writers inside U64StatsUpdate,
//     readers inside FetchConsistent (the kernel's u64_stats_sync on
//     32-bit). This path works at the field's natural alignment, which is 4
//     on i686 for a u64 inside a struct.
// U64StatsGroupSync (always a seqcount) gives a consistent group read on
// every target, e.g. packets and bytes of the same moment.
//
// Memory-ordering contract: the field accesses are relaxed and order no
// other memory. On the seqcount path a reader's values are those of the
// write sections that completed before its FetchBegin() (seqcount.h). The
// field accesses are data words of that seqcount; its fences pair writer
// and reader as documented there.
//
// Usage constraints:
//   * One writer per field at a time (per-CPU or per-thread slot, or
//     serialized by the caller), as for U64Stat. Add/Inc/Sub are a relaxed
//     load plus a relaxed store, not an atomic read-modify-write: two
//     concurrent writers lose updates.
//   * Every write happens inside an update section of the covering sync,
//     even on 64-bit where it is a no-op, so the code is right everywhere.
//   * Every access that may race with another goes through these functions.
//     Plain accesses (C code, memcpy of the struct) are fine only while no
//     writer runs, e.g. before the writers start or after they stop.
//   * The field must be aligned for its access width: 8 bytes on the 64-bit
//     path (the natural alignment of u64 on x86_64 and aarch64), 4 on the
//     seqcount path. Memory mapped from elsewhere must respect that; debug
//     builds report a misaligned field through contract.h (undefined
//     behaviour in release builds).
//   * Field type: any 8-byte unsigned integer type (uint64_t, __u64 =
//     unsigned long long, unsigned long on LP64), checked at compile time.
//   * Not available in model-check builds (see internal/atomic_ref.h).
//   * Values wrap modulo 2^64; Sub() is for gauges.
#ifndef PERCPU_PRIMITIVES_U64_FIELD_H_
#define PERCPU_PRIMITIVES_U64_FIELD_H_

#include <atomic>
#include <cstdint>
#include <type_traits>

#include "primitives/contract.h"
#include "primitives/internal/atomic_ref.h"
#include "primitives/u64_stats.h"

namespace percpu {
namespace internal {

template <typename T>
inline constexpr bool kIsU64Field =
    std::is_integral_v<T> && std::is_unsigned_v<T> && sizeof(T) == 8 &&
    !std::is_same_v<T, bool>;

#if PERCPU_U64_STATS_USE_SEQCOUNT
// Index of the low and high 32-bit word of a u64 in memory.
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
inline constexpr int kLoWord = 1;
#else
inline constexpr int kLoWord = 0;
#endif
inline constexpr int kHiWord = 1 - kLoWord;

// The field's storage as two 32-bit words (the kernel's 32-bit view of a
// u64). Only atomic accesses touch the words while writers run.
template <typename T>
uint32_t* U64FieldWords(const T& field) {
  return reinterpret_cast<uint32_t*>(const_cast<T*>(&field));
}
#endif

template <typename T>
inline void CheckU64FieldAlignment(const T& field) {
#if PERCPU_CONTRACT_CHECKS
#if PERCPU_U64_STATS_USE_SEQCOUNT
  constexpr uintptr_t kAlign = AtomicRef<uint32_t>::required_alignment;
#else
  constexpr uintptr_t kAlign = AtomicRef<T>::required_alignment;
#endif
  // A misaligned field already breaks the promise of its type, and clang
  // folds this test to "aligned" from that promise; hiding the address
  // from the optimizer keeps the debug check meaningful.
  uintptr_t address = reinterpret_cast<uintptr_t>(&field);
  __asm__("" : "+r"(address));
  if ((address & (kAlign - 1)) != 0) {
    ReportContractViolation(
        "U64Field: the field is not aligned for an atomic access (8 bytes on "
        "64-bit targets, 4 on the seqcount path)");
  }
#else
  (void)field;
#endif
}

}  // namespace internal

// READ_ONCE of a u64 field. Untorn on 64-bit targets; on the seqcount path
// call it inside FetchConsistent() (or a FetchBegin()/FetchRetry() loop) of
// the covering sync. The field is only loaded, never written, so it may be
// in memory this process can read but not write on 64-bit targets.
template <typename T>
uint64_t U64FieldRead(const T& field) {
  static_assert(internal::kIsU64Field<T>,
                "U64FieldRead: the field must be an 8-byte unsigned integer");
  internal::CheckU64FieldAlignment(field);
#if PERCPU_U64_STATS_USE_SEQCOUNT
  uint32_t* words = internal::U64FieldWords(field);
  // Relaxed suffices: seqcount data words; the covering sync's fences order
  // them (Pairs with: the writer's section in U64StatsUpdate, seqcount.h).
  const uint64_t lo = internal::AtomicRef<uint32_t>(words[internal::kLoWord])
                          .load(internal::RefOrder(std::memory_order_relaxed));
  const uint64_t hi = internal::AtomicRef<uint32_t>(words[internal::kHiWord])
                          .load(internal::RefOrder(std::memory_order_relaxed));
  return hi << 32 | lo;
#else
  // Relaxed suffices: READ_ONCE; the counter publishes no other memory. The
  // atomic_ref load of a non-const object does not write it (a plain mov on
  // x86_64, ldr on aarch64).
  return internal::AtomicRef<T>(const_cast<T&>(field))
      .load(internal::RefOrder(std::memory_order_relaxed));
#endif
}

// WRITE_ONCE of a u64 field. Call inside an update section of the covering
// sync, from the field's only writer.
template <typename T>
void U64FieldSet(T& field, uint64_t value) {
  static_assert(internal::kIsU64Field<T>,
                "U64FieldSet: the field must be an 8-byte unsigned integer");
  internal::CheckU64FieldAlignment(field);
#if PERCPU_U64_STATS_USE_SEQCOUNT
  uint32_t* words = internal::U64FieldWords(field);
  // Relaxed suffices: seqcount data words, ordered by the writer's section
  // (Pairs with: the reader's FetchBegin()/FetchRetry(), seqcount.h).
  internal::AtomicRef<uint32_t>(words[internal::kLoWord])
      .store(static_cast<uint32_t>(value),
             internal::RefOrder(std::memory_order_relaxed));
  internal::AtomicRef<uint32_t>(words[internal::kHiWord])
      .store(static_cast<uint32_t>(value >> 32),
             internal::RefOrder(std::memory_order_relaxed));
#else
  // Relaxed suffices: WRITE_ONCE by the single writer; no lock prefix.
  internal::AtomicRef<T>(field).store(
      static_cast<T>(value), internal::RefOrder(std::memory_order_relaxed));
#endif
}

// field += delta by the field's only writer (a load and a store, no RMW).
template <typename T>
void U64FieldAdd(T& field, uint64_t delta) {
  U64FieldSet(field, U64FieldRead(field) + delta);
}

template <typename T>
void U64FieldInc(T& field) {
  U64FieldAdd(field, 1);
}

// field -= delta (gauges); the writer keeps it from going below zero.
template <typename T>
void U64FieldSub(T& field, uint64_t delta) {
  U64FieldSet(field, U64FieldRead(field) - delta);
}

}  // namespace percpu

#endif  // PERCPU_PRIMITIVES_U64_FIELD_H_
