#include "primitives/contract.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>

// The one definition of this build configuration's ABI tag (see
// internal/abi.h): translation units built with another configuration
// reference a different name and fail to link.
extern "C" const char PERCPU_ABI_TAG = 1;

namespace percpu {
namespace {

void DefaultHandler(const char* message) {
  std::fprintf(stderr, "percpu: contract violation: %s\n", message);
  std::abort();
}

// Relaxed suffices: the handler is a function pointer whose code is
// immutable; no other data is published with it.
std::atomic<ContractViolationHandler> g_handler{&DefaultHandler};

}  // namespace

ContractViolationHandler SetContractViolationHandler(
    ContractViolationHandler handler) {
  if (handler == nullptr) handler = &DefaultHandler;
  return g_handler.exchange(handler, std::memory_order_relaxed);
}

namespace internal {
void ReportContractViolation(const char* message) {
  g_handler.load(std::memory_order_relaxed)(message);
}
}  // namespace internal

}  // namespace percpu
