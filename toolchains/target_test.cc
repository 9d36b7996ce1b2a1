// Proves that a test binary really is built for the target its config names,
// so a misconfigured toolchain (say, --config=aarch64 silently building for
// the host) cannot pass. The expected target comes from the test
// environment (PERCPU_EXPECTED_TARGET, set per config in .bazelrc); it is
// compared with what the compiler believed (macros, pointer size) and with
// the ELF header of the running executable itself.
#include <elf.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "doctest/doctest.h"
#include "primitives/u64_stats.h"

namespace {

std::string CompiledArch() {
#if defined(__x86_64__)
  return "x86_64";
#elif defined(__aarch64__)
  return "aarch64";
#elif defined(__arm__) && defined(__ARM_PCS_VFP)
  return "armhf";
#elif defined(__i386__)
  return "i686";
#else
  return "unknown";
#endif
}

struct ElfIdentity {
  int elf_class = 0;  // ELFCLASS32 or ELFCLASS64
  int machine = 0;    // EM_*
};

ElfIdentity ReadOwnElfHeader() {
  ElfIdentity id;
  FILE* f = std::fopen("/proc/self/exe", "rb");
  REQUIRE(f != nullptr);
  unsigned char header[20] = {};
  const size_t n = std::fread(header, 1, sizeof(header), f);
  std::fclose(f);
  REQUIRE(n == sizeof(header));
  REQUIRE(std::memcmp(header, ELFMAG, SELFMAG) == 0);
  id.elf_class = header[EI_CLASS];
  // e_machine is the little-endian half-word at offset 18 on all four
  // targets (all are little-endian).
  id.machine = header[18] | header[19] << 8;
  return id;
}

TEST_CASE("the binary is built for the configured target") {
  const char* expected_env = std::getenv("PERCPU_EXPECTED_TARGET");
  REQUIRE_MESSAGE(expected_env != nullptr,
                  "PERCPU_EXPECTED_TARGET is not set: run through bazel test");
  const std::string expected = expected_env;
  CHECK(CompiledArch() == expected);

  const ElfIdentity elf = ReadOwnElfHeader();
  if (expected == "x86_64") {
    CHECK(sizeof(void*) == 8);
    CHECK(elf.elf_class == ELFCLASS64);
    CHECK(elf.machine == EM_X86_64);
  } else if (expected == "aarch64") {
    CHECK(sizeof(void*) == 8);
    CHECK(elf.elf_class == ELFCLASS64);
    CHECK(elf.machine == EM_AARCH64);
  } else if (expected == "armhf") {
    CHECK(sizeof(void*) == 4);
    CHECK(elf.elf_class == ELFCLASS32);
    CHECK(elf.machine == EM_ARM);
  } else if (expected == "i686") {
    CHECK(sizeof(void*) == 4);
    CHECK(elf.elf_class == ELFCLASS32);
    CHECK(elf.machine == EM_386);
    // The i386 psABI aligns uint64_t to 4 inside structs, which is why the
    // 64-bit atomics of this toolkit carry explicit alignment.
    CHECK(alignof(std::atomic<uint64_t>) == 8);
  } else {
    FAIL("unknown PERCPU_EXPECTED_TARGET " << expected);
  }
}

TEST_CASE("32-bit targets use the seqcount path of U64Stat") {
  if (sizeof(void*) == 4) {
    CHECK(percpu::kU64StatsUseSeqcount);
  } else {
#if defined(PERCPU_FORCE_SEQCOUNT)
    CHECK(percpu::kU64StatsUseSeqcount);
#else
    CHECK_FALSE(percpu::kU64StatsUseSeqcount);
#endif
  }
}

}  // namespace
