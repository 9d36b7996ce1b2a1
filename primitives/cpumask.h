// CpuMask: a fixed-size set of CPU ids (0 .. kMaxCpus-1), the userspace
// counterpart of the kernel's struct cpumask, with the sysfs range-list text
// format ("0-3,8,10-11\n") used by /sys/devices/system/cpu/{possible,
// present,online}.
//
// Memory-ordering contract: none. CpuMask is a plain value type (64 words
// of 64 bits); it is not safe to mutate one object from two threads or to
// read it while another thread mutates it. Topology keeps its live masks in
// atomic words and hands out CpuMask snapshots.
//
// Usage constraints:
//   * Every int is a valid argument (INT_MIN, -1, INT_MAX included); none
//     overflows or reads outside the mask. Ids outside [0, kMaxCpus) are
//     rejected: Set()/Clear() return OutOfRange, Test() returns false,
//     Next(cpu) returns -1 for cpu >= kMaxCpus - 1 and First() for cpu < 0,
//     Parse() returns InvalidArgument naming the text and the position of the
//     offending id.
//   * Parse() accepts exactly the kernel's output grammar:
//       list  := "" | range ("," range)*      (optionally one trailing "\n")
//       range := id | id "-" id               (first id <= second id)
//       id    := decimal digits
//     Anything else ("3-1", "1,,2", "a", "-1", "0-", " 1", "99999999999")
//     is InvalidArgument.
#ifndef PERCPU_PRIMITIVES_CPUMASK_H_
#define PERCPU_PRIMITIVES_CPUMASK_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "primitives/status.h"

namespace percpu {

// Largest number of CPU ids a mask can hold: the kernel's largest NR_CPUS
// (CONFIG_MAXSMP on x86_64 sets NR_CPUS=8192), so every possible mask a
// kernel can report fits. A CpuMask is kMaxCpus / 8 = 1 KiB.
inline constexpr int kMaxCpus = 8192;

class CpuMask {
 public:
  static constexpr int kWordBits = 64;
  static constexpr int kWords = kMaxCpus / kWordBits;

  CpuMask() = default;  // empty

  // Parses a sysfs range list. "" and "\n" give the empty mask.
  [[nodiscard]] static StatusOr<CpuMask> Parse(std::string_view text);
  // {0, 1, ..., n-1}; n is clamped to [0, kMaxCpus].
  static CpuMask FirstN(int n);

  // OutOfRange error unless 0 <= cpu < kMaxCpus.
  [[nodiscard]] Status Set(int cpu);
  [[nodiscard]] Status Clear(int cpu);
  // False for ids out of range.
  bool Test(int cpu) const;

  int Count() const;
  bool Empty() const;
  // Lowest set id, or -1 if empty.
  int First() const;
  // Lowest set id greater than `cpu`, or -1. Next(cpu) == First() for
  // every cpu < 0; -1 for every cpu >= kMaxCpus - 1 (INT_MAX included).
  int Next(int cpu) const;
  // Highest set id, or -1 if empty.
  int Last() const;

  // Calls f(int cpu) for every set id in ascending order.
  template <typename F>
  void ForEach(F&& f) const {
    for (int w = 0; w < kWords; ++w) {
      uint64_t bits = words_[w];
      while (bits != 0) {
        const int bit = __builtin_ctzll(bits);
        bits &= bits - 1;
        f(w * kWordBits + bit);
      }
    }
  }

  // Canonical range list without a trailing newline: "0-3,8,10-11"; "" if
  // empty. Parse(m.ToString()) == m for every mask.
  std::string ToString() const;

  friend bool operator==(const CpuMask& a, const CpuMask& b);
  friend bool operator!=(const CpuMask& a, const CpuMask& b) {
    return !(a == b);
  }
  friend CpuMask operator|(const CpuMask& a, const CpuMask& b);
  friend CpuMask operator&(const CpuMask& a, const CpuMask& b);
  // Ids in *this but not in `other`.
  CpuMask AndNot(const CpuMask& other) const;
  // True if every id of *this is in `other`.
  bool IsSubsetOf(const CpuMask& other) const;

  // Raw word access (word w holds ids [64w, 64w+63], bit i = id 64w+i);
  // 0 for w outside [0, kWords).
  uint64_t word(int w) const { return w >= 0 && w < kWords ? words_[w] : 0; }

 private:
  uint64_t words_[kWords] = {};
};

}  // namespace percpu

#endif  // PERCPU_PRIMITIVES_CPUMASK_H_
