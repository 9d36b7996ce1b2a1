// U64Stat and U64StatsSync: 64-bit statistics counters with one writer and
// any number of readers that never see a torn or backwards value (the
// kernel's u64_stats_t and struct u64_stats_sync).
//
// Two implementations, chosen at compile time (kU64StatsUseSeqcount):
//   * 64-bit targets: a U64Stat is one 64-bit atomic. Writers update it with
//     a relaxed load and a relaxed store (WRITE_ONCE: no lock prefix, since
//     there is one writer), readers load it relaxed (READ_ONCE). The value is
//     never torn and the compiler cannot split, merge or elide the accesses.
//     U64StatsSync is empty and its calls compile away.
//   * 32-bit targets, and 64-bit builds with PERCPU_FORCE_SEQCOUNT
//     (--config=seqcount): a U64Stat is two 32-bit relaxed atomics and
//     U64StatsSync holds a SeqCount. Writers bracket updates with
//     UpdateBegin()/UpdateEnd(); readers loop on FetchBegin()/FetchRetry()
//     to get an untorn value.
//
// U64StatsGroupSync always uses the seqcount, so a reader gets a consistent
// group (packets and bytes of the same moment) on 64-bit targets too.
//
// Usage constraints:
//   * One writer per counter group at a time (a per-CPU or per-thread slot,
//     or serialized by the caller). All writes of the counters covered by a
//     sync object happen between its UpdateBegin() and UpdateEnd(), even on
//     64-bit where those are no-ops, so the code is correct on every target.
//   * Readers use the FetchBegin()/FetchRetry() loop (or FetchConsistent()).
//     A bare Read() outside that loop is untorn only on 64-bit targets.
//   * Do not read a counter group from a signal handler that can interrupt
//     its writer on the same thread: on the seqcount path it spins forever.
//   * Values wrap modulo 2^64. Sub() is for gauges; the writer is
//     responsible for not going below zero.
//
// Memory-ordering contract: the counters themselves are relaxed; no other
// memory is ordered by an update. On the seqcount path a reader's snapshot
// is one that existed between two write sections (see seqcount.h).
#ifndef PERCPU_PRIMITIVES_U64_STATS_H_
#define PERCPU_PRIMITIVES_U64_STATS_H_

#include <atomic>
#include <cstdint>

#include "primitives/internal/atomic.h"
#include "primitives/seqcount.h"

#if defined(PERCPU_FORCE_SEQCOUNT) || UINTPTR_MAX == 0xffffffffu
#define PERCPU_U64_STATS_USE_SEQCOUNT 1
#else
#define PERCPU_U64_STATS_USE_SEQCOUNT 0
#endif

namespace percpu {

// True when a U64Stat is two 32-bit words protected by a seqcount.
inline constexpr bool kU64StatsUseSeqcount = PERCPU_U64_STATS_USE_SEQCOUNT;

class U64Stat {
 public:
  U64Stat() = default;
  explicit U64Stat(uint64_t value) { StoreRelaxed(value); }
  U64Stat(const U64Stat&) = delete;
  U64Stat& operator=(const U64Stat&) = delete;

  // Reader side. Untorn on 64-bit targets; on the seqcount path call it
  // inside a FetchBegin()/FetchRetry() loop of the covering sync object.
  uint64_t Read() const {
#if PERCPU_U64_STATS_USE_SEQCOUNT
    // Relaxed suffices: the covering seqcount orders these loads (Boehm).
    const uint64_t lo = lo_.load(std::memory_order_relaxed);
    const uint64_t hi = hi_.load(std::memory_order_relaxed);
    return hi << 32 | lo;
#else
    // Relaxed suffices: READ_ONCE semantics; the counter publishes nothing.
    return value_.load(std::memory_order_relaxed);
#endif
  }

  // Writer side: call between UpdateBegin() and UpdateEnd().
  void Set(uint64_t value) { StoreRelaxed(value); }
  void Add(uint64_t delta) { StoreRelaxed(Read() + delta); }
  void Inc() { Add(1); }
  void Sub(uint64_t delta) { StoreRelaxed(Read() - delta); }

 private:
  void StoreRelaxed(uint64_t value) {
#if PERCPU_U64_STATS_USE_SEQCOUNT
    // Relaxed suffices: the writer's seqcount section orders these stores.
    lo_.store(static_cast<uint32_t>(value), std::memory_order_relaxed);
    hi_.store(static_cast<uint32_t>(value >> 32), std::memory_order_relaxed);
#else
    // Relaxed suffices: single writer (WRITE_ONCE); no lock prefix needed.
    value_.store(value, std::memory_order_relaxed);
#endif
  }

#if PERCPU_U64_STATS_USE_SEQCOUNT
  internal::Atomic<uint32_t> lo_{0};
  internal::Atomic<uint32_t> hi_{0};
#else
  internal::Atomic<uint64_t> value_{0};
#endif
};

// Synchronizes the readers of a group of U64Stat counters with their writer.
// kUseSeqcount=false is the empty 64-bit variant.
template <bool kUseSeqcount>
class BasicU64StatsSync;

template <>
class BasicU64StatsSync<true> {
 public:
  void UpdateBegin() { seq_.WriteBegin(); }
  void UpdateEnd() { seq_.WriteEnd(); }
  uint32_t FetchBegin() const { return seq_.ReadBegin(); }
  bool FetchRetry(uint32_t start) const { return seq_.ReadRetry(start); }

 private:
  SeqCount seq_;
};

template <>
class BasicU64StatsSync<false> {
 public:
  void UpdateBegin() {}
  void UpdateEnd() {}
  uint32_t FetchBegin() const { return 0; }
  bool FetchRetry(uint32_t) const { return false; }
};

// The kernel's u64_stats_sync: a seqcount only where a u64 is two words.
using U64StatsSync = BasicU64StatsSync<kU64StatsUseSeqcount>;
// Always a seqcount: consistent multi-counter reads on every target.
using U64StatsGroupSync = BasicU64StatsSync<true>;

// Runs `read` (which loads counters covered by `sync`) until it ran without
// a concurrent update, and returns its last result.
template <typename Sync, typename ReadFn>
auto FetchConsistent(const Sync& sync, ReadFn&& read) -> decltype(read()) {
  for (;;) {
    const uint32_t start = sync.FetchBegin();
    auto result = read();
    if (!sync.FetchRetry(start)) return result;
  }
}

// Opens an update section for the lifetime of the object.
template <typename Sync>
class U64StatsUpdate {
 public:
  explicit U64StatsUpdate(Sync& sync) : sync_(sync) { sync_.UpdateBegin(); }
  ~U64StatsUpdate() { sync_.UpdateEnd(); }
  U64StatsUpdate(const U64StatsUpdate&) = delete;
  U64StatsUpdate& operator=(const U64StatsUpdate&) = delete;

 private:
  Sync& sync_;
};

}  // namespace percpu

#endif  // PERCPU_PRIMITIVES_U64_STATS_H_
