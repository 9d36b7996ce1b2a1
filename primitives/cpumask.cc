#include "primitives/cpumask.h"

#include <string>

namespace percpu {
namespace {

// Quotes `text` for an error message, escaping the newline and other
// control characters so the message stays on one line.
std::string Quote(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '\n') {
      out += "\\n";
    } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      static const char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[(static_cast<unsigned char>(c) >> 4) & 0xf];
      out += kHex[static_cast<unsigned char>(c) & 0xf];
    } else {
      out += c;
    }
  }
  out += "\"";
  return out;
}

Status ParseError(std::string_view text, size_t pos, const std::string& what) {
  return InvalidArgumentError("CpuMask::Parse: " + what + " at position " +
                              std::to_string(pos) + " of " + Quote(text));
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Describes text[pos] for an error message.
std::string Found(std::string_view text, size_t pos, size_t body_size) {
  if (pos >= body_size) return "end of text";
  const std::string q = Quote(text.substr(pos, 1));  // "\"c\""
  return "'" + q.substr(1, q.size() - 2) + "'";
}

// Parses a decimal id at text[*pos] (text[0, body_size) is the list without
// its trailing newline). On success advances *pos past the digits.
Status ParseId(std::string_view text, size_t body_size, size_t* pos, int* id) {
  const size_t start = *pos;
  if (start >= body_size || !IsDigit(text[start])) {
    return ParseError(text, start,
                      "expected a CPU id, found " + Found(text, start, body_size));
  }
  uint64_t value = 0;
  size_t p = start;
  while (p < body_size && IsDigit(text[p])) {
    value = value * 10 + static_cast<uint64_t>(text[p] - '0');
    if (value >= static_cast<uint64_t>(kMaxCpus)) {
      // Stop before the value can overflow; show the whole number.
      size_t end = p;
      while (end < body_size && IsDigit(text[end])) ++end;
      return ParseError(text, start,
                        "CPU id " + std::string(text.substr(start, end - start)) +
                            " is not below kMaxCpus (" +
                            std::to_string(kMaxCpus) + ")");
    }
    ++p;
  }
  *id = static_cast<int>(value);
  *pos = p;
  return Status::Ok();
}

}  // namespace

StatusOr<CpuMask> CpuMask::Parse(std::string_view text) {
  size_t body_size = text.size();
  if (body_size > 0 && text[body_size - 1] == '\n') --body_size;
  CpuMask mask;
  if (body_size == 0) return mask;
  size_t pos = 0;
  for (;;) {
    int first = 0;
    Status s = ParseId(text, body_size, &pos, &first);
    if (!s.ok()) return s;
    int last = first;
    if (pos < body_size && text[pos] == '-') {
      ++pos;
      const size_t second_pos = pos;
      s = ParseId(text, body_size, &pos, &last);
      if (!s.ok()) return s;
      if (last < first) {
        return ParseError(text, second_pos,
                          "range end " + std::to_string(last) +
                              " is below its start " + std::to_string(first));
      }
    }
    for (int cpu = first; cpu <= last; ++cpu) {
      mask.words_[cpu / kWordBits] |= uint64_t{1} << (cpu % kWordBits);
    }
    if (pos == body_size) break;
    if (text[pos] != ',') {
      return ParseError(text, pos,
                        "expected ',' or '-', found " + Found(text, pos, body_size));
    }
    ++pos;
  }
  return mask;
}

CpuMask CpuMask::FirstN(int n) {
  CpuMask mask;
  if (n < 0) n = 0;
  if (n > kMaxCpus) n = kMaxCpus;
  for (int w = 0; w < kWords && n > 0; ++w, n -= kWordBits) {
    mask.words_[w] = n >= kWordBits ? ~uint64_t{0} : (uint64_t{1} << n) - 1;
  }
  return mask;
}

Status CpuMask::Set(int cpu) {
  if (cpu < 0 || cpu >= kMaxCpus) {
    return OutOfRangeError("CpuMask::Set: CPU id " + std::to_string(cpu) +
                           " is not in [0, " + std::to_string(kMaxCpus) + ")");
  }
  words_[cpu / kWordBits] |= uint64_t{1} << (cpu % kWordBits);
  return Status::Ok();
}

Status CpuMask::Clear(int cpu) {
  if (cpu < 0 || cpu >= kMaxCpus) {
    return OutOfRangeError("CpuMask::Clear: CPU id " + std::to_string(cpu) +
                           " is not in [0, " + std::to_string(kMaxCpus) + ")");
  }
  words_[cpu / kWordBits] &= ~(uint64_t{1} << (cpu % kWordBits));
  return Status::Ok();
}

bool CpuMask::Test(int cpu) const {
  if (cpu < 0 || cpu >= kMaxCpus) return false;
  return (words_[cpu / kWordBits] >> (cpu % kWordBits)) & 1u;
}

int CpuMask::Count() const {
  int n = 0;
  for (const uint64_t w : words_) n += __builtin_popcountll(w);
  return n;
}

bool CpuMask::Empty() const {
  for (const uint64_t w : words_) {
    if (w != 0) return false;
  }
  return true;
}

int CpuMask::First() const { return Next(-1); }

int CpuMask::Next(int cpu) const {
  // Compared before adding 1: cpu + 1 would overflow for INT_MAX.
  if (cpu >= kMaxCpus - 1) return -1;
  const int start = cpu < 0 ? 0 : cpu + 1;
  int w = start / kWordBits;
  uint64_t bits = words_[w] & (~uint64_t{0} << (start % kWordBits));
  for (;;) {
    if (bits != 0) return w * kWordBits + __builtin_ctzll(bits);
    if (++w == kWords) return -1;
    bits = words_[w];
  }
}

int CpuMask::Last() const {
  for (int w = kWords - 1; w >= 0; --w) {
    if (words_[w] != 0) return w * kWordBits + 63 - __builtin_clzll(words_[w]);
  }
  return -1;
}

std::string CpuMask::ToString() const {
  std::string out;
  int cpu = First();
  while (cpu >= 0) {
    int end = cpu;
    while (end + 1 < kMaxCpus && Test(end + 1)) ++end;
    if (!out.empty()) out += ',';
    out += std::to_string(cpu);
    if (end > cpu) {
      out += '-';
      out += std::to_string(end);
    }
    cpu = Next(end);
  }
  return out;
}

bool operator==(const CpuMask& a, const CpuMask& b) {
  for (int w = 0; w < CpuMask::kWords; ++w) {
    if (a.words_[w] != b.words_[w]) return false;
  }
  return true;
}

CpuMask operator|(const CpuMask& a, const CpuMask& b) {
  CpuMask r;
  for (int w = 0; w < CpuMask::kWords; ++w) r.words_[w] = a.words_[w] | b.words_[w];
  return r;
}

CpuMask operator&(const CpuMask& a, const CpuMask& b) {
  CpuMask r;
  for (int w = 0; w < CpuMask::kWords; ++w) r.words_[w] = a.words_[w] & b.words_[w];
  return r;
}

CpuMask CpuMask::AndNot(const CpuMask& other) const {
  CpuMask r;
  for (int w = 0; w < kWords; ++w) r.words_[w] = words_[w] & ~other.words_[w];
  return r;
}

bool CpuMask::IsSubsetOf(const CpuMask& other) const {
  for (int w = 0; w < kWords; ++w) {
    if ((words_[w] & ~other.words_[w]) != 0) return false;
  }
  return true;
}

}  // namespace percpu
