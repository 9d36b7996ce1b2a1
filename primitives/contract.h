// Debug-build checks of programmer contracts.
//
// Some misuse cannot be reported through a return value without putting a
// cost on the hot path: two threads writing one seqcount at once, touching
// a per-CPU object after it was freed. In debug builds (NDEBUG undefined,
// or PERCPU_CONTRACT_CHECKS=1) the primitives detect these and call the
// contract-violation handler; in release builds the checks compile away and
// the behaviour is undefined, as documented at each contract.
//
// The default handler prints the message to stderr and aborts. Tests, and
// programs that prefer to log and continue, install their own.
//
// PERCPU_CONTRACT_CHECKS changes no type's layout: translation units built
// with and without it (debug main, release library) may be linked together.
// The configuration macros that do change layouts or writer protocols are
// guarded at link time by internal/abi.h.
#ifndef PERCPU_PRIMITIVES_CONTRACT_H_
#define PERCPU_PRIMITIVES_CONTRACT_H_

#include "primitives/internal/abi.h"

#if !defined(PERCPU_CONTRACT_CHECKS)
#if defined(NDEBUG)
#define PERCPU_CONTRACT_CHECKS 0
#else
#define PERCPU_CONTRACT_CHECKS 1
#endif
#endif

namespace percpu {

// Called with a static, human-readable description of the violation.
using ContractViolationHandler = void (*)(const char* message);

// Installs `handler` (nullptr restores the default) and returns the previous
// one. Thread-safe.
ContractViolationHandler SetContractViolationHandler(
    ContractViolationHandler handler);

namespace internal {
// Reports a violation through the installed handler. Cold path.
[[gnu::cold]] void ReportContractViolation(const char* message);
}  // namespace internal

}  // namespace percpu

#endif  // PERCPU_PRIMITIVES_CONTRACT_H_
