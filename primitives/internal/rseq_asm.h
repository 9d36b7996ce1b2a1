// The restartable sequence (rseq) that adds to "this CPU's" 64-bit slot, as
// inline asm for x86_64 and little-endian aarch64, and its sched_getcpu()
// fallback. Internal: use primitives/cpu_slot.h.
//
// The sequence (docs/writers.md walks through it step by step):
//
//   restart:  rseq->rseq_cs = &descriptor          (arms the section)
//   start_ip: cpu = rseq->cpu_id                   (kernel-maintained)
//             if (cpu >= n) goto out               (no side effect yet)
//             addr = base + cpu * stride
//             tmp = *addr; tmp += v
//             *addr = tmp                          (the single commit store)
//   post_commit_ip:
//   out:      rseq->rseq_cs = 0                    (disarm, every exit)
//   ...
//   <RSEQ_SIG> abort_ip: goto restart              (kernel jumps here)
//
// The counter families' variant (RseqAddU64Present, RseqLatchAddPair) also
// tests the CPU's bit in a topology's present mask before the address
// computation (see "Present-mask bound" below).
//
// If the thread is preempted, migrated or signalled between start_ip and
// post_commit_ip, the kernel, on its way back to user space, clears
// rseq->rseq_cs and moves the instruction pointer to abort_ip; the sequence
// then starts over and reads the (possibly new) CPU id again. The commit is
// one store instruction: it either has not executed (restart, nothing
// written) or has executed on the CPU whose id was read, uninterrupted since
// the read. Hence every slot has at most one writer at any time -- the
// thread currently running on that CPU -- and the load/add/store needs no
// lock prefix, exactly like the kernel's this_cpu_add().
//
// The descriptor (struct rseq_cs: u32 version, u32 flags, u64 start_ip,
// u64 post_commit_offset, u64 abort_ip; 32-byte aligned) lives in section
// __rseq_cs. Its address is also listed in __rseq_cs_ptr_array, and the early
// exit in __rseq_exit_point_array, the conventions debuggers use to find
// rseq sections. Each inlined copy of the asm gets its own descriptor; the
// "?" section flag puts the descriptor (and the x86 abort stub) in the same
// COMDAT group as the function that contains the asm, so the linker discards
// them together with a discarded duplicate of an inline function.
//
// The thread's struct rseq is glibc's registration (glibc >= 2.35 registers
// every thread and exports __rseq_offset/__rseq_size); this library never
// registers its own. This code must only run when CurrentWriterMode() is
// kRseq (see primitives/rseq.h); it is not model-checkable (inline asm and
// kernel restarts are outside the C++ memory model), see docs/writers.md.
#ifndef PERCPU_PRIMITIVES_INTERNAL_RSEQ_ASM_H_
#define PERCPU_PRIMITIVES_INTERNAL_RSEQ_ASM_H_

#include <cstddef>
#include <cstdint>

#include "primitives/internal/atomic.h"

#if !defined(PERCPU_NO_RSEQ) && !defined(PERCPU_MODEL_CHECK) && \
    defined(__linux__) &&                                          \
    (defined(__x86_64__) ||                                        \
     (defined(__aarch64__) && !defined(__AARCH64EB__)))
#if defined(__has_include)
#if __has_include(<sys/rseq.h>)
#include <sys/rseq.h>
#if defined(RSEQ_SIG)
#define PERCPU_HAVE_RSEQ_ASM 1
#endif
#endif
#endif
#endif
#if !defined(PERCPU_HAVE_RSEQ_ASM)
#define PERCPU_HAVE_RSEQ_ASM 0
#endif

#if !defined(PERCPU_MODEL_CHECK)
#include <sched.h>
#endif

// Test hooks (x86_64 only, like librseq's RSEQ_INJECT_ASM): asm text placed
// between the slot load and the commit store, extra clobbers for it, and asm
// text run on every abort before the restart. Empty in every real build;
// only rseq_inject_test.cc defines them, to widen the window and count
// kernel restarts.
#if !defined(PERCPU_RSEQ_INJECT_ASM)
#define PERCPU_RSEQ_INJECT_ASM ""
#define PERCPU_RSEQ_INJECT_CLOBBERS
#define PERCPU_RSEQ_INJECT_ABORT ""
#endif

// Restart counting (a whole-build flag, like PERCPU_NO_RSEQ: every copy of
// the sequences must agree): with -DPERCPU_RSEQ_COUNT_ABORTS every abort
// handler of this file's sequences (x86_64 and aarch64) atomically
// increments percpu_rseq_abort_count (defined in rseq.cc, read through
// RseqAbortCount() of primitives/rseq.h) before restarting. The increment
// runs outside the critical section (the kernel cleared rseq_cs when it
// aborted), so it changes nothing the sequence guarantees. The VM lane
// (docs/vm_lane.md) builds with it to report how often the kernel restarted
// the real sequences.
#if defined(PERCPU_RSEQ_COUNT_ABORTS)
// Default visibility, reached through the GOT: the counter lives in rseq.cc
// and the sequences may be inlined into other shared objects (Bazel links
// test dependencies as shared libraries).
extern "C" unsigned long long percpu_rseq_abort_count;
// Scratch: output registers that the restart rewrites anyway.
#define PERCPU_RSEQ_X86_COUNT_ABORT(reg)                        \
  "movq percpu_rseq_abort_count@GOTPCREL(%%rip), " reg "\n\t" \
  "lock incq (" reg ")\n\t"
