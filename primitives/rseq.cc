#include "primitives/rseq.h"

#include <cstdlib>
#include <cstring>
#include <string>

#include "primitives/internal/rseq_asm.h"

namespace percpu {

const char* WriterModeName(WriterMode mode) {
  switch (mode) {
    case WriterMode::kRseq:
      return "rseq";
    case WriterMode::kFallbackSchedGetcpu:
      return "fallback-sched_getcpu";
  }
  return "unknown";
}

RseqFacts CurrentRseqFacts() {
  RseqFacts f;
  f.env = std::getenv("PERCPU_RSEQ");
#if PERCPU_HAVE_RSEQ_ASM
  f.compiled_in = true;
  f.rseq_size = __rseq_size;
  f.rseq_offset = static_cast<long>(__rseq_offset);
  f.thread_cpu_id =
      __rseq_size > 0 ? internal::RseqCpuIdOfThisThread() : int32_t{-1};
#endif
  return f;
}

namespace internal {

namespace {
bool EnvForcesOff(const char* env) {
  if (env == nullptr) return false;
  return std::strcmp(env, "0") == 0 || std::strcmp(env, "off") == 0 ||
         std::strcmp(env, "false") == 0 || std::strcmp(env, "no") == 0;
}
}  // namespace

WriterModeChoice ChooseWriterMode(const RseqFacts& f) {
  const std::string fb = WriterModeName(WriterMode::kFallbackSchedGetcpu);
  if (!f.compiled_in) {
    return {WriterMode::kFallbackSchedGetcpu,
            fb + ": rseq support not compiled in for this target "
                 "(only x86_64 and little-endian aarch64 Linux with glibc "
                 ">= 2.35 headers; or built with -DPERCPU_NO_RSEQ)"};
  }
  if (EnvForcesOff(f.env)) {
    return {WriterMode::kFallbackSchedGetcpu,
            fb + ": forced by PERCPU_RSEQ=" + f.env};
  }
  if (f.rseq_size < 20) {
    return {WriterMode::kFallbackSchedGetcpu,
            fb + ": __rseq_size is " + std::to_string(f.rseq_size) +
                " (glibc did not register rseq: kernel without rseq, "
                "qemu-user, or the glibc.pthread.rseq=0 tunable)"};
  }
  if (f.thread_cpu_id < 0) {
    return {WriterMode::kFallbackSchedGetcpu,
            fb + ": rseq cpu_id of the calling thread is " +
                std::to_string(f.thread_cpu_id) + " (not registered)"};
  }
  return {WriterMode::kRseq,
          std::string(WriterModeName(WriterMode::kRseq)) +
              ": glibc registration, __rseq_size=" +
              std::to_string(f.rseq_size) +
              ", __rseq_offset=" + std::to_string(f.rseq_offset)};
}

Atomic<int> g_writer_mode{0};

WriterMode InitWriterMode() {
  const WriterModeChoice c = ChooseWriterMode(CurrentRseqFacts());
  int expected = 0;
  // Relaxed suffices: the first decision wins and is never changed; it
  // publishes no other data. Every thread that loses the race adopts the
  // winner's value, so the process has exactly one mode.
  g_writer_mode.compare_exchange_strong(expected, static_cast<int>(c.mode),
                                        std::memory_order_relaxed);
  return static_cast<WriterMode>(
      expected == 0 ? static_cast<int>(c.mode) : expected);
}

}  // namespace internal

std::string WriterModeReason() {
  const WriterMode mode = CurrentWriterMode();
  internal::WriterModeChoice c = internal::ChooseWriterMode(CurrentRseqFacts());
  if (c.mode != mode) {
    // The environment changed after the choice (e.g. setenv); the cached
    // mode stays in force.
    return std::string(WriterModeName(mode)) +
           ": chosen at first use; current environment would choose " +
           c.reason;
  }
  return c.reason;
}

long long RseqAbortCount() {
#if defined(PERCPU_RSEQ_COUNT_ABORTS)
  // Relaxed: a counter incremented by the abort handlers' atomic RMW; it
  // publishes nothing.
  return static_cast<long long>(__atomic_load_n(&percpu_rseq_abort_count,
                                                __ATOMIC_RELAXED));
#else
  return -1;
#endif
}

}  // namespace percpu

#if defined(PERCPU_RSEQ_COUNT_ABORTS)
extern "C" {
// Incremented by the abort handlers of internal/rseq_asm.h.
unsigned long long percpu_rseq_abort_count = 0;
}
#endif
