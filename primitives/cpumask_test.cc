#include "primitives/cpumask.h"

#include <climits>
#include <string>
#include <vector>

#include "doctest/doctest.h"

namespace percpu {
namespace {

std::vector<int> Ids(const CpuMask& m) {
  std::vector<int> out;
  m.ForEach([&](int cpu) { out.push_back(cpu); });
  return out;
}

CpuMask MustParse(const char* text) {
  StatusOr<CpuMask> m = CpuMask::Parse(text);
  REQUIRE_MESSAGE(m.ok(), m.status().ToString());
  return *m;
}

TEST_CASE("CpuMask: empty forms") {
  for (const char* text : {"", "\n"}) {
    CpuMask m = MustParse(text);
    CHECK(m.Empty());
    CHECK(m.Count() == 0);
    CHECK(m.First() == -1);
    CHECK(m.Last() == -1);
    CHECK(m.ToString() == "");
  }
  CHECK(CpuMask() == CpuMask::FirstN(0));
}

TEST_CASE("CpuMask: range lists as sysfs prints them") {
  CpuMask m = MustParse("0-3,8,10-11\n");
  CHECK(Ids(m) == std::vector<int>{0, 1, 2, 3, 8, 10, 11});
  CHECK(m.Count() == 7);
  CHECK(m.ToString() == "0-3,8,10-11");
  CHECK(MustParse("0").ToString() == "0");
  CHECK(MustParse("5-5").ToString() == "5");
  CHECK(MustParse("0-191").Count() == 192);
  CHECK(MustParse("0-8191").Count() == kMaxCpus);
  // The kernel's MAXSMP NR_CPUS: every id a kernel can report fits.
  CHECK(kMaxCpus >= 8192);
  CHECK(MustParse("4096-8191").Count() == 4096);
  CHECK(MustParse("4095").Last() == 4095);
  CHECK(MustParse("0-4095\n").ToString() == "0-4095");
  // Non-canonical input is accepted and printed canonically.
  CHECK(MustParse("3,1,2,2,0").ToString() == "0-3");
  CHECK(MustParse("0-2,3-5").ToString() == "0-5");
  CHECK(MustParse("007").ToString() == "7");
  // Word boundaries.
  CHECK(MustParse("63-64,127,128").ToString() == "63-64,127-128");
}

TEST_CASE("CpuMask: round trip of many masks") {
  // Deterministic pseudo-random masks.
  uint32_t x = 12345;
  for (int iter = 0; iter < 200; ++iter) {
    CpuMask m;
    const int n = iter % 50;
    for (int i = 0; i < n; ++i) {
      x = x * 1103515245u + 12345u;
      REQUIRE(m.Set(static_cast<int>((x >> 8) % kMaxCpus)).ok());
    }
    StatusOr<CpuMask> back = CpuMask::Parse(m.ToString());
    REQUIRE(back.ok());
    CHECK(*back == m);
    StatusOr<CpuMask> back_nl = CpuMask::Parse(m.ToString() + "\n");
    REQUIRE(back_nl.ok());
    CHECK(*back_nl == m);
  }
}

struct BadCase {
  const char* text;
  const char* message;
};

TEST_CASE("CpuMask: malformed text gets an error naming text and position") {
  const BadCase cases[] = {
      {"3-1", "CpuMask::Parse: range end 1 is below its start 3 at position 2 "
              "of \"3-1\""},
      {"1,,2", "CpuMask::Parse: expected a CPU id, found ',' at position 2 of "
               "\"1,,2\""},
      {"a", "CpuMask::Parse: expected a CPU id, found 'a' at position 0 of "
            "\"a\""},
      {"-1", "CpuMask::Parse: expected a CPU id, found '-' at position 0 of "
             "\"-1\""},
      {"0-", "CpuMask::Parse: expected a CPU id, found end of text at "
             "position 2 of \"0-\""},
      {"0-\n", "CpuMask::Parse: expected a CPU id, found end of text at "
               "position 2 of \"0-\\n\""},
      {"8192", "CpuMask::Parse: CPU id 8192 is not below kMaxCpus (8192) at "
               "position 0 of \"8192\""},
      {"0-8192", "CpuMask::Parse: CPU id 8192 is not below kMaxCpus (8192) "
                 "at position 2 of \"0-8192\""},
      {"99999999999", "CpuMask::Parse: CPU id 99999999999 is not below "
                      "kMaxCpus (8192) at position 0 of \"99999999999\""},
      {"1,", "CpuMask::Parse: expected a CPU id, found end of text at "
             "position 2 of \"1,\""},
      {",1", "CpuMask::Parse: expected a CPU id, found ',' at position 0 of "
             "\",1\""},
      {" 1", "CpuMask::Parse: expected a CPU id, found ' ' at position 0 of "
             "\" 1\""},
      {"1 ", "CpuMask::Parse: expected ',' or '-', found ' ' at position 1 "
             "of \"1 \""},
      {"1-2-3", "CpuMask::Parse: expected ',' or '-', found '-' at position "
                "3 of \"1-2-3\""},
      {"1\n\n", "CpuMask::Parse: expected ',' or '-', found '\\n' at "
                "position 1 of \"1\\n\\n\""},
      {"\n\n", "CpuMask::Parse: expected a CPU id, found '\\n' at position 0 "
               "of \"\\n\\n\""},
      {"0x1", "CpuMask::Parse: expected ',' or '-', found 'x' at position 1 "
              "of \"0x1\""},
      {"+1", "CpuMask::Parse: expected a CPU id, found '+' at position 0 of "
             "\"+1\""},
      {"1\t", "CpuMask::Parse: expected ',' or '-', found '\\x09' at "
              "position 1 of \"1\\x09\""},
  };
  for (const BadCase& c : cases) {
    CAPTURE(c.text);
    StatusOr<CpuMask> m = CpuMask::Parse(c.text);
    REQUIRE_FALSE(m.ok());
    CHECK(m.status().code() == StatusCode::kInvalidArgument);
    CHECK(m.status().message() == c.message);
  }
  // An embedded NUL is not a digit.
  StatusOr<CpuMask> nul = CpuMask::Parse(std::string_view("1\0", 2));
  REQUIRE_FALSE(nul.ok());
  CHECK(nul.status().message() ==
        "CpuMask::Parse: expected ',' or '-', found '\\x00' at position 1 of "
        "\"1\\x00\"");
}

TEST_CASE("CpuMask: Set/Clear/Test bounds") {
  CpuMask m;
  CHECK(m.Set(0).ok());
  CHECK(m.Set(kMaxCpus - 1).ok());
  Status s = m.Set(kMaxCpus);
  CHECK(s.code() == StatusCode::kOutOfRange);
  CHECK(s.message() == "CpuMask::Set: CPU id 8192 is not in [0, 8192)");
  s = m.Set(-1);
  CHECK(s.code() == StatusCode::kOutOfRange);
  CHECK(s.message() == "CpuMask::Set: CPU id -1 is not in [0, 8192)");
  s = m.Clear(-5);
  CHECK(s.code() == StatusCode::kOutOfRange);
  CHECK(s.message() == "CpuMask::Clear: CPU id -5 is not in [0, 8192)");
  CHECK_FALSE(m.Test(-1));
  CHECK_FALSE(m.Test(kMaxCpus));
  CHECK(m.Test(0));
  CHECK(m.Test(kMaxCpus - 1));
  CHECK(m.Count() == 2);
  CHECK(m.Clear(0).ok());
  CHECK_FALSE(m.Test(0));
  CHECK(m.First() == kMaxCpus - 1);
}

TEST_CASE("CpuMask: First/Next/Last and FirstN") {
  CpuMask m = MustParse("5,63,64,200,4095");
  CHECK(m.First() == 5);
  CHECK(m.Next(-1) == 5);
  CHECK(m.Next(-100) == 5);
  CHECK(m.Next(5) == 63);
  CHECK(m.Next(63) == 64);
  CHECK(m.Next(64) == 200);
  CHECK(m.Next(200) == 4095);
  CHECK(m.Next(4095) == -1);
  CHECK(m.Next(5000) == -1);
  CHECK(m.Last() == 4095);

  for (int n : {0, 1, 63, 64, 65, 128, 192, 4095, 4096, 8191, 8192}) {
    CAPTURE(n);
    CpuMask f = CpuMask::FirstN(n);
    CHECK(f.Count() == n);
    CHECK(f.Last() == n - 1);
    if (n > 0) CHECK(f.ToString() == (n == 1 ? std::string("0")
                                             : "0-" + std::to_string(n - 1)));
  }
  CHECK(CpuMask::FirstN(-3).Empty());
  CHECK(CpuMask::FirstN(100000).Count() == kMaxCpus);
}

// Every int is a valid argument: no overflow (UBSan would stop the test),
// no read outside the words (ASan), and the documented answer.
TEST_CASE("CpuMask: integer extremes never overflow or read out of bounds") {
  const int kExtremes[] = {INT_MIN, INT_MIN + 1, -2, -1, 0, 1,
                           kMaxCpus - 2, kMaxCpus - 1, kMaxCpus,
                           kMaxCpus + 1, INT_MAX - 1, INT_MAX};
  CpuMask full = CpuMask::FirstN(kMaxCpus);
  CpuMask some = MustParse("3,4095,8191");
  for (const int cpu : kExtremes) {
    CAPTURE(cpu);
    const bool in_range = cpu >= 0 && cpu < kMaxCpus;
    CHECK(CpuMask().Next(cpu) == -1);
    CHECK(full.Test(cpu) == in_range);
    if (cpu < 0) {
      CHECK(full.Next(cpu) == 0);
      CHECK(some.Next(cpu) == 3);
    } else if (cpu >= kMaxCpus - 1) {
      CHECK(full.Next(cpu) == -1);
      CHECK(some.Next(cpu) == -1);
    } else {
      CHECK(full.Next(cpu) == cpu + 1);
    }
    CpuMask m;
    CHECK(m.Set(cpu).ok() == in_range);
    CHECK(m.Clear(cpu).ok() == in_range);
    CHECK(m.Empty());
    CHECK(full.word(cpu) == (cpu >= 0 && cpu < CpuMask::kWords ? ~uint64_t{0}
                                                               : 0));
  }
  CHECK(some.Next(3) == 4095);
  CHECK(some.Next(4095) == 8191);
  CHECK(some.Next(8190) == 8191);
  CHECK(CpuMask::FirstN(INT_MIN).Empty());
  CHECK(CpuMask::FirstN(INT_MAX).Count() == kMaxCpus);
  CHECK(CpuMask::FirstN(INT_MAX) == full);
}

TEST_CASE("CpuMask: set operations") {
  CpuMask a = MustParse("0-7");
  CpuMask b = MustParse("4-11");
  CHECK((a | b).ToString() == "0-11");
  CHECK((a & b).ToString() == "4-7");
  CHECK(a.AndNot(b).ToString() == "0-3");
  CHECK(b.AndNot(a).ToString() == "8-11");
  CHECK(a != b);
  CHECK(a == MustParse("0-7\n"));
  CHECK((a & b).IsSubsetOf(a));
  CHECK_FALSE(a.IsSubsetOf(b));
  CHECK(CpuMask().IsSubsetOf(a));
  CHECK(Ids(MustParse("1,3")) == std::vector<int>{1, 3});
}

}  // namespace
}  // namespace percpu