#define PERCPU_RSEQ_A64_COUNT_ABORT(addr, val, st)                \
  "adrp " addr ", :got:percpu_rseq_abort_count\n\t"              \
  "ldr " addr ", [" addr ", :got_lo12:percpu_rseq_abort_count]\n\t" \
  "66:\n\t"                                                       \
  "ldxr " val ", [" addr "]\n\t"                                   \
  "add " val ", " val ", #1\n\t"                                   \
  "stxr " st ", " val ", [" addr "]\n\t"                           \
  "cbnz " st ", 66b\n\t"
#else
#define PERCPU_RSEQ_X86_COUNT_ABORT(reg) ""
#define PERCPU_RSEQ_A64_COUNT_ABORT(addr, val, st) ""
#endif

namespace percpu {
namespace internal {

// Field offsets of the kernel's struct rseq (include/uapi/linux/rseq.h).
inline constexpr int kRseqCpuIdOffset = 4;  // u32 cpu_id
inline constexpr int kRseqCsOffset = 8;     // u64 rseq_cs

// Slot `cpu` of a CPU-major array: base + cpu * stride bytes.
inline Atomic<uint64_t>* SlotAt(uintptr_t base, size_t stride, uint32_t cpu) {
  return reinterpret_cast<Atomic<uint64_t>*>(base + size_t{cpu} * stride);
}

#if PERCPU_HAVE_RSEQ_ASM

// Disarming. Every sequence below ends (commit or early exit) with the
// store rseq->rseq_cs = 0. Without it rseq_cs keeps pointing at this
// copy's descriptor after the section; if the code containing it is
// unmapped (a dlopen()ed library that was dlclose()d), the kernel reads the
// unmapped descriptor at the thread's next preemption and kills the process
// with SIGSEGV (si_code SI_KERNEL). With it the kernel only ever sees
// rseq_cs != 0 while the thread is inside or just leaving a section whose
// code is mapped (the caller is running it). One plain store, no fence: the
// kernel reads rseq_cs on this thread's return to user space, which is
// ordered with this thread's own stores.
//
// Only code that can be unmapped needs the disarming store. Code of the
// main executable never is, so on x86_64 a translation unit compiled for an
// executable (-fPIE, which defines __PIE__, or without -fPIC) leaves
// rseq_cs armed after the section, as librseq always does: the kernel then
// reads the still-mapped descriptor at the thread's next preemption or
// signal, finds the instruction pointer outside the section and clears
// rseq_cs itself. Such a copy must never end up in a shared object, and
// the linker enforces it: instead of the store, the sequence emits one word
// ".long __rseq_offset - ." (a PC-relative relocation against glibc's
// symbol, in section __rseq_exe_only), which ld links into executables
// (PIE, non-PIE, static) but refuses in a shared object ("relocation
// R_X86_64_PC32 against symbol `__rseq_offset' can not be used when making
// a shared object"), whatever the compiler's code generation flags. Copies
// compiled with -fPIC (everything Bazel links into shared libraries, the
// dlopen()ed plugin of rseq_dlclose_test) keep the store. aarch64 always
// keeps it: its linker treats a PIE like a shared object for this
// relocation, so the guard would break PIE executables. The store costs
// about 0.15x of librseq's add time (docs/writers.md "The add's cost").
// Define PERCPU_RSEQ_ALWAYS_DISARM to keep it everywhere.
#if defined(__x86_64__) && !defined(PERCPU_RSEQ_ALWAYS_DISARM) && \
    !(defined(__PIC__) && !defined(__PIE__))
#define PERCPU_RSEQ_DISARM 0
#define PERCPU_RSEQ_X86_DISARM          \
  ".pushsection __rseq_exe_only, \"a?\"\n\t" \
  ".balign 4\n\t"                       \
  ".long __rseq_offset - .\n\t"         \
  ".popsection\n\t"
#else
#define PERCPU_RSEQ_DISARM 1
#define PERCPU_RSEQ_X86_DISARM "movq $0, %%fs:8(%[off])\n\t"
#endif
#define PERCPU_RSEQ_A64_DISARM "str xzr, [%[rseq], #8]\n\t"
// aarch64: (re)start at 0: by arming rseq->rseq_cs with the descriptor
// (through %[t]), then label 1, the section's start_ip.
#define PERCPU_RSEQ_A64_ARM_AT_T              \
  "0:\n\t"                                    \
  "adrp %[t], 3b\n\t"                         \
  "add %[t], %[t], :lo12:3b\n\t"              \
  "str %[t], [%[rseq], #8]\n\t"               \
  "1:\n\t"
//
// Present-mask bound (RseqAddU64Present, RseqLatchAddPair): the section
// also tests the CPU's bit in a topology's present-mask words (bit c of
// word c / 64) and leaves with nothing written when it is clear, returning
// kRseqNotPresent. Readers visit exactly the present CPUs, so an rseq add
// can never land in a slot readers do not look at; a kAbsent event clears
// the bit and then runs membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ)
// (Topology), which aborts every section that may have tested the old bit,
// before it folds the slot (docs/fold_and_hotplug.md).
// Pieces every sequence below shares (labels: 1 start, 2 post-commit, 3
// the descriptor, 4 abort handler):
//   the descriptor, struct rseq_cs {version 0, flags 0, start_ip,
//   post_commit_offset, abort_ip}, 32-byte aligned, and its entry in
//   __rseq_cs_ptr_array (as librseq does, for tools that list sections);
#define PERCPU_RSEQ_DESCRIPTOR                      \
  ".pushsection __rseq_cs, \"aw?\"\n\t"            \
  ".balign 32\n\t"                                 \
  "3:\n\t"                                         \
  ".long 0, 0\n\t"                                 \
  ".quad 1f, (2f - 1f), 4f\n\t"                    \
  ".popsection\n\t"                                \
  ".pushsection __rseq_cs_ptr_array, \"aw?\"\n\t" \
  ".quad 3b\n\t"                                   \
  ".popsection\n\t"
//   the (start, exit) pairs of the section's exits other than the commit,
//   in __rseq_exit_point_array;
#define PERCPU_RSEQ_EXIT_POINTS(pairs)                   \
  ".pushsection __rseq_exit_point_array, \"aw?\"\n\t" \
  pairs ".popsection\n\t"
//   on x86_64, the abort handler's section and the 4-byte signature the
//   kernel checks just before abort_ip (RSEQ_SIG inside a ud1, as glibc's
//   and librseq's), followed by label 4 at the use.
#define PERCPU_RSEQ_X86_FAILURE_SIG         \
  ".pushsection __rseq_failure, \"ax?\"\n\t" \
  ".byte 0x0f, 0xb9, 0x3d\n\t"             \
  ".long 0x53053053\n\t"

inline constexpr uint32_t kRseqNotPresent = ~uint32_t{0};

// Adds v to slot[cpu] (slot = base + cpu * stride) for the CPU this thread
// runs on, inside a restartable sequence. Returns the CPU id used; a value
// >= n means the id was out of range (or rseq is not registered for this
// thread: cpu_id is then (u32)-1 or (u32)-2) and NOTHING was added.
// Precondition: CurrentWriterMode() == kRseq; every writer of these slots
// uses this function (never an atomic RMW at the same time).
inline uint32_t RseqAddU64(uintptr_t base, size_t stride, uint32_t n,
                           uint64_t v) {
  uint32_t cpu;
  uint64_t tmp;
  uintptr_t addr;
#if defined(__x86_64__)
  // The rseq area is at %fs:__rseq_offset (the thread pointer is %fs base).
  const intptr_t off = __rseq_offset;
  __asm__ __volatile__(
      PERCPU_RSEQ_DESCRIPTOR
      PERCPU_RSEQ_EXIT_POINTS(".quad 1f, 5f\n\t")
      // restart: rseq->rseq_cs = &descriptor.
      "0:\n\t"
      "leaq 3b(%%rip), %[tmp]\n\t"
      "movq %[tmp], %%fs:8(%[off])\n\t"
      // start_ip: cpu = rseq->cpu_id; bounds check before any side effect.
      "1:\n\t"
      "movl %%fs:4(%[off]), %k[cpu]\n\t"
      "cmpl %k[n], %k[cpu]\n\t"
      "jae 5f\n\t"
      "movl %k[cpu], %k[addr]\n\t"
      "imulq %[stride], %[addr]\n\t"
      "addq %[base], %[addr]\n\t"
      "movq (%[addr]), %[tmp]\n\t"
      "addq %[v], %[tmp]\n\t"
      PERCPU_RSEQ_INJECT_ASM
      // Commit: the single store.
      "movq %[tmp], (%[addr])\n\t"
      // post_commit_ip.
      "2:\n\t"
      // Abort handler, preceded by the signature the kernel checks
      // (bytes 0f b9 3d make it decode as "ud1 sig(%rip), %edi").
      PERCPU_RSEQ_X86_FAILURE_SIG
      "4:\n\t"
      PERCPU_RSEQ_INJECT_ABORT
      PERCPU_RSEQ_X86_COUNT_ABORT("%[tmp]")
      "jmp 0b\n\t"
      ".popsection\n\t"
      // Every exit disarms the section: rseq_cs = 0 (issue 12 item 3; see
      // "Disarming" above).
      "5:\n\t"
      PERCPU_RSEQ_X86_DISARM
      : [cpu] "=&r"(cpu), [tmp] "=&r"(tmp), [addr] "=&r"(addr)
      // stride and v may be immediates ("e": sign-extended 32 bits): a
      // constant stride or delta then costs no register and no mov
      // (imulq $imm, %reg and addq $imm, %reg).
      : [off] "r"(off), [base] "r"(base), [stride] "re"(stride), [n] "r"(n),
        [v] "re"(v)
      : "memory", "cc" PERCPU_RSEQ_INJECT_CLOBBERS);
  static_assert(RSEQ_SIG == 0x53053053, "x86 rseq signature");
#elif defined(__aarch64__)
  char* const rseq =
      static_cast<char*>(__builtin_thread_pointer()) + __rseq_offset;
  __asm__ __volatile__(
      PERCPU_RSEQ_DESCRIPTOR
      PERCPU_RSEQ_EXIT_POINTS(".quad 1f, 5f\n\t")
      "0:\n\t"
      "adrp %[tmp], 3b\n\t"
      "add %[tmp], %[tmp], :lo12:3b\n\t"
      "str %[tmp], [%[rseq], #8]\n\t"
      "1:\n\t"
      "ldr %w[cpu], [%[rseq], #4]\n\t"
      "cmp %w[cpu], %w[n]\n\t"
      "b.hs 5f\n\t"
      // The 32-bit load zero-extended cpu into the x register.
      "madd %[addr], %x[cpu], %[stride], %[base]\n\t"
      "ldr %[tmp], [%[addr]]\n\t"
      "add %[tmp], %[tmp], %[v]\n\t"
      "str %[tmp], [%[addr]]\n\t"
      "2:\n\t"
      "b 5f\n\t"
      // Signature (BRK #0x45e0), then the abort handler.
      ".inst 0xd428bc00\n\t"
      "4:\n\t"
      PERCPU_RSEQ_A64_COUNT_ABORT("%[addr]", "%[tmp]", "%w[cpu]")
      "b 0b\n\t"
      // Every exit disarms the section: rseq_cs = 0.
      "5:\n\t"
      PERCPU_RSEQ_A64_DISARM
      : [cpu] "=&r"(cpu), [tmp] "=&r"(tmp), [addr] "=&r"(addr)
      : [rseq] "r"(rseq), [base] "r"(base), [stride] "r"(stride), [n] "r"(n),
        [v] "r"(v)
      : "memory", "cc");
  static_assert(RSEQ_SIG == 0xd428bc00, "aarch64 little-endian rseq signature");
#endif
  return cpu;
}

// The shortest add, for arrays with a power-of-two stride known at compile
// time (CpuSlotCounter: one 64-byte line per CPU). Adds v to the u64 at
// base + (cpu << kShift) for the CPU this thread runs on and returns true;
// returns false with nothing written when cpu_id >= n (an id beyond the
// array, or (u32)-1 / (u32)-2 when rseq is not registered for this thread).
// n = 0 therefore never writes: CpuSlotCounter passes 0 when the process's
// writer mode is not kRseq, so the mode test and the bound check are one
// compare. Differences from RseqAddU64, each one instruction or more off the
// hot path (docs/writers.md "The add's cost"):
//   * asm goto: the out-of-range exit jumps straight to the caller's slow
//     path (disarming first), so the caller does not compare a returned id;
//   * n and base may be memory operands ("rm", gcc): a caller whose members
//     the "memory" clobber forces to reload folds the load into cmp / add;
//   * the address is a shift and an add (no imul, no zero-extending mov: the
//     32-bit load of cpu_id already zero-extends);
//   * x86_64: the commit is one read-modify-write instruction,
//     "addq v, (addr)" without a lock prefix -- like the kernel's
//     this_cpu_add(). It is one instruction, so the kernel restarts the
//     section either before it (nothing written) or after it (committed);
//     its store is a single aligned 64-bit store, so readers on other CPUs
//     see the old or the new value, never a torn one (the load half reads
//     this slot's only writer's last store).
//   * aarch64: the abort stub lives in __rseq_failure as on x86_64; the
//     out-of-range exit stays inline (conditional branches reach only
//     +-1 MiB), so the fast path keeps one "b" over it.
// Precondition: as RseqAddU64 (and n > 0 only in mode kRseq).
// "rm" lets gcc fold a member's reload into the instruction; clang always
// picks the memory alternative, spilling a value it holds in a register.
// The x86_64 end of the two "try" adds (RseqTryAddU64Shift,
// RseqTryAddU64Present): the one-instruction commit of v at %[t], the
// abort handler (restart at 0:), and the exit at 6: (cpu out of range or
// not present) that disarms and jumps to the caller's slow path; then the
// disarm after the commit (issue 12 item 3).
#define PERCPU_RSEQ_X86_TRY_COMMIT_AND_EXITS                         \
  /* Commit: one instruction, its store is the only side effect. */ \
  "addq %[v], (%[t])\n\t"                                            \
  /* post_commit_ip. */                                              \
  "2:\n\t" PERCPU_RSEQ_X86_FAILURE_SIG "4:\n\t"                      \
  PERCPU_RSEQ_INJECT_ABORT PERCPU_RSEQ_X86_COUNT_ABORT("%[t]")       \
  "jmp 0b\n\t"                                                       \
  "6:\n\t" PERCPU_RSEQ_X86_DISARM "jmp %l[out]\n\t"                  \
  ".popsection\n\t" PERCPU_RSEQ_X86_DISARM
#if defined(__clang__)
#define PERCPU_RSEQ_RM_(x) "r"(x)
#else
#define PERCPU_RSEQ_RM_(x) "rm"(x)
#endif
template <int kShift>
[[gnu::always_inline]] inline bool RseqTryAddU64Shift(const uintptr_t& base,
                                                      const uint32_t& n,
                                                      uint64_t v) {
  static_assert(kShift >= 3 && kShift <= 16, "u64 slots, stride <= 64 KiB");
  uint64_t t;
#if defined(__x86_64__)
  const intptr_t off = __rseq_offset;
  // volatile spelled out: gcc 12 deletes an asm goto with outputs that are
  // unused after it, although asm goto is documented as implicitly volatile.
  __asm__ __volatile__ goto(
      PERCPU_RSEQ_DESCRIPTOR
      PERCPU_RSEQ_EXIT_POINTS(".quad 1f, 6f\n\t")
      // restart: rseq->rseq_cs = &descriptor.
      "0:\n\t"
      "leaq 3b(%%rip), %[t]\n\t"
      "movq %[t], %%fs:8(%[off])\n\t"
      // start_ip: cpu = rseq->cpu_id (movl zero-extends into %[t]).
      "1:\n\t"
      "movl %%fs:4(%[off]), %k[t]\n\t"
      "cmpl %[n], %k[t]\n\t"
      "jae 6f\n\t"
      "shlq %[shift], %[t]\n\t"
      "addq %[base], %[t]\n\t"
      PERCPU_RSEQ_INJECT_ASM
      PERCPU_RSEQ_X86_TRY_COMMIT_AND_EXITS
      : [t] "=&r"(t)
      : [off] "r"(off), [base] PERCPU_RSEQ_RM_(base), [n] PERCPU_RSEQ_RM_(n),
        [v] "er"(v),
        [shift] "J"(kShift)
      : "memory", "cc" PERCPU_RSEQ_INJECT_CLOBBERS
      : out);
  static_assert(RSEQ_SIG == 0x53053053, "x86 rseq signature");
#elif defined(__aarch64__)
  uint64_t u;
  uint32_t s;
  char* const rseq =
      static_cast<char*>(__builtin_thread_pointer()) + __rseq_offset;
  // volatile spelled out: gcc 12 deletes an asm goto with outputs that are
  // unused after it, although asm goto is documented as implicitly volatile.
  __asm__ __volatile__ goto(
      PERCPU_RSEQ_DESCRIPTOR
      PERCPU_RSEQ_EXIT_POINTS(".quad 1f, 6f\n\t")
      PERCPU_RSEQ_A64_ARM_AT_T
      // The 32-bit load zero-extends cpu into the x register.
      "ldr %w[t], [%[rseq], #4]\n\t"
      "cmp %w[t], %w[n]\n\t"
      "b.hs 6f\n\t"
      "add %[t], %[base], %[t], lsl %[shift]\n\t"
      "ldr %[u], [%[t]]\n\t"
      "add %[u], %[u], %[v]\n\t"
      // Commit: the single store.
      "str %[u], [%[t]]\n\t"
      "2:\n\t"
      ".pushsection __rseq_failure, \"ax?\"\n\t"
      ".balign 4\n\t"
      // Signature (BRK #0x45e0), then the abort handler.
      ".inst 0xd428bc00\n\t"
      "4:\n\t"
      PERCPU_RSEQ_A64_COUNT_ABORT("%[t]", "%[u]", "%w[s]")
      "b 0b\n\t"
      ".popsection\n\t"
      // Disarm (issue 12 item 3).
      PERCPU_RSEQ_A64_DISARM
      "b 7f\n\t"
      // Out of range / not present: inline, because b.hs and tbz reach only
      // +-1 MiB / +-32 KiB and a separate section may be linked farther
      // away (the abort stub above is entered by the kernel and left with
      // an unconditional b, +-128 MiB).
      "6:\n\t"
      PERCPU_RSEQ_A64_DISARM
      "b %l[out]\n\t"
      "7:\n\t"
      : [t] "=&r"(t), [u] "=&r"(u), [s] "=&r"(s)
      : [rseq] "r"(rseq), [base] "r"(base), [n] "r"(n), [v] "rI"(v),
        [shift] "i"(kShift)
      : "memory", "cc"
      : out);
  (void)s;
  static_assert(RSEQ_SIG == 0xd428bc00, "aarch64 little-endian rseq signature");
#endif
  (void)t;
  return true;
out:
  return false;
}

// As RseqAddU64, but only if bit cpu of mask (present-mask words, at least
// n bits) is set; returns kRseqNotPresent (>= n) and writes nothing when it
// is clear. Precondition as RseqAddU64.
inline uint32_t RseqAddU64Present(uintptr_t base, size_t stride, uint32_t n,
                                  const Atomic<uint64_t>* mask, uint64_t v) {
  uint32_t cpu;
  uint64_t tmp;
  uintptr_t addr;
#if defined(__x86_64__)
  const intptr_t off = __rseq_offset;
  __asm__ __volatile__(
      PERCPU_RSEQ_DESCRIPTOR
      PERCPU_RSEQ_EXIT_POINTS(".quad 1f, 5f\n\t" ".quad 1f, 6f\n\t")
      "0:\n\t"
      "leaq 3b(%%rip), %[tmp]\n\t"
      "movq %[tmp], %%fs:8(%[off])\n\t"
      "1:\n\t"
      "movl %%fs:4(%[off]), %k[cpu]\n\t"
      "cmpl %k[n], %k[cpu]\n\t"
      "jae 5f\n\t"
      // Present bit: word cpu / 64, bit cpu % 64 (bt masks the count).
      "movl %k[cpu], %k[addr]\n\t"
      "shrl $6, %k[addr]\n\t"
      "movq (%[mask],%[addr],8), %[tmp]\n\t"
      "btq %q[cpu], %[tmp]\n\t"
      "jnc 6f\n\t"
      "movl %k[cpu], %k[addr]\n\t"
      "imulq %[stride], %[addr]\n\t"
      "addq %[base], %[addr]\n\t"
      "movq (%[addr]), %[tmp]\n\t"
      "addq %[v], %[tmp]\n\t"
      PERCPU_RSEQ_INJECT_ASM
      "movq %[tmp], (%[addr])\n\t"
      "2:\n\t"
      PERCPU_RSEQ_X86_FAILURE_SIG
      "4:\n\t"
      PERCPU_RSEQ_INJECT_ABORT
      PERCPU_RSEQ_X86_COUNT_ABORT("%[tmp]")
      "jmp 0b\n\t"
      // Not present: report it (out of line, off the hot path).
      "6:\n\t"
      "movl $-1, %k[cpu]\n\t"
      "jmp 5f\n\t"
      ".popsection\n\t"
      "5:\n\t"
      PERCPU_RSEQ_X86_DISARM
      : [cpu] "=&r"(cpu), [tmp] "=&r"(tmp), [addr] "=&r"(addr)
      : [off] "r"(off), [base] "r"(base), [stride] "r"(stride), [n] "r"(n),
        [mask] "r"(mask), [v] "r"(v)
      : "memory", "cc" PERCPU_RSEQ_INJECT_CLOBBERS);
#elif defined(__aarch64__)
  char* const rseq =
      static_cast<char*>(__builtin_thread_pointer()) + __rseq_offset;
  __asm__ __volatile__(
      PERCPU_RSEQ_DESCRIPTOR
      PERCPU_RSEQ_EXIT_POINTS(".quad 1f, 5f\n\t" ".quad 1f, 6f\n\t")
      "0:\n\t"
      "adrp %[tmp], 3b\n\t"
      "add %[tmp], %[tmp], :lo12:3b\n\t"
      "str %[tmp], [%[rseq], #8]\n\t"
      "1:\n\t"
      "ldr %w[cpu], [%[rseq], #4]\n\t"
      "cmp %w[cpu], %w[n]\n\t"
      "b.hs 5f\n\t"
      // Present bit: word cpu / 64, bit cpu % 64 (lsr uses the low 6 bits).
      "lsr %[addr], %x[cpu], #6\n\t"
      "ldr %[tmp], [%[mask], %[addr], lsl #3]\n\t"
      "lsr %[tmp], %[tmp], %x[cpu]\n\t"
      "tbz %[tmp], #0, 6f\n\t"
      "madd %[addr], %x[cpu], %[stride], %[base]\n\t"
      "ldr %[tmp], [%[addr]]\n\t"
      "add %[tmp], %[tmp], %[v]\n\t"
      "str %[tmp], [%[addr]]\n\t"
      "2:\n\t"
      "b 5f\n\t"
      ".inst 0xd428bc00\n\t"
      "4:\n\t"
      PERCPU_RSEQ_A64_COUNT_ABORT("%[addr]", "%[tmp]", "%w[cpu]")
      "b 0b\n\t"
      "6:\n\t"
      "mov %w[cpu], #-1\n\t"
      "5:\n\t"
      PERCPU_RSEQ_A64_DISARM
      : [cpu] "=&r"(cpu), [tmp] "=&r"(tmp), [addr] "=&r"(addr)
      : [rseq] "r"(rseq), [base] "r"(base), [stride] "r"(stride), [n] "r"(n),
        [mask] "r"(mask), [v] "r"(v)
      : "memory", "cc");
#endif
  return cpu;
}

// As RseqAddU64Present, with RseqTryAddU64Shift's exits: true when v was
// added to base + cpu * stride; false, with nothing written, when cpu_id
// >= n or the CPU's present bit is clear (the caller's slow path: the
// overflow counter, or the fallback writer when it passes n = 0 because
// the object does not use rseq). asm goto, "rm" n, and on x86_64 the
// one-instruction commit "addq v, (addr)" (see RseqTryAddU64Shift).
// Precondition: as RseqAddU64Present (n > 0 only in mode kRseq).
[[gnu::always_inline]] inline bool RseqTryAddU64Present(
    uintptr_t base, size_t stride, const uint32_t& n,
    const Atomic<uint64_t>* mask, uint64_t v) {
  uint64_t t, a;
#if defined(__x86_64__)
  const intptr_t off = __rseq_offset;
  __asm__ __volatile__ goto(
      PERCPU_RSEQ_DESCRIPTOR
      PERCPU_RSEQ_EXIT_POINTS(".quad 1f, 6f\n\t")
      "0:\n\t"
      "leaq 3b(%%rip), %[t]\n\t"
      "movq %[t], %%fs:8(%[off])\n\t"
      "1:\n\t"
      "movl %%fs:4(%[off]), %k[t]\n\t"
      "cmpl %[n], %k[t]\n\t"
      "jae 6f\n\t"
      // Present bit: word cpu / 64, bit cpu % 64 (bt masks the count).
      "movl %k[t], %k[a]\n\t"
      "shrl $6, %k[a]\n\t"
      "movq (%[mask],%[a],8), %[a]\n\t"
      "btq %[t], %[a]\n\t"
      "jnc 6f\n\t"
      "imulq %[stride], %[t]\n\t"
      "addq %[base], %[t]\n\t"
      PERCPU_RSEQ_INJECT_ASM
      PERCPU_RSEQ_X86_TRY_COMMIT_AND_EXITS
      : [t] "=&r"(t), [a] "=&r"(a)
      : [off] "r"(off), [base] "r"(base), [stride] "r"(stride),
        [n] PERCPU_RSEQ_RM_(n), [mask] "r"(mask), [v] "er"(v)
      : "memory", "cc" PERCPU_RSEQ_INJECT_CLOBBERS
      : out);
#elif defined(__aarch64__)
  uint32_t s;
  char* const rseq =
      static_cast<char*>(__builtin_thread_pointer()) + __rseq_offset;
  __asm__ __volatile__ goto(
      PERCPU_RSEQ_DESCRIPTOR
      PERCPU_RSEQ_EXIT_POINTS(".quad 1f, 6f\n\t")
      PERCPU_RSEQ_A64_ARM_AT_T
      "ldr %w[t], [%[rseq], #4]\n\t"
      "cmp %w[t], %w[n]\n\t"
      "b.hs 6f\n\t"
      // Present bit: word cpu / 64, bit cpu % 64 (lsr uses the low 6 bits).
      "lsr %[a], %[t], #6\n\t"
      "ldr %[a], [%[mask], %[a], lsl #3]\n\t"
      "lsr %[a], %[a], %[t]\n\t"
      "tbz %[a], #0, 6f\n\t"
      "madd %[t], %[t], %[stride], %[base]\n\t"
      "ldr %[a], [%[t]]\n\t"
      "add %[a], %[a], %[v]\n\t"
      "str %[a], [%[t]]\n\t"
      "2:\n\t"
      ".pushsection __rseq_failure, \"ax?\"\n\t"
      ".balign 4\n\t"
      ".inst 0xd428bc00\n\t"
      "4:\n\t"
      PERCPU_RSEQ_A64_COUNT_ABORT("%[t]", "%[a]", "%w[s]")
      "b 0b\n\t"
      ".popsection\n\t"
      // Disarm (issue 12 item 3).
      PERCPU_RSEQ_A64_DISARM
      "b 7f\n\t"
      // Out of range / not present: inline, because b.hs and tbz reach only
      // +-1 MiB / +-32 KiB and a separate section may be linked farther
      // away (the abort stub above is entered by the kernel and left with
      // an unconditional b, +-128 MiB).
      "6:\n\t"
      PERCPU_RSEQ_A64_DISARM
      "b %l[out]\n\t"
      "7:\n\t"
      : [t] "=&r"(t), [a] "=&r"(a), [s] "=&r"(s)
      : [rseq] "r"(rseq), [base] "r"(base), [stride] "r"(stride),
        [n] "r"(n), [mask] "r"(mask), [v] "rI"(v)
      : "memory", "cc"
      : out);
  (void)s;
#endif
  (void)t;
  (void)a;
  return true;
out:
  return false;
}

#if defined(__x86_64__)
#define PERCPU_HAVE_RSEQ_LATCH_ASM 1

// The latch ("double buffer") add of a (packets, bytes) pair, for
// primitives/percpu_pair.h. The slot of CPU c is at base + c * stride:
//   +0  u64 version    (its low bit selects the active copy)
//   +16 u64 copy[0].packets, +24 copy[0].bytes
//   +32 u64 copy[1].packets, +40 copy[1].bytes
// The sequence reads version v, writes copy[(v+1)&1] = copy[v&1] + (p, b)
// (speculative stores to the INACTIVE copy: idempotent on restart, and a
// reader of that copy read an older version and will retry), then commits
// with the single store version = v + 1. Ordering: the data stores must not
// become visible before the previous version store (a reader of version
// v-1 reads this very copy and must then see version >= v). x86-TSO never
// reorders stores with older stores, and every earlier commit to this slot
// was made on this CPU (single writer per slot), so program order plus the
// asm's "memory" clobber is the release fence; the commit store is a
// release store for the same reason. Returns the CPU id used; >= n means
// nothing was written. aarch64 has no version of this sequence (it would
// need a "dmb ishst" before the data stores and could not be tested under
// qemu): the pair uses its fallback there.
// The section also tests the CPU's present bit in mask (see "Present-mask
// bound" above): kRseqNotPresent and nothing written when clear.
inline uint32_t RseqLatchAddPair(uintptr_t base, size_t stride, uint32_t n,
                                 const Atomic<uint64_t>* mask,
                                 uint64_t packets, uint64_t bytes) {
  uint32_t cpu;
  uintptr_t addr;
  uint64_t ver, idx, t1, t2;
  const intptr_t off = __rseq_offset;
  __asm__ __volatile__(
      PERCPU_RSEQ_DESCRIPTOR
      PERCPU_RSEQ_EXIT_POINTS(".quad 1f, 5f\n\t" ".quad 1f, 6f\n\t")
      // restart: rseq->rseq_cs = &descriptor.
      "0:\n\t"
      "leaq 3b(%%rip), %[t1]\n\t"
      "movq %[t1], %%fs:8(%[off])\n\t"
      // start_ip: cpu id, bounds check before any store.
      "1:\n\t"
      "movl %%fs:4(%[off]), %k[cpu]\n\t"
      "cmpl %k[n], %k[cpu]\n\t"
      "jae 5f\n\t"
      "movl %k[cpu], %k[addr]\n\t"
      "shrl $6, %k[addr]\n\t"
      "movq (%[mask],%[addr],8), %[t1]\n\t"
      "btq %q[cpu], %[t1]\n\t"
      "jnc 6f\n\t"
      "movl %k[cpu], %k[addr]\n\t"
      "imulq %[stride], %[addr]\n\t"
      "addq %[base], %[addr]\n\t"
      // v = version; idx = 16 * (v & 1) = offset of the active copy - 16.
      "movq (%[addr]), %[ver]\n\t"
      "movq %[ver], %[idx]\n\t"
      "andq $1, %[idx]\n\t"
      "shlq $4, %[idx]\n\t"
      "movq 16(%[addr],%[idx]), %[t1]\n\t"
      "movq 24(%[addr],%[idx]), %[t2]\n\t"
      "addq %[p], %[t1]\n\t"
      "addq %[b], %[t2]\n\t"
      // The inactive copy: speculative stores (ordered after the previous
      // version store by TSO).
      "xorq $16, %[idx]\n\t"
      "movq %[t1], 16(%[addr],%[idx])\n\t"
      "movq %[t2], 24(%[addr],%[idx])\n\t"
      "addq $1, %[ver]\n\t"
      // Commit: the single store that publishes the new copy.
      "movq %[ver], (%[addr])\n\t"
      "2:\n\t"
      PERCPU_RSEQ_X86_FAILURE_SIG
      "4:\n\t"
      PERCPU_RSEQ_X86_COUNT_ABORT("%[t1]")
      "jmp 0b\n\t"
      "6:\n\t"
      "movl $-1, %k[cpu]\n\t"
      "jmp 5f\n\t"
      ".popsection\n\t"
      "5:\n\t"
      PERCPU_RSEQ_X86_DISARM
      : [cpu] "=&r"(cpu), [addr] "=&r"(addr), [ver] "=&r"(ver),
        [idx] "=&r"(idx), [t1] "=&r"(t1), [t2] "=&r"(t2)
      : [off] "r"(off), [base] "r"(base), [stride] "r"(stride), [n] "r"(n),
        [mask] "r"(mask), [p] "r"(packets), [b] "r"(bytes)
      : "memory", "cc");
  return cpu;
}
#endif  // __x86_64__

// The current thread's rseq cpu_id field as a signed value: >= 0 when the
// thread is registered, -1 (uninitialized) or -2 (registration failed).
// Precondition: __rseq_size > 0.
inline int32_t RseqCpuIdOfThisThread() {
  const char* const rseq =
      static_cast<const char*>(__builtin_thread_pointer()) + __rseq_offset;
  // The kernel updates this field; a volatile 32-bit load has single-copy
  // atomicity (the ABI's "READ_ONCE").
  return *reinterpret_cast<const volatile int32_t*>(rseq + kRseqCpuIdOffset);
}

#endif  // PERCPU_HAVE_RSEQ_ASM

#if !defined(PERCPU_MODEL_CHECK)
// Fallback: several threads may hit the same CPU's slot (sched_getcpu() is
// stale as soon as it returns), so the add must be an atomic RMW. Returns
// the CPU id used; a value >= n (including (u32)-1 when sched_getcpu fails)
// means nothing was added.
inline uint32_t FallbackAddU64(uintptr_t base, size_t stride, uint32_t n,
                               uint64_t v) {
  const uint32_t cpu = static_cast<uint32_t>(sched_getcpu());
  if (cpu >= n) return cpu;
  // Relaxed suffices: atomicity alone makes concurrent adds exact; readers
  // want no ordering with other data (a statistics counter).
  SlotAt(base, stride, cpu)->fetch_add(v, std::memory_order_relaxed);
  return cpu;
}
#endif

}  // namespace internal
}  // namespace percpu

#endif  // PERCPU_PRIMITIVES_INTERNAL_RSEQ_ASM_H_
