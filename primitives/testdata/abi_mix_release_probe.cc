// Compiled as a RELEASE translation unit (PERCPU_CONTRACT_CHECKS=0, NDEBUG)
// into //primitives:abi_mix_test, beside a release build of
// percpu_counter.cc, while the test's main is a debug one.
#include <cstddef>

#include "primitives/percpu_counter.h"
#include "primitives/seqcount.h"

#if PERCPU_CONTRACT_CHECKS
#error "this probe must be compiled with PERCPU_CONTRACT_CHECKS=0"
#endif

namespace percpu {
namespace abi_mix {

size_t ReleaseSeqCountSize() { return sizeof(SeqCount); }
size_t ReleaseCounterSlotSize() { return sizeof(ApproxCounterSlot); }
size_t ReleaseCounterSlotAlign() { return alignof(ApproxCounterSlot); }

// A release writer of one slot's seqcount (no checker word update).
void ReleaseWriteSection(SeqCount& seq) {
  seq.WriteBegin();
  seq.WriteEnd();
}

}  // namespace abi_mix
}  // namespace percpu
