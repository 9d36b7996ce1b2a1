// Link-time guard against mixing build configurations (ODR/ABI).
//
// A few macros change how per-CPU data is laid out or written:
//   * PERCPU_FORCE_SEQCOUNT (and 32-bit targets): U64Stat is two 32-bit
//     words under a seqcount instead of one 64-bit atomic, so U64Stat,
//     U64StatsSync and every MIB built from them change size and protocol;
//   * PERCPU_NO_RSEQ: slots that rseq builds write with plain stores inside
//     a restartable sequence are written with atomic fetch_add instead; the
//     two writer protocols lose updates when they meet on one slot;
//   * PERCPU_MODEL_CHECK: internal::Atomic is the model checker's atomic.
// Translation units built with different values of these must never be
// linked together. Every header whose layout or writer protocol depends on
// them includes this file, which makes the translation unit reference one
// symbol whose name spells the configuration; contract.cc (linked into
// every program that uses those headers) defines only the symbol of the
// configuration it was built with. A mismatched translation unit then fails
// to link with "undefined reference to percpu_abi_v1_...". Matched builds
// pay one pointer-sized constant per translation unit and nothing at run
// time.
//
// PERCPU_CONTRACT_CHECKS (debug checks, default from NDEBUG) is NOT part of
// the tag: it changes no layout (SeqCount always has its checker word) and
// debug and release writers of one object interoperate, so debug and
// release translation units may be mixed (//primitives:abi_mix_test).
#ifndef PERCPU_PRIMITIVES_INTERNAL_ABI_H_
#define PERCPU_PRIMITIVES_INTERNAL_ABI_H_

#include <cstdint>

#if defined(PERCPU_FORCE_SEQCOUNT) || UINTPTR_MAX == 0xffffffffu
#define PERCPU_ABI_U64_SEQCOUNT_ 1
#else
#define PERCPU_ABI_U64_SEQCOUNT_ 0
#endif
#if defined(PERCPU_NO_RSEQ)
#define PERCPU_ABI_RSEQ_ 0
#else
#define PERCPU_ABI_RSEQ_ 1
#endif
#if defined(PERCPU_MODEL_CHECK)
#define PERCPU_ABI_MODEL_ 1
#else
#define PERCPU_ABI_MODEL_ 0
#endif

#define PERCPU_ABI_CAT3_(a, b, c, d) a##b##_rseq##c##_model##d
#define PERCPU_ABI_CAT_(a, b, c, d) PERCPU_ABI_CAT3_(a, b, c, d)
// e.g. percpu_abi_v1_u64seqcount0_rseq1_model0
#define PERCPU_ABI_TAG                                                   \
  PERCPU_ABI_CAT_(percpu_abi_v1_u64seqcount, PERCPU_ABI_U64_SEQCOUNT_, \
                  PERCPU_ABI_RSEQ_, PERCPU_ABI_MODEL_)

extern "C" const char PERCPU_ABI_TAG;

namespace percpu {
namespace internal {
// Internal linkage: every translation unit has its own copy, and `used`
// keeps it (and so the reference to the tag) even when nothing reads it.
[[gnu::used]] static const char* const kAbiTagReference = &PERCPU_ABI_TAG;
}  // namespace internal
}  // namespace percpu

#endif  // PERCPU_PRIMITIVES_INTERNAL_ABI_H_
