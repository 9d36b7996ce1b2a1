// The allocator + hotplug fuzz harness (see the header and
// docs/percpu_alloc.md, "Fuzzing").
//
// Input format (missing bytes read as 0, so every byte string is an input):
//   header, 7 bytes:
//     h0  possible CPUs: h0 < 224 ? 1 + h0 % 8 : 60 + h0 % 12 (crosses the
//         64-bit mask word)
//     h1  present = 1 + h1 % possible;   h2  online = 1 + h2 % present
//     h3  bits 0-1: unit_size = page << (bits % 3) (page if possible > 8);
//         bits 2-4: which invalid unit_size Create must refuse first
//     h4  max_total_bytes mode (h4 % 8), h5 its multiplier (see DecodeLimit)
//     h6  bit 0: no LcoreStats, bit 1: no PerCpuU64Mib
//   then operations, one opcode byte (op % kNumOps) and its argument bytes,
//   until the input ends or kMaxOps ran.
//
// The model (Model below) holds what the library must agree with: the
// masks and the event count of the topology, every live allocation (address,
// requested and placed size, a stamp per CPU describing its expected bytes),
// recently freed addresses, the chunks the allocator mapped (seen through an
// interposed MemorySource, which also injects Map/Commit/Decommit failures),
// the counters of one LcoreStats and one PerCpuU64Mib (per-CPU slot, offline
// accumulator, overflow), and the allocator's statistics.
#include "fuzz/allocator_hotplug_harness.h"

#include <unistd.h>

#include <array>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "primitives/percpu_alloc.h"
#include "primitives/percpu_mib.h"
#include "primitives/percpu_stats.h"
#include "primitives/topology.h"

