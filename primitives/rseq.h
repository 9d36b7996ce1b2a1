// WriterMode: how this process writes "this CPU's" slot of a per-CPU array,
// chosen once per process and queryable ("is per-CPU rseq mode active?").
//
//   kRseq                 glibc registered a restartable sequence area for
//                         every thread (glibc >= 2.35 on a kernel with rseq,
//                         x86_64 or little-endian aarch64). Each per-CPU add
//                         is a restartable load/add/store: the slot of CPU c
//                         has exactly one writer at any time (the thread
//                         running on c), no lock prefix.
//   kFallbackSchedGetcpu  everything else: no rseq support compiled in
//                         (other architectures such as i686 and armhf, or
//                         -DPERCPU_NO_RSEQ), glibc did not register rseq
//                         (__rseq_size == 0: old kernel, qemu-user, or the
//                         glibc.pthread.rseq=0 tunable), or the environment
//                         variable PERCPU_RSEQ=0 forces it. Each add is
//                         sched_getcpu() + an atomic fetch_add on the slot:
//                         several threads may hit one CPU's slot.
//
// Usage constraints:
//   * The mode is chosen on first use and never changes for the life of the
//     process. Every writer of a slot array must use the same mode: an rseq
//     plain store racing with a fallback fetch_add on one slot loses updates.
//     Only the functions of primitives/cpu_slot.h write per-CPU slots, and
//     they always use CurrentWriterMode(), so this holds by construction.
//   * CurrentWriterMode() is async-signal-safe once it has been called once
//     outside a signal handler (the first call reads the environment).
//
// Memory ordering: the cached mode is a relaxed atomic; the choice is
// idempotent and publishes no other data.
#ifndef PERCPU_PRIMITIVES_RSEQ_H_
#define PERCPU_PRIMITIVES_RSEQ_H_

#include <cstdint>
#include <string>

#include "primitives/internal/abi.h"
#include "primitives/internal/atomic.h"

namespace percpu {

enum class WriterMode : int {
  kRseq = 1,
  kFallbackSchedGetcpu = 2,
};

// "rseq" or "fallback-sched_getcpu".
const char* WriterModeName(WriterMode mode);

// The mode of this process (chosen on the first call, then cached).
// Defined below (inline: it is on every writer's hot path).
inline WriterMode CurrentWriterMode();

// A human-readable explanation of the choice, e.g.
// "rseq: glibc registration, __rseq_size=32, __rseq_offset=-160" or
// "fallback-sched_getcpu: __rseq_size is 0 (glibc did not register rseq: ...)".
std::string WriterModeReason();

// The environment facts the choice is based on, for tests and diagnostics.
struct RseqFacts {
  bool compiled_in = false;      // PERCPU_HAVE_RSEQ_ASM for this target
  unsigned rseq_size = 0;        // glibc's __rseq_size (0 if unknown)
  long rseq_offset = 0;          // glibc's __rseq_offset
  int32_t thread_cpu_id = -1;    // the calling thread's rseq cpu_id field
  const char* env = nullptr;     // getenv("PERCPU_RSEQ")
};
RseqFacts CurrentRseqFacts();

// How many times the kernel aborted (restarted) one of this library's rseq
// sections in this process so far, or -1 when the build does not count them.
// Counted only in builds with -DPERCPU_RSEQ_COUNT_ABORTS (a whole-build
// flag: each abort then does one atomic increment of a process-wide
// counter; the VM lane builds this way, see docs/vm_lane.md). Relaxed read:
// a diagnostic, exact once the writers are quiescent.
long long RseqAbortCount();

namespace internal {

struct WriterModeChoice {
  WriterMode mode;
  std::string reason;
};

// The pure decision (unit-tested on every input):
//   * not compiled in                          -> fallback
//   * env is "0", "off", "false" or "no"       -> fallback (forced)
//   * rseq_size < 20 (0: not registered)       -> fallback
//   * the calling thread's cpu_id < 0          -> fallback
//   * otherwise                                -> rseq
// 20 bytes = the fields this library uses (cpu_id_start, cpu_id, rseq_cs,
// flags): glibc 2.35-2.39 report 32, later versions report the kernel's
// feature size (20 or more) for the same 32-byte registration.
WriterModeChoice ChooseWriterMode(const RseqFacts& facts);

// 0 = not chosen yet, else static_cast<int>(WriterMode).
extern Atomic<int> g_writer_mode;
[[gnu::cold]] WriterMode InitWriterMode();

inline WriterMode LoadWriterMode() {
  // Relaxed suffices: the value is idempotent and publishes nothing else.
  const int m = g_writer_mode.load(std::memory_order_relaxed);
  if (__builtin_expect(m != 0, 1)) return static_cast<WriterMode>(m);
  return InitWriterMode();
}

}  // namespace internal

inline WriterMode CurrentWriterMode() { return internal::LoadWriterMode(); }

}  // namespace percpu

#endif  // PERCPU_PRIMITIVES_RSEQ_H_