namespace percpu {
namespace fuzz {
namespace {

constexpr size_t kMibItems = 5;
constexpr size_t kMaxOps = 3000;
// Allocations beyond this many live objects are skipped (keeps an input's
// memory and time bounded).
constexpr size_t kMaxLive = 400;
constexpr size_t kFreedHistory = 64;

using Mib = LcoreStats<kMibItems>;
using U64Mib = PerCpuU64Mib<kMibItems>;

enum Op : uint8_t {
  kOpAllocate,
  kOpAllocateTyped,
  kOpFree,
  kOpDoubleFree,
  kOpFreeInterior,
  kOpFreeOtherCpuCopy,
  kOpFreeInChunk,
  kOpFreeForeign,
  kOpFreeNull,
  kOpWrite,
  kOpVerify,
  kOpSetPresent,
  kOpSetAbsent,
  kOpOnline,
  kOpOffline,
  kOpMibAdd,
  kOpMibFold,
  kOpU64MibAdd,
  kOpU64MibFold,
  kOpArmFault,
  kOpRecreateMibs,
  kOpRescan,
  kOpAt,
  kNumOps,
};

const char* OpName(int op) {
  static const char* const kNames[] = {
      "Allocate",     "AllocateTyped", "Free",       "DoubleFree",
      "FreeInterior", "FreeOtherCpuCopy", "FreeInChunk", "FreeForeign",
      "FreeNull",     "Write",         "Verify",     "SetPresent",
      "SetAbsent",    "Online",        "Offline",    "MibAdd",
      "MibFold",      "U64MibAdd",     "U64MibFold", "ArmFault",
      "RecreateMibs", "Rescan",        "At",
  };
  static_assert(sizeof(kNames) / sizeof(kNames[0]) == kNumOps,
                "one name per op");
  return op >= 0 && op < kNumOps ? kNames[op] : "setup/teardown";
}

class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  bool done() const { return pos_ >= size_; }
  uint8_t U8() { return pos_ < size_ ? data_[pos_++] : 0; }
  uint16_t U16() {
    const uint16_t lo = U8();
    return static_cast<uint16_t>(lo | (U8() << 8));
  }
  uint32_t U32() {
    const uint32_t lo = U16();
    return lo | (static_cast<uint32_t>(U16()) << 16);
  }
  uint64_t U64() {
    const uint64_t lo = U32();
    return lo | (static_cast<uint64_t>(U32()) << 32);
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

uint64_t Mix(uint64_t x) {  // splitmix64's finalizer
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Byte i of the contents described by stamp `stamp` (0 = all zero).
inline uint8_t StampByte(uint32_t stamp, size_t i) {
  if (stamp == 0) return 0;
  const uint64_t w = Mix((static_cast<uint64_t>(stamp) << 32) ^ (i / 8));
  return static_cast<uint8_t>(w >> (8 * (i % 8)));
}

bool IsPowerOfTwo(size_t v) { return v != 0 && (v & (v - 1)) == 0; }
size_t RoundUp(size_t v, size_t to) { return (v + to - 1) / to * to; }

std::string Code(const Status& s) { return StatusCodeName(s.code()); }
std::string Code(StatusCode c) { return StatusCodeName(c); }

std::string Hex(uintptr_t v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "0x%" PRIxPTR, v);
  return buf;
}

// Interposed between the allocator and the default (mmap) source: records
// every chunk, checks the allocator's calls, and injects armed failures.
class FaultSource final : public MemorySource {
 public:
  struct Mapping {
    uintptr_t base;
    size_t bytes;
  };

  FaultSource(size_t unit, size_t chunk_bytes)
      : unit_(unit), chunk_bytes_(chunk_bytes) {}

  StatusOr<void*> Map(size_t bytes) override {
    ++map_calls;
    if (bytes != chunk_bytes_) {
      Violation("Map(" + std::to_string(bytes) + "), chunk is " +
                std::to_string(chunk_bytes_));
    }
    if (fail_map > 0) {
      --fail_map;
      ++map_failures;
      return ResourceExhaustedError("injected Map failure");
    }
    StatusOr<void*> p = DefaultMemorySource()->Map(bytes);
    if (!p.ok()) {
      ++map_failures;  // the environment ran out of address space
      return p;
    }
    const uintptr_t base = reinterpret_cast<uintptr_t>(*p);
    if (base % static_cast<uintptr_t>(sysconf(_SC_PAGESIZE)) != 0) {
      Violation("mmap returned an unaligned address");
    }
    chunks.push_back(Mapping{base, bytes});
    return p;
  }

  Status Unmap(void* addr, size_t bytes) override {
    const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
    for (size_t i = 0; i < chunks.size(); ++i) {
      if (chunks[i].base == a && chunks[i].bytes == bytes) {
        chunks.erase(chunks.begin() + static_cast<std::ptrdiff_t>(i));
        ++unmaps;
        return DefaultMemorySource()->Unmap(addr, bytes);
      }
    }
    Violation("Unmap(" + Hex(a) + ", " + std::to_string(bytes) +
              ") of memory that is not a mapped chunk");
    return InternalError("unknown chunk");
  }

  Status Commit(void* addr, size_t bytes) override {
    ++commit_calls;
    CheckUnit("Commit", addr, bytes);
    if (fail_commit > 0) {
      --fail_commit;
      return ResourceExhaustedError("injected Commit failure");
    }
    return Status::Ok();
  }

  Status Decommit(void* addr, size_t bytes) override {
    ++decommit_calls;
    CheckUnit("Decommit", addr, bytes);
    if (fail_decommit > 0) {
      --fail_decommit;
      return InternalError("injected Decommit failure");
    }
    return DefaultMemorySource()->Decommit(addr, bytes);
  }

  // Which chunk holds `a` (-1 if none).
  int ChunkOf(uintptr_t a) const {
    for (size_t i = 0; i < chunks.size(); ++i) {
      if (a >= chunks[i].base && a - chunks[i].base < chunks[i].bytes) {
        return static_cast<int>(i);
      }
    }
    return -1;
  }

  std::vector<Mapping> chunks;  // mapped and not unmapped, in map order
  uint64_t map_calls = 0;
  uint64_t map_failures = 0;
  uint64_t commit_calls = 0;
  uint64_t decommit_calls = 0;
  uint64_t unmaps = 0;
  int fail_map = 0;
  int fail_commit = 0;
  int fail_decommit = 0;
  std::string violation;  // first protocol violation seen, if any

 private:
  void Violation(const std::string& what) {
    if (violation.empty()) violation = "MemorySource: " + what;
  }
  void CheckUnit(const char* op, void* addr, size_t bytes) {
    const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
    const int c = ChunkOf(a);
    if (bytes != unit_ || c < 0 || (a - chunks[c].base) % unit_ != 0) {
      Violation(std::string(op) + "(" + Hex(a) + ", " +
                std::to_string(bytes) + ") is not one unit of a chunk");
    }
  }

  const size_t unit_;
  const size_t chunk_bytes_;
};

struct Obj {
  uintptr_t addr = 0;
  size_t requested = 0;
  size_t placed = 0;
  bool pinned = false;  // a MIB's blocks: never freed by an op
  std::vector<uint32_t> stamp;  // per possible CPU, 0 = zeros
  PerCpuPtr<void> ptr;  // from Allocate(size, align); null for typed ones
};

struct CounterModel {
  // slot[cpu][item], acc[item], overflow[item]; totals are mod 2^64.
  std::vector<std::array<uint64_t, kMibItems>> slot;
  std::array<uint64_t, kMibItems> acc{};
  std::array<uint64_t, kMibItems> overflow{};
  std::array<uint64_t, kMibItems> Totals() const {
    std::array<uint64_t, kMibItems> t{};
    for (size_t i = 0; i < kMibItems; ++i) {
      t[i] = acc[i] + overflow[i];
      for (const auto& s : slot) t[i] += s[i];
    }
    return t;
  }
  void Reset(int cpus) {
    slot.assign(static_cast<size_t>(cpus), {});
    acc.fill(0);
    overflow.fill(0);
  }
  void Fold(int cpu) {
    for (size_t i = 0; i < kMibItems; ++i) {
      acc[i] += slot[static_cast<size_t>(cpu)][i];
      slot[static_cast<size_t>(cpu)][i] = 0;
    }
  }
};

std::string ArrayString(const std::array<uint64_t, kMibItems>& a) {
  std::string s = "[";
  for (size_t i = 0; i < kMibItems; ++i) {
    if (i) s += ",";
    s += std::to_string(a[i]);
  }
  return s + "]";
}

class Harness {
 public:
  Harness(const uint8_t* data, size_t size, const HarnessOptions& options)
      : in_(data, size), options_(options) {}

  Status Run();

 private:
  // Records the first discrepancy; every step returns early afterwards.
  void Fail(int line, const std::string& what) {
    if (!failure_.empty()) return;
    failure_ = "op #" + std::to_string(op_index_) + " (" + OpName(op_) +
               ", harness line " + std::to_string(line) + "): " + what;
  }
  bool failed() const { return !failure_.empty(); }
  void Trace(const std::string& s) {
    if (options_.trace) {
      std::fprintf(stderr, "[%zu] %s\n", op_index_, s.c_str());
    }
  }

  void Setup();
  void Step();
  void Teardown();

  // Ops.
  void DoAllocate();
  void DoAllocateTyped();
  void DoFreeAddress(uintptr_t a, const char* what);
  void DoWrite();
  void DoVerify();
  void DoHotplug(int op);
  void DoMibAdd();
  void DoMibFold();
  void DoU64MibAdd();
  void DoU64MibFold();
  void DoArmFault();
  void DoRecreateMibs();
  void DoAt();

  // Helpers.
  int DecodeCpu();
  size_t DecodeSize();
  size_t DecodeAlign();
  Obj* PickObject(bool allow_pinned);
  struct Before {
    size_t chunks;
    uint64_t map_calls;
    uint64_t map_failures;
  };
  Before Snap() const {
    return Before{src_->chunks.size(), src_->map_calls, src_->map_failures};
  }
  // Checks an allocation of `size` bytes at type alignment `type_align`
  // (the request was valid) and adds it to the model if it succeeded.
  struct Got {
    uintptr_t base = 0;
    size_t stride = 0;
    int num_cpus = 0;
  };
  template <typename T>
  static Got GotOf(const StatusOr<PerCpuPtr<T>>& p) {
    if (!p.ok()) return Got{};
    return Got{p->base_address(), p->stride(), p->num_cpus()};
  }
  void CheckAllocation(const std::string& what, size_t size, size_t type_align,
                       const Status& status, const Got& got,
                       const Before& before, bool pinned);
  void CheckNothingChanged(const std::string& what, const Before& before);
  StatusCode ExpectedFree(uintptr_t a) const;
  void VerifyObject(const Obj& o, int only_cpu);
  void CheckTopology();
  void CheckStats();
  void CheckMibs();
  bool CreateMib();
  bool CreateU64Mib();
  void DestroyMibs();

  Reader in_;
  HarnessOptions options_;
  std::string failure_;
  size_t op_index_ = 0;
  int op_ = -1;

  size_t page_ = 4096;
  int possible_ = 1;
  size_t unit_ = 0;
  size_t chunk_bytes_ = 0;
  size_t max_total_ = 0;

  std::shared_ptr<Topology> topo_;
  std::unique_ptr<FaultSource> src_;
  std::shared_ptr<PerCpuAllocator> alloc_;
  std::unique_ptr<Mib> mib_;
  std::unique_ptr<U64Mib> u64_;

  // Model.
  std::vector<bool> present_;
  std::vector<bool> online_;
  uint64_t events_ = 0;
  std::map<uintptr_t, Obj> live_;
  std::vector<uintptr_t> freed_;
  size_t freed_next_ = 0;
  uint64_t allocations_ = 0;
  uint64_t frees_ = 0;
  size_t requested_ = 0;
  size_t in_use_ = 0;
  uint32_t next_stamp_ = 0;
  int fail_map_ = 0;
  int fail_commit_ = 0;
  int fail_decommit_ = 0;
  CounterModel mib_model_;
  CounterModel u64_model_;
  uintptr_t mib_addr_ = 0;
  uintptr_t u64_addr_ = 0;
};

#define FUZZ_CHECK(cond, msg)        \
  do {                               \
    if (!(cond)) {                   \
      Fail(__LINE__, (msg));         \
      return;                        \
    }                                \
  } while (0)
#define FUZZ_CHECK_BOOL(cond, msg)   \
  do {                               \
    if (!(cond)) {                   \
      Fail(__LINE__, (msg));         \
      return false;                  \
    }                                \
  } while (0)

// --- decoding ---------------------------------------------------------------

int Harness::DecodeCpu() {
  const uint8_t b = in_.U8();
  if (b < 240) return static_cast<int>(b % (possible_ + 2)) - 1;  // -1..possible
  switch (b) {
    case 240: return possible_ + 1;
    case 241: return possible_ + 64;
    case 242: return std::numeric_limits<int>::max();
    case 243: return std::numeric_limits<int>::min();
    case 244: return kMaxCpus;
    case 245: return kMaxCpus - 1;
    case 246: return -2;
    default: return 63 + (b - 247);  // 63..71: around the mask word edge
  }
}

size_t Harness::DecodeSize() {
  const uint8_t mode = in_.U8();
  const uint16_t v = in_.U16();
  switch (mode % 12) {
    case 0: return 0;
    case 1: case 2: case 3: return 1 + v % 64;      // small classes
    case 4: return 1 + v % 256;
    case 5: case 6: return 1 + v % unit_;           // anything that fits
    case 7: return unit_ - v % 64;                  // near a whole unit
    case 8: return unit_ + 1 + v % 64;              // over the unit
    case 9: return (v % 8 + 1) * 8;                 // granule multiples
    case 10: return size_t{1} << (v % 13);          // powers of two
    default:
      switch (v % 5) {
        case 0: return std::numeric_limits<size_t>::max();
        case 1: return std::numeric_limits<size_t>::max() / 2 + 1;
        case 2: return unit_ * 2;
        case 3: return size_t{1} << 31;
        default: return unit_;
      }
  }
}

size_t Harness::DecodeAlign() {
  static const size_t kOdd[] = {3, 5, 6, 12, 24, 48, 96, 100, 4095, 4097};
  const uint8_t b = in_.U8();
  const unsigned hi = b >> 3;
  switch (b % 8) {
    case 0: return 0;
    case 1: case 2: case 3: return size_t{1} << (hi % 13);  // 1..4096
    case 4: return page_ << (1 + hi % 3);                    // over a page
    case 5:
      if (hi % 11 == 10) return page_ + page_ / 2;
      return kOdd[hi % 10];                                  // not 2^k
    case 6:
      return hi % 2 ? std::numeric_limits<size_t>::max()
                    : size_t{1} << (sizeof(size_t) * 8 - 1);
    default: return page_;
  }
}

Obj* Harness::PickObject(bool allow_pinned) {
  const uint16_t k = in_.U16();
  if (live_.empty()) return nullptr;
  auto it = live_.begin();
  std::advance(it, k % live_.size());
  if (allow_pinned) return &it->second;
  for (size_t n = 0; n < live_.size(); ++n) {
    if (!it->second.pinned) return &it->second;
    if (++it == live_.end()) it = live_.begin();
  }
  return nullptr;
}

// --- checks -----------------------------------------------------------------

void Harness::VerifyObject(const Obj& o, int only_cpu) {
  for (int cpu = 0; cpu < possible_; ++cpu) {
    if (only_cpu >= 0 && cpu != only_cpu) continue;
    if (!present_[static_cast<size_t>(cpu)]) continue;  // absent: released
    const uint8_t* p =
        reinterpret_cast<const uint8_t*>(o.addr + static_cast<size_t>(cpu) * unit_);
    const uint32_t stamp = o.stamp[static_cast<size_t>(cpu)];
    for (size_t i = 0; i < o.placed; ++i) {
      const uint8_t want = i < o.requested ? StampByte(stamp, i) : 0;
      FUZZ_CHECK(p[i] == want,
                 "object " + Hex(o.addr) + " (" + std::to_string(o.requested) +
                     " bytes) on CPU " + std::to_string(cpu) + ": byte " +
                     std::to_string(i) + " is " + std::to_string(p[i]) +
                     ", model says " + std::to_string(want) + " (stamp " +
                     std::to_string(stamp) + ")");
    }
  }
}

void Harness::CheckTopology() {
  for (int cpu = 0; cpu < possible_; ++cpu) {
    FUZZ_CHECK(topo_->IsPresent(cpu) == present_[static_cast<size_t>(cpu)],
               "CPU " + std::to_string(cpu) + " present mask disagrees");
    FUZZ_CHECK(topo_->IsOnline(cpu) == online_[static_cast<size_t>(cpu)],
               "CPU " + std::to_string(cpu) + " online mask disagrees");
  }
  FUZZ_CHECK(topo_->events_fired() == events_,
             "events_fired " + std::to_string(topo_->events_fired()) +
                 ", model " + std::to_string(events_));
  FUZZ_CHECK(src_->fail_map == fail_map_ && src_->fail_commit == fail_commit_ &&
                 src_->fail_decommit == fail_decommit_,
             "armed faults consumed differently than the model predicts "
             "(map/commit/decommit left: " +
                 std::to_string(src_->fail_map) + "/" +
                 std::to_string(src_->fail_commit) + "/" +
                 std::to_string(src_->fail_decommit) + ", model " +
                 std::to_string(fail_map_) + "/" + std::to_string(fail_commit_) +
                 "/" + std::to_string(fail_decommit_) + ")");
  FUZZ_CHECK(src_->violation.empty(), src_->violation);
}

void Harness::CheckStats() {
  const PerCpuAllocatorStats s = alloc_->stats();
  size_t present = 0;
  for (bool b : present_) present += b;
  const size_t chunks = src_->chunks.size();
  FUZZ_CHECK(s.unit_size == unit_ && s.num_possible == possible_,
             "stats unit_size/num_possible");
  FUZZ_CHECK(s.num_present == static_cast<int>(present),
             "stats num_present " + std::to_string(s.num_present) +
                 ", model " + std::to_string(present));
  FUZZ_CHECK(s.chunks == chunks, "stats chunks " + std::to_string(s.chunks) +
                                     ", memory source mapped " +
                                     std::to_string(chunks));
  FUZZ_CHECK(s.bytes_reserved == chunks * chunk_bytes_, "stats bytes_reserved");
  FUZZ_CHECK(s.bytes_reserved <= max_total_,
             "bytes_reserved " + std::to_string(s.bytes_reserved) +
                 " exceeds max_total_bytes " + std::to_string(max_total_));
  FUZZ_CHECK(s.bytes_committed == chunks * unit_ * present,
             "stats bytes_committed");
  FUZZ_CHECK(s.live_objects == live_.size(),
             "stats live_objects " + std::to_string(s.live_objects) +
                 ", model " + std::to_string(live_.size()));
  FUZZ_CHECK(s.allocations == allocations_ && s.frees == frees_,
             "stats allocations/frees " + std::to_string(s.allocations) + "/" +
                 std::to_string(s.frees) + ", model " +
                 std::to_string(allocations_) + "/" + std::to_string(frees_));
  FUZZ_CHECK(s.bytes_requested_per_cpu == requested_,
             "stats bytes_requested_per_cpu " +
                 std::to_string(s.bytes_requested_per_cpu) + ", model " +
                 std::to_string(requested_));
  FUZZ_CHECK(s.bytes_in_use_per_cpu == in_use_,
             "stats bytes_in_use_per_cpu " +
                 std::to_string(s.bytes_in_use_per_cpu) + ", model " +
                 std::to_string(in_use_));
  FUZZ_CHECK(s.slab_bytes_per_cpu % 512 == 0 &&
                 s.slab_bytes_per_cpu <= chunks * unit_,
             "stats slab_bytes_per_cpu " + std::to_string(s.slab_bytes_per_cpu));
  FUZZ_CHECK(s.bytes_in_use_per_cpu <= chunks * unit_,
             "more bytes in use than the chunks hold");
}

void Harness::CheckMibs() {
  if (mib_ != nullptr) {
    const auto want = mib_model_.Totals();
    std::array<uint64_t, kMibItems> got{};
    mib_->Snapshot(got);
    FUZZ_CHECK(got == want, "LcoreStats::Snapshot " + ArrayString(got) +
                                ", model " + ArrayString(want));
    got.fill(0);
    mib_->SnapshotPresent(got);
    FUZZ_CHECK(got == want, "LcoreStats::SnapshotPresent " + ArrayString(got) +
                                ", model " + ArrayString(want));
    std::array<uint64_t, kMibItems> into{};
    into.fill(1);
    mib_->FoldInto(into.data());
    for (size_t i = 0; i < kMibItems; ++i) {
      FUZZ_CHECK(mib_->Read(i) == want[i],
                 "LcoreStats::Read(" + std::to_string(i) + ")");
      FUZZ_CHECK(into[i] == want[i] + 1, "LcoreStats::FoldInto");
      FUZZ_CHECK(mib_->accumulated(i) == mib_model_.acc[i],
                 "LcoreStats::accumulated(" + std::to_string(i) + ") " +
                     std::to_string(mib_->accumulated(i)) + ", model " +
                     std::to_string(mib_model_.acc[i]));
    }
    for (int cpu = 0; cpu < possible_; ++cpu) {
      if (!present_[static_cast<size_t>(cpu)]) continue;
      const auto& b = *mib_->blocks().on(cpu);
      for (size_t i = 0; i < kMibItems; ++i) {
        FUZZ_CHECK(b.items[i].Read() == mib_model_.slot[static_cast<size_t>(cpu)][i],
                   "LcoreStats block of CPU " + std::to_string(cpu) + " item " +
                       std::to_string(i) + " is " +
                       std::to_string(b.items[i].Read()) + ", model " +
                       std::to_string(mib_model_.slot[static_cast<size_t>(cpu)][i]));
      }
    }
  }
  if (u64_ != nullptr) {
    const auto want = u64_model_.Totals();
    std::array<uint64_t, kMibItems> got{};
    u64_->FoldAll(got);
    FUZZ_CHECK(got == want, "PerCpuU64Mib::FoldAll " + ArrayString(got) +
                                ", model " + ArrayString(want));
    for (size_t i = 0; i < kMibItems; ++i) {
      FUZZ_CHECK(u64_->Read(i) == want[i],
                 "PerCpuU64Mib::Read(" + std::to_string(i) + ")");
      FUZZ_CHECK(u64_->overflow(i) == u64_model_.overflow[i],
                 "PerCpuU64Mib::overflow(" + std::to_string(i) + ")");
      StatusOr<uint64_t> r = u64_->ReadChecked(i);
      FUZZ_CHECK(r.ok() && *r == want[i], "PerCpuU64Mib::ReadChecked");
    }
    FUZZ_CHECK(u64_->ReadChecked(kMibItems).status().code() ==
                   StatusCode::kOutOfRange,
               "PerCpuU64Mib::ReadChecked(N) is not OutOfRange");
    for (int cpu = 0; cpu < possible_; ++cpu) {
      if (!present_[static_cast<size_t>(cpu)]) continue;
      for (size_t i = 0; i < kMibItems; ++i) {
        StatusOr<uint64_t> v = u64_->OnCpu(cpu, i);
        FUZZ_CHECK(v.ok() && *v == u64_model_.slot[static_cast<size_t>(cpu)][i],
                   "PerCpuU64Mib::OnCpu(" + std::to_string(cpu) + ", " +
                       std::to_string(i) + ") is " +
                       (v.ok() ? std::to_string(*v) : v.status().ToString()) +
                       ", model " +
                       std::to_string(u64_model_.slot[static_cast<size_t>(cpu)][i]));
      }
    }
  }
}

void Harness::CheckNothingChanged(const std::string& what,
                                  const Before& before) {
  FUZZ_CHECK(src_->map_calls == before.map_calls &&
                 src_->chunks.size() == before.chunks,
             what + ": a refused request mapped memory");
}

void Harness::CheckAllocation(const std::string& what, size_t size,
                              size_t type_align, const Status& status,
                              const Got& got, const Before& before,
                              bool pinned) {
  const uint64_t maps = src_->map_calls - before.map_calls;
  const uint64_t map_failures = src_->map_failures - before.map_failures;
  const size_t chunks = src_->chunks.size();
  FUZZ_CHECK(maps <= 1, what + ": " + std::to_string(maps) +
                            " Map calls for one allocation");
  // Arms are consumed by Map calls only.
  if (maps == 1 && fail_map_ > 0) --fail_map_;
  const bool limit_hit =
      chunk_bytes_ > max_total_ || before.chunks * chunk_bytes_ > max_total_ - chunk_bytes_;
  if (!status.ok()) {
    FUZZ_CHECK(status.code() == StatusCode::kResourceExhausted,
               what + ": valid request failed with " + status.ToString());
    FUZZ_CHECK(chunks == before.chunks,
               what + ": a failed allocation kept a new chunk");
    if (maps == 1) {
      FUZZ_CHECK(map_failures == 1,
                 what + ": ResourceExhausted although Map succeeded");
    } else {
      FUZZ_CHECK(limit_hit, what + ": ResourceExhausted without a Map call "
                                   "while max_total_bytes allows a chunk (" +
                                   status.ToString() + ")");
    }
    // No false exhaustion: with no slabs carved, a chunk holding no live
    // object is one free extent and must take any valid request.
    if (alloc_->stats().slab_bytes_per_cpu == 0 && before.chunks > 0) {
      std::vector<bool> used(before.chunks, false);
      for (const auto& kv : live_) {
        const int c = src_->ChunkOf(kv.first);
        if (c >= 0) used[static_cast<size_t>(c)] = true;
      }
      for (size_t c = 0; c < before.chunks; ++c) {
        FUZZ_CHECK(used[c], what + ": ResourceExhausted although chunk " +
                                std::to_string(c) + " is empty and has no slabs");
      }
    }
    return;
  }
  FUZZ_CHECK(got.base != 0, what + ": OK but null");
  if (maps == 1) {
    FUZZ_CHECK(map_failures == 0 && chunks == before.chunks + 1,
               what + ": Map called but no new chunk recorded");
    FUZZ_CHECK(!limit_hit, what + ": mapped a chunk beyond max_total_bytes");
  } else {
    FUZZ_CHECK(chunks == before.chunks, what + ": chunk count changed");
  }
  const uintptr_t a = got.base;
  FUZZ_CHECK(got.stride == unit_ && got.num_cpus == possible_,
             what + ": PerCpuPtr stride/num_cpus");
  const size_t eff = DeriveAlignment(size, type_align);
  const size_t rounded = RoundUp(size, kMinAllocGranule);
  const size_t cls = RoundUp(rounded, eff);
  // Small objects take their class's slot; large ones are placed at
  // cache-line granularity (docs/percpu_alloc.md, section 3).
  const size_t placed =
      cls <= kCacheLineSize ? cls : RoundUp(rounded, kCacheLineSize);
  FUZZ_CHECK(a % eff == 0, what + ": " + Hex(a) + " is not " +
                               std::to_string(eff) + "-aligned");
  FUZZ_CHECK(placed > kCacheLineSize || a % kCacheLineSize + placed <= kCacheLineSize,
             what + ": small object " + Hex(a) + " crosses a cache line");
  FUZZ_CHECK(cls <= kCacheLineSize || a % kCacheLineSize == 0,
             what + ": large object " + Hex(a) + " is not line-aligned");
  const int c = src_->ChunkOf(a);
  FUZZ_CHECK(c >= 0, what + ": " + Hex(a) + " is in no chunk");
  const uintptr_t base = src_->chunks[static_cast<size_t>(c)].base;
  FUZZ_CHECK(a - base + placed <= unit_,
             what + ": " + Hex(a) + " + " + std::to_string(placed) +
                 " leaves CPU 0's unit");
  FUZZ_CHECK(live_.count(a) == 0, what + ": " + Hex(a) + " is already live");
  auto next = live_.lower_bound(a);
  if (next != live_.end()) {
    FUZZ_CHECK(a + placed <= next->first,
               what + ": " + Hex(a) + " overlaps live " + Hex(next->first));
  }
  if (next != live_.begin()) {
    const auto prev = std::prev(next);
    FUZZ_CHECK(prev->first + prev->second.placed <= a,
               what + ": " + Hex(a) + " overlaps live " + Hex(prev->first));
  }
  Obj o;
  o.addr = a;
  o.requested = size;
  o.placed = placed;
  o.pinned = pinned;
  o.stamp.assign(static_cast<size_t>(possible_), 0);
  VerifyObject(o, -1);  // fresh: zero on every present CPU
  if (failed()) return;
  live_.emplace(a, std::move(o));
  ++allocations_;
  requested_ += size;
  in_use_ += placed;
}

StatusCode Harness::ExpectedFree(uintptr_t a) const {
  if (a == 0) return StatusCode::kOk;
  if (live_.count(a) != 0) return StatusCode::kOk;
  if (src_->ChunkOf(a) >= 0) return StatusCode::kFailedPrecondition;
  return StatusCode::kNotFound;
}

// --- ops ----------------------------------------------------------------------

void Harness::DoAllocate() {
  const size_t size = DecodeSize();
  const size_t align = DecodeAlign();
  const std::string what = "Allocate(" + std::to_string(size) + ", " +
                           std::to_string(align) + ")";
  if (live_.size() >= kMaxLive) return;
  const size_t a = align == 0 ? 1 : align;
  const bool valid =
      size != 0 && size <= unit_ && IsPowerOfTwo(a) && a <= page_;
  const Before before = Snap();
  StatusOr<PerCpuPtr<void>> p = alloc_->Allocate(size, align);
  Trace(what + " -> " + (p.ok() ? Hex(p->base_address()) : p.status().ToString()));
  if (!valid) {
    FUZZ_CHECK(p.status().code() == StatusCode::kInvalidArgument,
               what + " returned " + Code(p.status()) + ", want InvalidArgument");
    CheckNothingChanged(what, before);
    return;
  }
  CheckAllocation(what, size, a, p.status(), GotOf(p), before, false);
  if (!failed() && p.ok()) live_[p->base_address()].ptr = *p;
}


void Harness::DoAllocateTyped() {
  struct Line {
    uint64_t v[8];
  };
  struct alignas(32) Pair32 {
    uint64_t a, b;
  };
  const uint8_t kind = in_.U8();
  const uint8_t nmode = in_.U8();
  const uint16_t nv = in_.U16();
  if (live_.size() >= kMaxLive) return;
  size_t size = 0;
  size_t align = 0;
  bool valid = true;
  Status status;
  Got got;
  std::string what;
  const Before before = Snap();
  const auto take = [&](const auto& r) {
    status = r.ok() ? Status::Ok() : r.status();
    got = GotOf(r);
  };
  switch (kind % 5) {
    case 0:
      what = "Allocate<uint64_t>";
      size = sizeof(uint64_t);
      align = alignof(uint64_t);
      take(alloc_->Allocate<uint64_t>());
      break;
    case 1:
      what = "Allocate<uint8_t>";
      size = 1;
      align = 1;
      take(alloc_->Allocate<uint8_t>());
      break;
    case 2:
      what = "Allocate<Line>";
      size = sizeof(Line);
      align = alignof(Line);
      take(alloc_->Allocate<Line>());
      break;
    case 3:
      what = "Allocate<Pair32>";
      size = sizeof(Pair32);
      align = alignof(Pair32);
      take(alloc_->Allocate<Pair32>());
      break;
    default: {
      constexpr size_t kMax = std::numeric_limits<size_t>::max();
      size_t n = 0;
      switch (nmode % 5) {
        case 0: n = 0; break;
        case 1: n = 1 + nv % 16; break;
        case 2: n = 1 + nv % (unit_ / 4 + 8); break;
        case 3: n = kMax / sizeof(uint32_t) + 1 + nv % 3; break;
        default: n = kMax - nv % 3; break;
      }
      what = "AllocateArray<uint32_t>(" + std::to_string(n) + ")";
      align = alignof(uint32_t);
      if (n > kMax / sizeof(uint32_t)) {
        valid = false;
      } else {
        size = n * sizeof(uint32_t);
      }
      take(alloc_->AllocateArray<uint32_t>(n));
      break;
    }
  }
  valid = valid && size != 0 && size <= unit_;
  Trace(what + " -> " + (status.ok() ? Hex(got.base) : status.ToString()));
  if (!valid) {
    FUZZ_CHECK(status.code() == StatusCode::kInvalidArgument,
               what + " returned " + Code(status) + ", want InvalidArgument");
    CheckNothingChanged(what, before);
    return;
  }
  CheckAllocation(what, size, align, status, got, before, false);
}

void Harness::DoFreeAddress(uintptr_t a, const char* what) {
  const auto it = live_.find(a);
  if (it != live_.end() && it->second.pinned) return;  // a MIB's blocks
  const StatusCode want = ExpectedFree(a);
  const PerCpuAllocatorStats before = alloc_->stats();
  Status s;
  if (it != live_.end() && it->second.ptr) {
    s = alloc_->Free(it->second.ptr);  // the typed entry point
  } else {
    s = alloc_->FreeAddress(a);
  }
  Trace(std::string(what) + "(" + Hex(a) + ") -> " + s.ToString());
  FUZZ_CHECK(s.code() == want, std::string(what) + "(" + Hex(a) + ") returned " +
                                   s.ToString() + ", want " + Code(want));
  if (a == 0 || want != StatusCode::kOk) {
    const PerCpuAllocatorStats after = alloc_->stats();
    FUZZ_CHECK(after.frees == before.frees &&
                   after.live_objects == before.live_objects,
               std::string(what) + ": a refused free changed the statistics");
    return;
  }
  const Obj& o = it->second;
  ++frees_;
  requested_ -= o.requested;
  in_use_ -= o.placed;
  if (freed_.size() < kFreedHistory) {
    freed_.push_back(a);
  } else {
    freed_[freed_next_++ % kFreedHistory] = a;
  }
  live_.erase(it);
}

void FillStamp(uint8_t* p, size_t n, uint32_t stamp) {
  for (size_t w = 0; w * 8 < n; ++w) {
    const uint64_t x = Mix((static_cast<uint64_t>(stamp) << 32) ^ w);
    for (size_t b = 0; b < 8 && w * 8 + b < n; ++b) {
      p[w * 8 + b] = static_cast<uint8_t>(x >> (8 * b));
    }
  }
}

void Harness::DoWrite() {
  Obj* o = PickObject(false);
  const uint8_t mode = in_.U8();
  const uint8_t c = in_.U8();
  if (o == nullptr) return;
  if (++next_stamp_ == 0) next_stamp_ = 1;
  const uint32_t stamp = next_stamp_;
  int wrote = 0;
  for (int cpu = 0; cpu < possible_; ++cpu) {
    if (mode % 2 == 0 && cpu != c % possible_) continue;
    // Writing an absent CPU's copy is a contract violation: its memory is
    // released. Skip (the model never does it).
    if (!present_[static_cast<size_t>(cpu)]) continue;
    FillStamp(reinterpret_cast<uint8_t*>(o->addr + static_cast<size_t>(cpu) * unit_),
              o->requested, stamp);
    o->stamp[static_cast<size_t>(cpu)] = stamp;
    ++wrote;
  }
  Trace("Write(" + Hex(o->addr) + ", stamp " + std::to_string(stamp) + ") on " +
        std::to_string(wrote) + " CPU(s)");
}

void Harness::DoVerify() {
  const uint8_t mode = in_.U8();
  if (mode % 4 == 0 || live_.empty()) {
    for (const auto& kv : live_) {
      if (!kv.second.pinned) VerifyObject(kv.second, -1);
      if (failed()) return;
    }
    CheckMibs();
    return;
  }
  Obj* o = PickObject(false);
  if (o != nullptr) VerifyObject(*o, -1);
}

void Harness::DoHotplug(int op) {
  const int cpu = DecodeCpu();
  Status s;
  const char* name = OpName(op);
  switch (op) {
    case kOpSetPresent: s = topo_->SetPresent(cpu); break;
    case kOpSetAbsent: s = topo_->SetAbsent(cpu); break;
    case kOpOnline: s = topo_->Online(cpu); break;
    default: s = topo_->Offline(cpu); break;
  }
  Trace(std::string(name) + "(" + std::to_string(cpu) + ") -> " + s.ToString());
  StatusCode want = StatusCode::kOk;
  bool came_present = false;
  const size_t chunks = src_->chunks.size();
  if (cpu < 0 || cpu >= possible_) {
    want = StatusCode::kOutOfRange;
  } else {
    const size_t c = static_cast<size_t>(cpu);
    switch (op) {
      case kOpSetPresent:
        if (!present_[c]) {
          // The allocator's bring-up callback, per chunk: Commit the unit
          // (it is not discarded: it was released, or zeroed by hand if the
          // release failed, at kAbsent). Any failure vetoes the hot-add.
          for (size_t k = 0; k < chunks; ++k) {
            if (fail_commit_ > 0) {
              --fail_commit_;
              if (want == StatusCode::kOk) want = StatusCode::kResourceExhausted;
            }
          }
          if (want == StatusCode::kOk) {
            present_[c] = true;
            ++events_;
            came_present = true;
          }
        }
        break;
      case kOpSetAbsent:
        if (present_[c]) {
          if (online_[c]) {
            want = StatusCode::kFailedPrecondition;
          } else {
            // Teardown cannot be vetoed; Decommit failures are reported.
            present_[c] = false;
            ++events_;
            if (u64_ != nullptr) u64_model_.Fold(cpu);
            for (auto& kv : live_) kv.second.stamp[c] = 0;
            for (size_t k = 0; k < chunks; ++k) {
              if (fail_decommit_ > 0) {
                --fail_decommit_;
                if (want == StatusCode::kOk) want = StatusCode::kInternal;
              }
            }
          }
        }
        break;
      case kOpOnline:
        if (!online_[c]) {
          if (!present_[c]) {
            want = StatusCode::kFailedPrecondition;
          } else {
            online_[c] = true;
            ++events_;
          }
        }
        break;
      default: {
        if (online_[c]) {
          int online = 0;
          for (bool b : online_) online += b;
          if (online <= 1) {
            want = StatusCode::kFailedPrecondition;
          } else {
            online_[c] = false;
            ++events_;
            if (mib_ != nullptr) mib_model_.Fold(cpu);
            if (u64_ != nullptr) u64_model_.Fold(cpu);
          }
        }
        break;
      }
    }
  }
  FUZZ_CHECK(s.code() == want, std::string(name) + "(" + std::to_string(cpu) +
                                   ") returned " + s.ToString() + ", want " +
                                   Code(want));
  CheckTopology();
  if (failed()) return;
  if (came_present) {
    // A hot-added CPU's copies are zero (released or zeroed at kAbsent).
    for (const auto& kv : live_) {
      if (!kv.second.pinned) VerifyObject(kv.second, cpu);
      if (failed()) return;
    }
  }
  CheckMibs();
}

uint64_t DecodeDelta(Reader& in) {
  const uint8_t mode = in.U8();
  switch (mode % 5) {
    case 0: return 1;
    case 1: return in.U8();
    case 2: return in.U64();
    case 3: return std::numeric_limits<uint64_t>::max() - in.U8();  // wraps
    default: return uint64_t{1} << (in.U8() % 64);
  }
}

void Harness::DoMibAdd() {
  const int cpu = DecodeCpu();
  const size_t item = in_.U8() % (kMibItems + 2);
  const uint64_t delta = DecodeDelta(in_);
  const bool checked = in_.U8() % 2 != 0;
  if (mib_ == nullptr) return;
  const bool valid_cpu = cpu >= 0 && cpu < possible_;
  const bool online = valid_cpu && online_[static_cast<size_t>(cpu)];
  if (!checked && online && item < kMibItems) {
    // The plain writer path: the CPU's only writer, CPU online.
    if (delta == 1) {
      mib_->Inc(cpu, item);
    } else {
      mib_->Add(cpu, item, delta);
    }
    mib_model_.slot[static_cast<size_t>(cpu)][item] += delta;
    Trace("LcoreStats::Add(" + std::to_string(cpu) + ", " +
          std::to_string(item) + ", " + std::to_string(delta) + ")");
    return;
  }
  const Status s = mib_->AddChecked(cpu, item, delta);
  Trace("LcoreStats::AddChecked(" + std::to_string(cpu) + ", " +
        std::to_string(item) + ", " + std::to_string(delta) + ") -> " +
        s.ToString());
  StatusCode want = StatusCode::kOk;
  if (!valid_cpu || item >= kMibItems) {
    want = StatusCode::kOutOfRange;
  } else if (!online) {
    want = StatusCode::kFailedPrecondition;
  }
  FUZZ_CHECK(s.code() == want, "LcoreStats::AddChecked(" + std::to_string(cpu) +
                                   ", " + std::to_string(item) + ") returned " +
                                   s.ToString() + ", want " + Code(want));
  if (want == StatusCode::kOk) {
    mib_model_.slot[static_cast<size_t>(cpu)][item] += delta;
  }
}

void Harness::DoU64MibAdd() {
  const int cpu = DecodeCpu();
  const size_t item = in_.U8() % (kMibItems + 2);
  const uint64_t delta = DecodeDelta(in_);
  if (u64_ == nullptr) return;
  const Status s = u64_->AddOnCpu(cpu, item, delta);
  Trace("PerCpuU64Mib::AddOnCpu(" + std::to_string(cpu) + ", " +
        std::to_string(item) + ", " + std::to_string(delta) + ") -> " +
        s.ToString());
  const bool valid_cpu = cpu >= 0 && cpu < possible_;
  const StatusCode want = valid_cpu && item < kMibItems
                              ? StatusCode::kOk
                              : StatusCode::kOutOfRange;
  FUZZ_CHECK(s.code() == want, "PerCpuU64Mib::AddOnCpu(" + std::to_string(cpu) +
                                   ", " + std::to_string(item) + ") returned " +
                                   s.ToString() + ", want " + Code(want));
  if (want != StatusCode::kOk) return;
  // A CPU that is not present has no memory: the add goes to overflow.
  if (present_[static_cast<size_t>(cpu)]) {
    u64_model_.slot[static_cast<size_t>(cpu)][item] += delta;
  } else {
    u64_model_.overflow[item] += delta;
  }
}

void Harness::DoArmFault() {
  const uint8_t kind = in_.U8();
  const int count = 1 + in_.U8() % 2;
  int* model = nullptr;
  int* source = nullptr;
  switch (kind % 3) {
    case 0: model = &fail_map_; source = &src_->fail_map; break;
    case 1: model = &fail_commit_; source = &src_->fail_commit; break;
    default: model = &fail_decommit_; source = &src_->fail_decommit; break;
  }
  if (*model + count > 4) return;
  *model += count;
  *source += count;
  Trace(std::string("ArmFault(") + (kind % 3 == 0 ? "Map" : kind % 3 == 1 ? "Commit" : "Decommit") +
        ", " + std::to_string(count) + ")");
}

bool Harness::CreateMib() {
  const Before before = Snap();
  StatusOr<std::unique_ptr<Mib>> r = Mib::Create(*topo_, *alloc_);
  Got got;
  if (r.ok()) {
    got = Got{(*r)->blocks().base_address(), (*r)->blocks().stride(),
              (*r)->blocks().num_cpus()};
  }
  Trace("LcoreStats::Create -> " +
        (r.ok() ? Hex(got.base) : r.status().ToString()));
  CheckAllocation("LcoreStats::Create", sizeof(Mib::Block), alignof(Mib::Block),
                  r.ok() ? Status::Ok() : r.status(), got, before, true);
  if (failed()) return false;
  if (r.ok()) {
    mib_ = std::move(*r);
    mib_addr_ = got.base;
    mib_model_.Reset(possible_);
  }
  return true;
}

bool Harness::CreateU64Mib() {
  const Before before = Snap();
  StatusOr<std::unique_ptr<U64Mib>> r = U64Mib::Create(*topo_, *alloc_);
  Got got;
  if (r.ok()) {
    got = Got{(*r)->slots().base_address(), (*r)->slots().stride(),
              (*r)->slots().num_cpus()};
  }
  Trace("PerCpuU64Mib::Create -> " +
        (r.ok() ? Hex(got.base) : r.status().ToString()));
  CheckAllocation("PerCpuU64Mib::Create", kMibItems * sizeof(U64Mib::Word),
                  alignof(U64Mib::Word), r.ok() ? Status::Ok() : r.status(),
                  got, before, true);
  if (failed()) return false;
  if (r.ok()) {
    FUZZ_CHECK_BOOL(!(*r)->uses_rseq(),
                    "PerCpuU64Mib on a simulated topology uses rseq");
    u64_ = std::move(*r);
    u64_addr_ = got.base;
    u64_model_.Reset(possible_);
  }
  return true;
}

void Harness::DestroyMibs() {
  const auto forget = [&](uintptr_t a) {
    const auto it = live_.find(a);
    if (it == live_.end()) {
      Fail(__LINE__, "a MIB's blocks are not in the model");
      return;
    }
    ++frees_;
    requested_ -= it->second.requested;
    in_use_ -= it->second.placed;
    live_.erase(it);
  };
  if (mib_ != nullptr) {
    mib_.reset();  // frees its blocks
    forget(mib_addr_);
  }
  if (u64_ != nullptr) {
    u64_.reset();
    forget(u64_addr_);
  }
}

void Harness::DoRecreateMibs() {
  const uint8_t which = in_.U8();
  DestroyMibs();
  CheckStats();
  if (failed()) return;
  if (which % 4 != 1 && !CreateMib()) return;
  if (which % 4 != 2) CreateU64Mib();
}

void Harness::DoAt() {
  const uint8_t mode = in_.U8();
  const int cpu = DecodeCpu();
  Status s;
  uintptr_t got = 0;
  uintptr_t base = 0;
  size_t stride = 0;
  int n = 0;
  const auto at = [&](const auto& p) {
    auto r = p.At(cpu);
    s = r.ok() ? Status::Ok() : r.status();
    got = r.ok() ? reinterpret_cast<uintptr_t>(*r) : 0;
    base = p.base_address();
    stride = p.stride();
    n = p.num_cpus();
  };
  Obj* o = nullptr;
  switch (mode % 4) {
    case 0: at(PerCpuPtr<int>()); break;
    case 1:
      if (mib_ == nullptr) return;
      at(mib_->blocks());
      break;
    case 2:
      if (u64_ == nullptr) return;
      at(u64_->slots());
      break;
    default:
      o = PickObject(false);
      if (o == nullptr || !o->ptr) return;
      at(o->ptr);
      break;
  }
  Trace("At(" + std::to_string(cpu) + ") of " + Hex(base) + " -> " +
        (s.ok() ? Hex(got) : s.ToString()));
  StatusCode want = StatusCode::kOk;
  if (base == 0) {
    want = StatusCode::kFailedPrecondition;
  } else if (cpu < 0 || cpu >= possible_) {
    want = StatusCode::kOutOfRange;
  }
  FUZZ_CHECK(s.code() == want, "At(" + std::to_string(cpu) + ") returned " +
                                   s.ToString() + ", want " + Code(want));
  if (want == StatusCode::kOk) {
    FUZZ_CHECK(n == possible_ && stride == unit_ &&
                   got == base + static_cast<size_t>(cpu) * stride,
               "At(" + std::to_string(cpu) + ") returned " + Hex(got));
  }
}

// --- driver -------------------------------------------------------------------

void Harness::Setup() {
  const long page = sysconf(_SC_PAGESIZE);
  page_ = page > 0 ? static_cast<size_t>(page) : 4096;
  const uint8_t h0 = in_.U8(), h1 = in_.U8(), h2 = in_.U8(), h3 = in_.U8(),
                h4 = in_.U8(), h5 = in_.U8(), h6 = in_.U8();
  possible_ = h0 < 224 ? 1 + h0 % 8 : 60 + h0 % 12;
  const int present = 1 + h1 % possible_;
  const int online = 1 + h2 % present;

  // Invalid Simulated() shapes are refused.
  static const int kBad[][3] = {{0, 0, 0}, {2, 1, 2}, {1, 2, 1},
                                {kMaxCpus + 1, 1, 1}, {4, 4, 0}, {-1, -1, -1}};
  const auto* bad = kBad[(h2 >> 4) % 6];
  FUZZ_CHECK(Topology::Simulated(bad[0], bad[1], bad[2]).status().code() ==
                 StatusCode::kInvalidArgument,
             "Topology::Simulated accepted an invalid shape");

  StatusOr<std::shared_ptr<Topology>> t =
      Topology::Simulated(possible_, present, online);
  FUZZ_CHECK(t.ok(), "Topology::Simulated: " + t.status().ToString());
  topo_ = std::move(*t);
  present_.assign(static_cast<size_t>(possible_), false);
  online_.assign(static_cast<size_t>(possible_), false);
  for (int c = 0; c < present; ++c) present_[static_cast<size_t>(c)] = true;
  for (int c = 0; c < online; ++c) online_[static_cast<size_t>(c)] = true;
  FUZZ_CHECK(topo_->Rescan().code() == StatusCode::kFailedPrecondition,
             "Rescan of a simulated topology is not FailedPrecondition");

  unit_ = possible_ <= 8 ? page_ << ((h3 & 3) % 3) : page_;
  chunk_bytes_ = unit_ * static_cast<size_t>(possible_);
  constexpr size_t kNoLimit = std::numeric_limits<size_t>::max();
  switch (h4 % 8) {
    case 3: max_total_ = chunk_bytes_; break;
    case 4: max_total_ = 2 * chunk_bytes_; break;
    case 5: max_total_ = chunk_bytes_ * (1 + h5 % 6); break;
    case 6:  // not a multiple of the chunk size
      max_total_ = chunk_bytes_ * (1 + h5 % 3) + (h5 % 2 ? chunk_bytes_ - 1 : 1);
      break;
    case 7: max_total_ = h5 % 2 ? 0 : chunk_bytes_ - 1; break;  // nothing fits
    default: max_total_ = kNoLimit; break;
  }

  // Create refuses invalid unit sizes and a null topology.
  const size_t kBadUnits[] = {0, page_ / 2, page_ + page_ / 2, 3 * page_,
                              size_t{1} << 31};
  PerCpuAllocatorOptions bad_opts;
  bad_opts.unit_size = kBadUnits[(h3 >> 2) % 5];
  FUZZ_CHECK(PerCpuAllocator::Create(topo_.get(), bad_opts).status().code() ==
                 StatusCode::kInvalidArgument,
             "Create accepted unit_size " + std::to_string(bad_opts.unit_size));
  FUZZ_CHECK(PerCpuAllocator::Create(nullptr).status().code() ==
                 StatusCode::kInvalidArgument,
             "Create accepted a null topology");

  src_.reset(new FaultSource(unit_, chunk_bytes_));
  PerCpuAllocatorOptions opts;
  opts.unit_size = unit_;
  opts.max_total_bytes = max_total_;
  opts.memory = src_.get();
  StatusOr<std::shared_ptr<PerCpuAllocator>> a =
      PerCpuAllocator::Create(topo_.get(), opts);
  FUZZ_CHECK(a.ok(), "PerCpuAllocator::Create: " + a.status().ToString());
  alloc_ = std::move(*a);
  Trace("setup: possible " + std::to_string(possible_) + " present " +
        std::to_string(present) + " online " + std::to_string(online) +
        " unit " + std::to_string(unit_) + " max_total_bytes " +
        std::to_string(max_total_));
  if (!(h6 & 1) && !CreateMib()) return;
  if (!(h6 & 2) && !CreateU64Mib()) return;
  CheckStats();
}

void Harness::Step() {
  op_ = in_.U8() % kNumOps;
  switch (op_) {
    case kOpAllocate: DoAllocate(); break;
    case kOpAllocateTyped: DoAllocateTyped(); break;
    case kOpFree: {
      Obj* o = PickObject(false);
      if (o != nullptr) DoFreeAddress(o->addr, "Free");
      break;
    }
    case kOpDoubleFree: {
      const uint8_t k = in_.U8();
      if (!freed_.empty()) DoFreeAddress(freed_[k % freed_.size()], "DoubleFree");
      break;
    }
    case kOpFreeInterior: {
      Obj* o = PickObject(true);
      const uint16_t off = in_.U16();
      if (o != nullptr) {
        DoFreeAddress(o->addr + 1 + off % (o->placed - 1), "FreeInterior");
      }
      break;
    }
    case kOpFreeOtherCpuCopy: {
      Obj* o = PickObject(true);
      const uint8_t c = in_.U8();
      if (o != nullptr) {
        DoFreeAddress(o->addr + (1 + c % possible_) * unit_, "FreeOtherCpuCopy");
      }
      break;
    }
    case kOpFreeInChunk: {
      const uint8_t k = in_.U8();
      const uint32_t off = in_.U32();
      if (!src_->chunks.empty()) {
        const auto& m = src_->chunks[k % src_->chunks.size()];
        DoFreeAddress(m.base + off % m.bytes, "FreeInChunk");
      }
      break;
    }
    case kOpFreeForeign: {
      const uint8_t k = in_.U8();
      int local = 0;
      std::unique_ptr<int> heap(new int(0));
      uintptr_t a = 0;
      switch (k % 7) {
        case 0: a = reinterpret_cast<uintptr_t>(&local); break;
        case 1: a = reinterpret_cast<uintptr_t>(heap.get()); break;
        case 2: a = 1; break;
        case 3: a = std::numeric_limits<uintptr_t>::max(); break;
        case 4: a = std::numeric_limits<uintptr_t>::max() - page_ + 1; break;
        default:
          if (src_->chunks.empty()) return;
          {
            const auto& m = src_->chunks[(k >> 3) % src_->chunks.size()];
            a = k % 7 == 5 ? m.base + m.bytes : m.base - 1;  // just outside
          }
          break;
      }
      DoFreeAddress(a, "FreeForeign");
      break;
    }
    case kOpFreeNull: {
      const Status s1 = alloc_->FreeAddress(0);
      const Status s2 = alloc_->Free(PerCpuPtr<uint64_t>());
      Trace("Free(null) -> " + s1.ToString() + ", " + s2.ToString());
      FUZZ_CHECK(s1.ok() && s2.ok(), "Free of a null pointer is not a no-op");
      break;
    }
    case kOpWrite: DoWrite(); break;
    case kOpVerify: DoVerify(); break;
    case kOpSetPresent:
    case kOpSetAbsent:
    case kOpOnline:
    case kOpOffline: DoHotplug(op_); break;
    case kOpMibAdd: DoMibAdd(); break;
    case kOpMibFold: CheckMibs(); break;
    case kOpU64MibAdd: DoU64MibAdd(); break;
    case kOpU64MibFold: CheckMibs(); break;
    case kOpArmFault: DoArmFault(); break;
    case kOpRecreateMibs: DoRecreateMibs(); break;
    case kOpRescan: {
      const Status s = topo_->Rescan();
      FUZZ_CHECK(s.code() == StatusCode::kFailedPrecondition,
                 "Rescan of a simulated topology returned " + s.ToString());
      break;
    }
    default: DoAt(); break;
  }
  if (failed()) return;
  CheckStats();
  if (failed()) return;
  CheckTopology();
}

void Harness::Teardown() {
  op_ = -1;
  for (const auto& kv : live_) {
    if (!kv.second.pinned) VerifyObject(kv.second, -1);
    if (failed()) return;
  }
  CheckMibs();
  CheckStats();
  CheckTopology();
  if (failed()) return;
  DestroyMibs();
  CheckStats();
  if (failed()) return;
  // Destroying the allocator unmaps every chunk, live objects or not.
  alloc_.reset();
  FUZZ_CHECK(src_->chunks.empty(),
             std::to_string(src_->chunks.size()) +
                 " chunk(s) still mapped after ~PerCpuAllocator");
  FUZZ_CHECK(src_->violation.empty(), src_->violation);
}

Status Harness::Run() {
  Setup();
  while (!failed() && !in_.done() && op_index_ < kMaxOps) {
    Step();
    if (!failed()) ++op_index_;
  }
  if (!failed()) Teardown();
  if (failed()) return InternalError(failure_);
  return Status::Ok();
}

}  // namespace

Status RunAllocatorHotplugInput(const uint8_t* data, size_t size,
                                const HarnessOptions& options) {
  Harness h(data, size, options);
  return h.Run();
}

HarnessOptions HarnessOptionsFromEnv() {
  HarnessOptions o;
  const char* t = std::getenv("PERCPU_FUZZ_TRACE");
  o.trace = t != nullptr && *t != '\0' && std::strcmp(t, "0") != 0;
  return o;
}

}  // namespace fuzz
}  // namespace percpu
