// The exploration engine: stateless DFS over RC11 execution graphs.
//
// Exploration order (see docs/verification.md for the argument): every
// consistent execution graph G (porf acyclic) has exactly one canonical
// linearisation of po U rf: repeatedly run the lowest-indexed thread whose
// next event has its rf source already placed. The DFS builds graphs in that
// order. At each step it may run the lowest runnable thread (a read picks any
// coherent, already-placed write; a write picks any coherent mo position) or,
// when that thread's next event is a read, defer it: the read is then
// constrained to read a write added later. So each graph is built once, and
// the only waste is deferrals that never get a suitable write (dead ends).
#include "internal/engine.h"

#include <cxxabi.h>
#include <fcntl.h>
#include <link.h>
#include <malloc.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>
#include <unwind.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <sstream>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <vector>

// AddressSanitizer: a checker thread's stack is heap memory used as a
// stack. Every switch is announced to ASan as a fiber switch
// (AsanStartSwitch/AsanFinishSwitch), so that its reset at a no-return call
// (a throw, FinishThread) clears the redzones of the right stack; and an
// abandoned thread's frames are dropped without returning, so StartThread
// unpoisons the whole stack before reusing it.
#if defined(__SANITIZE_ADDRESS__)
#define RL_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RL_ASAN 1
#endif
#endif
#ifdef RL_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#define AsanStartSwitch(save, bottom, size) \
  __sanitizer_start_switch_fiber(save, bottom, size)
#define AsanFinishSwitch(save, bottom, size) \
  __sanitizer_finish_switch_fiber(save, bottom, size)
#else
#define AsanStartSwitch(save, bottom, size) ((void)0)
#define AsanFinishSwitch(save, bottom, size) ((void)0)
#endif

#if defined(__x86_64__) && !defined(RL_NO_FRAME_MEMO)
// Frame memo for abandoned threads (see FramesInertFast). libgcc exports
// the FDE lookup its unwinder uses; no public header declares it on Linux.
#define RL_FRAME_MEMO 1
struct rl_eh_bases {
  uintptr_t tbase, dbase, func;
};
extern "C" void* _Unwind_Find_FDE(const void* pc, rl_eh_bases* bases);
#endif

// Context switching between checker threads. glibc's swapcontext saves the
// signal mask with a system call on every switch; on x86-64 a few
// instructions suffice (callee-saved registers, MXCSR and x87 control word).
#if defined(__x86_64__) && !defined(RL_USE_UCONTEXT)
#define RL_FAST_SWITCH 1
extern "C" void rl_switch_context(void** save_sp, void* load_sp);
asm(R"(
.text
.globl rl_switch_context
.type rl_switch_context,@function
rl_switch_context:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
.size rl_switch_context,.-rl_switch_context
.section .note.GNU-stack,"",@progbits
.text
)");
#endif

namespace rl {

const char* test_result_str(test_result_e r) {
  switch (r) {
    case test_result_success:
      return "SUCCESS";
    case test_result_until_condition_hit:
      return "UNTIL CONDITION HIT";
    case test_result_inconsistent_test_suite:
      return "INCONSISTENT TEST SUITE";
    case test_result_user_assert_failed:
      return "USER ASSERT FAILED";
    case test_result_user_invariant_failed:
      return "USER INVARIANT FAILED";
    case test_result_data_race:
      return "DATA RACE";
    case test_result_access_to_freed_memory:
      return "ACCESS TO FREED MEMORY";
    case test_result_double_free:
      return "DOUBLE FREE";
    case test_result_memory_leak:
      return "MEMORY LEAK";
    case test_result_resource_leak:
      return "RESOURCE LEAK";
    case test_result_unitialized_access:
      return "ACCESS TO UNINITIALIZED VARIABLE";
    case test_result_deadlock:
      return "DEADLOCK";
    case test_result_livelock:
      return "LIVELOCK";
    case test_result_recursion_on_nonrecursive_mutex:
      return "RECURSION ON NON-RECURSIVE MUTEX";
    case test_result_unlocking_mutex_wo_ownership:
      return "UNLOCKING MUTEX W/O OWNERSHIP";
    case test_result_destroying_owned_mutex:
      return "DESTROYING OWNED MUTEX";
    case test_result_double_initialization_of_mutex:
      return "DOUBLE INITIALIZATION OF MUTEX";
    case test_result_usage_of_non_initialized_mutex:
      return "USAGE OF NON INITIALIZED MUTEX";
    case test_result_mutex_write_to_read_upgrade:
      return "ATTEMPT TO UPGRADE EXCLUSIVE MUTEX OWNERSHIP TO SHARED";
    case test_result_mutex_read_to_write_upgrade:
      return "ATTEMPT TO UPGRADE SHARED MUTEX OWNERSHIP TO EXCLUSIVE";
    case test_result_double_initialization_of_condvar:
      return "DOUBLE INITIALIZATION OF CONDITION VARIABLE";
    case test_result_usage_of_non_initialized_condvar:
      return "USAGE OF NON INITIALIZED CONDITION VARIABLE";
    case test_result_double_initialization_of_semaphore:
      return "DOUBLE INITIALIZATION OF SEMAPHORE";
    case test_result_usage_of_non_initialized_semaphore:
      return "USAGE OF NON INITIALIZED SEMAPHORE";
    case test_result_double_initialization_of_event:
      return "DOUBLE INITIALIZATION OF EVENT";
    case test_result_usage_of_non_initialized_event:
      return "USAGE OF NON INITIALIZED EVENT";
    case test_result_unhandled_exception:
      return "UNHANDLED EXCEPTION";
    case test_result_execution_depth_limit:
      return "EXECUTION DEPTH LIMIT";
  }
  return "UNKNOWN";
}

namespace detail {

std::string Demangle(const char* name) {
  int status = 0;
  char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string s = (status == 0 && d != nullptr) ? d : name;
  std::free(d);
  return s;
}

namespace {

// Threads per suite, including the main (before/after) thread. Like
// Relacy's, the maximum is fixed when the checker is built: RL_MAX_THREADS
// (default 16, i.e. 15 test threads; //verification:relacy_wide is built
// with 64). Clocks are fixed arrays of that size so that events stay
// trivially copyable: a side array for wider suites measured +17%
// instructions on seqcount_checker_test, so the width is a build choice.
#ifndef RL_MAX_THREADS
#define RL_MAX_THREADS 16
#endif
constexpr int kMaxThreads = RL_MAX_THREADS;
static_assert(kMaxThreads >= 2, "RL_MAX_THREADS counts the main thread too");
constexpr size_t kStackSize = 256 * 1024;

// Clock entries are joined in chunks of kClockChunk (a fixed-count inner
// loop the compiler vectorizes); storage is rounded up to whole chunks.
constexpr int kClockChunk = 4;
constexpr int kClockSlots =
    (kMaxThreads + kClockChunk - 1) / kClockChunk * kClockChunk;

// Entries in use: the running suite's threads (static and dynamic) plus
// main, rounded up to whole chunks (set by Run()), so a small suite does
// not pay for the largest: every join loops over this width only. Entries
// past a suite's threads stay 0 in every clock.
int g_clock_width = kClockSlots;

struct Clock {
  int32_t c[kClockSlots];
  Clock() : c{} {}
  // Leaves the entries indeterminate: for a clock that is assigned before
  // it is read (an Event's, see Stamp).
  struct NoInit {};
  explicit Clock(NoInit) {}
  int32_t get(int i) const { return c[i]; }
  void set(int i, int32_t v) { c[i] = v; }
  void Join(const Clock& o) {
    // A local copy: the stores to c[] could alias the global (both int).
    const int w = g_clock_width;
    for (int i = 0; i < w; i += kClockChunk)
      for (int j = i; j < i + kClockChunk; ++j) c[j] = std::max(c[j], o.c[j]);
  }
};

// An allocator whose construct() without arguments leaves the element
// uninitialized, so resize() makes room without zeroing it: a loop-state
// capture (Engine::CaptureLoopState) copies words into the room at once.
// Construction with arguments is std::allocator_traits' own (construct_at).
template <typename T>
struct NoZeroAllocator : std::allocator<T> {
  template <typename U>
  struct rebind {
    using other = NoZeroAllocator<U>;
  };
  NoZeroAllocator() = default;
  template <typename U>
  NoZeroAllocator(const NoZeroAllocator<U>&) {}
  template <typename U>
  void construct(U* p) {
    ::new (static_cast<void*>(p)) U;
  }
};
// A thread's own state at a yield, in words (LoopState).
using Words = std::vector<uintptr_t, NoZeroAllocator<uintptr_t>>;

// [lo, hi): a range of the process's memory.
struct ByteRange {
  uintptr_t lo, hi;
};
// An aligned word of memory and the bytes of it that count (the others
// zero in mask).
struct MaskedWord {
  uintptr_t addr, mask;
};
// How to read the test's globals (PlanGlobals): blocks of whole words
// (address, count) and single masked words, `words` in all.
struct GlobalsPlan {
  std::vector<std::pair<uintptr_t, size_t>> runs;
  std::vector<MaskedWord> masked;
  size_t words = 0;
};

enum class Kind : uint8_t { kInit, kLoad, kStore, kRmw, kCasFail, kFence };

struct Event {
  // User-provided, so that creating an event (events_.emplace_back(),
  // value-initialization) does not zero the whole object first: the
  // members' initializers below apply, the clocks stay unset.
  Event() {}
  Kind kind = Kind::kInit;
  bool reads = false, writes = false, acq = false, rel = false, sc = false;
  int tid = 0, idx = 0;  // idx: 1-based position in its thread
  int loc = -1;
  memory_order mo = mo_relaxed;
  RmwOp op = RmwOp::kXchg;
  uint64_t rval = 0, wval = 0;
  int rf = -1;          // write read from
  int mo_pos = -1;      // index in the location's modification order
  int rmw_reader = -1;  // the RMW reading from this write, if any
  int rel_fence = -1;   // po-latest release fence before this write
  // A write's release-sequence link: the nearest of itself and the writes
  // its RMW chain read back to the chain's first plain write that is a
  // release or has a release fence before it (rel, rel_fence); -1 if none.
  // A read walks only these (Build), not the whole chain: an RMW counter
  // of n relaxed increments cost O(n) per increment before.
  int rel_link = -1;
  int choice = -1;      // DFS: the scheduling decision that created it
  int sc_node = -1;     // SC events: node in the SC-order graph
  int prev_acc = -1;    // its thread's previous access to loc (Loc::last_acc)
  // Not zeroed when the event is created: Stamp() and StampLocal() or
  // Build() assign them before anything reads them.
  Clock post{Clock::NoInit{}};  // thread clock at the event, after acquiring
  Clock porf{Clock::NoInit{}};  // (po U rf)+ predecessors, per thread
#ifdef RL_SC_CHECK
  // The thread clock at the event before acquiring: only the reference SC
  // check reads it for events other than the one being pushed (PreOf()).
  Clock pre{Clock::NoInit{}};
  // A seq_cst load a random run of the plain build makes no event for
  // (Action::check_unevented): SeenPosition() checks no bound needs it.
  bool check_unevented = false;
#endif
  debug_info info;
};

// Who freed (or ended the lifetime of) an rl::atomic or rl::var: the
// thread, and its last event before the free; tid -1 while it lives. An
// access by another thread comes after the free in happens-before only if
// that thread knows a later event of the freeing one (Engine::FreeBefore).
struct FreedBy {
  int tid = -1;
  int32_t after = 0;
  explicit operator bool() const { return tid >= 0; }  // freed
};

// An atomic's state but its vectors (Loc): rebuilt in place when an
// execution reuses the record (Loc::Reset), as ThreadVars is.
struct LocVars {
  // User-provided, so that constructing one does not zero the whole object
  // before the initializers below run: a `rep stos` per atomic
  // constructed, about half of NewAtomic()'s time (perf, a random run of
  // Peterson's lock).
  LocVars() { std::fill(std::begin(last_acc), std::end(last_acc), -1); }
  unsigned width = 8;
  const char* addr = nullptr;  // the rl::atomic object, for the heap model
  FreedBy freed;               // its memory was freed, and by whom
  // Per thread, its latest access (then Event::prev_acc back through its
  // earlier ones), or -1: SeenPosition() reads one access per thread.
  int32_t last_acc[kClockSlots];
  // Per thread, the position in its thread (Event::idx) of its first
  // access, read only while last_acc[] is not -1: a clock that does not
  // reach it knows none of the thread's accesses, and SeenPosition() skips
  // the whole chain (a reader that never synchronized with a writer walked
  // every one of the writer's accesses to the location).
  int32_t first_idx[kClockSlots];
  // The release sequence of the newest write (chain_tip, -1 if unknown):
  // the join of its release heads' and their release fences' clocks
  // (chain_sync, valid if chain_has), and whether one of them is seq_cst
  // (chain_sc). Extended by each write appended to mo (ExtendChain()), so
  // a read of the newest write joins one clock instead of walking the
  // chain (Build): a chain of release-only RMWs (pushes on a stack's top)
  // walked back to its plain store at every read, O(n) each.
  int chain_tip = -1;
  bool chain_has = false, chain_sc = false;
  Clock chain_sync{Clock::NoInit{}};
  int init = -1;         // the construction (a non-atomic write) event
  // The SC order as executed (Engine::sc_floors_): the newest write, in
  // modification order, that a seq_cst access read or wrote or that
  // happens before a seq_cst fence run so far, or -1. A seq_cst access
  // must not be coherence-ordered before it (Engine::ScFloor).
  int sc_floor = -1;
  // Writes in mo that an RMW may still read: not read by one yet
  // (rmw_reader < 0), kept by Push() and Pop(). When the threads start,
  // only the newest write counts (RunOne): every earlier one is the main
  // thread's, below every thread's lower bound. The newest write is always
  // one (an RMW is placed right after the write it reads); while it is the
  // only one, an RMW has one action, known without its lower bound
  // (DirectActions).
  int rmw_free = 0;
  // A random run's loads that made no event (Engine::ReadWithoutEvent):
  // bit u set if thread u made one, and then unevented[u], its latest.
  uint64_t unevented_mask = 0;
  struct UneventedRead {
    // The position (Event::idx) the thread's next event takes: the load
    // happens before what knows that event, as an rl::var access does
    // (VarAcc). AccessNotBefore() checks it.
    int32_t next;
    int32_t rf;       // the write it read
    uint32_t yields;  // the thread's yields before it (DrawDirectIndex)
  } unevented[kClockSlots];
  debug_info info;
};

struct Loc : LocVars {
  std::vector<int> mo;   // writes in modification order
  std::vector<int> acc;  // all accesses (init, reads, writes)
  // As newly constructed, keeping the vectors' capacity: locs_ reuses an
  // earlier execution's (Reused).
#ifdef RL_SC_CHECK
  // Every load that made no event, with its thread: the reference for
  // Engine::CrossCheckUnevented().
  std::vector<std::pair<int, UneventedRead>> unevented_log;
#endif
  void Reset() {
    static_assert(std::is_trivially_destructible_v<LocVars>);
    new (static_cast<LocVars*>(this)) LocVars();
    mo.clear();
    acc.clear();
#ifdef RL_SC_CHECK
    unevented_log.clear();
#endif
  }
};

// A per-execution table of T (locs_, vars_): clear() keeps the objects,
// and Next() hands out the next one Reset(), its vectors' capacity kept.
// It replaced a std::vector emptied each execution and refilled by
// emplace_back() with vectors moved to and from a pool: -2.5% instructions
// on a random run of the seqcount port, -3.5% on Peterson's lock, -1.2% to
// -1.7% on the other programs of tools/relacy_speed.cpp (callgrind).
template <typename T>
class Reused {
 public:
  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  T& operator[](size_t i) { return items_[i]; }
  const T& operator[](size_t i) const { return items_[i]; }
  T& back() { return items_[n_ - 1]; }
  T* begin() { return items_.data(); }
  T* end() { return items_.data() + n_; }
  const T* begin() const { return items_.data(); }
  const T* end() const { return items_.data() + n_; }
  void clear() { n_ = 0; }
  T& Next() {
    if (n_ == items_.size()) {
      items_.emplace_back();
    } else {
      items_[n_].Reset();
    }
    return items_[n_++];
  }

 private:
  std::vector<T> items_;
  size_t n_ = 0;
};

enum class OpKind : uint8_t { kNone, kLoad, kStore, kRmw, kCas, kResume };

struct Pending {
  OpKind kind = OpKind::kNone;
  bool weak = false;  // compare_exchange_weak
  // A wait (AtomicAwaitLoad, AtomicAwaitRmw): a load or RMW with only the
  // actions reading a value that meets await_cond. While no write allows
  // one, the thread waits, with no event, until the location is written
  // (as a Relacy thread blocks on a held mutex): the failed tries are not
  // explored.
  bool await = false;
  AwaitCond await_cond;
  int loc = -1;
  memory_order mo = mo_relaxed, mo_fail = mo_relaxed;
  RmwOp op = RmwOp::kXchg;
  uint64_t val = 0, expected = 0;
  debug_info info;
};

// The operation of a thread waiting with no event (a spin, a mutex or
// join wait, a timed-out wait): taking it only resumes the thread (Place
// makes no event for it).
Pending ResumeOp(const debug_info& info) {
  Pending op;
  op.kind = OpKind::kResume;
  op.info = info;
  return op;
}

// Whether reading w lets a waiting operation (Pending::await) go on.
bool AwaitReadable(const Pending& op, const Event& w) {
  const AwaitCond& c = op.await_cond;
  return ((w.wval & c.mask) == c.want) == c.equal &&
         (op.kind != OpKind::kRmw || w.rmw_reader < 0);
}

// Set bits of x, without the popcnt instruction (not in the baseline x86-64
// target): one iteration per bit, as a mask of threads has few (a sum of
// bit counts in ever wider fields cost 18 instructions a draw, callgrind).
inline unsigned PopCount(uint64_t x) {
  unsigned n = 0;
  for (; x != 0; x &= x - 1) ++n;
  return n;
}

// The random search's generator: SplitMix64 (Steele, Lea and Flood,
// "Fast splittable pseudorandom number generators", OOPSLA 2014), a few
// instructions per draw against about 47 for std::mt19937_64 (callgrind, a
// decision draws once or twice); its output passes BigCrush, more than a
// scheduler needs. Below() maps a draw onto [0, n) by a multiply and shift
// (Lemire, "Fast random integer generation in an interval", 2019, without
// the rejection step: a bias of n / 2^64), no division; n == 1 draws
// nothing. The high half of the 64x64 product is computed in 32-bit halves
// where there is no 128-bit integer (32-bit targets): the same draws on
// every target, so a seed's run does not depend on the target.
class SplitMix64 {
 public:
  void seed(uint64_t s) { state_ = s; }
  uint64_t operator()() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9;
    z = (z ^ (z >> 27)) * 0x94d049bb133111eb;
    return z ^ (z >> 31);
  }
  size_t Below(size_t n) {
    if (n <= 1) return 0;
    return static_cast<size_t>(MulHigh((*this)(), n));
  }
  static uint64_t MulHigh(uint64_t a, uint64_t b) {
#ifdef __SIZEOF_INT128__
    return static_cast<uint64_t>((static_cast<unsigned __int128>(a) * b) >> 64);
#else
    const uint64_t a_lo = a & 0xffffffffu, a_hi = a >> 32;
    const uint64_t b_lo = b & 0xffffffffu, b_hi = b >> 32;
    const uint64_t lo_lo = a_lo * b_lo, hi_lo = a_hi * b_lo;
    const uint64_t lo_hi = a_lo * b_hi, hi_hi = a_hi * b_hi;
    const uint64_t mid = (lo_lo >> 32) + (hi_lo & 0xffffffffu) + lo_hi;
    return hi_hi + (hi_lo >> 32) + (mid >> 32);
#endif
  }

 private:
  uint64_t state_ = 0;
};

// Action::tid of a recorded scheduling decision that found no action.
constexpr int kNoAction = -2;

struct Action {
  int tid = -1;  // -1: a rl::rand value; kNoAction (above)
  int rf = -1;   // for reads
  int pos = -1;  // mo insertion index for plain stores
  bool cas_ok = false;
  // A random run's load that makes no event: set by DirectAction() where
  // Engine::ReadNeedsNoEvent(), taken by Place().
  bool no_event = false;
#ifdef RL_SC_CHECK
  // A seq_cst load that makes its event here only because
  // CrossCheckFloors() needs every seq_cst event: the plain build's
  // no_event (ReadSkippable()).
  bool check_unevented = false;
#endif
  unsigned value = 0;  // rand
};

// A decision point. Scheduling decisions list the lowest runnable thread's
// actions first, then (segment by segment) the actions of higher threads,
// each of which defers all lower ones. Segments past the first are enabled
// lazily, once some explored execution shows that a deferred read could read
// a later write (see Engine::Discover).
struct Choice {
  std::vector<Action> opts;
  size_t cur = 0;
  std::vector<uint32_t> seg_end;  // empty: every option enabled
  uint32_t enabled_segs = 0;
  int ev = -1;  // event created by the chosen action
  size_t EnabledEnd() const {
    return seg_end.empty() ? opts.size() : seg_end[enabled_segs - 1];
  }
  uint32_t SegOf(size_t i) const {
    uint32_t m = 0;
    while (seg_end[m] <= i) ++m;
    return m;
  }
  void Enable(uint32_t segs) {
    enabled_segs = std::max(
        enabled_segs,
        std::min<uint32_t>(segs, static_cast<uint32_t>(seg_end.size())));
    // A thread without actions must be deferred: enable the next segment.
    while (enabled_segs < seg_end.size() &&
           seg_end[enabled_segs - 1] ==
               (enabled_segs >= 2 ? seg_end[enabled_segs - 2] : 0))
      ++enabled_segs;
  }
};

struct SpinRead {
  int loc;
  uint64_t value;
  // The write an identical next iteration reads: the one read, or for an
  // RMW writing back the value it read (a failed test-and-set), its own
  // write (atomicity: the next try reads the newest write, which is that
  // one unless another thread wrote since).
  int rf;
  bool operator==(const SpinRead& o) const {
    return loc == o.loc && value == o.value;
  }
};

// Whether two iterations read the same writes in the same order.
bool SameSources(const std::vector<SpinRead>& a,
                 const std::vector<SpinRead>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](const SpinRead& x, const SpinRead& y) {
                      return x.loc == y.loc && x.rf == y.rf;
                    });
}

// Whether two iterations read the same locations in the same order.
bool SameLocations(const std::vector<SpinRead>& a,
                   const std::vector<SpinRead>& b) {
  return std::equal(
      a.begin(), a.end(), b.begin(), b.end(),
      [](const SpinRead& x, const SpinRead& y) { return x.loc == y.loc; });
}

// A checker thread's per-execution state, reset by every execution
// (ResetExecution); ThreadState adds what outlives an execution.
struct ThreadVars {
  // User-provided, as LocVars': ResetExecution() rebuilds each thread's
  // ThreadVars per execution, and value-initialization would zero it all
  // (a `rep stos`) before the initializers run.
  ThreadVars() {}
  void* sp = nullptr;  // saved stack pointer (fast switch)
  bool started = false, finished = false, blocked = false, pending = false;
  Pending op;
  uint64_t result = 0;
  bool cas_ok = false;
  int constraint = 0;  // a deferred read must read an event id >= this
  Clock clock;
  Clock porf;
  Clock acq_pending;  // released clocks seen by relaxed reads
  int rel_fence = -1;
  int idx = 0;
  // idx at the thread's last yield in a sampled run, or -1: the first
  // re-read after it prefers newer writes (Engine::DrawDirectIndex).
  int yield_idx = -1;
  uint32_t yields = 0;  // in a sampled run (DrawDirectIndex)
  bool has_prev = false, iter_wrote = false;
  // Call site of the thread's last yield (test_params::stateless_spins).
  const char* yield_file = nullptr;
  unsigned yield_line = 0;
  // Iterations in a row that wrote but read the same values of the other
  // threads' writes as the one before (Yield: ForeignReadsRepeat).
  unsigned writing_repeats = 0;
  // Identical iterations run on instead of waiting (bounded by spin_bound);
  // while > 0 every read must repeat the previous iteration's.
  unsigned continuing = 0;
  bool sync_wait = false;  // blocked in a mutex / condition variable wait
  int wait_loc = -1;       // sync_wait: woken only by a write here (>= 0)
  int spurious_loc = -1;   // last CAS on this location failed spuriously
  // The thread's last iteration repeated the one before it while a newer
  // write existed (stale) and changed the thread's own state (a count of
  // tries): the branch in which it waits for that write runs on, and its
  // next iteration must read some newer write (Engine::Yield).
  bool must_leave = false;
  // The thread waited in this loop (blocked after an identical iteration)
  // and has not left it since: a stale iteration after the wake-up
  // repeats one the running-on branch made before the write, so it gets
  // no wait branch of its own.
  bool spin_waited = false;
  bool timed_out = false;  // its last wait timed out (TimeOutAWait)
  int noabort = 0;         // depth of no-abort sections (NoAbort)
  // Dynamic threads (rl::dyn_thread, pthread_create): the function a
  // created thread runs instead of the suite's thread(), and the thread a
  // join waits for (-1: none).
  void* (*fn)(void*) = nullptr;
  void* arg = nullptr;
  void* ret = nullptr;  // fn's result, for pthread_join
  bool spawned = false;  // created; started by the scheduler loop
  int join_target = -1;
#ifdef RL_ASAN
  void* asan_fake = nullptr;  // ASan's fake stack while switched out
#endif
};

struct ThreadState : ThreadVars {
  // Kept across executions: the context (large, rewritten when the thread
  // starts), the stack, and vectors emptied in place (their capacity).
  ucontext_t uc;
  char* stack = nullptr;
  std::vector<int> sc_pending;  // SC release sources seen by relaxed reads
  // Spin-loop detection: reads since the last yield and in the interval
  // before it.
  std::vector<SpinRead> cur_reads, prev_reads;
  // While running on (ThreadVars::continuing): the thread's own state
  // (LoopState) at its last identical iteration, and a scratch copy.
  Words loop_state, loop_state_next;
  bool loop_state_known = false;
};

struct VarAcc {
  int tid;
  int epoch;
  debug_info info;
};

// An rl::var's state but its reads (VarState), rebuilt in place as
// LocVars is.
struct VarStateVars {
  const char* addr = nullptr;
  FreedBy freed;  // its memory was freed, and by whom
  debug_info decl;
  bool init = false;
  bool has_write = false;
  VarAcc w{};
};

struct VarState : VarStateVars {
  std::vector<VarAcc> reads;
  // As newly constructed, keeping the reads' capacity (Reused).
  void Reset() {
    static_assert(std::is_trivially_destructible_v<VarStateVars>);
    new (static_cast<VarStateVars*>(this)) VarStateVars();
    reads.clear();
  }
};

// What building an event found besides the event itself (which is built
// in place, at the end of events_).
struct Built {
  // The released clocks reaching a read (its release heads' and their
  // fences'), joined; valid only if has_sync. A clock the reader already
  // knows adds nothing and is skipped (Build), so most reads join none.
  Clock sync{Clock::NoInit{}};
  bool has_sync = false;
  std::vector<int> sc_src;  // SC events synchronizing with the read
  void AddSync(const Clock& c) {
    if (has_sync) {
      sync.Join(c);
    } else {
      sync = c;
      has_sync = true;
    }
  }
};

bool IsAcq(memory_order mo) {
  return mo == mo_acquire || mo == mo_consume || mo == mo_acq_rel ||
         mo == mo_seq_cst;
}
bool IsRel(memory_order mo) {
  return mo == mo_release || mo == mo_acq_rel || mo == mo_seq_cst;
}
const char* MoStr(memory_order mo) {
  switch (mo) {
    case mo_relaxed:
      return "relaxed";
    case mo_consume:
      return "consume";
    case mo_acquire:
      return "acquire";
    case mo_release:
      return "release";
    case mo_acq_rel:
      return "acq_rel";
    case mo_seq_cst:
      return "seq_cst";
  }
  return "?";
}
const char* BaseName(const char* f) {
  const char* s = std::strrchr(f, '/');
  return s != nullptr ? s + 1 : f;
}

enum class Mode { kDfs, kRandom, kReplay };

// Abandon(): a frame's verdict, by return address (see "the frame memo").
enum class FrameKind : uint8_t { kPass, kLandingPad, kThreadEntry };
// For kPass, how to reach the caller's frame: CFA = (rsp or rbp at the
// call) + cfa_off; the caller's rbp is saved at CFA + rbp_off, or rbp is
// left as it is.
struct FrameMemo {
  int32_t cfa_off = 0;
  int32_t rbp_off = 0;
  bool cfa_rbp = false;    // CFA from rbp (a frame pointer), else rsp
  bool rbp_saved = false;  // the caller's rbp is at CFA + rbp_off
  FrameKind kind = FrameKind::kPass;
};

class Engine;
[[noreturn]] void FinishThread(Engine* e, unsigned t);
Engine* g_engine = nullptr;
uint64_t g_next_generation = 1;

class Engine {
 public:
  Engine(SuiteIface& suite, test_params& p, unsigned n, unsigned n_static,
         std::string name)
      : suite_(suite), p_(p), n_(n), n_static_(n_static),
        name_(std::move(name)) {
    out_ = p.output_stream != nullptr ? p.output_stream : &std::cout;
    threads_.resize(n_ + 1);
    sc_by_thread_.resize(n_ + 1);
    for (unsigned i = 0; i < n_; ++i)
      threads_[i].stack = static_cast<char*>(std::malloc(kStackSize));
  }
  ~Engine() {
    for (auto& t : threads_) std::free(t.stack);
  }

  test_result_e Run(test_result_e expected);
  // The seed of random iteration iter (its own SplitMix64 stream).
  static uint64_t IterationSeed(uint64_t seed, uint64_t iter);
  // test_params::jobs as RL_JOBS and 0 (one per CPU) make it.
  unsigned Jobs() const;
  // The random search in `jobs` processes; false if not run.
  bool RunForked(uint64_t seed, unsigned jobs, test_result_e* found,
                 std::string* state);
  std::ostream& ProgressStream() const {
    return p_.progress_stream != nullptr ? *p_.progress_stream : std::cout;
  }
  // A failing state longer than this is not passed back from a worker:
  // the search is then run in the calling process.
  static constexpr uint32_t kForkStateMax = 1u << 20;

  // ---- API entry points (called from user code) ----
  // side: a location of the front end's own bookkeeping (NewSideAtomic).
  int NewAtomic(unsigned width, uint64_t init, const debug_info& info,
                const void* addr, bool side = false);
  // The running thread's next operation, filled in place by the API
  // functions (NewOp) and then run by Op().
  Pending& NextOp() { return threads_[cur_].op; }
  bool TimedOut() const { return threads_[cur_].timed_out; }
  void ClearTimedOut() { threads_[cur_].timed_out = false; }
  uint64_t Op();
  void MainOp();
  bool LastCasOk() const { return threads_[cur_].cas_ok; }
  bool WaitBlocked(const debug_info& info, bool on_last_read, bool timed);
  bool ForeignReadsRepeat(const ThreadState& th) const;
  bool AnyStale(const std::vector<SpinRead>& reads, bool writing_spin) const;
  bool LoopStateChanged(ThreadState& th, uintptr_t cfa);
  bool CaptureLoopState(uintptr_t cfa, Words* out);
  void CheckStatelessPromise(ThreadState& th, bool identical, bool same_site,
                             uintptr_t cfa, const debug_info& info);
  bool stateless_broken_ = false;  // CheckStatelessPromise said so
  // The running thread's stack.
  uintptr_t ThreadStackLo() const {
    return reinterpret_cast<uintptr_t>(threads_[cur_].stack);
  }
  uintptr_t ThreadStackTop() const { return ThreadStackLo() + kStackSize; }
  void* HeapAlloc(size_t size, size_t align, int kind);
  // The size of p if it is a live (allocated, not freed) heap block.
  bool LiveBlockSize(const void* p, size_t* size) const {
    auto it = heap_.find(reinterpret_cast<uintptr_t>(p));
    if (it == heap_.end() || it->second.freed) return false;
    *size = it->second.size;
    return true;
  }
  // Returns false if p is not the execution's and report_foreign is off
  // (the caller frees it for real).
  bool HeapFree(void* p, int kind, const debug_info& info,
                bool report_foreign);
  void FreedAccess(const char* what, const debug_info& decl, const FreedBy& by,
                   const debug_info& info);
  // The running thread's free, for FreedBy.
  FreedBy FreeMark() const {
    return {static_cast<int>(cur_), threads_[cur_].idx};
  }
  // Whether the free `by` happens before the running thread's next step.
  bool FreeBefore(const FreedBy& by) const {
    return by.tid == static_cast<int>(cur_) ||
           threads_[cur_].clock.get(by.tid) > by.after;
  }
  // The common case inline (initialized before, by happens-before, and not
  // freed); the report out of line.
  // Whether loc names a location of this execution (an id read from a
  // dead rl::atomic's bytes may not).
  bool IsLoc(int loc) const {
    return static_cast<size_t>(loc) < locs_.size();  // also rejects < 0
  }
  void CheckInitialized(const Pending& op) {
    if (IsLoc(op.loc)) {
      const Loc& l = locs_[op.loc];
      if (!l.freed && (l.init < 0 || Hb(l.init, threads_[cur_].clock))) return;
    }
    ReportUninitialized(op);
  }
  void ReportUninitialized(const Pending& op);
  // The end of an rl::atomic's lifetime (its destructor): as a free of its
  // memory, see HeapFree().
  void DestroyAtomic(int loc);
  void Fence(memory_order mo, const debug_info& info);
  // A fence event of thread t at the end of events_ (b: what it acquired);
  // the caller may join more into it, then Push(b) and AdvanceThread().
  Event& NewFence(unsigned t, memory_order mo, const debug_info& info,
                  Built& b);
  // Thread t after its event e (fence or construction): its index and
  // clocks, and e as its latest release fence.
  void AdvanceThread(unsigned t, const Event& e);
  void SystemFence(const debug_info& info);
  // cfa: rl::detail::Yield's CFA (LoopState).
  void Yield(const debug_info& info, uintptr_t cfa);
  unsigned Rand(unsigned limit);
  size_t AddrHash(const void* p) {
    // Numbered in first-use order within the execution (emplace keeps an
    // existing number).
    return addr_hash_.emplace(p, addr_hash_.size()).first->second;
  }
  unsigned ThreadIndex() const { return cur_; }
  int CreateThread(void* (*fn)(void*), void* arg, const debug_info& info);
  void* JoinThread(int handle, const debug_info& info);
  void Fail(test_result_e r, const std::string& desc, const debug_info& info);
  // Fail() for a noexcept caller (operator delete, a destructor): records
  // the failure, unless one is recorded or the execution is being
  // abandoned; the thread stops at its next checker operation.
  void RecordFailure(test_result_e r, const std::string& desc,
                     const debug_info& info);
  // "main" or "thread N", for reports.
  std::string ThreadName(int t) const {
    return t == static_cast<int>(n_) ? std::string("main")
                                     : "thread " + std::to_string(t);
  }
  std::string RunningName() const { return ThreadName(static_cast<int>(cur_)); }
  // An access to l by another thread that does not happen before the
  // running thread's clock (one a free or destruction now would race
  // with), or -1.
  int AccessNotBefore(const Loc& l) const;
  int NewVar(bool initialized, const debug_info& info, const void* addr);
  // Whether var names an rl::var of this execution (see IsLoc).
  bool IsVar(int var) const {
    return static_cast<size_t>(var) < vars_.size();  // also rejects < 0
  }
  void VarAccess(int var, bool write, const debug_info& info);
  // See detail::ShimInit and its siblings (engine.h).
  void ShimInit(const void* obj, ShimKind kind, const debug_info& info);
  bool ShimLive(const void* obj, bool statically_live) const {
    auto it = shim_life_.find(reinterpret_cast<uintptr_t>(obj));
    return it == shim_life_.end() ? statically_live : it->second;
  }
  void ShimUse(const void* obj, ShimKind kind, bool statically_live,
               const debug_info& info);
  void ShimDestroy(const void* obj, ShimKind kind, bool statically_live,
                   const debug_info& info);
  // The end of an rl::var's lifetime (its destructor), as DestroyAtomic.
  void DestroyVar(int var);
  // Whether another thread accessed v without that access happening before
  // the running thread's clock (a free or destruction now would race).
  bool VarAccessNotBefore(const VarState& v) const;
  bool tracing() const { return trace_; }
  void UserLog(const debug_info& info, const std::string& text);
  // True while an abandoned execution is being unwound: the operation
  // returns a dummy result. A thread that is not unwinding and not in a
  // no-abort section is stopped right here instead.
  bool aborting() const {
    if (!aborting_) return false;
    if (in_thread_ && threads_[cur_].noabort == 0 &&
        std::uncaught_exceptions() == 0)
      const_cast<Engine*>(this)->Abandon();
    return true;
  }
  // Threads and the main context alike (a destructor in after() or in the
  // suite's destructor reports without throwing out of it).
  void NoAbort(int delta) { threads_[cur_].noabort += delta; }

 private:
  friend void ThreadEntry();
  friend void FinishThread(Engine* e, unsigned t);
  friend void AbandonOnTerminate();
  // One execution; returns false if it was pruned (dead end / redundant).
  enum class Outcome { kComplete, kPruned, kFailed };
  Outcome RunOne();
  void ResetExecution();
  void StartThread(unsigned t);
  void Resume(unsigned t);
  void SwitchToScheduler();
  // The running thread decides and applies the next step itself (see
  // StepInThread); false where only the scheduler's loop may decide.
  bool StepInThread();
  void SwitchToThread(unsigned t);
  void SwitchFromRunning(unsigned to);  // to: a thread, or n_ (scheduler)
  void AbortThreads();
  [[noreturn]] void Prune();
  // Ends the running thread of an abandoned execution: drops its frames if
  // unwinding would run none of their code, else throws AbortExecution.
  [[noreturn]] void Abandon();

  // Decisions.
  enum class DecideKind { kSched, kMain, kRand };
  // A decision: replayed from the stack (inline, the common case) or new.
  bool Decide(DecideKind kind, unsigned rand_limit, Action* out) {
    if (mode_ == Mode::kDfs && pos_ < stack_.size()) {
      const Choice& c = stack_[pos_];
      // A scheduling decision that found no action (recorded as kNoAction
      // by DecideNew) fails again here.
      if (kind == DecideKind::kSched && c.opts[c.cur].tid == kNoAction) {
        ++pos_;
        return false;
      }
      if (kind == DecideKind::kSched) last_choice_ = static_cast<int>(pos_);
      ++pos_;
      *out = c.opts[c.cur];
      return true;
    }
    // A sampled run's scheduling decision (every step of a random run):
    // straight to its draw, without DecideNew()'s listing set-up.
    if (thread_first_ && kind == DecideKind::kSched)
      return DrawThreadFirst(out);
    return DecideNew(kind, rand_limit, out);
  }
  bool DecideNew(DecideKind kind, unsigned rand_limit, Action* out);
  bool MainOnlyAction(const Pending& op, Action* out);
  void EnumSched(std::vector<Action>* out, std::vector<uint32_t>* segs);
  void Discover(const Event& w, const Clock& porf_before);
  void ActionsFor(unsigned t, std::vector<Action>* out);
  // The SC probe of a. keep: if allowed, leave its event in the graph for
  // Apply() (kept_probe_), which must come next.
  bool ScAllows(unsigned t, const Action& a, bool keep = false) {
    // No SC event yet (SC fences are SC events): one more cannot close a
    // cycle (NeedSc). Inline: most operations of most tests end here.
    if (sc_events_.empty()) return true;
    return ScProbe(t, a, keep);
  }
  bool ScProbe(unsigned t, const Action& a, bool keep);
  bool kept_probe_ = false;
  // A random run's load that reads the only write it may read and needs no
  // event (Action::no_event): Place() calls ReadWithoutEvent() instead of
  // making the event.
  bool ReadNeedsNoEvent(unsigned t) const;
  // ReadNeedsNoEvent() without the RL_SC_CHECK build's exception for
  // seq_cst loads.
  bool ReadSkippable(unsigned t) const;
  void ReadWithoutEvent(unsigned t, const Action& a);
  void ScReadWithoutEvent(unsigned t, const Action& a);
  // What a load acquires from the release sequence it read: into the
  // thread's clock (acquire), or kept for its next acquire fence (Commit).
  static void AcquireRead(ThreadState& th, const Clock& released) {
    if (IsAcq(th.op.mo))
      th.clock.Join(released);
    else
      th.acq_pending.Join(released);
  }
  bool DrawSampled(size_t* idx);
  bool DrawThreadFirst(Action* out);
  bool DrawAllowed(size_t* idx, size_t refused = kNoneRefused);
  static constexpr size_t kNoneRefused = ~size_t{0};
  // ActionsFor()'s actions of a load, store or RMW without listing them.
  struct DirectRange {
    int lb = 0;    // ReadLowerBound() or WriteLowerBound()
    size_t n = 0;  // how many actions ActionsFor() lists
  };
  bool DirectActions(unsigned t, DirectRange* r) const;
  // The range rules ActionsFor(), DirectActions() and DirectAction() share.
  // A store may go at position p (1..size) of l's modification order
  // unless an RMW read the write before it (atomicity).
  bool StorePosOpen(const Loc& l, int p) const {
    return events_[l.mo[p - 1]].rmw_reader < 0;
  }
  // A load reads any write from the lower bound on; an RMW only a write no
  // RMW has read yet (atomicity).
  bool ReadableBy(OpKind kind, const Event& w) const {
    return kind != OpKind::kRmw || w.rmw_reader < 0;
  }
  // The actions ActionsFor() lists for th's CAS reading write w: a failure
  // (another value), a success (the expected value, no RMW read it yet),
  // a success and then its spurious failure (weak, spurious failures on),
  // or, where an RMW read it already, only a spurious failure, if any.
  size_t CasActionsOn(const ThreadState& th, const Event& w) const {
    const Pending& op = th.op;
    // Most writes a CAS could read hold another value: only the failure.
    if (w.wval != op.expected) return 1;
    const bool spurious =
        op.weak && p_.spurious_cas_failures && th.spurious_loc != op.loc;
    if (w.rmw_reader >= 0) return spurious;
    return 1 + spurious;
  }
  Action DirectAction(unsigned t, const DirectRange& r, size_t j) const;
#ifdef RL_SC_CHECK
  void CrossCheckDirect(unsigned t, const DirectRange& r, size_t j,
                        const Action& a);
#endif
  // A decision among n options: the replayed index (0 without a choice or
  // past the record), recorded again (RecordTaken).
  size_t TakeReplayed(size_t n);
  void RecordTaken(size_t n, size_t idx) {
    if (n <= 1) return;
    // An index store, not push_back(): its out-of-line growth path made
    // GCC call it out of line from the draw (+2% instructions, callgrind).
    if (taken_n_ == taken_.size()) [[unlikely]]
      taken_.resize(2 * taken_.size() + 64);
    taken_[taken_n_++] = static_cast<unsigned>(idx);
  }
  // The schedulable thread running on through identical spin iterations
  // (it goes first and alone), or -1.
  int RunningOnThread() const {
#ifdef RL_SC_CHECK
    CheckBits();
#endif
    const uint64_t on = sched_mask_ & continuing_mask_;
    return on == 0 ? -1 : __builtin_ctzll(on);
  }
  void RunningOnActions(unsigned t, std::vector<Action>* out);
  void RunningOnOrAll(unsigned t, std::vector<Action>* out);
  void ListUnprobed(unsigned t, std::vector<Action>* out);
  void AlternativesForTrace(const Action& taken);
  // Thread t's event for action a, at the end of events_ and in the graph:
  // the probe ScAllows() kept (kept_probe_), else built and pushed now.
  void PlaceEvent(unsigned t, const Action& a, Built& b);
  // Sets `pending` with a store of the whole flag word Schedulable()
  // reads: a byte store would leave the draw that follows at once
  // (DrawThreadFirst) loading a word over a store still in the store
  // buffer, which store forwarding cannot serve (15% of its perf samples
  // on a random run of the seqcount port).
  static void MarkPending(ThreadState& th) {
    static constexpr bool kPendingOnly[4] = {false, false, false, true};
    uint32_t flags, pending;
    std::memcpy(&flags, &th.started, 4);
    std::memcpy(&pending, kPendingOnly, 4);
    flags |= pending;
    std::memcpy(&th.started, &flags, 4);
  }
  bool Schedulable(unsigned t) const {
    const ThreadState& th = threads_[t];
    // The four adjacent flags read as one word: one load and compare per
    // thread on every draw (DrawThreadFirst loops over all threads).
    static_assert(sizeof(bool) == 1 && offsetof(ThreadVars, pending) ==
                                           offsetof(ThreadVars, started) + 3);
    static constexpr bool kSchedulable[4] = {true, false, false, true};
    uint32_t flags, want;
    std::memcpy(&flags, &th.started, 4);
    std::memcpy(&want, kSchedulable, 4);
    return flags == want;
  }
  static void SetBit(uint64_t* mask, unsigned t, bool on) {
    const uint64_t bit = uint64_t{1} << t;
    *mask = on ? *mask | bit : *mask & ~bit;
  }
  // Brings thread t's bits of the masks up to date with its fields (the
  // main thread, n_, has none).
  void SyncBits(unsigned t) {
    if (t >= n_) return;
    const ThreadState& th = threads_[t];
    SetBit(&sched_mask_, t, Schedulable(t));
    SetBit(&blocked_mask_, t, th.blocked);
    SetBit(&continuing_mask_, t, th.continuing != 0);
  }
#ifdef RL_SC_CHECK
  void CheckBits() const;
#endif
  // Thread t waits (Pending::await) and no write ends the wait, deferral
  // constraint aside: it has no action until its location is written.
  // Running another thread instead defers no read.
  bool AwaitBlocked(unsigned t) const {
    const ThreadState& th = threads_[t];
    if (!th.op.await) return false;
    const Loc& l = locs_[th.op.loc];
    for (int p = ReadLowerBound(t, th.op.loc);
         p < static_cast<int>(l.mo.size()); ++p)
      if (AwaitReadable(th.op, events_[l.mo[p]])) return false;
    return true;
  }
  static bool Deferrable(const ThreadState& th) {
    return th.op.kind == OpKind::kLoad || th.op.kind == OpKind::kRmw ||
           th.op.kind == OpKind::kCas;
  }
  // Action a's step (its event, or a resumption) without running its
  // thread; Apply() then runs it.
  void Place(const Action& a);
  void Apply(const Action& a) {
    Place(a);
    Resume(static_cast<unsigned>(a.tid));
  }

  // Graph.
  bool Hb(int e, const Clock& c) const {
    return c.get(events_[e].tid) >= events_[e].idx;
  }
  int SeenPosition(int loc, const Clock& c) const;
  // The first write thread t's pending access may read, the first position
  // its store may take: coherence (what t's clock has seen) and, with the
  // SC order as executed, ScFloor().
  // Out of line, as SeenPosition() was: the draw that inlines it keeps
  // its vector appends inline.
  __attribute__((noinline)) int ReadLowerBound(unsigned t, int loc) const {
    const Clock& c = threads_[t].clock;
    // The newest write happens before t (often it is t's own): no access
    // is newer, and no floor higher, so nothing else need be looked at.
    const std::vector<int>& mo = locs_[loc].mo;
    if (!mo.empty()) {
      const Event& newest = events_[mo.back()];
      if (c.get(newest.tid) >= newest.idx) {
#ifdef RL_SC_CHECK
        if (SeenPosition(loc, c) != static_cast<int>(mo.size()) - 1) {
          std::fprintf(stderr,
                       "RL_SC_CHECK: %s's newest write happens "
                       "before thread %u, which has not seen it\n",
                       LocStr(loc).c_str(), t);
          std::abort();
        }
#endif
        return static_cast<int>(mo.size()) - 1;
      }
    }
    const int seen = SeenPosition(loc, c);
    // Until a thread's seq_cst event runs there is no floor: one load here.
    int lb = seen;
    if (floors_live_) [[unlikely]]
      lb = std::max(seen, ScFloor(t, loc));
#ifdef RL_SC_CHECK
    CrossCheckUnevented(t, loc, lb);
#endif
    return lb;
  }
#ifdef RL_SC_CHECK
  void CrossCheckUnevented(unsigned t, int loc, int lb) const;
#endif
  int WriteLowerBound(unsigned t, int loc) const {
    return ReadLowerBound(t, loc) + 1;
  }
  size_t DrawDirectIndex(unsigned t, const DirectRange& r);
  // The SC order as executed (sc_floors_): S is the order in which the run
  // executes seq_cst operations and fences, as in Relacy's random
  // scheduler, so no SC-order graph is kept. Every S edge between earlier
  // events already runs forward, and a fence adds edges only into itself;
  // the new access e is last in S, so only its pairs (e, x), e
  // coherence-ordered before an access x (AddScEdges, rule (b)), can run
  // backward: left(e) -> right(x) with some member of right(x) run before
  // the latest member of left(e). That is any x if e is seq_cst (left(e)
  // holds e, run now) and x is seq_cst or happens before a seq_cst fence;
  // else, with T the latest seq_cst fence that happens before e, any x
  // seq_cst or before a fence by T's run. Each such x bounds e's read and
  // write from below as an access of e's thread that happened before it
  // would (e reads x's write or later, writes after it): the newest such
  // write is Loc::sc_floor, as of now for a seq_cst e, as of T (a
  // snapshot) otherwise. Returns its modification-order position, -1 if
  // none. Checked against the full SC check under RL_SC_CHECK
  // (CrossCheckFloors).
  int ScFloor(unsigned t, int loc) const;
  // Raises the floors for seq_cst event id (an access: its write or the
  // write it read; a fence: every location's writes and reads that happen
  // before it), and snapshots them at a fence.
  void RaiseFloors(int id);
  void RaiseFloor(Loc& l, int w) {
    if (w >= 0 &&
        (l.sc_floor < 0 || events_[w].mo_pos > events_[l.sc_floor].mo_pos))
      l.sc_floor = w;
  }
  // Builds thread t's event for op and action a into e (fresh, already at
  // the end of events_) and b (its capacity reused).
  void Build(unsigned t, const Pending& op, const Action& a, Event& e,
             Built& b) const;
  // A new event at the end of events_ (then Build or fill it, then Push).
  Event& NewEvent() { return events_.emplace_back(); }
  // Makes e thread t's next event: its index and t's clock, ticked.
  void Stamp(unsigned t, Event& e) const;
  // As Stamp(), for an event that reads nothing (an atomic's construction,
  // a fence): what it knows afterwards is what its thread knew before.
  void StampLocal(unsigned t, Event& e) const;
  // Entry `t` (another thread) of the clock of `e`'s thread before `e`
  // acquired anything, for the event being pushed (its thread has not
  // committed it yet, so the thread's clock is still that clock). Events
  // keep only the clock after acquiring (post): one 64-byte copy less per
  // event and a smaller event.
  int32_t PreOf(const Event& e, int t) const {
#ifdef RL_SC_CHECK
    if (threads_[e.tid].clock.get(t) != e.pre.get(t)) {
      std::fprintf(stderr, "RL_SC_CHECK: PreOf() on a committed event\n");
      std::abort();
    }
#endif
    return threads_[e.tid].clock.get(t);
  }
  // Adds the last event of events_ to the graph (its location, SC order).
  void Push(const Built& b);
  void ExtendChain(Loc& l, const Event& e, int id) const;
  // A read of write rf takes its release sequence's clocks from l's memo
  // (Loc::chain_sync) rather than walking it (WalkReleaseSequence): rf is
  // the newest write, its sequence is known and has no seq_cst head.
  static bool MemoHolds(const Loc& l, int rf) {
    return rf == l.chain_tip && !l.chain_sc;
  }
  void WalkReleaseSequence(const Event& w, const Clock& known, Built& b) const;
#ifdef RL_SC_CHECK
  void CrossCheckChain(const Event& w, const Event& e, const Built& b) const;
#endif
  void Pop();
  void Commit(unsigned t, const Built& b);
  int SpinSource(const Event& e) const;  // SpinRead::rf of a read
  bool NeedSc(bool new_sc) const { return sc_events_.size() + new_sc >= 2; }
  // Push() gives e SC-graph state (PushSc: a mark, maybe a node and edges):
  // an SC event, or any event once an SC fence exists (AddScEdges). Pop()
  // tests the same; pushing e cannot change it (an SC fence is e.sc).
  bool TouchesScGraph(const Event& e) const {
    return (e.sc && !sc_floors_) || !sc_fences_.empty();
  }
  // The main thread runs only while no test thread runs: before the first
  // starts (constructor, before()) and after all have ended (after(),
  // destructor; invariant() makes no events). Its seq_cst operations are
  // then no nodes of the SC-order graph (Event::sc false, C++'s order kept
  // in Event::mo): one before() happens before every later event, so no
  // later event is coherence-ordered or SC-fenced before it and it has no
  // in-edge from one; one in after() is preceded by every event, so it
  // reads or writes the end of each modification order and has no out-edge
  // to an earlier one. Neither can lie on a cycle, and removing a node on
  // no cycle keeps the graph's acyclicity. The full check (RL_SC_CHECK)
  // keeps them as nodes and must agree. Relacy tests initialize atomics in
  // before() with `x($) = 0`, seq_cst stores: without this, those alone
  // turned on the SC probe of every later operation.
  bool MainOutsideThreads(unsigned t) const { return t == n_; }
  // The SC-order graph, kept incrementally (docs/verification.md, "The SC
  // order"): Push() adds the edges the new event brings, ScAcyclicAfterPush()
  // looks for a cycle through them, Pop() removes them.
  void PushSc(int id, const Built& b);  // Push() of an SC-related event
  void AddScEdges(int id, const Built& b);
  void ScEdge(int from, int to);  // nodes; logged if new
  void GrowScGraph(size_t nodes);
  bool ScAcyclicAfterPush();
#ifdef RL_SC_CHECK
  // The whole graph rebuilt and checked from scratch: the reference the
  // incremental check is compared with under -DRL_SC_CHECK.
  // forward_only: whether the order in which events_ holds the SC events
  // is an SC order (sc_floors_), not only whether one exists.
  bool ScConsistentFull(bool forward_only = false);
  void CrossCheckSc(bool incremental);
  void CrossCheckFloors();
  // A coherence-ordered before b: the reference check's pairs (the
  // incremental check reads positions, CohAt).
  bool Coh(int a, int b) const;
#endif
  // Coh() from modification-order positions: a's write (aw) and the write
  // it read (ar), b's likewise; -1 where the event has none. Every test is
  // "a's position before b's", so it also holds for b's greatest positions
  // over a set (some member of the set is coherence-after a).
  static bool CohAt(int aw, int ar, int bw, int br) {
    return (aw >= 0 && ((bw >= 0 && aw < bw) || aw <= br)) ||
           (ar >= 0 && ((bw >= 0 && ar < bw) || ar < br));
  }
  int WritePos(const Event& e) const { return e.writes ? e.mo_pos : -1; }
  int ReadPos(const Event& e) const {
    return e.reads ? events_[e.rf].mo_pos : -1;
  }
  // Thread t's SC events that an event knowing t up to `known` (its pre
  // clock) does not strongly follow: a suffix of the list, in thread order.
  std::vector<int>::const_iterator UnknownSc(size_t t, int32_t known) const {
    const std::vector<int>& list = sc_by_thread_[t];
    return std::partition_point(list.begin(), list.end(), [&](int a) {
      return events_[a].idx < known;
    });
  }
  uint64_t Compute(RmwOp op, uint64_t a, uint64_t b, unsigned width) const;
  void AfterWrite(unsigned t, int loc);
  // Counts a step; past execution_depth_limit the run is a livelock. The
  // check is inline (once per event); the report is out of line.
  void CheckDepth() {
    if (++steps_ > p_.execution_depth_limit && !failed_) DepthExceeded();
  }
  void DepthExceeded();
  // Heap model: a leak check at the end of a complete execution, then the
  // release of every block freed during it.
  void CheckLeaks();
  void ReleaseHeap();
  // When every unfinished thread waits: deadlock, livelock, or (a spin that
  // may end by itself) let the spinners run on. Returns false if the run
  // ended.
  bool AllBlocked();
  bool TimeOutAWait();
  void CheckInvariantNow();

  // Output.
  std::string EventStr(int id) const;
  int Cxx11OnlyRelease(int id) const;
  std::string LocStr(int loc) const;
  void PrintTrace();
  std::string EncodeState() const;

  SuiteIface& suite_;
  test_params& p_;
  unsigned n_;         // all thread slots: static, then dynamic
  unsigned n_static_;  // the suite's thread(index) threads
  unsigned n_spawned_ = 0;  // dynamic slots used this execution
  std::string name_;
  std::ostream* out_;

  // Search state.
  Mode mode_ = Mode::kDfs;
  // Test thread t's scheduling state as bit t of a mask: Schedulable(),
  // blocked, running on (continuing != 0), kept by SyncBits() after every
  // change of those fields; and released (resumed with nobody able to
  // write, AllBlocked(); no field of its own). So a draw picks a thread without
  // a pass over every thread's state (each ThreadState is over 1 KB
  // apart): with five threads that pass was 10% of a random run's
  // instructions, as Relacy keeps its runnable threads in a list. Checked
  // against the fields under RL_SC_CHECK (CheckBits).
  uint64_t sched_mask_ = 0, blocked_mask_ = 0, continuing_mask_ = 0,
           released_mask_ = 0;
  // A random run, or the replay of one: interleavings are sampled, with no
  // canonical-order deferral and no redundancy pruning of spins (the state
  // string's "r2:" tag carries it to the replay).
  bool sampling_ = false;
  // A sampled run recorded as "r3:" (or "r4:", below): decisions index the
  // actions before the SC probe (DrawSampled). "r2:" and "r3:" states of
  // earlier versions replay their own way.
  bool lazy_sampling_ = false;
  bool lazy_probe_ = false;  // ActionsFor() skips the SC probe
  // Event::porf and ThreadVars::porf are kept up to date: only the
  // exhaustive search's lazy deferral reads them (Discover, SystemFence).
  // Fixed for an execution (ResetExecution); elsewhere they are left stale.
  bool track_porf_ = true;
  // A sampled run recorded as "r4:" or later (every random run now): a
  // scheduling decision draws a thread, then one of its actions
  // (DrawThreadFirst).
  bool thread_first_ = false;
  // A sampled run recorded as "r6:" or "r7:" (every random run now): a
  // spin running on draws at each identical iteration whether to wait
  // (Engine::Yield). "r4:" and "r5:" states drew only where the thread's
  // own state changed, and replay so.
  bool draws_each_try_ = false;
  std::vector<uint32_t> scratch_index_;  // DrawAllowed()
  std::vector<Choice> stack_;
  size_t pos_ = 0;
  std::vector<unsigned> replay_;
  size_t replay_pos_ = 0;
  std::vector<unsigned> taken_;  // indices of multi-option decisions
  size_t taken_n_ = 0;           // how many of taken_ this execution's
  SplitMix64 rng_;
  bool trace_ = false;
  std::vector<std::vector<int>> alts_;  // trace: other rf options per event

  // Execution state.
  ucontext_t sched_uc_;
  void* sched_sp_ = nullptr;
#ifdef RL_ASAN
  // ASan (fiber switches): the scheduler's stack and fake stack.
  const void* sched_bottom_ = nullptr;
  size_t sched_size_ = 0;
  void* sched_fake_ = nullptr;
#endif
  std::vector<ThreadState> threads_;
  unsigned cur_ = 0;  // running thread; n_ = main
  bool in_thread_ = false;
  // RunOne() has started the suite's threads (each ran to its first
  // operation): from then on a thread may decide a step (StepInThread).
  bool threads_started_ = false;
  bool aborting_ = false;
  bool failed_ = false;
  bool pruned_ = false;
  bool in_invariant_ = false;
  test_result_e result_ = test_result_success;
  std::string fail_desc_;
  debug_info fail_info_;
  std::vector<Event> events_;
  Reused<Loc> locs_;
  Reused<VarState> vars_;
  // Emptied vectors of earlier executions' decisions, reused with their
  // capacity (see ResetExecution).
  std::vector<Choice> choice_pool_;
  std::vector<Action> scratch_opts_;
  Built built_, probe_;  // Build's side results (Apply / ActionsFor)
  std::vector<uint32_t> scratch_segs_;
  void PopChoice() {
    Choice& c = stack_.back();
    c.opts.clear();
    c.seg_end.clear();
    choice_pool_.push_back(std::move(c));
    stack_.pop_back();
  }
  std::vector<int> sc_events_;
  std::vector<std::pair<int, int>> sc_sw_;  // direct sw between SC events
  // Per event in events_: sc_sw_'s and sc_edge_log_'s sizes before it.
  struct ScMark {
    uint32_t sw, edges;
  };
  std::vector<ScMark> sc_mark_;
  // SC-order graph: row v (sc_words_ words) is the bitset of v's successors,
  // nodes numbered in sc_events_ order. Every edge is set by the Push() of
  // one event and logged there, so Pop() and ResetExecution() clear exactly
  // the bits they must (no matrix-wide zeroing).
  std::vector<uint64_t> sc_adj_;
  size_t sc_words_ = 0;  // row width in words; capacity 64 * sc_words_
  std::vector<int> sc_fences_;  // SC fence events, in order
  // The SC order as executed (ScFloor()): on for this run's random
  // executions (test_params::sc_order_as_executed) and their replays.
  bool sc_floors_ = false;
  bool floors_live_ = false;  // RaiseFloors() ran in this execution
  // Its seq_cst fences in order, and for each the floors after it: per
  // location (as many as existed then), Loc::sc_floor, from
  // floor_snap_at_[k] in floor_snaps_.
  std::vector<int> floor_fences_;
  std::vector<uint32_t> floor_snap_at_;
  std::vector<int> floor_snaps_;
  std::vector<std::vector<int>> sc_by_thread_;  // SC events per thread
  std::vector<std::pair<int, int>> sc_edge_log_;
  std::vector<uint8_t> sc_color_;     // ScAcyclicAfterPush() scratch
  std::vector<int> left_;             // AddScEdges() scratch
  std::vector<std::pair<int, int>> sc_stack_;
  int skips_ = 0;
  int last_choice_ = -1;  // stack index of the last scheduling decision
  // Heap model (per execution): blocks allocated by the test's code.
  struct Block {
    size_t size = 0;
    int kind = 0;  // 0 malloc, 1 new, 2 new[], 3 resource (kHeapResource)
    bool freed = false;
    int tid = 0;
    int after = -1;  // last event before the allocation
    void* real = nullptr;
  };
  std::map<uintptr_t, Block> heap_;
  // The test's globals and thread_locals (TestGlobals), found at the
  // run's first capture of a loop's state.
  GlobalsPlan globals_;
  bool globals_scanned_ = false;
  // The shims' objects set up (true) or ended (false) in this execution,
  // by address (ShimInit).
  std::unordered_map<uintptr_t, bool> shim_life_;
  unsigned steps_ = 0;           // events and yields this execution
  // Every unfinished thread was blocked (the spinners ran on) since the
  // last write or timeout: for the LIVELOCK's description.
  bool stalled_ = false;
  bool observing_ = false;       // invariant() between steps: no events
  // Trace only: rl::var accesses, each after the first N events.
  std::vector<std::pair<size_t, std::string>> var_trace_;
  unsigned long long stop_iteration_ = 0;  // from a replayed state
  // Abandon(): frames' verdicts by return address (the frame memo).
  std::unordered_map<uintptr_t, FrameMemo> frame_memo_;
  std::unordered_map<const void*, size_t> addr_hash_;  // AddrHash()
 public:
  bool has_invariant_ = false;
  bool garbage_collected_ = false;  // Relacy's Java / CLI mode (Run)
  bool observing() const { return observing_; }
  uint64_t Observe(int loc) const {
    if (!IsLoc(loc)) return 0;
    return events_[locs_[loc].mo.back()].wval;
  }
};

// True while an execution's user code (suite constructor, before, thread,
// after, invariant, destructor) runs on this OS thread: the heap model
// tracks only its allocations, never the engine's own.
// kFreesOnly: after() and invariant(), which often collect results in
// containers that outlive the execution; their allocations are not tracked
// (frees of tracked blocks are).
enum UserMode : int { kEngine = 0, kTracked = 1, kFreesOnly = 2 };
thread_local int t_user = kEngine;
thread_local bool t_warmup = false;

// Blocks allocated outside any execution's tracking (before simulate(), in
// after(), by statics) and blocks an execution left allocated: freeing one
// of them inside an execution is legitimate, not a foreign free.
thread_local bool t_in_outside = false;
// Set while Engine::Run runs on this OS thread: then only user code
// (t_user != kEngine) allocates memory a test may later free.
thread_local bool t_in_run = false;
bool RecordsOutside() { return !t_in_run || t_user != kEngine; }
std::unordered_set<uintptr_t>& Outside() {
  static auto* set = [] {
    bool prev = t_in_outside;
    t_in_outside = true;
    auto* s = new std::unordered_set<uintptr_t>();
    t_in_outside = prev;
    return s;
  }();
  return *set;
}
// Other OS threads of the process allocate too (outside executions).
std::mutex g_outside_mu;
void OutsideInsert(const void* p) {
  if (t_in_outside) return;
  t_in_outside = true;
  {
    std::lock_guard<std::mutex> lock(g_outside_mu);
    Outside().insert(reinterpret_cast<uintptr_t>(p));
  }
  t_in_outside = false;
}
// Whether p is an outside block; forget: and forget it.
bool OutsideFind(const void* p, bool forget) {
  if (t_in_outside) return false;
  t_in_outside = true;
  bool found;
  {
    std::lock_guard<std::mutex> lock(g_outside_mu);
    const auto key = reinterpret_cast<uintptr_t>(p);
    found = forget ? Outside().erase(key) != 0 : Outside().count(key) != 0;
  }
  t_in_outside = false;
  return found;
}
bool OutsideContains(const void* p) { return OutsideFind(p, false); }
// Returns whether p was an outside block (and forgets it).
bool OutsideErase(const void* p) { return OutsideFind(p, true); }

struct EngineScope {
  int prev;
  EngineScope() : prev(t_user) { t_user = kEngine; }
  ~EngineScope() { t_user = prev; }
};
struct UserScope {
  int prev;
  explicit UserScope(int mode = kTracked) : prev(t_user) { t_user = mode; }
  ~UserScope() { t_user = prev; }
};

// ---------------------------------------------------------------- threads

void ThreadEntry() {
  Engine* e = g_engine;
  AsanFinishSwitch(nullptr, &e->sched_bottom_, &e->sched_size_);
  unsigned t = e->cur_;
  ThreadState& th = e->threads_[t];
  try {
    UserScope user;
    if (th.fn != nullptr)
      th.ret = th.fn(th.arg);
    else
      e->suite_.Thread(t);
  } catch (const AbortExecution&) {
  } catch (...) {
    if (!e->aborting_ && !e->failed_) {
      e->failed_ = true;
      e->result_ = test_result_unhandled_exception;
      e->fail_desc_ = "unhandled exception in thread";
    }
  }
  FinishThread(e, t);
}

// The end of checker thread t (running): it is finished, threads joining it
// may go on, and it switches to the scheduler for good.
[[noreturn]] void FinishThread(Engine* e, unsigned t) {
  ThreadState& th = e->threads_[t];
  t_user = kEngine;
  th.finished = true;
  th.pending = false;
  Engine::SetBit(&e->sched_mask_, t, false);  // SyncBits(t): only this bit
  // Threads joining this one may go on.
  for (unsigned j = 0; j < e->threads_.size(); ++j) {
    ThreadState& o = e->threads_[j];
    if (o.join_target == static_cast<int>(t)) [[unlikely]] {
      o.blocked = false;
      e->SyncBits(j);
    }
  }
  // A finished thread's fake stack (ASan) is released: save nullptr.
  AsanStartSwitch(nullptr, e->sched_bottom_, e->sched_size_);
#ifdef RL_FAST_SWITCH
  rl_switch_context(&th.sp, e->sched_sp_);
#else
  swapcontext(&th.uc, &e->sched_uc_);
#endif
  std::abort();  // a finished thread is never resumed
}

// An abandoned execution unwinds its threads with AbortExecution. A thread
// stopped inside a noexcept function (a destructor that locks an
// rl::mutex, e.g. a counter unregistering itself, or does any other
// checker operation) cannot be unwound through it: the C++ runtime calls
// std::terminate. While a run is in progress this handler catches exactly
// that case -- the current exception is AbortExecution, thrown on a checker
// thread -- ends the runtime's handling of the exception and abandons the
// thread's remaining frames (the frames inside the noexcept function were
// unwound, the ones outside it are not: a resource they hold is not
// released; memory they allocated is left allocated, as an abandoned
// execution's is). Anything else goes to the handler that was installed
// before the run.
std::terminate_handler g_prev_terminate = nullptr;

void AbandonOnTerminate() {
  Engine* e = g_engine;
  const std::type_info* type = abi::__cxa_current_exception_type();
  if (e != nullptr && e->in_thread_ && type != nullptr &&
      *type == typeid(AbortExecution)) {
    // std::terminate runs as if in a handler of the exception
    // (__cxa_begin_catch): finish that handler, which destroys it.
    abi::__cxa_end_catch();
    FinishThread(e, e->cur_);
  }
  if (g_prev_terminate != nullptr) g_prev_terminate();
  std::abort();
}

// ---------------------------------------------------------------- abandon

// Ending an abandoned execution's thread without unwinding it. Unwinding
// (AbortExecution) runs exactly the landing pads of the frames between the
// throw and ThreadEntry's handler: destructors and catch blocks. When no
// frame has a landing pad at its current call site, unwinding would run no
// user code at all, so dropping the frames (FinishThread: the stack is
// reused from scratch by the next execution) is the same execution with no
// observable difference -- at a fraction of the unwinder's cost (a single
// backtrace, no personality routine, no exception object; measured in
// docs/verification.md). Any doubt (an encoding this reader does not
// handle, no ThreadEntry frame found) answers "unwind".

// Reads a fixed-width little-endian T at p (unwind tables are unaligned)
// and advances p past it.
template <typename T>
T ReadFixed(const uint8_t** p) {
  T v;
  std::memcpy(&v, *p, sizeof(T));
  *p += sizeof(T);
  return v;
}

// Reads an unsigned LEB128 number.
const uint8_t* ReadUleb(const uint8_t* p, uint64_t* v) {
  uint64_t r = 0;
  unsigned shift = 0;
  uint8_t b;
  do {
    b = *p++;
    if (shift < 64) r |= uint64_t{b & 0x7fu} << shift;
    shift += 7;
  } while ((b & 0x80) != 0);
  *v = r;
  return p;
}

// Whether the frame whose function starts at `start` and whose call site
// is at `ip` has a landing pad there, per its LSDA (the .gcc_except_table
// format read by __gxx_personality_v0). An ip outside every call-site
// entry is a terminate point for C++ (a noexcept frame) but means "no
// handler here" for C's personality: either way the caller unwinds (the
// C++ case then ends in AbandonOnTerminate, as before).
// Returns 1 (a landing pad or not in the table: unwind), 0 (none).
int LandingPadAt(const uint8_t* lsda, uintptr_t start, uintptr_t ip) {
  constexpr uint8_t kOmit = 0xff, kUleb128 = 0x01, kUdata4 = 0x03;
  const uint8_t* p = lsda;
  if (*p++ != kOmit) return 1;  // explicit LPStart: not read here
  uint8_t ttype_enc = *p++;
  uint64_t v;
  if (ttype_enc != kOmit) p = ReadUleb(p, &v);
  uint8_t cs_enc = *p++;
  if (cs_enc != kUleb128 && cs_enc != kUdata4) return 1;
  uint64_t len;
  p = ReadUleb(p, &len);
  const uint8_t* end = p + len;
  auto read = [&](uint64_t* out) {
    if (cs_enc == kUleb128) {
      p = ReadUleb(p, out);
    } else {
      *out = ReadFixed<uint32_t>(&p);
    }
  };
  while (p < end) {
    uint64_t cs_start, cs_len, cs_lp, action;
    read(&cs_start);
    read(&cs_len);
    read(&cs_lp);
    p = ReadUleb(p, &action);
    if (ip < start + cs_start) return 1;  // sorted: not in the table
    if (ip < start + cs_start + cs_len) return cs_lp != 0 ? 1 : 0;
  }
  return 1;
}

// The checker's entry points on the path from user code to a context
// switch. Their only landing pad restores t_user (EngineScope), which
// FinishThread sets anyway.
bool IsEngineEntry(uintptr_t fn) {
  static const uintptr_t kEntries[] = {
      reinterpret_cast<uintptr_t>(&AtomicLoad),
      reinterpret_cast<uintptr_t>(&AtomicStore),
      reinterpret_cast<uintptr_t>(&AtomicRmw),
      reinterpret_cast<uintptr_t>(&AtomicCas),
      reinterpret_cast<uintptr_t>(&AtomicAwaitRmw),
      reinterpret_cast<uintptr_t>(&AtomicAwaitLoad),
      reinterpret_cast<uintptr_t>(&Fence),
      reinterpret_cast<uintptr_t>(&Yield),
      reinterpret_cast<uintptr_t>(&WaitBlocked),
      reinterpret_cast<uintptr_t>(&Rand),
      reinterpret_cast<uintptr_t>(&VarAccess),
      reinterpret_cast<uintptr_t>(&JoinThread),
  };
  for (uintptr_t e : kEntries)
    if (e == fn) return true;
  return false;
}

// ---- the frame memo (x86-64)
//
// The backtrace above costs about 2,000 instructions per frame (FDE
// search, CFA program, LSDA), for every abandoned thread. Its verdict per
// frame depends only on the frame's return address: whether the function
// is ThreadEntry or an engine entry, and whether its LSDA has a landing pad
// at that call site. Walking up from one frame to the next needs its CFA
// (the caller's stack pointer, return address at CFA - 8) and the caller's
// rbp: where the function's CFI says CFA = rsp + K or rbp + K at that call
// site and rbp is saved at CFA + J or left alone, K and J are constants of
// the return address too (rbp + K is the frame-pointer case, every frame
// of a -fno-omit-frame-pointer build). So each return address seen by a
// backtrace is memoized with its verdict and these rules (read from its
// FDE below, and kept only if libgcc's CFA and rbp for the caller in that
// same backtrace agree); the next abandoned thread with the same frames
// walks them by memo lookups alone. A return address not in the memo (a
// frame not seen yet, a realigned frame whose CFA is an expression, an
// FDE or opcode not read here, a signal frame) falls back to the
// backtrace: no frame is ever dropped on a guess.
// (FrameKind and FrameMemo are declared before the Engine class.)

#ifdef RL_FRAME_MEMO
int64_t ReadSleb(const uint8_t** pp) {
  const uint8_t* p = *pp;
  int64_t r = 0;
  unsigned shift = 0;
  uint8_t b;
  do {
    b = *p++;
    if (shift < 64) r |= int64_t{b & 0x7f} << shift;
    shift += 7;
  } while ((b & 0x80) != 0);
  if (shift < 64 && (b & 0x40) != 0) r |= -(int64_t{1} << shift);
  *pp = p;
  return r;
}
uint64_t ReadU(const uint8_t** pp) {
  uint64_t v;
  *pp = ReadUleb(*pp, &v);
  return v;
}
// Size of a pointer of DWARF encoding enc (its low four bits), 0 if not
// handled here.
size_t EncSize(uint8_t enc) {
  switch (enc & 0x0f) {
    case 0x00:  // absptr
    case 0x04:  // udata8
    case 0x0c:  // sdata8
      return 8;
    case 0x02:  // udata2
    case 0x0a:  // sdata2
      return 2;
    case 0x03:  // udata4
    case 0x0b:  // sdata4
      return 4;
  }
  return 0;
}

// The unwinding rules in force at address pc (inside the function whose
// FDE is fde, starting at func), run from the CIE's initial instructions
// and the FDE's instructions as DWARF 5 section 6.4.2 says. True, with
// *m filled, if the CFA is rsp + K or rbp + K there, the return address is
// saved at CFA - 8 (x86-64's default) and rbp is either saved at a CFA
// offset or left unchanged; false for anything else and for any opcode
// not read here.
bool CfaRuleAt(const uint8_t* fde, uintptr_t func, uintptr_t pc, FrameMemo* m) {
  constexpr uint64_t kRbp = 6, kRsp = 7, kRa = 16;
  uint32_t len;
  std::memcpy(&len, fde, 4);
  if (len == 0 || len == 0xffffffffu) return false;
  const uint8_t* fde_end = fde + 4 + len;
  int32_t cie_ptr;
  std::memcpy(&cie_ptr, fde + 4, 4);
  const uint8_t* cie = fde + 4 - cie_ptr;
  uint32_t cie_len;
  std::memcpy(&cie_len, cie, 4);
  if (cie_len == 0 || cie_len == 0xffffffffu) return false;
  const uint8_t* cie_end = cie + 4 + cie_len;
  const uint8_t* p = cie + 8;  // length, CIE id
  const uint8_t version = *p++;
  if (version != 1 && version != 3) return false;
  const char* aug = reinterpret_cast<const char*>(p);
  p += std::strlen(aug) + 1;
  if (aug[0] != '\0' && aug[0] != 'z') return false;
  const uint64_t code_align = ReadU(&p);
  const int64_t data_align = ReadSleb(&p);
  const uint64_t ra_reg = version == 1 ? *p++ : ReadU(&p);
  if (ra_reg != kRa) return false;
  uint8_t fde_enc = 0;  // absptr
  if (aug[0] == 'z') {
    const uint64_t aug_len = ReadU(&p);
    const uint8_t* aug_end = p + aug_len;
    for (const char* a = aug + 1; *a != '\0'; ++a) {
      if (*a == 'R') {
        fde_enc = *p++;
      } else if (*a == 'L') {
        ++p;
      } else if (*a == 'P') {
        const uint8_t enc = *p++;
        if ((enc & 0x70) == 0x50) return false;  // aligned
        const size_t n = EncSize(enc);
        if (n == 0) return false;
        p += n;
      } else {
        return false;  // 'S' (signal frame) and anything else
      }
    }
    p = aug_end;
  }
  const size_t ptr_size = EncSize(fde_enc);
  if (ptr_size == 0) return false;

  // The row: CFA = reg + off; the return address's rule.
  struct Row {
    uint64_t reg = 0;
    int64_t off = 0;
    bool expr = false;
    bool ra_ok = false;  // return address saved at CFA - 8
    int rbp = 0;         // 0 unchanged, 1 saved at CFA + rbp_off, 2 other
    int64_t rbp_off = 0;
  };
  Row row, init;
  Row saved[8];
  int depth = 0;
  uintptr_t loc = func;
  bool in_cie = true;
  // Returns false to stop: an unknown opcode (the result is then -1) or
  // the row for pc reached.
  bool bad = false, done = false;
  // Register r saved at CFA + off; restored to the CIE's rule; any other
  // rule (only the return address's and rbp's matter here).
  auto saved_at = [&](uint64_t r, int64_t off) {
    if (r == kRa) row.ra_ok = off == -8;
    if (r == kRbp) {
      row.rbp = 1;
      row.rbp_off = off;
    }
  };
  auto restore = [&](uint64_t r) {
    if (r == kRa) row.ra_ok = init.ra_ok;
    if (r == kRbp) {
      row.rbp = init.rbp;
      row.rbp_off = init.rbp_off;
    }
  };
  auto other = [&](uint64_t r) {
    if (r == kRa) row.ra_ok = false;
    if (r == kRbp) row.rbp = 2;
  };
  auto run = [&](const uint8_t* q, const uint8_t* end) {
    while (q < end && !bad && !done) {
      const uint8_t op = *q++;
      const uint8_t hi = op & 0xc0, lo = op & 0x3f;
      uint64_t delta = 0;
      bool advance = false;
      if (hi == 0x40) {  // advance_loc
        delta = lo * code_align;
        advance = true;
      } else if (hi == 0x80) {  // offset
        const int64_t off = static_cast<int64_t>(ReadU(&q)) * data_align;
        saved_at(lo, off);
      } else if (hi == 0xc0) {  // restore
        restore(lo);
      } else {
        switch (op) {
          case 0x00:  // nop
            break;
          case 0x02:  // advance_loc1
            delta = *q++ * code_align;
            advance = true;
            break;
          case 0x03:  // advance_loc2
            delta = ReadFixed<uint16_t>(&q) * code_align;
            advance = true;
            break;
          case 0x04:  // advance_loc4
            delta = ReadFixed<uint32_t>(&q) * code_align;
            advance = true;
            break;
          case 0x05: {  // offset_extended
            const uint64_t r = ReadU(&q);
            const int64_t off = static_cast<int64_t>(ReadU(&q)) * data_align;
            saved_at(r, off);
            break;
          }
          case 0x11: {  // offset_extended_sf
            const uint64_t r = ReadU(&q);
            const int64_t off = ReadSleb(&q) * data_align;
            saved_at(r, off);
            break;
          }
          case 0x06:  // restore_extended
            restore(ReadU(&q));
            break;
          case 0x07:  // undefined
            other(ReadU(&q));
            break;
          case 0x08: {  // same_value
            const uint64_t r = ReadU(&q);
            if (r == kRa) row.ra_ok = false;
            if (r == kRbp) row.rbp = 0;
            break;
          }
          case 0x09:  // register
            other(ReadU(&q));
            ReadU(&q);
            break;
          case 0x0a:  // remember_state
            if (depth == 8) {
              bad = true;
              break;
            }
            saved[depth++] = row;
            break;
          case 0x0b:  // restore_state
            if (depth == 0) {
              bad = true;
              break;
            }
            row = saved[--depth];
            break;
          case 0x0c:  // def_cfa
            row.reg = ReadU(&q);
            row.off = static_cast<int64_t>(ReadU(&q));
            row.expr = false;
            break;
          case 0x12:  // def_cfa_sf
            row.reg = ReadU(&q);
            row.off = ReadSleb(&q) * data_align;
            row.expr = false;
            break;
          case 0x0d:  // def_cfa_register
            row.reg = ReadU(&q);
            break;
          case 0x0e:  // def_cfa_offset
            row.off = static_cast<int64_t>(ReadU(&q));
            break;
          case 0x13:  // def_cfa_offset_sf
            row.off = ReadSleb(&q) * data_align;
            break;
          case 0x0f: {  // def_cfa_expression
            row.expr = true;
            const uint64_t n = ReadU(&q);
            q += n;
            break;
          }
          case 0x10:    // expression
          case 0x16: {  // val_expression
            other(ReadU(&q));
            const uint64_t n = ReadU(&q);
            q += n;
            break;
          }
          case 0x14:  // val_offset
            other(ReadU(&q));
            ReadU(&q);
            break;
          case 0x15:  // val_offset_sf
            other(ReadU(&q));
            ReadSleb(&q);
            break;
          case 0x2e:  // GNU_args_size (not part of the CFA)
            ReadU(&q);
            break;
          default:  // set_loc, GNU_negative_offset_extended, vendor ops
            bad = true;
            break;
        }
      }
      if (advance) {
        if (in_cie) {
          bad = true;  // a CIE does not advance
        } else if (loc + delta > pc) {
          done = true;
        } else {
          loc += delta;
        }
      }
    }
  };
  run(p, cie_end);
  if (bad) return false;
  init = row;
  in_cie = false;
  const uint8_t* q = fde + 8 + 2 * ptr_size;  // pc_begin, pc_range
  if (aug[0] == 'z') {
    const uint64_t n = ReadU(&q);
    q += n;
  }
  run(q, fde_end);
  if (bad || row.expr || (row.reg != kRsp && row.reg != kRbp) || !row.ra_ok ||
      row.rbp == 2 || row.off < 8 || row.off > (int64_t{1} << 30) ||
      row.rbp_off < -(int64_t{1} << 30) || row.rbp_off > (int64_t{1} << 30))
    return false;
  m->cfa_off = static_cast<int32_t>(row.off);
  m->cfa_rbp = row.reg == kRbp;
  m->rbp_saved = row.rbp == 1;
  m->rbp_off = static_cast<int32_t>(row.rbp_off);
  return true;
}
#endif  // RL_FRAME_MEMO

struct InertWalk {
  bool inert = true;
  bool reached = false;  // ThreadEntry's frame was found
#ifdef RL_FRAME_MEMO
  // Frames to memoize (return address and verdict), found by this walk.
  struct Rec {
    uintptr_t ra;
    FrameMemo memo;
  };
  Rec recs[64];
  int n_recs = 0;
  // The last kPass frame, recorded once the next frame confirms its rules;
  // its rsp and rbp at its call.
  bool pending = false;
  Rec pend{};
  uintptr_t pend_sp = 0, pend_rbp = 0;
#endif
};

#ifdef RL_FRAME_MEMO
// Records frame ctx's verdict (FrameKind) under its return address and,
// for kPass, its rules (CfaRuleAt) once the next frame shows that
// libgcc's unwinding agrees: the same CFA and the same rbp in the caller.
// In the callback, _Unwind_GetCFA gives the CFA of the frame below, i.e.
// this frame's stack pointer at its call; _Unwind_GetGR(ctx, 6) its rbp.
void RecordFrame(_Unwind_Context* ctx, InertWalk* w, FrameKind kind) {
  const uintptr_t sp = _Unwind_GetCFA(ctx);
  const uintptr_t rbp = _Unwind_GetGR(ctx, 6);
  if (w->pending && w->n_recs < 64) {
    const FrameMemo& m = w->pend.memo;
    const uintptr_t cfa = (m.cfa_rbp ? w->pend_rbp : w->pend_sp) +
                          static_cast<intptr_t>(m.cfa_off);
    if (cfa == sp) {
      const uintptr_t caller_rbp =
          m.rbp_saved ? *reinterpret_cast<const uintptr_t*>(
                            cfa + static_cast<intptr_t>(m.rbp_off))
                      : w->pend_rbp;
      if (caller_rbp == rbp) w->recs[w->n_recs++] = w->pend;
    }
  }
  w->pending = false;
  int before = 0;
  const uintptr_t ra = _Unwind_GetIPInfo(ctx, &before);
  if (before != 0 || w->n_recs == 64) return;
  if (kind != FrameKind::kPass) {
    FrameMemo m;
    m.kind = kind;
    w->recs[w->n_recs++] = {ra, m};
    return;
  }
  rl_eh_bases bases{};
  void* fde = _Unwind_Find_FDE(reinterpret_cast<void*>(ra - 1), &bases);
  if (fde == nullptr) return;
  FrameMemo m;
  if (!CfaRuleAt(static_cast<const uint8_t*>(fde), bases.func, ra - 1, &m))
    return;
  w->pending = true;
  w->pend = {ra, m};
  w->pend_sp = sp;
  w->pend_rbp = rbp;
}
#endif

FrameKind InertKind(_Unwind_Context* ctx, InertWalk* w) {
  uintptr_t fn = _Unwind_GetRegionStart(ctx);
  if (fn == reinterpret_cast<uintptr_t>(&ThreadEntry)) {
    w->reached = true;
    return FrameKind::kThreadEntry;
  }
  if (fn == 0) {  // no unwind information
    w->inert = false;
    return FrameKind::kLandingPad;  // (not memoized: no FDE)
  }
  if (IsEngineEntry(fn)) return FrameKind::kPass;
  const auto* lsda =
      static_cast<const uint8_t*>(_Unwind_GetLanguageSpecificData(ctx));
  if (lsda == nullptr) return FrameKind::kPass;  // no landing pads at all
  int before = 0;
  uintptr_t ip = _Unwind_GetIPInfo(ctx, &before);
  if (before == 0) --ip;  // a return address: the call is before it
  if (LandingPadAt(lsda, fn, ip) == 0) return FrameKind::kPass;
  w->inert = false;
  return FrameKind::kLandingPad;
}

_Unwind_Reason_Code InertStep(_Unwind_Context* ctx, void* arg) {
  auto* w = static_cast<InertWalk*>(arg);
  const FrameKind kind = InertKind(ctx, w);
#ifdef RL_FRAME_MEMO
  if (_Unwind_GetRegionStart(ctx) != 0) RecordFrame(ctx, w, kind);
#endif
  return kind == FrameKind::kPass ? _URC_NO_REASON : _URC_END_OF_STACK;
}

// Called on a checker thread's stack: true if unwinding it to ThreadEntry
// would run no landing pad. memo (may be null) gets the frames' verdicts.
bool FramesInert(std::unordered_map<uintptr_t, FrameMemo>* memo) {
  InertWalk w;
  _Unwind_Backtrace(&InertStep, &w);
#ifdef RL_FRAME_MEMO
  if (memo != nullptr) {
    EngineScope engine;  // the memo's allocations are the engine's
    for (int i = 0; i < w.n_recs; ++i)
      memo->emplace(w.recs[i].ra, w.recs[i].memo);
  }
#else
  (void)memo;
#endif
  return w.inert && w.reached;
}

#ifdef RL_FRAME_MEMO
// FramesInert() by memo lookups when every frame from the caller's up to
// ThreadEntry is memoized (see "the frame memo" above); else the backtrace,
// which memoizes what it can. [lo, hi) is the running thread's stack.
// Its own frame is not walked and holds nothing with a destructor.
[[gnu::noinline]] bool FramesInertFast(
    std::unordered_map<uintptr_t, FrameMemo>* memo, uintptr_t lo,
    uintptr_t hi) {
  // The caller's return address and stack pointer at the call (this
  // frame's CFA: the frame pointer that __builtin_frame_address forces
  // sits 16 bytes below it on x86-64).
  // The caller's rbp is where this function's prologue pushed it, at the
  // frame address.
  const uintptr_t fa = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  uintptr_t ra = reinterpret_cast<uintptr_t>(
      __builtin_extract_return_addr(__builtin_return_address(0)));
  uintptr_t sp = fa + 16;
  uintptr_t rbp = *reinterpret_cast<const uintptr_t*>(fa);
  if (*reinterpret_cast<const uintptr_t*>(sp - 8) == ra) {
    for (int k = 0; k < 256; ++k) {
      auto it = memo->find(ra);
      if (it == memo->end()) break;
      const FrameMemo& m = it->second;
      if (m.kind != FrameKind::kPass) {
        const bool inert = m.kind == FrameKind::kThreadEntry;
#ifdef RL_FRAME_MEMO_CHECK
        // Self-check build: every memo verdict against the backtrace.
        if (FramesInert(nullptr) != inert) {
          std::fprintf(stderr, "rl: frame memo disagrees with backtrace\n");
          std::abort();
        }
#endif
        return inert;
      }
      const uintptr_t cfa =
          (m.cfa_rbp ? rbp : sp) + static_cast<intptr_t>(m.cfa_off);
      if (cfa < lo + 8 || cfa > hi) break;
      if (m.rbp_saved) {
        const uintptr_t at = cfa + static_cast<intptr_t>(m.rbp_off);
        if (at < lo || at > hi - 8) break;
        rbp = *reinterpret_cast<const uintptr_t*>(at);
      }
      ra = *reinterpret_cast<const uintptr_t*>(cfa - 8);
      sp = cfa;
    }
  }
  return FramesInert(memo);
}
#endif

// ---- a spin loop's own state
//
// An identical spin iteration (the same reads of the same writes, no
// write) leaves the shared state as it was, but not always the thread's
// own: a count of tries kept in a local and checked after the loop. What
// the thread's code keeps across its call into rl::detail::Yield is the
// callee-saved registers (a caller-saved one holds nothing across a call)
// and the stack of the frames above that call; a test also keeps plain
// state in its suite object. LoopState() reads all three.
//
// The registers: rl::detail::Yield calls __builtin_unwind_init(), so its
// prologue saves every callee-saved register of the caller in its frame,
// and passes its CFA (the caller's stack pointer at the call). On x86-64
// the six are pushed first, right below the return address: the words at
// [CFA - 56, CFA - 8), in an order fixed by the build. That layout is
// checked against the unwinder (in the context of the frame that called
// Yield, _Unwind_GetGR gives each register as that frame will see it
// again): the slots must hold the unwinder's six values at the first
// kLayoutChecks captures, and then are read directly (an unwinder walk
// costs about 8,000 instructions; a random run of the seqcount port spent
// 7.7% more instructions when every capture walked). Elsewhere, or if the
// check fails, every capture walks. Architectures without a list below,
// frames without unwind information or a stack not the checker's answer
// "unknown", and the loop is then treated as carrying no state, as before
// (docs/verification.md, "A loop that keeps a count"). Globals and
// thread_locals are not read.
//
// Floating-point registers: x86-64 and i386 have no callee-saved ones
// (SysV ABIs: every xmm and x87 register is caller-saved, so a value kept
// across the call is on the stack). AArch64 and ARM hard-float keep d8-d15
// across calls (AAPCS64 6.1.2; AAPCS 6.1.2.1: the low 64 bits of v8-v15,
// s16-s31): a count kept in a double lives there at -O2, and before they
// were read such a loop was explored as stateless (a silent pass).
#if defined(__x86_64__)
constexpr int kCalleeSaved[] = {3, 6, 12, 13, 14, 15};  // rbx rbp r12-r15
constexpr int kFpCalleeSaved = 0;
#elif defined(__aarch64__)
constexpr int kCalleeSaved[] = {19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29};
// d8-d15: DWARF numbers 72-79 (v8-v15; the unwinder keeps their low 64
// bits, the callee-saved part).
constexpr int kFpCalleeSaved = 8;
constexpr int kFpDwarfFirst = 72;
#elif defined(__i386__)
constexpr int kCalleeSaved[] = {3, 5, 6, 7};  // ebx ebp esi edi
constexpr int kFpCalleeSaved = 0;
#elif defined(__arm__)
// r4-r11 (ARM EHABI's core register numbers).
constexpr int kCalleeSaved[] = {4, 5, 6, 7, 8, 9, 10, 11};
#if defined(__ARM_PCS_VFP) || (defined(__ARM_FP) && !defined(__SOFTFP__))
// d8-d15. libgcc's EHABI _Unwind_VRS_Get reads core registers only
// (_UVRSR_NOT_IMPLEMENTED for VFP), so rl::detail::Yield stores them on
// entry, before its body can use them, where LoopState() reads them.
constexpr int kFpCalleeSaved = 8;
#define RL_FP_AT_YIELD_ENTRY 1
uint64_t g_yield_fp_regs[kFpCalleeSaved];
#else
constexpr int kFpCalleeSaved = 0;  // no VFP registers in use
#endif
#else
#define RL_NO_LOOP_STATE 1
#endif

// Appends the n bytes at p to *out, in words (the last one zero-padded).
// Under ASan, read without its checks: the stack holds redzones between
// locals, a live heap block a container's unused capacity, both poisoned;
// volatile, so the loops do not become an intercepted memcpy. Elsewhere a
// memcpy into the room resize() makes, not zeroed (Words). Callgrind, the
// exhaustive seqcount: the volatile loop 5.6% more instructions than
// vector::insert(), and insert() 1.3% more than this (its generic
// range-insert path at every copy).
__attribute__((no_sanitize("address"))) void CopyBytes(uintptr_t p, size_t n,
                                                       Words* out) {
  const size_t words = n / sizeof(uintptr_t);
  const size_t old = out->size();
  out->resize(old + words);  // not zeroed (Words)
  uintptr_t* dst = out->data() + old;
#ifdef RL_ASAN
  const auto* src = reinterpret_cast<const volatile uintptr_t*>(p);
  for (size_t i = 0; i < words; ++i) dst[i] = src[i];
  const auto* tail = reinterpret_cast<const volatile unsigned char*>(p);
#else
  std::memcpy(dst, reinterpret_cast<const void*>(p), words * sizeof(uintptr_t));
  const auto* tail = reinterpret_cast<const unsigned char*>(p);
#endif
  if (n == words * sizeof(uintptr_t)) return;
  uintptr_t last = 0;
  auto* last_bytes = reinterpret_cast<unsigned char*>(&last);
  for (size_t i = words * sizeof(uintptr_t); i < n; ++i)
    last_bytes[i - words * sizeof(uintptr_t)] = tail[i];
  out->push_back(last);
}

// The words holding the bytes of sorted, disjoint ranges: runs of
// kMinRunWords or more whole words, copied as blocks, and the other words,
// each with a mask of its bytes in the ranges (the others belong to
// something else: the checker's globals, a library's object).
constexpr size_t kMinRunWords = 8;
void PlanGlobals(const std::vector<ByteRange>& ranges, GlobalsPlan* plan) {
  constexpr uintptr_t kWord = sizeof(uintptr_t);
  *plan = GlobalsPlan();
  std::vector<MaskedWord> words;
  // Sets the mask bits of bytes [from, to) of the word at `word`.
  auto add = [&words](uintptr_t word, uintptr_t from, uintptr_t to) {
    if (words.empty() || words.back().addr != word) words.push_back({word, 0});
    unsigned char bytes[kWord];
    std::memcpy(bytes, &words.back().mask, kWord);
    std::memset(bytes + from, 0xff, to - from);
    std::memcpy(&words.back().mask, bytes, kWord);
  };
  for (const ByteRange& r : ranges) {
    for (uintptr_t word = r.lo & ~(kWord - 1); word < r.hi; word += kWord) {
      add(word, std::max(r.lo, word) - word,
          std::min(r.hi, word + kWord) - word);
    }
  }
  for (size_t i = 0; i < words.size();) {
    size_t j = i;  // [i, j): whole words at consecutive addresses
    while (j < words.size() && words[j].mask == ~uintptr_t{0} &&
           words[j].addr == words[i].addr + (j - i) * kWord)
      ++j;
    if (j - i >= kMinRunWords) {
      plan->runs.push_back({words[i].addr, j - i});
      i = j;
    } else {
      plan->masked.push_back(words[i++]);
    }
  }
  plan->words = plan->masked.size();
  for (const auto& run : plan->runs) plan->words += run.second;
}

// Appends the words of a GlobalsPlan, masked. Without ASan's checks: the
// words hold redzones between globals (as CopyBytes).
__attribute__((no_sanitize("address"))) void GatherGlobals(
    const GlobalsPlan& plan, Words* out) {
  // Room for every word at once; the masked words are computed one by
  // one, the runs copied (CopyBytes).
  out->reserve(out->size() + plan.words);
  for (const MaskedWord& w : plan.masked)
    out->push_back(*reinterpret_cast<const volatile uintptr_t*>(w.addr) &
                   w.mask);
  for (const auto& [addr, n] : plan.runs)
    CopyBytes(addr, n * sizeof(uintptr_t), out);
}

#ifndef RL_NO_LOOP_STATE
constexpr int kNumCalleeSaved = std::size(kCalleeSaved);

struct LoopStateWalk {
  bool after_yield = false;  // the frame walked last was Yield's
  bool found = false;
  uintptr_t sp = 0;
  uintptr_t regs[kNumCalleeSaved] = {};
  // d8-d15 as the caller will see them again (kFpCalleeSaved of them).
  uint64_t fp_regs[kFpCalleeSaved > 0 ? kFpCalleeSaved : 1] = {};
};

// Reads d8-d15 of the frame ctx describes into w->fp_regs.
void ReadFpCalleeSaved(_Unwind_Context* ctx, LoopStateWalk* w) {
#if defined(__aarch64__)
  for (int i = 0; i < kFpCalleeSaved; ++i)
    w->fp_regs[i] = _Unwind_GetGR(ctx, kFpDwarfFirst + i);
#elif defined(__arm__)
  (void)ctx;
  std::memcpy(w->fp_regs, g_yield_fp_regs, sizeof(w->fp_regs));
#else
  (void)ctx;
  (void)w;
#endif
}

// A function's first instruction, as _Unwind_GetRegionStart gives it: a
// Thumb function's pointer has bit 0 set, its code address does not.
template <typename F>
uintptr_t CodeStart(F* f) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(f);
#ifdef __arm__
  return a & ~uintptr_t{1};
#else
  return a;
#endif
}

_Unwind_Reason_Code LoopStateStep(_Unwind_Context* ctx, void* arg) {
  auto* w = static_cast<LoopStateWalk*>(arg);
  if (w->after_yield) {  // the frame that called rl::detail::Yield
#ifdef __arm__
    w->sp = _Unwind_GetGR(ctx, 13);  // EHABI has no CFA: its sp at the call
#else
    w->sp = _Unwind_GetCFA(ctx);
#endif
    for (int i = 0; i < kNumCalleeSaved; ++i)
      w->regs[i] = _Unwind_GetGR(ctx, kCalleeSaved[i]);
    ReadFpCalleeSaved(ctx, w);
    w->found = true;
    return _URC_END_OF_STACK;
  }
  const uintptr_t fn = _Unwind_GetRegionStart(ctx);
  if (fn == 0 || fn == CodeStart(&ThreadEntry))
    return _URC_END_OF_STACK;  // no unwind information, or no Yield frame
  if (fn == CodeStart(&Yield)) w->after_yield = true;
  return _URC_NO_REASON;
}

#if defined(__x86_64__)
// The saved registers' slots below Yield's return address (see above).
constexpr uintptr_t kSlotsBelowCfa = 8 + 8 * kNumCalleeSaved;
constexpr int kLayoutChecks = 4;
// Captures that found the slots holding the unwinder's values; -1: one
// did not (then every capture walks).
int g_layout_checked = 0;

// Whether the slots below cfa hold exactly the values the unwinder gives
// for the frame that called Yield (as a multiset: the order is the
// prologue's).
bool SlotsHoldRegisters(uintptr_t cfa, const LoopStateWalk& w) {
  Words slots, regs(std::begin(w.regs), std::end(w.regs));
  CopyBytes(cfa - kSlotsBelowCfa, kSlotsBelowCfa - 8, &slots);
  std::sort(slots.begin(), slots.end());
  std::sort(regs.begin(), regs.end());
  return slots == regs;
}
#endif
#endif

#ifndef RL_NO_LOOP_STATE
// ---- the test's globals and thread_locals
//
// A count of tries kept in a global, a static local or a thread_local is
// state the loop keeps too (all checker threads run on one OS thread, so
// a thread_local is shared as a global is; Relacy's fibers likewise).
// Read: the data objects the symbol tables name (STT_OBJECT and STT_TLS
// symbols in writable sections) of the program and of every shared object
// outside the system's library directories, thread_locals in their TLS
// blocks on the running OS thread. Left out, as they change between two
// tries of a loop that keeps nothing, or are not the test's:
// * objects in system directories (libc, libstdc++, libgcc, the dynamic
//   loader, the sanitizers' runtimes) and the vDSO: the checker's own
//   calls change their state (malloc's arena, stdio);
// * the whole shared object the checker is in, unless it is the program;
// * the checker's, the standard library's, test frameworks' and the C
//   runtime's objects, guard variables, vtables (NotTheTests);
// * RELRO (read-only once relocated), a library's object copied into the
//   program (std::cout, stderr).
// Reading the symbols, not the segments, also leaves out the compiler's
// unnamed data: UBSan's check descriptors (2.4 MB of .data in an
// asan-ubsan build at -O0), padding and the GOT (a lazily bound PLT entry
// is written at a function's first call through it; no object symbol
// with a size lies there).
// Not read, and the loop's globals then unknown (as before: a count there
// is not seen): a statically linked program, whose segments also hold
// libc's state with nothing to tell it from the test's; a program without
// a symbol table (stripped); a build with coverage counters (gcov,
// SanitizerCoverage), which change at every branch taken.

// Coverage counters linked in: libgcov's entry point (--coverage), and
// the sections SanitizerCoverage's counters and guards live in (the
// sanitizers' runtimes define its callbacks in every ASan build, so those
// tell nothing).
extern "C" void __gcov_dump() __attribute__((weak));
extern "C" char __start___sancov_cntrs[] __attribute__((weak));
extern "C" char __start___sancov_guards[] __attribute__((weak));

// Whether a loaded object's path is in a system library directory (or
// names no file: the vDSO). A cross target's sysroot as qemu-user's -L
// shows it (/usr/<triplet>/lib/) counts as one.
bool IsSystemObject(const char* path) {
  if (path[0] != '/') return true;
  static const char* const kDirs[] = {
      "/lib/",       "/lib32/",      "/lib64/",
      "/libx32/",    "/usr/lib/",    "/usr/lib32/",
      "/usr/lib64/", "/usr/libx32/", "/usr/local/lib/"};
  for (const char* d : kDirs)
    if (std::strncmp(path, d, std::strlen(d)) == 0) return true;
  return std::strncmp(path, "/usr/", 5) == 0 &&
         std::strstr(path, "-linux-gnu") != nullptr;
}

struct GlobalsScan {
  uintptr_t checker_code = 0;   // an instruction of the checker
  bool first = true;            // the program is reported first
  bool libc_apart = false;      // libc is a shared object of its own
  bool program_unread = false;  // the program has no symbol table
  std::vector<ByteRange> keep, drop;
};

#if defined(__x86_64__)
constexpr unsigned kCopyReloc = R_X86_64_COPY;
#elif defined(__aarch64__)
constexpr unsigned kCopyReloc = R_AARCH64_COPY;
#elif defined(__i386__)
constexpr unsigned kCopyReloc = R_386_COPY;
#elif defined(__arm__)
constexpr unsigned kCopyReloc = R_ARM_COPY;
#endif

// What the program's dynamic section says is not the test's: a shared
// library's object copied into the program (an R_*_COPY relocation:
// std::cout, stderr), which is the library's state, though the program's
// symbol table names it. (The GOT needs no such drop: no sized object
// symbol lies in .got or .got.plt, checked with readelf on x86-64,
// aarch64, i386 and ARM, programs and shared objects.) The loader
// relocates these addresses in place where the object's load address is
// not 0, and not on every target: an address below the load address is
// taken as not yet relocated.
void DropCopyRelocations(const dl_phdr_info* info, const ElfW(Phdr) & dyn_ph,
                         GlobalsScan* s) {
  const uintptr_t base = info->dlpi_addr;
  auto at = [base](uintptr_t a) { return a < base ? a + base : a; };
  const auto* d = reinterpret_cast<const ElfW(Dyn)*>(base + dyn_ph.p_vaddr);
  uintptr_t symtab = 0, rel = 0, rel_bytes = 0;
  bool rela = true;
  for (; d->d_tag != DT_NULL; ++d) {
    switch (d->d_tag) {
      case DT_SYMTAB:
        symtab = at(d->d_un.d_ptr);
        break;
      case DT_RELA:
        rel = at(d->d_un.d_ptr);
        break;
      case DT_RELASZ:
        rel_bytes = d->d_un.d_val;
        break;
      case DT_REL:
        rel = at(d->d_un.d_ptr), rela = false;
        break;
      case DT_RELSZ:
        rel_bytes = d->d_un.d_val;
        break;
      default:
        break;
    }
  }
  if (symtab == 0 || rel == 0) return;
  const auto* syms = reinterpret_cast<const ElfW(Sym)*>(symtab);
  const size_t rel_size = rela ? sizeof(ElfW(Rela)) : sizeof(ElfW(Rel));
  for (size_t off = 0; off + rel_size <= rel_bytes; off += rel_size) {
    // Rel is Rela's first two fields.
    const auto* r = reinterpret_cast<const ElfW(Rel)*>(rel + off);
#if UINTPTR_MAX > 0xffffffffu
    const unsigned type = ELF64_R_TYPE(r->r_info), sym = ELF64_R_SYM(r->r_info);
#else
    const unsigned type = ELF32_R_TYPE(r->r_info), sym = ELF32_R_SYM(r->r_info);
#endif
    if (type != kCopyReloc) continue;
    const uintptr_t lo = at(r->r_offset);
    s->drop.push_back({lo, lo + syms[sym].st_size});
  }
}

// Whether a symbol names something that is not the test's own state:
// what the C runtime makes (completed.0, __dso_handle), guard variables
// (set once, at a first call), vtables and typeinfo (written only by
// relocation), and objects in the namespace of the checker (rl::), the
// standard library (std::, __gnu_cxx::, __cxxabiv1::) or a test framework
// (doctest::, testing:: of GoogleTest, Catch::), including a function's
// static locals there: their state does not change in a test's loop, and
// doctest's runner alone holds 3 KB (read at every capture, it cost the
// exhaustive seqcount port 22% more instructions, callgrind).
bool NotTheTests(const char* name) {
  if (std::strncmp(name, "_Z", 2) != 0)
    return std::strncmp(name, "__", 2) == 0 ||
           std::strchr(name, '.') != nullptr;
  const char* p = name + 2;
  if (p[0] == 'G' && p[1] == 'V') return true;
  if (p[0] == 'T' && p[1] != '\0' && std::strchr("VTIS", p[1]) != nullptr)
    return true;
  if (*p == 'Z') ++p;  // a local static: its function's name comes first
  if (*p == 'N') ++p;
  while (*p == 'K' || *p == 'V' || *p == 'r') ++p;
  if (p[0] == 'S' && p[1] == 't') return true;  // std::
  char* end = nullptr;
  const unsigned long len = std::strtoul(p, &end, 10);
  if (end == p) return false;
  static const char* const kNamespaces[] = {"rl",
                                            "__gnu_cxx",
                                            "__cxxabiv1",
                                            "doctest",
                                            "doctest_detail_test_suite_ns",
                                            "testing",
                                            "Catch"};
  for (const char* ns : kNamespaces)
    if (std::strlen(ns) == len && std::strncmp(end, ns, len) == 0) return true;
  return false;
}

// The test's data objects in one ELF file's symbol table: STT_OBJECT and
// STT_TLS symbols in writable sections, less NotTheTests(). `value` is an
// address before relocation, or for a thread_local an offset in the
// module's TLS block.
struct FileObject {
  bool tls;
  uintptr_t value, size;
};
struct FileObjects {
  bool read = false;  // false: no symbol table (stripped), or unreadable
  std::vector<FileObject> objects;
};

FileObjects ReadFileObjects(const char* file) {
  FileObjects out;
  const int fd = open(file, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  auto read_at = [fd](void* dst, size_t n, uint64_t off) {
    return pread(fd, dst, n, static_cast<off_t>(off)) ==
           static_cast<ssize_t>(n);
  };
  ElfW(Ehdr) eh;
  std::vector<ElfW(Shdr)> sh;
  if (read_at(&eh, sizeof eh, 0) && eh.e_shentsize == sizeof(ElfW(Shdr))) {
    sh.resize(eh.e_shnum);
    if (!read_at(sh.data(), sh.size() * sizeof(ElfW(Shdr)), eh.e_shoff))
      sh.clear();
  }
  for (const ElfW(Shdr) & symtab : sh) {
    if (symtab.sh_type != SHT_SYMTAB || symtab.sh_link >= sh.size()) continue;
    const ElfW(Shdr)& strtab = sh[symtab.sh_link];
    std::vector<ElfW(Sym)> syms(symtab.sh_size / sizeof(ElfW(Sym)));
    std::string names(strtab.sh_size, '\0');
    if (!read_at(syms.data(), syms.size() * sizeof(ElfW(Sym)),
                 symtab.sh_offset) ||
        !read_at(names.data(), names.size(), strtab.sh_offset))
      break;
    out.read = true;
    for (const ElfW(Sym) & sym : syms) {
      const unsigned type = ELF64_ST_TYPE(sym.st_info);
      if ((type != STT_OBJECT && type != STT_TLS) || sym.st_size == 0 ||
          sym.st_shndx == SHN_UNDEF || sym.st_shndx >= sh.size() ||
          sym.st_name >= names.size())
        continue;
      const auto flags = sh[sym.st_shndx].sh_flags;
      if ((flags & SHF_WRITE) == 0 || (flags & SHF_ALLOC) == 0) continue;
      if (NotTheTests(names.c_str() + sym.st_name)) continue;
      out.objects.push_back({type == STT_TLS, sym.st_value, sym.st_size});
    }
    break;
  }
  close(fd);
  return out;
}

// Adds to s->keep the test's data objects of the ELF file at `file`,
// loaded at `base`, its TLS block on this OS thread at `tls` (0: none).
// The symbol table is read once per file and process (every run's first
// capture scans: a test binary's table is read from disk only once).
// False if the file has no symbol table.
bool KeepSymbols(const char* file, uintptr_t base, uintptr_t tls,
                 GlobalsScan* s) {
  static auto* cache = new std::unordered_map<std::string, FileObjects>();
  auto it = cache->find(file);
  if (it == cache->end())
    it = cache->emplace(file, ReadFileObjects(file)).first;
  for (const FileObject& o : it->second.objects) {
    if (!o.tls)
      s->keep.push_back({base + o.value, base + o.value + o.size});
    else if (tls != 0)
      s->keep.push_back({tls + o.value, tls + o.value + o.size});
  }
  return it->second.read;
}

int ScanObject(dl_phdr_info* info, size_t, void* arg) {
  auto* s = static_cast<GlobalsScan*>(arg);
  const bool program = s->first;
  s->first = false;
  const char* path = info->dlpi_name != nullptr ? info->dlpi_name : "";
  if (std::strncmp(BaseName(path), "libc.so", 7) == 0) s->libc_apart = true;
  if (!program && IsSystemObject(path)) return 0;
  bool has_checker = false;
  uintptr_t tls = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    const uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
    if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X) != 0 &&
        s->checker_code >= lo && s->checker_code < lo + ph.p_memsz)
      has_checker = true;
    if (ph.p_type == PT_GNU_RELRO) s->drop.push_back({lo, lo + ph.p_memsz});
    if (ph.p_type == PT_DYNAMIC && program) DropCopyRelocations(info, ph, s);
    if (ph.p_type == PT_TLS)
      tls = reinterpret_cast<uintptr_t>(info->dlpi_tls_data);
  }
  // The checker's own shared object: all of it is the checker's.
  if (has_checker && !program) return 0;
  if (!KeepSymbols(program ? "/proc/self/exe" : path, info->dlpi_addr, tls,
                   s) &&
      program)
    s->program_unread = true;
  return 0;
}

// The byte ranges of the test's globals and thread_locals (see above),
// sorted and disjoint; false if they cannot be told apart.
bool TestGlobals(std::vector<ByteRange>* out) {
  out->clear();
  if (__gcov_dump != nullptr || __start___sancov_cntrs != nullptr ||
      __start___sancov_guards != nullptr)
    return false;
  GlobalsScan s;
  s.checker_code = CodeStart(&Yield);
  dl_iterate_phdr(&ScanObject, &s);
  if (!s.libc_apart || s.program_unread) return false;
  // keep minus drop: cut each kept range at every dropped one.
  std::sort(s.drop.begin(), s.drop.end(),
            [](const ByteRange& a, const ByteRange& b) { return a.lo < b.lo; });
  for (ByteRange k : s.keep) {
    for (const ByteRange& d : s.drop) {
      if (d.hi <= k.lo || d.lo >= k.hi) continue;
      if (d.lo > k.lo) out->push_back({k.lo, d.lo});
      k.lo = std::max(k.lo, d.hi);
      if (k.lo >= k.hi) break;
    }
    if (k.lo < k.hi) out->push_back(k);
  }
  // Sorted, aliases and overlaps merged.
  std::sort(out->begin(), out->end(),
            [](const ByteRange& a, const ByteRange& b) { return a.lo < b.lo; });
  size_t n = 0;
  for (const ByteRange& r : *out) {
    if (n > 0 && r.lo <= (*out)[n - 1].hi)
      (*out)[n - 1].hi = std::max((*out)[n - 1].hi, r.hi);
    else
      (*out)[n++] = r;
  }
  out->resize(n);
  return true;
}
#endif

// The running thread's own state at its yield, in *out: the caller's
// callee-saved registers, the stack words from cfa (Yield's CFA, see
// above) up to `top` (the end of the thread's stack), the suite object's
// bytes. False if unknown.
[[gnu::noinline]] bool LoopState(uintptr_t cfa, uintptr_t lo, uintptr_t top,
                                 const SuiteIface& suite, Words* out) {
  out->clear();
#ifdef RL_NO_LOOP_STATE
  (void)cfa;
  (void)lo;
  (void)top;
  (void)suite;
  return false;
#else
  bool walk = true;
#if defined(__x86_64__) && !defined(RL_SC_CHECK)
  // (The self-checking build walks every time, checking the slots.)
  walk = g_layout_checked < kLayoutChecks;
#endif
  if (cfa < lo + 64 || cfa >= top) return false;
  if (walk) {
    LoopStateWalk w;
    _Unwind_Backtrace(&LoopStateStep, &w);
    if (!w.found || w.sp != cfa) return false;
#if defined(__x86_64__)
    if (g_layout_checked >= 0) {
      const bool held = SlotsHoldRegisters(cfa, w);
#ifdef RL_SC_CHECK
      if (!held && g_layout_checked >= kLayoutChecks) {
        std::fprintf(stderr,
                     "RL_SC_CHECK: Yield's register slots no longer hold "
                     "the caller's registers after %d captures that did\n",
                     g_layout_checked);
        std::abort();
      }
#endif
      g_layout_checked = held ? g_layout_checked + 1 : -1;
    }
    if (g_layout_checked < 0) out->assign(std::begin(w.regs), std::end(w.regs));
#else
    out->assign(std::begin(w.regs), std::end(w.regs));
    if (kFpCalleeSaved > 0)
      CopyBytes(reinterpret_cast<uintptr_t>(w.fp_regs), sizeof(w.fp_regs), out);
#endif
  }
  uintptr_t from = cfa;
#if defined(__x86_64__)
  // The slots too (a walk that checked them read the same values), in the
  // same copy: between them and the stack lies Yield's return address,
  // the same at every capture of one call site.
  if (g_layout_checked >= 0) from -= kSlotsBelowCfa;
#endif
  CopyBytes(from, top - from, out);
  size_t size = 0;
  const unsigned char* bytes = suite.Bytes(&size);
  CopyBytes(reinterpret_cast<uintptr_t>(bytes), size, out);
  return true;
#endif
}

[[noreturn]] void Engine::Abandon() {
  if (in_thread_ && threads_[cur_].noabort == 0 &&
      std::uncaught_exceptions() == 0) {
#ifdef RL_FRAME_MEMO
    const bool inert =
        FramesInertFast(&frame_memo_, ThreadStackLo(), ThreadStackTop());
#else
    const bool inert = FramesInert(nullptr);
#endif
    if (inert) FinishThread(this, cur_);
  }
  throw AbortExecution();
}

void Engine::StartThread(unsigned t) {
  ThreadState& th = threads_[t];
#ifdef RL_ASAN
  // Frames an earlier execution dropped left their redzones poisoned.
  __asan_unpoison_memory_region(th.stack, kStackSize);
#endif
#ifdef RL_FAST_SWITCH
  // Initial frame popped by rl_switch_context: FP control words, six
  // callee-saved registers, then the return address = ThreadEntry. The
  // return-address slot is 16-byte aligned, so ThreadEntry starts with the
  // stack aligned as after a call.
  uintptr_t top = reinterpret_cast<uintptr_t>(th.stack) + kStackSize;
  top &= ~uintptr_t{15};
  uint64_t* frame = reinterpret_cast<uint64_t*>(top) - 11;
  uint32_t fp[2];
  asm volatile("stmxcsr %0" : "=m"(fp[0]));
  asm volatile("fnstcw %0" : "=m"(fp[1]));
  std::memcpy(&frame[0], fp, 8);
  for (int i = 1; i <= 6; ++i) frame[i] = 0;
  frame[7] = reinterpret_cast<uint64_t>(&ThreadEntry);
  frame[8] = 0;  // fake return address of ThreadEntry: ends backtraces
  frame[9] = 0;
  frame[10] = 0;
  th.sp = frame;
  th.started = true;  // no bit changes: not pending yet
  Resume(t);
  return;
#endif
  getcontext(&th.uc);
  th.uc.uc_stack.ss_sp = th.stack;
  th.uc.uc_stack.ss_size = kStackSize;
  th.uc.uc_link = &sched_uc_;
  makecontext(&th.uc, ThreadEntry, 0);
  th.started = true;  // no bit changes: not pending yet
  Resume(t);
}

void Engine::Resume(unsigned t) {
  cur_ = t;
  in_thread_ = true;
  AsanStartSwitch(&sched_fake_, threads_[t].stack, kStackSize);
#ifdef RL_FAST_SWITCH
  rl_switch_context(&sched_sp_, threads_[t].sp);
#else
  swapcontext(&sched_uc_, &threads_[t].uc);
#endif
  AsanFinishSwitch(sched_fake_, nullptr, nullptr);
  in_thread_ = false;
  cur_ = n_;
}

void Engine::SwitchToScheduler() { SwitchFromRunning(n_); }

// Suspends the running thread and runs `to`: a thread (its step placed) or,
// for n_, the scheduler. The thread continues here when it is run again
// (the scheduler's Resume() or another thread's SwitchToThread() sets cur_
// back to it), and stops here if the execution is being abandoned.
void Engine::SwitchFromRunning(unsigned to) {
  ThreadState& th = threads_[cur_];
  const bool sched = to == n_;
  if (!sched) cur_ = to;
  AsanStartSwitch(&th.asan_fake, sched ? sched_bottom_ : threads_[to].stack,
                  sched ? sched_size_ : kStackSize);
#ifdef RL_FAST_SWITCH
  rl_switch_context(&th.sp, sched ? sched_sp_ : threads_[to].sp);
#else
  swapcontext(&th.uc, sched ? &sched_uc_ : &threads_[to].uc);
#endif
  AsanFinishSwitch(th.asan_fake, nullptr, nullptr);
  if (aborting_ && th.noabort == 0) Abandon();
}

// A step decided on the running thread's stack, as Relacy's threads switch
// to one another: the RunOne() loop's step (Decide, Place) without the two
// switches through the scheduler, and with no switch at all when the thread
// drawn is the running one. Left to the scheduler's loop: a decision that
// finds no action (deadlock, livelock or pruning; a failed Decide records
// nothing, so the loop decides it again), a thread created but not yet
// started (the loop starts it first), and invariant() (checked by the loop
// after each step). A failure or pruning during the step goes to the
// scheduler from here as from any operation (Fail, Prune).
bool Engine::StepInThread() {
  if (!threads_started_ || has_invariant_) return false;
  for (unsigned t = n_static_; t < n_static_ + n_spawned_; ++t)
    if (threads_[t].spawned && !threads_[t].started) return false;
  Action a;
  last_choice_ = -1;
  if (!Decide(DecideKind::kSched, 0, &a)) return false;
  Place(a);
  if (failed_ || pruned_) {
    SwitchToScheduler();
    return true;
  }
  const unsigned t = static_cast<unsigned>(a.tid);
  if (t != cur_) SwitchToThread(t);
  return true;
}

// From the running thread straight to thread t, whose step was just placed.
void Engine::SwitchToThread(unsigned t) { SwitchFromRunning(t); }

// An abandoned execution's threads are unwound (AbortExecution), so the
// code under test releases what its stack frames hold. A thread suspended
// inside a no-abort section (rl::mutex::unlock, typically called from a
// noexcept destructor such as ~std::unique_lock) is not thrown at there: it
// finishes the section with dummy results and is stopped at its next
// checker operation outside one (see Engine::aborting()).
void Engine::AbortThreads() {
  aborting_ = true;
  for (unsigned t = 0; t < n_; ++t) {
    if (threads_[t].started && !threads_[t].finished) Resume(t);
  }
}

void Engine::Prune() {
  pruned_ = true;
  if (in_thread_) SwitchToScheduler();
  throw AbortExecution();
}

// ---------------------------------------------------------------- graph

// The modification-order position of the latest write seen (written, or
// read from) by an access to loc that happens before clock c: a read with
// clock c reads there or later, a store goes after it (coherence). A
// thread's accesses to one location see non-decreasing positions (each is
// sequenced, so happens, before the next: the four coherence rules), so
// per thread only its latest access that c knows of counts: the thread's
// newest access (Loc::last_acc), or an earlier one (Event::prev_acc) where
// c does not know the newest; one or two events per thread, not every
// access to the location.
int Engine::SeenPosition(int loc, const Clock& c) const {
  const Loc& l = locs_[loc];
  const int newest = static_cast<int>(l.mo.size()) - 1;
  int seen = 0;
  for (int u = 0; u < g_clock_width; ++u) {
    int id = l.last_acc[u];
    const int32_t known = c.get(u);
    if (id < 0 || known < l.first_idx[u]) continue;
    // Ends at an access c knows: the first one is.
    while (events_[id].idx > known) id = events_[id].prev_acc;
    const Event& ev = events_[id];
    if (ev.writes) seen = std::max(seen, ev.mo_pos);
    if (ev.reads) seen = std::max(seen, events_[ev.rf].mo_pos);
    if (seen == newest) break;
  }
#ifdef RL_SC_CHECK
  // The reference: every access to loc that happens before c; and the
  // same without the seq_cst loads a plain build's random run makes no
  // event for (Event::check_unevented), which must give the same.
  int all = 0, evented = 0;
  for (int id : l.acc) {
    const Event& ev = events_[id];
    if (c.get(ev.tid) < ev.idx) continue;
    int pos = 0;
    if (ev.writes) pos = ev.mo_pos;
    if (ev.reads) pos = std::max(pos, events_[ev.rf].mo_pos);
    all = std::max(all, pos);
    if (!ev.check_unevented) evented = std::max(evented, pos);
  }
  if (all != seen) {
    std::fprintf(stderr,
                 "RL_SC_CHECK: SeenPosition(%s) is %d, the accesses say %d\n",
                 LocStr(loc).c_str(), seen, all);
    std::abort();
  }
  if (evented != all) {
    std::fprintf(stderr,
                 "RL_SC_CHECK: a seq_cst load of %s that makes no event "
                 "outside this check raised a lower bound (%d, %d without "
                 "it)\n",
                 LocStr(loc).c_str(), all, evented);
    std::abort();
  }
#endif
  return seen;
}

int Engine::ScFloor(unsigned t, int loc) const {
  const ThreadState& th = threads_[t];
  if (MainOutsideThreads(t)) return -1;  // no SC-order node (Event::sc)
  const Pending& op = th.op;
  // A CAS whose failure is seq_cst is bounded as a whole: its success
  // cannot read an older write than its failure may.
  const bool sc = op.mo == mo_seq_cst ||
                  (op.kind == OpKind::kCas && op.mo_fail == mo_seq_cst);
  int w = -1;
  if (sc) {
    w = locs_[loc].sc_floor;
  } else {
    // The latest seq_cst fence that happens before e: its snapshot holds
    // the greatest floor of any such fence (floors only rise).
    for (size_t k = floor_fences_.size(); k-- > 0;) {
      if (!Hb(floor_fences_[k], th.clock)) continue;
      const uint32_t at = floor_snap_at_[k];
      const uint32_t end = k + 1 < floor_snap_at_.size()
                               ? floor_snap_at_[k + 1]
                               : static_cast<uint32_t>(floor_snaps_.size());
      if (static_cast<uint32_t>(loc) < end - at) w = floor_snaps_[at + loc];
      break;
    }
  }
  return w < 0 ? -1 : events_[w].mo_pos;
}

void Engine::RaiseFloors(int id) {
  const Event& e = events_[id];
  floors_live_ = true;
  if (e.loc >= 0) {
    Loc& l = locs_[e.loc];
    RaiseFloor(l, e.writes ? id : e.rf);
    return;
  }
  // A fence: every access that happens before it is in right(x) from now.
  floor_fences_.push_back(id);
  floor_snap_at_.push_back(static_cast<uint32_t>(floor_snaps_.size()));
  for (size_t i = 0; i < locs_.size(); ++i) {
    Loc& l = locs_[i];
    if (!l.mo.empty())
      RaiseFloor(l, l.mo[SeenPosition(static_cast<int>(i), e.post)]);
    floor_snaps_.push_back(l.sc_floor);
  }
}

uint64_t Engine::Compute(RmwOp op, uint64_t a, uint64_t b,
                         unsigned width) const {
  uint64_t r = 0;
  switch (op) {
    case RmwOp::kXchg:
      r = b;
      break;
    case RmwOp::kAdd:
      r = a + b;
      break;
    case RmwOp::kSub:
      r = a - b;
      break;
    case RmwOp::kAnd:
      r = a & b;
      break;
    case RmwOp::kOr:
      r = a | b;
      break;
    case RmwOp::kXor:
      r = a ^ b;
      break;
  }
  if (width < 8) r &= (uint64_t{1} << (8 * width)) - 1;
  return r;
}

void Engine::Stamp(unsigned t, Event& e) const {
  const ThreadState& th = threads_[t];
  e.tid = static_cast<int>(t);
  e.idx = th.idx + 1;
  e.post = th.clock;
  e.post.set(t, e.idx);
#ifdef RL_SC_CHECK
  e.pre = e.post;
#endif
}

void Engine::StampLocal(unsigned t, Event& e) const {
  Stamp(t, e);
  if (!track_porf_) return;
  e.porf = threads_[t].porf;
  e.porf.set(t, e.idx);
}

// The release heads and fences of w's release sequence that a reader whose
// clock is `known` does not know yet, joined into b.sync; the seq_cst ones
// into b.sc_src.
// The release sequence (C++20: the write and the chain of RMWs reading
// from it): each release head, or each release fence before a head,
// synchronizes. A head or fence that already happens before the reader's
// point (`known`: a read event's post, still its clock before the event,
// or the thread's clock) is known
// with all it knew: its clock is not joined. Only the chain's heads and
// writes after release fences matter: the walk follows rel_link. It
// stops after an acquire and release RMW H: H joined every earlier head's
// and fence's clock (its own walk), so they are at most H.post, which
// this read joins or already knows (an RMW that is no release
// synchronizes only through its release fence, whose clock lacks what
// the RMW acquired: the walk goes on). Their SC edges are implied too if
// H is SC (each earlier SC one has an edge into H, or into an SC RMW
// between that has one into H: a path to this read through H's edge);
// else only if the execution has no SC event yet (then no head or fence
// on the walk is SC).
__attribute__((always_inline)) inline void Engine::WalkReleaseSequence(
    const Event& w, const Clock& known, Built& b) const {
  for (int h = w.rel_link; h >= 0;) {
    const Event& H = events_[h];
    if (H.rel) {
      if (!Hb(h, known)) b.AddSync(H.post);
      if (H.sc) b.sc_src.push_back(h);
    }
    if (H.rel_fence >= 0) {
      const Event& F = events_[H.rel_fence];
      if (!Hb(H.rel_fence, known)) b.AddSync(F.post);
      if (F.sc) b.sc_src.push_back(H.rel_fence);
    }
    if (H.kind != Kind::kRmw) break;
    if (H.rel && H.acq && (H.sc || sc_events_.empty())) break;
    h = events_[H.rf].rel_link;
  }
}

// Loc::chain_* for e, the write just appended to l's modification order
// (id). A plain store starts its own release sequence; an RMW continues
// the one of the write it read, which was the newest (atomicity), unless
// that one's is unknown (a Pop() removed it).
void Engine::ExtendChain(Loc& l, const Event& e, int id) const {
  if (e.kind != Kind::kRmw) {
    l.chain_has = l.chain_sc = false;
  } else if (l.chain_tip != e.rf) {
    l.chain_tip = -1;
    return;
  }
  l.chain_tip = id;
  // A sequence with a seq_cst head is walked (for its SC edges): no clock
  // is kept for it until a plain store starts another.
  if (l.chain_sc) return;
  // A release fence before a release write is in the write's clock.
  const Clock* released = nullptr;
  if (e.rel) {
    released = &e.post;
    l.chain_sc = e.sc;
  }
  if (e.rel_fence >= 0) {
    const Event& f = events_[e.rel_fence];
    if (!released) released = &f.post;
    l.chain_sc |= f.sc;
  }
  if (!released || l.chain_sc) return;
  if (l.chain_has) {
    l.chain_sync.Join(*released);
  } else {
    l.chain_sync = *released;
    l.chain_has = true;
  }
}

#ifdef RL_SC_CHECK
// The memo must give what the walk gives: the same clock once joined with
// the reader's.
void Engine::CrossCheckChain(const Event& w, const Event& e,
                             const Built& b) const {
  Built walked;
  WalkReleaseSequence(w, e.post, walked);
  Clock by_memo = e.post, by_walk = e.post;
  if (b.has_sync) by_memo.Join(b.sync);
  if (walked.has_sync) by_walk.Join(walked.sync);
  for (int i = 0; i < kClockSlots; ++i) {
    if (by_memo.get(i) != by_walk.get(i)) {
      std::fprintf(stderr,
                   "RL_SC_CHECK: %s's release-sequence memo differs from "
                   "its walk (thread %d)\n",
                   LocStr(e.loc).c_str(), i);
      std::abort();
    }
  }
  if (!walked.sc_src.empty()) {
    std::fprintf(stderr, "RL_SC_CHECK: a memo used for a seq_cst sequence\n");
    std::abort();
  }
}
#endif

void Engine::Build(unsigned t, const Pending& op, const Action& a, Event& e,
                   Built& b) const {
  const ThreadState& th = threads_[t];
  b.sc_src.clear();
  Stamp(t, e);
  e.loc = op.loc;
  e.info = op.info;
  e.op = op.op;
  memory_order mo = op.mo;
  switch (op.kind) {
    case OpKind::kLoad:
      e.kind = Kind::kLoad;
      e.reads = true;
      break;
    case OpKind::kStore:
      e.kind = Kind::kStore;
      e.writes = true;
      e.wval = op.val;
      e.mo_pos = a.pos;
      break;
    case OpKind::kRmw:
      e.kind = Kind::kRmw;
      e.reads = e.writes = true;
      break;
    case OpKind::kCas:
      if (a.cas_ok) {
        e.kind = Kind::kRmw;
        e.reads = e.writes = true;
        e.wval = op.val;
      } else {
        e.kind = Kind::kCasFail;
        e.reads = true;
        mo = op.mo_fail;
      }
      break;
    default:
      break;
  }
  e.mo = mo;
#ifdef RL_SC_CHECK
  e.check_unevented = a.check_unevented;
#endif
  e.acq = e.reads && IsAcq(mo);
  e.rel = e.writes && IsRel(mo);
  e.sc = mo == mo_seq_cst && !MainOutsideThreads(t);
  if (e.writes) e.rel_fence = th.rel_fence;
  if (track_porf_) {
    e.porf = th.porf;
    e.porf.set(t, e.idx);
  }
  b.has_sync = false;  // read only for reads (here and in Commit)
  if (e.reads) {
    e.rf = a.rf;
    const Event& w = events_[a.rf];
    if (track_porf_) e.porf.Join(w.porf);
    e.rval = w.wval;
    if (e.kind == Kind::kRmw) {
      if (op.kind == OpKind::kRmw)
        e.wval = Compute(op.op, e.rval, op.val, locs_[op.loc].width);
      e.mo_pos = w.mo_pos + 1;
    }
    // The newest write's sequence, with no seq_cst head (whose SC edges
    // the walk lists): its joined clocks (Loc::chain_sync), which give the
    // walk's result (a clock the walk skips is one e.post already has, or
    // one an acquire-release head joined).
    if (const Loc& l = locs_[op.loc]; MemoHolds(l, a.rf)) {
      if (l.chain_has) b.AddSync(l.chain_sync);
#ifdef RL_SC_CHECK
      CrossCheckChain(w, e, b);
#endif
    } else {
      WalkReleaseSequence(w, e.post, b);
    }
    if (e.acq && b.has_sync) e.post.Join(b.sync);
  }
  if (e.writes) {
    if (e.rel || e.rel_fence >= 0)
      e.rel_link = static_cast<int>(&e - events_.data());
    else if (e.kind == Kind::kRmw)
      e.rel_link = events_[e.rf].rel_link;
  }
}

// Flattened: its vector appends inline (an out-of-line push_back per access
// cost 1.5% of a random run of the seqcount port, callgrind).
__attribute__((flatten)) void Engine::Push(const Built& b) {
  int id = static_cast<int>(events_.size()) - 1;
  Event& e = events_.back();
  if (e.loc >= 0) {
    Loc& l = locs_[e.loc];
    l.acc.push_back(id);
    e.prev_acc = l.last_acc[e.tid];
    if (e.prev_acc < 0) l.first_idx[e.tid] = e.idx;
    l.last_acc[e.tid] = id;
    if (e.writes) {
      ++l.rmw_free;
      if (e.mo_pos == static_cast<int>(l.mo.size())) {
        l.mo.push_back(id);  // the newest write: no position moves
        ExtendChain(l, e, id);
      } else {
        l.mo.insert(l.mo.begin() + e.mo_pos, id);
        for (size_t i = e.mo_pos; i < l.mo.size(); ++i)
          events_[l.mo[i]].mo_pos = static_cast<int>(i);
      }
    }
    if (e.kind == Kind::kRmw) {
      events_[e.rf].rmw_reader = id;
      --l.rmw_free;
    }
  }
  if (TouchesScGraph(e)) [[unlikely]]
    PushSc(id, b);
  else if (e.sc && sc_floors_) [[unlikely]]
    RaiseFloors(id);
#ifdef RL_SC_CHECK
  if (sc_floors_) CrossCheckFloors();
#endif
}

__attribute__((noinline)) void Engine::PushSc(int id, const Built& b) {
  Event& e = events_[id];
  // Where Pop() and ScAcyclicAfterPush() start (TouchesScGraph()).
  sc_mark_.push_back({static_cast<uint32_t>(sc_sw_.size()),
                      static_cast<uint32_t>(sc_edge_log_.size())});
  if (e.sc) {
    e.sc_node = static_cast<int>(sc_events_.size());
    sc_events_.push_back(id);
    sc_by_thread_[e.tid].push_back(id);
    if (e.kind == Kind::kFence) sc_fences_.push_back(id);
    if (e.acq)
      for (int s : b.sc_src) sc_sw_.emplace_back(s, id);
  }
  AddScEdges(id, b);
}

void Engine::Pop() {
  Event& e = events_.back();
  if (TouchesScGraph(e)) {  // Push() called PushSc()
    const ScMark mark = sc_mark_.back();
    sc_mark_.pop_back();
    sc_sw_.resize(mark.sw);
    for (size_t i = mark.edges; i < sc_edge_log_.size(); ++i) {
      auto [from, to] = sc_edge_log_[i];
      sc_adj_[from * sc_words_ + to / 64] &= ~(uint64_t{1} << (to % 64));
    }
    sc_edge_log_.resize(mark.edges);
  }
  // With the SC order as executed nothing is probed (no SC event is in
  // the graph, so ScAllows() never builds one): Pop() never runs there
  // (its floors could not be lowered back).
#ifdef RL_SC_CHECK
  if (sc_floors_) {
    std::fprintf(stderr, "RL_SC_CHECK: Pop() with the SC order as executed\n");
    std::abort();
  }
#endif
  if (e.sc && !sc_floors_) {
    sc_events_.pop_back();
    sc_by_thread_[e.tid].pop_back();
    if (e.kind == Kind::kFence) sc_fences_.pop_back();
  }
  if (e.loc >= 0) {
    Loc& l = locs_[e.loc];
    l.acc.pop_back();
    l.last_acc[e.tid] = e.prev_acc;
    if (e.writes) {
      --l.rmw_free;
      l.mo.erase(l.mo.begin() + e.mo_pos);
      if (l.chain_tip == static_cast<int>(events_.size()) - 1) l.chain_tip = -1;
      for (size_t i = e.mo_pos; i < l.mo.size(); ++i)
        events_[l.mo[i]].mo_pos = static_cast<int>(i);
    }
    if (e.kind == Kind::kRmw) {
      events_[e.rf].rmw_reader = -1;
      ++l.rmw_free;
    }
  }
  events_.pop_back();
}

int Engine::SpinSource(const Event& e) const {
  if (e.kind == Kind::kRmw && e.wval == e.rval)
    return static_cast<int>(&e - events_.data());
  return e.rf;
}

void Engine::Commit(unsigned t, const Built& b) {
  ThreadState& th = threads_[t];
  const Event& e = events_.back();
  // Whether the event exists does not depend on its own read: judge
  // dependence by the thread's porf before it. A failed CAS counts as a
  // potential write (reading another value it would have written).
  if (track_porf_ && (e.writes || e.kind == Kind::kCasFail)) {
    // Discover reads entries of other threads only: th.porf (not yet
    // updated) is the porf before this event there.
    Discover(e, th.porf);
  }
  th.idx = e.idx;
  // e.post is th.clock ticked (Stamp), joined with b.sync only if the
  // event acquired: otherwise the tick alone, without a clock copy.
  if (e.acq && b.has_sync)
    th.clock = e.post;
  else
    th.clock.set(t, e.idx);
  if (track_porf_) th.porf = e.porf;
  if (e.reads) {
    if (!e.acq) {
      if (b.has_sync) th.acq_pending.Join(b.sync);
      for (int s : b.sc_src) th.sc_pending.push_back(s);
    }
    if (th.continuing > 0) {
      // A continued spin iteration repeats the previous one; reading a
      // newer write is the execution in which the thread waited for it.
      // A read the previous iteration did not make means the loop was
      // left: ordinary scheduling again.
      size_t k = th.cur_reads.size();
      if (k >= th.prev_reads.size() || th.prev_reads[k].loc != e.loc) {
        th.continuing = 0;
        SyncBits(t);
      } else if (th.prev_reads[k].rf != e.rf)
        Prune();
    }
    th.cur_reads.push_back({e.loc, e.rval, SpinSource(e)});
  }
  // An RMW writing back the value it read (a failed test-and-set) changes
  // no value: for spin detection it is a read.
  if (e.writes && !(e.reads && e.wval == e.rval)) AfterWrite(t, e.loc);
  CheckDepth();
}

// A write to loc by thread t. It wakes the threads waiting in a mutex,
// condition-variable or join wait, and the spinners whose last iteration
// read loc. A spinner blocked after an identical iteration read the newest
// write of every location it read; until one of those locations is
// written, each of its reads would read the same write again (read-read
// coherence) and so the iteration would repeat identically: waking it on
// a write elsewhere -- e.g. by a thread that shares nothing with it --
// only adds executions that differ by redundant spin iterations
// (docs/verification.md, "Spin loops": independent writers).
void Engine::AfterWrite(unsigned t, int loc) {
#ifdef RL_SC_CHECK
  CheckBits();
#endif
  threads_[t].iter_wrote = true;
  threads_[t].continuing = 0;
  if (t < n_) SetBit(&continuing_mask_, t, false);  // SyncBits(t), one bit
  stalled_ = false;
  released_mask_ = 0;
  const uint64_t others = t < n_ ? ~(uint64_t{1} << t) : ~uint64_t{0};
  for (uint64_t m = blocked_mask_ & others; m != 0; m &= m - 1) {
    const unsigned i = static_cast<unsigned>(__builtin_ctzll(m));
    ThreadState& th = threads_[i];
    bool wake = th.sync_wait && (th.wait_loc < 0 || th.wait_loc == loc);
    for (size_t k = 0; !wake && k < th.prev_reads.size(); ++k)
      wake = th.prev_reads[k].loc == loc;
    if (wake) {
      th.blocked = false;
      // A wait made blocked by RunOne looks again: no sync wait any more.
      if (th.op.await) th.sync_wait = false;
      SyncBits(i);
    }
  }
}

void Engine::DepthExceeded() {
  Fail(test_result_livelock,
       stalled_
           ? "execution depth limit exceeded while every unfinished thread "
             "spun or waited and nobody wrote (a livelock)"
           : "execution depth limit exceeded: a loop that never ends (spin "
             "without rl::yield, or a livelock)",
       events_.empty() ? debug_info() : events_.back().info);
}

#ifdef RL_SC_CHECK
// A coherence-ordered-before B (C++20 [intro.races]); positions make the
// transitive closure of rf, mo and fr directly computable.
bool Engine::Coh(int a, int b) const {
  if (a == b) return false;
  const Event& A = events_[a];
  const Event& B = events_[b];
  return CohAt(WritePos(A), ReadPos(A), WritePos(B), ReadPos(B));
}
#endif

// C++20 [atomics.order]/4: a total order S on SC operations and fences must
// exist. Its required edges A -> B (A precedes B in S):
//  (a) A strongly happens before B: sb, or sb;hb;sb (an hb path leaving A's
//      thread after A and entering B's thread before B), or a direct sw
//      between SC operations;
//  (b) coherence: for accesses a, b of one location with a coherence-ordered
//      before b, every X of left(a) precedes every Y of right(b), where
//      left(a) = {a if SC} + {SC fences hb-before a} and
//      right(b) = {b if SC} + {SC fences b happens before}.
// S exists iff these edges are acyclic.
//
// Incrementally: the events before e formed an acyclic graph G (each was
// checked when added), and adding e changes no edge among them -- their
// clocks, reads-from and relative modification order stay as they were;
// only left/right sets may grow by e itself. So the new edges are:
//  * e an SC operation or fence: (a) into e (nothing old knows of e);
//  * e an SC fence: (b) into e, from left(a) for each coherence pair (a, b)
//    with b happening before e. A fence adds only edges INTO itself, a node
//    with no successor yet, so it never closes a cycle;
//  * e an access: (b) for pairs (a, e), left(a) -> e if e is SC, and for
//    pairs (e, b), left(e) x right(b) -- which may join two old nodes (an
//    SC fence before e to a b after it).
// Any cycle of the new graph uses a new edge, so a DFS from the new edges'
// targets finds it.
void Engine::AddScEdges(int id, const Built& b) {
  const Event& e = events_[id];
  if (sc_events_.size() > 64 * sc_words_) GrowScGraph(sc_events_.size());
  // No SC fence, an SC access: the pairs (x, e) of (b) below come from the
  // same unknown suffixes as (a), found in the same pass.
  const bool no_fence_access = sc_fences_.empty() && e.loc >= 0;
  const int ew = WritePos(e);
  const int er = ReadPos(e);
  if (e.sc) {
    const int v = e.sc_node;
    // (a), strongly happens before, transitively reduced: from each
    // thread only its latest SC event before e. The earlier ones reach it
    // through their own thread's chain (each SC event has an edge from its
    // thread's previous one), and a cycle needs only reachability.
    for (size_t t = 0; t < sc_by_thread_.size(); ++t) {
      const std::vector<int>& list = sc_by_thread_[t];
      if (static_cast<int>(t) == e.tid) {  // e is the last of its list
        if (list.size() >= 2) ScEdge(events_[list[list.size() - 2]].sc_node, v);
        continue;
      }
      // The last one e strongly follows: just before the unknown suffix.
      auto it = UnknownSc(t, PreOf(e, static_cast<int>(t)));
      if (it != list.begin()) ScEdge(events_[*(it - 1)].sc_node, v);
      if (!no_fence_access) continue;
      // (b), pairs (x, e) without SC fences: an edge only from an SC x
      // that does not strongly happen before e, i.e. from this suffix.
      for (; it != list.end(); ++it) {
        const Event& X = events_[*it];
        if (X.loc == e.loc && CohAt(WritePos(X), ReadPos(X), ew, er))
          ScEdge(X.sc_node, v);
      }
    }
    if (e.acq)
      for (int s : b.sc_src) ScEdge(events_[s].sc_node, v);
  }
  // The SC fences in left(a) for every a of a set are those before the join
  // of the set's post clocks (an event's fences-before are a prefix of each
  // thread): one pass over the fences per set, not per member.
  auto edges_from_left = [&](const Clock& joined, int to) {
    for (int f : sc_fences_)
      if (f != id && Hb(f, joined)) ScEdge(events_[f].sc_node, to);
  };
  if (e.kind == Kind::kFence) {
    if (!e.sc) return;
    // (b) into e: left(a) -> e for each a coherence-ordered before some x
    // that happens before e. Per location, the two greatest write and
    // read-from positions among such x decide Coh(a, x) for x != a.
    const int v = e.sc_node;
    Clock joined;
    bool any = false;
    for (const Loc& l : locs_) {
      int w1 = -1, w1_id = -1, w2 = -1, r1 = -1, r1_id = -1, r2 = -1;
      for (int x : l.acc) {
        if (!Hb(x, e.post)) continue;
        const Event& X = events_[x];
        if (X.writes) {
          if (X.mo_pos > w1) {
            w2 = w1;
            w1 = X.mo_pos;
            w1_id = x;
          } else if (X.mo_pos > w2) {
            w2 = X.mo_pos;
          }
        }
        if (X.reads) {
          const int r = events_[X.rf].mo_pos;
          if (r > r1) {
            r2 = r1;
            r1 = r;
            r1_id = x;
          } else if (r > r2) {
            r2 = r;
          }
        }
      }
      if (w1 < 0 && r1 < 0) continue;
      for (int a : l.acc) {
        const Event& A = events_[a];
        // Coh(a, x) for some such x other than a.
        if (!CohAt(WritePos(A), ReadPos(A), w1_id == a ? w2 : w1,
                   r1_id == a ? r2 : r1))
          continue;
        if (A.sc) ScEdge(A.sc_node, v);
        joined.Join(A.post);
        any = true;
      }
    }
    if (any) edges_from_left(joined, v);
    return;
  }
  if (e.loc < 0) return;
  const Loc& l = locs_[e.loc];
  // left(e): e if SC, and the SC fences before it.
  left_.clear();
  if (e.sc) left_.push_back(e.sc_node);
  for (int f : sc_fences_)
    if (Hb(f, e.post)) left_.push_back(events_[f].sc_node);
  Clock before_e;  // pairs (x, e): join of x.post
  bool any_before = false;
  // Pairs (e, x): per thread, the first such x; an SC fence is in some
  // right(x) iff one of those happens before it.
  int32_t first_after[kClockSlots];
  bool any_after = false;
  if (!left_.empty()) std::fill(first_after, first_after + kClockSlots, -1);
  if (!e.sc && left_.empty()) return;
  if (sc_fences_.empty()) {
    // No SC fence: only SC accesses are nodes (e is one: left(e) = {e}).
    // Pairs (x, e) need an edge only from an SC x that does not strongly
    // happen before e: in each other thread, the SC events e does not
    // know yet (a suffix of its list), added with (a) above. Pairs (e, x)
    // exist only if e is not at the end of the location's modification
    // order (it reads an older write or is a store placed before a later
    // one).
    const int newest = static_cast<int>(l.mo.size()) - 1;
    const bool at_end = ew >= 0 ? ew == newest : er == newest;
    if (at_end) return;
    for (int x : l.acc) {
      if (x == id) continue;
      const Event& X = events_[x];
      if (X.sc && CohAt(ew, er, WritePos(X), ReadPos(X)))
        ScEdge(e.sc_node, X.sc_node);
    }
    return;
  }
  for (int x : l.acc) {
    if (x == id) continue;
    const Event& X = events_[x];
    const int xw = WritePos(X);
    const int xr = ReadPos(X);
    if (e.sc && CohAt(xw, xr, ew, er)) {  // pair (x, e): left(x) -> e
      // Implied when x strongly happens before e (the (a) chain above).
      if (X.sc && X.tid != e.tid && PreOf(e, X.tid) <= X.idx)
        ScEdge(X.sc_node, e.sc_node);
      before_e.Join(X.post);  // SC fences exist here (fast path above)
      any_before = true;
    }
    // Pair (e, x): left(e) x right(x).
    if (!left_.empty() && CohAt(ew, er, xw, xr)) {
      if (X.sc)
        for (int from : left_) ScEdge(from, X.sc_node);
      int32_t& m = first_after[X.tid];
      if (m < 0 || X.idx < m) m = X.idx;
      any_after = true;
    }
  }
  if (any_before) edges_from_left(before_e, e.sc_node);
  if (any_after) {
    for (int f : sc_fences_) {
      const Event& F = events_[f];
      bool after = false;
      for (int t = 0; !after && t < g_clock_width; ++t)
        after = first_after[t] >= 0 && F.post.get(t) >= first_after[t];
      if (after)
        for (int from : left_) ScEdge(from, F.sc_node);
    }
  }
}

void Engine::ScEdge(int from, int to) {
  uint64_t& w = sc_adj_[from * sc_words_ + to / 64];
  const uint64_t bit = uint64_t{1} << (to % 64);
  if (w & bit) return;
  w |= bit;
  sc_edge_log_.emplace_back(from, to);
}

void Engine::GrowScGraph(size_t nodes) {
  size_t words = std::max<size_t>(1, sc_words_);
  while (64 * words < nodes) words *= 2;
  std::vector<uint64_t> adj(64 * words * words, 0);
  for (size_t v = 0; v < 64 * sc_words_; ++v)
    for (size_t k = 0; k < sc_words_; ++k)
      adj[v * words + k] = sc_adj_[v * sc_words_ + k];
  sc_adj_.swap(adj);
  sc_words_ = words;
}

// A cycle through the edges the last Push() added: a DFS (white, grey,
// black) from their targets. Reaching a grey node closes a cycle.
bool Engine::ScAcyclicAfterPush() {
  const size_t mark = sc_mark_.back().edges;
  if (mark == sc_edge_log_.size()) return true;
  const size_t n = sc_events_.size();
  sc_color_.assign(n, 0);
  bool acyclic = true;
  for (size_t i = mark; acyclic && i < sc_edge_log_.size(); ++i) {
    const int root = sc_edge_log_[i].second;
    if (sc_color_[root] != 0) continue;
    sc_color_[root] = 1;
    sc_stack_.clear();
    sc_stack_.emplace_back(root, 0);
    while (!sc_stack_.empty()) {
      auto& [v, bit] = sc_stack_.back();
      const uint64_t* row = &sc_adj_[v * sc_words_];
      int next = -1;
      // Successors from bit on, skipping black ones.
      for (size_t k = bit / 64; k < sc_words_; ++k) {
        uint64_t w = row[k];
        if (k == static_cast<size_t>(bit) / 64)
          w &= ~uint64_t{0} << (bit % 64);
        while (w != 0) {
          int u = static_cast<int>(64 * k) + __builtin_ctzll(w);
          w &= w - 1;
          if (sc_color_[u] == 1) {
            acyclic = false;
            break;
          }
          if (sc_color_[u] == 0) {
            next = u;
            break;
          }
        }
        if (!acyclic || next >= 0) break;
      }
      if (!acyclic) break;
      if (next < 0) {
        sc_color_[v] = 2;
        sc_stack_.pop_back();
        continue;
      }
      bit = next + 1;
      sc_color_[next] = 1;
      sc_stack_.emplace_back(next, 0);
    }
  }
  return acyclic;
}

#ifdef RL_SC_CHECK
void Engine::CrossCheckSc(bool incremental) {
  if (incremental == ScConsistentFull()) return;
  std::fprintf(stderr,
               "RL_SC_CHECK: incremental SC check says %s, full check "
               "disagrees (%zu events, %zu SC)\n",
               incremental ? "consistent" : "inconsistent", events_.size(),
               sc_events_.size());
  std::abort();
}

// Every event the floors let run keeps the order run an SC order.
void Engine::CrossCheckFloors() {
  if (ScConsistentFull(true)) return;
  std::fprintf(stderr,
               "RL_SC_CHECK: with the SC order as executed, event #%zu makes "
               "the order run no SC order (%zu events)\n",
               events_.size() - 1, events_.size());
  std::abort();
}

bool Engine::ScConsistentFull(bool forward_only) {
  // Every seq_cst event is a node here, the main thread's too (Event::sc
  // leaves those out of the incremental graph: MainOutsideThreads()).
  auto is_sc = [&](int a) {
    return events_[a].kind != Kind::kInit && events_[a].mo == mo_seq_cst;
  };
  std::vector<int> sc_events;
  for (int a = 0; a < static_cast<int>(events_.size()); ++a)
    if (is_sc(a)) sc_events.push_back(a);
  const size_t n = sc_events.size();
  if (n < 2) return true;
  std::vector<int> node(events_.size(), -1);
  for (size_t i = 0; i < n; ++i) node[sc_events[i]] = static_cast<int>(i);
  std::vector<std::vector<uint8_t>> adj(n, std::vector<uint8_t>(n, 0));
  std::vector<int> fences;
  for (int e : sc_events)
    if (events_[e].kind == Kind::kFence) fences.push_back(e);
  // Strongly happens before: sb, or sb;hb;sb (an hb path leaving A's thread
  // after A and entering B's thread before B), or direct sw between SC ops.
  for (size_t i = 0; i < n; ++i) {
    const Event& A = events_[sc_events[i]];
    for (size_t j = 0; j < n; ++j) {
      if (i == j) continue;
      const Event& B = events_[sc_events[j]];
      if (A.tid == B.tid ? A.idx < B.idx : B.pre.get(A.tid) > A.idx)
        adj[i][j] = 1;
    }
  }
  for (auto& [a, b] : sc_sw_) adj[node[a]][node[b]] = 1;
  // Coherence-ordered pairs, extended through SC fences by hb.
  std::vector<int> left, right;
  for (const Loc& l : locs_) {
    for (int a : l.acc) {
      left.clear();
      if (is_sc(a)) left.push_back(node[a]);
      for (int f : fences)
        if (Hb(f, events_[a].post)) left.push_back(node[f]);
      if (left.empty()) continue;
      for (int b : l.acc) {
        if (!Coh(a, b)) continue;
        right.clear();
        if (is_sc(b)) right.push_back(node[b]);
        for (int f : fences)
          if (Hb(b, events_[f].post)) right.push_back(node[f]);
        for (int x : left)
          for (int y : right) adj[x][y] = 1;
      }
    }
  }
  if (forward_only) {
    // The SC order as executed: every edge must run forward in events_
    // order, which is the order the execution ran them in.
    for (size_t i = 0; i < n; ++i)
      for (size_t j = 0; j < n; ++j)
        if (adj[i][j] && sc_events[i] > sc_events[j]) return false;
    return true;
  }
  // Cycle check (DFS colours).
  std::vector<uint8_t> color(n, 0);
  std::vector<std::pair<size_t, size_t>> st;
  for (size_t s = 0; s < n; ++s) {
    if (color[s] != 0) continue;
    st.push_back({s, 0});
    color[s] = 1;
    while (!st.empty()) {
      auto& [v, k] = st.back();
      if (k == n) {
        color[v] = 2;
        st.pop_back();
        continue;
      }
      size_t w = k++;
      if (!adj[v][w]) continue;
      if (color[w] == 1) return false;
      if (color[w] == 0) {
        color[w] = 1;
        st.push_back({w, 0});
      }
    }
  }
  return true;
}
#endif  // RL_SC_CHECK

// ---------------------------------------------------------------- decisions

// A write w was just added. Every earlier decision that placed a read r of
// the same location, where w does not depend on r (not porf-after it), could
// instead have deferred r's thread so that r reads w: enable that deferral.
// Only the location's accesses can be such reads: each event placed by a
// scheduling decision names it (Event::choice, the decision's Choice::ev
// names the event back), so this reads the location's accesses instead of
// the whole decision stack.
void Engine::Discover(const Event& w, const Clock& porf_before) {
  // porf_before: w's thread's porf before w (only other threads' entries
  // are read: a read of w's own thread is skipped below).
  for (int id : locs_[w.loc].acc) {
    const Event& r = events_[id];
    if (r.choice < 0 || !r.reads || r.tid == w.tid) continue;
    const size_t k = static_cast<size_t>(r.choice);
    if (k >= pos_ || k >= stack_.size()) continue;
    Choice& c = stack_[k];
    if (c.ev != id || c.seg_end.empty()) continue;
    uint32_t m = c.SegOf(c.cur);
    if (c.enabled_segs > m + 1) continue;
    if (porf_before.get(r.tid) >= r.idx) continue;
    c.Enable(m + 2);
  }
}

bool Engine::ScProbe(unsigned t, const Action& a, bool keep) {
  const Pending& op = threads_[t].op;
  if (op.kind == OpKind::kResume) return true;
  // Event::sc as Build() will set it (a failed CAS has its failure order).
  const memory_order mo =
      op.kind == OpKind::kCas && !a.cas_ok ? op.mo_fail : op.mo;
  bool new_sc = !MainOutsideThreads(t) && mo == mo_seq_cst;
  // With no SC fence, an event that is not SC adds no edge to the graph
  // (AddScEdges: its left() set is empty), so it cannot close a cycle.
  if (!NeedSc(new_sc) || (!new_sc && sc_fences_.empty())) return true;
  Build(t, op, a, NewEvent(), probe_);
  Push(probe_);
  bool ok = ScAcyclicAfterPush();
#ifdef RL_SC_CHECK
  CrossCheckSc(ok);
#endif
  if (ok && keep) {
    kept_probe_ = true;  // Apply() takes it as the event
    return true;
  }
  Pop();
  return ok;
}

void Engine::ActionsFor(unsigned t, std::vector<Action>* out) {
  ThreadState& th = threads_[t];
  const Pending& op = th.op;
  if (op.kind == OpKind::kResume) {
    out->push_back({static_cast<int>(t)});
    return;
  }
  const Loc& l = locs_[op.loc];
  auto consider = [&](const Action& a) {
    if (lazy_probe_ || ScAllows(t, a)) out->push_back(a);
  };
  if (op.kind == OpKind::kStore) {
    int lb = WriteLowerBound(t, op.loc);
    for (int p = lb; p <= static_cast<int>(l.mo.size()); ++p) {
      if (!StorePosOpen(l, p)) continue;
      Action a;
      a.tid = static_cast<int>(t);
      a.pos = p;
      consider(a);
    }
    return;
  }
  int lb = ReadLowerBound(t, op.loc);
  // Newest first: tends to reach complete executions sooner.
  for (int p = static_cast<int>(l.mo.size()) - 1; p >= lb; --p) {
    int w = l.mo[p];
    if (w < th.constraint) continue;
    const Event& W = events_[w];
    Action a;
    a.tid = static_cast<int>(t);
    a.rf = w;
    if (op.await) {
      if (!AwaitReadable(op, W)) continue;
    } else if (op.kind == OpKind::kRmw) {
      if (!ReadableBy(op.kind, W)) continue;
    } else if (op.kind == OpKind::kCas) {
      a.cas_ok = W.wval == op.expected;
      if (a.cas_ok && W.rmw_reader >= 0) {
        a.cas_ok = false;  // only a spurious failure may read it
        if (!(op.weak && p_.spurious_cas_failures &&
              th.spurious_loc != op.loc))
          continue;
        consider(a);
        continue;
      }
      if (a.cas_ok && op.weak && p_.spurious_cas_failures &&
          th.spurious_loc != op.loc) {
        consider(a);
        a.cas_ok = false;  // the spurious failure reading the same write
      }
    }
    consider(a);
  }
}

// The actions ActionsFor(t) would list for a load, store, RMW or CAS, as a
// range (a CAS's: its success, failure and spurious failure per write, see
// CasActionsOn): false for a resumption, a wait (Pending::await) or under
// a deferral constraint (exhaustive search).
bool Engine::DirectActions(unsigned t, DirectRange* r) const {
  const ThreadState& th = threads_[t];
  const Pending& op = th.op;
  if (th.constraint != 0 || op.await) return false;
  // Only a load, store, RMW or CAS names a location (a resumption does
  // not).
  if (op.kind == OpKind::kNone || op.kind == OpKind::kResume) return false;
  const Loc& l = locs_[op.loc];
  const int size = static_cast<int>(l.mo.size());
  switch (op.kind) {
    case OpKind::kLoad:  // every write from the lower bound on
      r->lb = ReadLowerBound(t, op.loc);
      r->n = static_cast<size_t>(size - r->lb);
      return true;
    case OpKind::kStore:
      r->lb = WriteLowerBound(t, op.loc);
      r->n = 0;
      for (int p = r->lb; p <= size; ++p) r->n += StorePosOpen(l, p);
      return true;
    case OpKind::kRmw:
      // Only the newest write is unread by an RMW (a counter's fetch_add,
      // typically): it is the one action, whatever the lower bound, which
      // is never above it (the position of a write). Skips the bound's
      // walk over every thread's accesses (-15% instructions on a random
      // run of a 4-thread seq_cst counter, callgrind).
      if (l.rmw_free == 1) {
        r->lb = size - 1;
        r->n = 1;
        return true;
      }
      r->lb = ReadLowerBound(t, op.loc);
      r->n = 0;
      for (int p = r->lb; p < size; ++p)
        r->n += ReadableBy(op.kind, events_[l.mo[p]]);
      return true;
    case OpKind::kCas:
      // Counted, not listed: a CAS loop's failed tries were 8% of a random
      // run's instructions in ActionsFor()'s appends (callgrind).
      r->lb = ReadLowerBound(t, op.loc);
      r->n = 0;
      for (int p = r->lb; p < size; ++p)
        r->n += CasActionsOn(th, events_[l.mo[p]]);
      return true;
    default:
      return false;
  }
}

// The j-th action of DirectActions()'s range, in ActionsFor()'s order
// (stores oldest position first, reads newest write first), so a replay,
// which lists them, takes the same action for the recorded index.
Action Engine::DirectAction(unsigned t, const DirectRange& r, size_t j) const {
  const Pending& op = threads_[t].op;
  const Loc& l = locs_[op.loc];
  Action a;
  a.tid = static_cast<int>(t);
  int p;
  if (op.kind == OpKind::kStore) {
    for (p = r.lb;; ++p)
      if (StorePosOpen(l, p) && j-- == 0) break;
    a.pos = p;
    return a;
  }
  p = static_cast<int>(l.mo.size()) - 1;
  if (op.kind == OpKind::kLoad) {  // a load reads any write (ReadableBy)
    a.rf = l.mo[p - static_cast<int>(j)];
    a.no_event = r.n == 1 && ReadNeedsNoEvent(t);
#ifdef RL_SC_CHECK
    a.check_unevented =
        r.n == 1 && op.mo == mo_seq_cst && !a.no_event && ReadSkippable(t);
#endif
    return a;
  }
  if (op.kind == OpKind::kCas) {
    const ThreadState& th = threads_[t];
    for (;; --p) {
      const Event& w = events_[l.mo[p]];
      const size_t n = CasActionsOn(th, w);
      if (j < n) {
        a.rf = l.mo[p];
        // A success comes first (of two: then its spurious failure).
        a.cas_ok = j == 0 && w.wval == op.expected && w.rmw_reader < 0;
        return a;
      }
      j -= n;
    }
  }
  for (;; --p)
    if (ReadableBy(op.kind, events_[l.mo[p]]) && j-- == 0) break;
  a.rf = l.mo[p];
  return a;
}

#ifdef RL_SC_CHECK
// The direct draw must take the action a listing would have at index j.
void Engine::CrossCheckDirect(unsigned t, const DirectRange& r, size_t j,
                              const Action& a) {
  std::vector<Action> all;
  const bool lazy = lazy_probe_;
  lazy_probe_ = true;  // list without probing, as a sampled run does
  ActionsFor(t, &all);
  lazy_probe_ = lazy;
  if (all.size() != r.n || all[j].rf != a.rf || all[j].pos != a.pos ||
      all[j].cas_ok != a.cas_ok) {
    std::fprintf(stderr,
                 "RL_SC_CHECK: thread %u's direct draw took action %zu of "
                 "%zu, not what ActionsFor() lists (%zu actions)\n",
                 t, j, r.n, all.size());
    std::abort();
  }
}
#endif

// The actions of a thread running on through identical spin iterations:
// each read reads what the same read of the previous iteration read.
void Engine::RunningOnActions(unsigned t, std::vector<Action>* out) {
  ActionsFor(t, out);
  const ThreadState& th = threads_[t];
  size_t k = th.cur_reads.size();
  if (Deferrable(th) && k < th.prev_reads.size() &&
      th.prev_reads[k].loc == th.op.loc) {
    int rf = th.prev_reads[k].rf;
    out->erase(std::remove_if(
                   out->begin(), out->end(),
                   [&](const Action& a) { return a.rf >= 0 && a.rf != rf; }),
               out->end());
  }
}

void Engine::EnumSched(std::vector<Action>* out, std::vector<uint32_t>* segs) {
  // A thread running on through identical spin iterations goes first and
  // alone: its reads are fixed, so where other threads' steps fall is the
  // business of the branch in which it waited.
  if (const int t = RunningOnThread(); t >= 0) {
    RunningOnActions(static_cast<unsigned>(t), out);
    if (segs != nullptr) segs->push_back(static_cast<uint32_t>(out->size()));
    return;
  }
  for (unsigned t = 0; t < n_; ++t) {
    if (!Schedulable(t)) continue;
    ThreadState& th = threads_[t];
    ActionsFor(t, out);
    if (segs != nullptr) segs->push_back(static_cast<uint32_t>(out->size()));
    // A sampled run offers every thread (no canonical order to keep).
    if (sampling_) continue;
    if (!Deferrable(th)) break;
    // Deferring this thread would exceed the bound (a waiting lock
    // acquisition is no deferral).
    if (p_.search_type == sched_bound &&
        skips_ >= static_cast<int>(p_.context_bound) && !AwaitBlocked(t))
      break;
  }
}

bool Engine::DecideNew(DecideKind kind, unsigned rand_limit, Action* out) {
  std::vector<Action>& opts = scratch_opts_;
  std::vector<uint32_t>& segs = scratch_segs_;
  opts.clear();
  segs.clear();
  // A sampled run (r3, r4) enumerates the coherent actions without the SC
  // probe and probes only the one it draws (ScAllows), drawing again
  // without it if the SC order forbids it: the same distribution as
  // drawing among the SC-consistent actions, without probing them all.
  lazy_probe_ = lazy_sampling_;
  if (kind == DecideKind::kSched) {
    EnumSched(&opts, &segs);
  } else if (kind == DecideKind::kMain) {
    ActionsFor(n_, &opts);
  } else {
    for (unsigned i = 0; i < rand_limit; ++i) {
      Action a;
      a.value = i;
      opts.push_back(a);
    }
  }
  // The exhaustive search records a scheduling decision that finds no
  // action too (one option, kNoAction): the scheduler then releases
  // spinners, times a wait out or ends the run, and a later execution
  // replaying this prefix must fail the decision at the same point (see
  // Decide) instead of taking the next decision's recorded action.
  const bool failed = opts.empty();
  if (failed && (mode_ != Mode::kDfs || kind != DecideKind::kSched))
    return false;
  if (failed) {
    Action none;
    none.tid = kNoAction;
    opts.push_back(none);
    segs.clear();
  }
  size_t idx = 0;
  if (mode_ == Mode::kDfs) {
    if (choice_pool_.empty()) {
      stack_.emplace_back();
    } else {
      stack_.push_back(std::move(choice_pool_.back()));
      choice_pool_.pop_back();
      Choice& r = stack_.back();
      r.cur = 0;
      r.enabled_segs = 0;
      r.ev = -1;
    }
    Choice& c = stack_.back();
    c.opts.swap(opts);  // opts gets the pooled (empty) vector back
    if (kind == DecideKind::kSched && p_.lazy_deferral && !failed) {
      c.seg_end.swap(segs);
      c.Enable(1);
    }
    if (kind == DecideKind::kSched && !failed)
      last_choice_ = static_cast<int>(pos_);
    ++pos_;
    *out = c.opts[0];
    return !failed;
  }
  lazy_probe_ = false;
  bool sched = kind != DecideKind::kRand;
  if (lazy_sampling_ && sched) {
    if (!DrawSampled(&idx)) return false;
  } else if (mode_ == Mode::kRandom) {
    // An rl::rand value: a random run samples (lazy_sampling_), so its
    // scheduling and main-thread decisions were drawn above.
    idx = rng_.Below(opts.size());
    RecordTaken(opts.size(), idx);
  } else {
    idx = TakeReplayed(opts.size());
  }
  *out = opts[idx];
  if (sched) AlternativesForTrace(*out);
  return true;
}

// A replayed trace lists, for each read, the other writes it could read.
void Engine::AlternativesForTrace(const Action& taken) {
  if (!trace_ || taken.rf < 0) return;
  const std::vector<Action>& opts = scratch_opts_;
  size_t id = events_.size();
  if (alts_.size() <= id) alts_.resize(id + 1);
  alts_[id].clear();
  for (const Action& a : opts)
    if (a.tid == taken.tid && a.rf != taken.rf &&
        (!lazy_sampling_ || ScAllows(static_cast<unsigned>(a.tid), a)))
      alts_[id].push_back(a.rf);
}

// A sampled decision over scratch_opts_ (not r4's scheduling ones, see
// DrawThreadFirst): a random run's main-thread operation, drawn among its
// actions; or the replay of an r3 state, whose scheduling decisions index
// all threads' unprobed actions together (as EnumSched lists them). A
// replay takes the recorded index without probing anything.
bool Engine::DrawSampled(size_t* idx) {
  if (mode_ != Mode::kRandom) {
    *idx = TakeReplayed(scratch_opts_.size());
    return true;
  }
  if (!DrawAllowed(idx)) return false;
  RecordTaken(scratch_opts_.size(), *idx);
  return true;
}

size_t Engine::TakeReplayed(size_t n) {
  size_t idx = 0;
  if (n > 1 && replay_pos_ < replay_.size())
    idx = std::min<size_t>(replay_[replay_pos_++], n - 1);
  RecordTaken(n, idx);
  return idx;
}

// Draws one of scratch_opts_, each with the same chance, probing only the
// drawn one against the SC order; a refused one is dropped and another
// drawn, so the result is uniform among the allowed ones. The drawn action
// is applied at once (RunOne: Decide, Apply; the main thread's Op()
// likewise), so its probe stays as the event (kept_probe_). False if every
// action is refused. Forced inline: as a call it cost 2.6% of a random run
// of the seqcount port (callgrind).
// `refused`: the index of an action already drawn and refused (by
// DrawThreadFirst's direct draw), which continues as if drawn here.
__attribute__((always_inline)) inline bool Engine::DrawAllowed(
    size_t* idx, size_t refused) {
  const std::vector<Action>& opts = scratch_opts_;
  // Drawable actions are the first `live` of `index` (the identity until
  // one is refused: then it is filled and the refused one swapped past the
  // end).
  std::vector<uint32_t>& index = scratch_index_;
  bool indexed = false;
  size_t live = opts.size();
  // Drops the action at position j of the drawable ones.
  auto drop = [&](size_t j) {
    if (!indexed) {
      index.resize(opts.size());
      for (size_t m = 0; m < opts.size(); ++m)
        index[m] = static_cast<uint32_t>(m);
      indexed = true;
    }
    std::swap(index[j], index[--live]);
  };
  if (refused != kNoneRefused) drop(refused);
  while (live > 0) {
    const size_t j = rng_.Below(live);
    const size_t i = indexed ? index[j] : j;
    if (ScAllows(static_cast<unsigned>(opts[i].tid), opts[i], true)) {
      *idx = i;
      return true;
    }
    drop(j);
  }
  return false;
}

// The index drawn among DirectActions()'s range (newest write first for a
// load): uniform, except for a load in a sampled run that re-reads, first
// after the thread's yield, a location the thread saw before it. That
// load takes a write newer than the one seen with probability 3/4 where
// one exists, and any coherent write otherwise, so every execution stays
// reachable. A yield says the thread waits for another thread's progress;
// uniform draws had a spinner re-read the value it had just seen with
// probability 1/2 once a newer one existed (Relacy excludes those
// re-reads). Only how often each index is drawn changes, not what it
// means: a replay takes the recorded index as before. Why 3/4: retries
// per execution of a reader spinning on a published flag (two of them,
// tools/relacy_speed.cpp's mailbox) were 5.37 uniform, 3.44 at 1/2, 2.89
// at 3/4 and 2.56 at 15/16 (Relacy 2.12); 3/4 keeps a stale re-read at
// one in eight where 15/16 leaves one in 32.
//
// A CAS takes its first action on the newest write (a success where the
// value matches, else the failure reading it) with probability 1/2, and
// any of its actions otherwise (a stale failure, a spurious one, that
// success again). A uniform draw made a weak CAS on the newest write
// succeed only once in 2 + (older coherent writes) tries, where Relacy's
// CAS reads the newest value and fails spuriously once in four: a CAS
// loop retried far more than it does. Measured (tries per execution, 5,000
// random iterations of a three-thread Treiber-style stack pushing and
// popping four nodes each with compare_exchange_weak): 76.8 uniform, 61.6
// with this rule, Relacy 58.4; 2,000 iterations took 15% fewer
// instructions. A bug that needs a stale or spurious failure is still
// reached, at half its uniform rate.
size_t Engine::DrawDirectIndex(unsigned t, const DirectRange& r) {
  if (r.n <= 1) return 0;  // most steps: nothing to draw
  const ThreadState& th = threads_[t];
  if (th.op.kind == OpKind::kCas)
    return rng_.Below(2) == 0 ? 0 : rng_.Below(r.n);
  if (th.yield_idx < 0 || th.op.kind != OpKind::kLoad) return rng_.Below(r.n);
  const Loc& l = locs_[th.op.loc];
  const int last = l.last_acc[t];
  int seen;
  if ((l.unevented_mask >> t & 1) != 0 &&
      (last < 0 || l.unevented[t].next > events_[last].idx)) {
    // Its latest access to the location is a load that made no event
    // (ReadWithoutEvent), after the thread's yield if no yield followed.
    const Loc::UneventedRead& u = l.unevented[t];
    if (u.yields == th.yields) return rng_.Below(r.n);
    seen = events_[u.rf].mo_pos;
  } else {
    if (last < 0 || events_[last].idx > th.yield_idx) return rng_.Below(r.n);
    // The newest write the thread saw: its own or the one it read,
    // whichever is later (an RMW's own comes right after the one it read).
    const Event& e = events_[last];
    seen = std::max(WritePos(e), ReadPos(e));
  }
  // Newest first: indices below `newer` are the writes after the one seen.
  // (Every coherent write is newer where the thread has since learned of a
  // newer one through happens-before: newer >= r.n.)
  const size_t newer = l.mo.size() - 1 - static_cast<size_t>(seen);
  if (newer == 0 || newer >= r.n || rng_.Below(4) == 0) return rng_.Below(r.n);
  return rng_.Below(newer);
}

#ifdef RL_SC_CHECK
void Engine::CheckBits() const {
  for (unsigned t = 0; t < n_; ++t) {
    const ThreadState& th = threads_[t];
    const auto bit = [t](uint64_t m) { return (m >> t & 1) != 0; };
    if (bit(sched_mask_) != Schedulable(t) ||
        bit(blocked_mask_) != th.blocked ||
        bit(continuing_mask_) != (th.continuing != 0)) {
      std::fprintf(stderr,
                   "RL_SC_CHECK: thread %u's scheduling bits do not match its "
                   "state\n",
                   t);
      std::abort();
    }
  }
}
#endif

// A sampled run's scheduling decision, recorded as "r4:": a thread first,
// each schedulable one with the same chance, then one of its coherent
// actions; only the drawn thread's actions are enumerated and only the
// drawn action is probed against the SC order. A refused action is dropped
// and another of the same thread drawn; a thread with none left is
// dropped and another thread drawn. So the thread is uniform among those
// with an action the SC order allows, and the action uniform among its
// allowed ones (r3's DrawSampled re-drew the thread after each refusal,
// which favoured threads with fewer refused actions). Recorded: the
// thread's position among the schedulable ones (if more than one) and the
// action's index among its unprobed actions (if more than one), so a
// replay takes both without probing.
bool Engine::DrawThreadFirst(Action* out) {
  // The schedulable threads as a bit per thread id (n_ < kMaxThreads <= 65:
  // at most 64 test threads), or only the lowest one running on
  // (RunningOnThread()).
  static_assert(kMaxThreads <= 65, "one bit per test thread");
#ifdef RL_SC_CHECK
  CheckBits();
#endif
  uint64_t schedulable = sched_mask_;
  size_t count;
  if (const uint64_t on = schedulable & continuing_mask_; on != 0) {
    schedulable = on & (~on + 1);
    count = 1;
  } else {
    count = PopCount(schedulable);
  }
  // The thread with the k-th lowest id among `among` (bits are counted by
  // loops and PopCount(): the baseline x86-64 target has no popcnt
  // instruction, and __builtin_popcountll is a library call there).
  auto nth_thread = [](uint64_t among, size_t k) {
    for (; k > 0; --k) among &= among - 1;
    return static_cast<unsigned>(__builtin_ctzll(among));
  };
  // Its position among the schedulable threads, as recorded.
  auto position = [schedulable](unsigned t) {
    size_t k = 0;
    for (uint64_t below = schedulable & ((uint64_t{1} << t) - 1); below != 0;
         below &= below - 1)
      ++k;
    return k;
  };
  std::vector<Action>& opts = scratch_opts_;
  if (mode_ != Mode::kRandom) {  // replay
    if (count == 0) return false;
    const unsigned t = nth_thread(schedulable, TakeReplayed(count));
    ListUnprobed(t, &opts);
    if (opts.empty()) return false;
    *out = opts[TakeReplayed(opts.size())];
    AlternativesForTrace(*out);
    return true;
  }
  // Drawable threads: those not dropped yet.
  uint64_t live = schedulable;
  size_t live_count = count;
  while (live_count > 0) {
    const size_t nth = rng_.Below(live_count);
    const unsigned t = nth_thread(live, nth);
    // Until a thread is dropped, the n-th drawable is the n-th schedulable.
    const size_t pos = live == schedulable ? nth : position(t);
    size_t i;
    bool drawn;
    if (DirectRange r; threads_[t].continuing == 0 && DirectActions(t, &r)) {
      // A load, store, RMW or CAS: its actions are a range of positions in
      // the modification order, so the one drawn is computed without listing
      // them (the same draw as DrawAllowed's first). Listed only if the SC
      // order refuses it.
      // Built in *out, not copied there: the copy read the local's
      // fields, just stored one by one, with one 16-byte load, which
      // store forwarding cannot serve (about 3% of a random run's time on
      // Peterson's lock, perf). *out is overwritten if refused.
      const size_t j = DrawDirectIndex(t, r);
      *out = DirectAction(t, r, j);
#ifdef RL_SC_CHECK
      CrossCheckDirect(t, r, j, *out);
#endif
      if (ScAllows(t, *out, true)) {
        RecordTaken(count, pos);
        RecordTaken(r.n, j);
        return true;
      }
      ListUnprobed(t, &opts);
      drawn = DrawAllowed(&i, j);
    } else {
      ListUnprobed(t, &opts);
      drawn = DrawAllowed(&i);
    }
    if (drawn) {
      RecordTaken(count, pos);
      RecordTaken(opts.size(), i);
      *out = opts[i];
      return true;
    }
    live &= ~(uint64_t{1} << t);
    --live_count;
  }
  return false;
}

void Engine::RunningOnOrAll(unsigned t, std::vector<Action>* out) {
  if (threads_[t].continuing != 0)
    RunningOnActions(t, out);
  else
    ActionsFor(t, out);
}

// Thread t's actions (RunningOnOrAll), into *out emptied first, without
// the SC probe: a sampled decision probes only the action it draws.
void Engine::ListUnprobed(unsigned t, std::vector<Action>* out) {
  out->clear();
  lazy_probe_ = true;
  RunningOnOrAll(t, out);
  lazy_probe_ = false;
}

__attribute__((always_inline)) inline void Engine::PlaceEvent(unsigned t,
                                                         const Action& a,
                                                         Built& b) {
  if (kept_probe_) {  // the drawn action's probe, already in the graph
    kept_probe_ = false;
    std::swap(b, probe_);
    return;
  }
  Build(t, threads_[t].op, a, NewEvent(), b);
  Push(b);
}

// Flattened: Build, Push and Commit inline into the one step every
// operation takes, without their calls' register saves (-5.4% instructions
// on a random run of the seqcount port, callgrind; about 12 KB of code).
__attribute__((flatten)) void Engine::Place(const Action& a) {
  unsigned t = static_cast<unsigned>(a.tid);
  // Every lower runnable thread was deferred: its read must read a write
  // that does not exist yet. This is the exhaustive search's canonical
  // order (each graph explored once); a random run samples interleavings
  // as Relacy's random scheduler does and defers nothing: the constraint
  // made almost every long random run end pruned, with nothing checked.
  // The lower schedulable threads are the bits of sched_mask_ below t: a
  // loop over every lower thread's flags made 0.35% to 0.75% more
  // instructions (callgrind, random and exhaustive runs).
  bool skipped = false;
  if (!sampling_ && threads_[t].continuing == 0) {
#ifdef RL_SC_CHECK
    CheckBits();
#endif
    const uint64_t below = t >= 64 ? ~uint64_t{0} : (uint64_t{1} << t) - 1;
    for (uint64_t m = sched_mask_ & below; m != 0; m &= m - 1) {
      const unsigned i = static_cast<unsigned>(__builtin_ctzll(m));
      threads_[i].constraint = static_cast<int>(events_.size());
      if (!AwaitBlocked(i)) skipped = true;
    }
  }
  if (skipped) ++skips_;
  ThreadState& th = threads_[t];
  th.pending = false;
  if (t < n_) SetBit(&sched_mask_, t, false);  // SyncBits(t), one bit
  if (a.no_event) [[unlikely]] {
    ReadWithoutEvent(t, a);
    return;
  }
  if (th.op.kind != OpKind::kResume) {
    Built& b = built_;
    PlaceEvent(t, a, b);
    if (mode_ == Mode::kDfs && last_choice_ >= 0) {
      stack_[last_choice_].ev = static_cast<int>(events_.size()) - 1;
      events_.back().choice = last_choice_;
    }
    Commit(t, b);
    const Event& e = events_.back();
    th.result = e.reads ? e.rval : 0;
    th.cas_ok = e.kind == Kind::kRmw;
    if (th.op.kind == OpKind::kCas)
      th.spurious_loc =
          e.kind == Kind::kCasFail && e.rval == th.op.expected ? e.loc : -1;
    th.constraint = 0;
  }
}

// A random run's load with one action, reading the newest write: the
// thread's lower bound is at that write already, so a read by any thread
// that knows this load's successor is bounded there without the load's
// event (what the thread had seen, or the SC fence's floor that bounded
// it, is known there too). The event would serve only the trace (a
// replay makes it), a race with a later free (ReadWithoutEvent keeps what
// that needs, as for an rl::var access), and the SC order, which this
// load does not enter: no SC-order graph and no SC fence (the SC order as
// executed, the default, has neither; so ScAllows() keeps no probe), not
// seq_cst but under that order (where only its floor counts). Its release
// sequence is acquired as Build() does, from the memo or by the walk.
// Checked by
// RL_SC_CHECK's CrossCheckUnevented() (fuzz_test_sc_check), by
// replay_test's replays of random runs and by fuzz_test's random searches
// against the oracle.
inline bool Engine::ReadNeedsNoEvent(unsigned t) const {
#ifdef RL_SC_CHECK
  // CrossCheckFloors() checks the SC order over the events: it needs every
  // seq_cst one. Such a load's event is marked instead
  // (Event::check_unevented), and SeenPosition() checks that no bound
  // needs it.
  if (threads_[t].op.mo == mo_seq_cst) return false;
#endif
  return ReadSkippable(t);
}

inline bool Engine::ReadSkippable(unsigned t) const {
  const Pending& op = threads_[t].op;
  if (op.kind != OpKind::kLoad || track_porf_ || !sc_events_.empty() ||
      !sc_fences_.empty() || mode_ != Mode::kRandom)
    return false;
  // A seq_cst load only in the SC order as executed (no SC-order graph).
  if (op.mo == mo_seq_cst && !sc_floors_) return false;
  // Any release sequence: from the memo, or walked as Build() walks it
  // (ScReadWithoutEvent; its seq_cst heads serve only SC-order edges, and
  // there is no SC-order graph here).
  const Loc& l = locs_[op.loc];
  const int rf = l.mo.back();  // the one write it reads (DirectAction)
  // A seq_cst load's bound may be the SC floor alone (ScFloor: another
  // thread's seq_cst access read or wrote the newest write). The floor
  // bounds only later seq_cst accesses; this thread's later relaxed load,
  // or one by a thread that knows this load, is bounded by what the event
  // would have added to its coherence (SeenPosition). So the load is
  // skipped only when the thread has seen the newest write already.
  // Without this check, r1 = x.load(seq_cst) after another thread's
  // seq_cst load read a relaxed x = 1, then r2 = x.load(relaxed), gave
  // r1 == 1, r2 == 0 (replay_test "a seq_cst load held by the SC floor
  // alone makes its event"); and when loads of RMW chains were skipped
  // too, fuzz_test's random outcomes left the exhaustive search's (a CAS
  // after such a load read an older write).
  if (op.mo == mo_seq_cst && !Hb(rf, threads_[t].clock) &&
      SeenPosition(op.loc, threads_[t].clock) !=
          static_cast<int>(l.mo.size()) - 1)
    return false;
  return true;
}

#ifdef RL_SC_CHECK
// The lower bound computed without the loads that made no event must be
// the one their events would give: none that thread t knows of (its own,
// or another thread's whose next event t knows) read a later write.
void Engine::CrossCheckUnevented(unsigned t, int loc, int lb) const {
  const Clock& c = threads_[t].clock;
  for (const auto& [tid, r] : locs_[loc].unevented_log) {
    if (tid != static_cast<int>(t) && c.get(tid) < r.next) continue;
    if (events_[r.rf].mo_pos > lb) {
      std::fprintf(stderr,
                   "RL_SC_CHECK: a load of %s by thread %d that made no "
                   "event read a write past thread %u's lower bound\n",
                   LocStr(loc).c_str(), tid, t);
      std::abort();
    }
  }
}
#endif

// ReadWithoutEvent()'s cases other than the memo, out of line: a release
// sequence walked as Build() walks it (its seq_cst heads, b.sc_src, serve
// only SC-order edges, and there is no SC-order graph), and a seq_cst
// load's floor (in the SC order as executed: what Push() would do,
// RaiseFloors).
__attribute__((noinline)) void Engine::ScReadWithoutEvent(unsigned t,
                                                          const Action& a) {
  ThreadState& th = threads_[t];
  Loc& l = locs_[th.op.loc];
  if (MemoHolds(l, a.rf)) {
    if (l.chain_has) AcquireRead(th, l.chain_sync);
  } else {
    Built& b = built_;
    b.has_sync = false;
    b.sc_src.clear();
    WalkReleaseSequence(events_[a.rf], th.clock, b);
    if (b.has_sync) AcquireRead(th, b.sync);
  }
  if (th.op.mo == mo_seq_cst) {
    floors_live_ = true;
    RaiseFloor(l, a.rf);
  }
}

// What the load's Build(), Push() and Commit() would leave besides the
// event: the clocks it acquires (Build's memo path), the spin detection's
// record of the read (Commit), the value, the step. Commit()'s check of a
// spin iteration run on (ThreadState::continuing) is not needed: a thread
// running on takes its actions from RunningOnActions(), never from
// DirectAction(), so its loads always make events.
void Engine::ReadWithoutEvent(unsigned t, const Action& a) {
  ThreadState& th = threads_[t];
  Loc& l = locs_[th.op.loc];
  if (!MemoHolds(l, a.rf) || th.op.mo == mo_seq_cst) [[unlikely]]
    ScReadWithoutEvent(t, a);
  else if (l.chain_has)
    AcquireRead(th, l.chain_sync);
  const Event& w = events_[a.rf];
  th.cur_reads.push_back({th.op.loc, w.wval, a.rf});
  l.unevented_mask |= uint64_t{1} << t;
  l.unevented[t] = {th.idx + 1, a.rf, th.yields};
#ifdef RL_SC_CHECK
  l.unevented_log.emplace_back(t, l.unevented[t]);
#endif
  th.result = w.wval;
  th.cas_ok = false;
  th.constraint = 0;
  CheckDepth();
}

// ---------------------------------------------------------------- API

int Engine::NewAtomic(unsigned width, uint64_t init, const debug_info& info,
                      const void* addr, bool side) {
  int id = static_cast<int>(locs_.size());
  Loc& l = locs_.Next();
  l.width = width;
  l.info = info;
  l.addr = static_cast<const char*>(addr);
  Built& b = built_;
  b.sc_src.clear();
  Event& e = NewEvent();
  e.kind = Kind::kInit;
  e.writes = true;
  if (side) {
    // As if made before any thread started (a wait queue exists, empty,
    // from the start): the main thread's event 0, which happens before
    // every event. Made as the current thread's next event it would be
    // sequenced after that thread's earlier SC fences, and a thread whose
    // RMW reads it would be ordered after them ([atomics.order]/4.4): a
    // false order that hid a lost wake-up (two waiters numbered above the
    // notifier never both found by one notify_one).
    e.tid = static_cast<int>(n_);
    e.idx = 0;
    e.post = Clock();
    e.porf = Clock();
  } else {
    StampLocal(cur_, e);
  }
  e.loc = id;
  e.wval = init;
  e.mo_pos = 0;
  e.info = info;
  Push(b);
  // A side location's initialization races with nothing; nor does one by
  // the main thread, whose code runs only while no test thread runs
  // (MainOutsideThreads): before the threads start, whose creation it
  // happens before, or after they are joined. So only an atomic a test
  // thread constructs is checked on each access (CheckInitialized).
  locs_[id].init = side || MainOutsideThreads(cur_)
                       ? -1
                       : static_cast<int>(events_.size()) - 1;
  if (!side) AdvanceThread(cur_, e);
  return id;
}

// An atomic's construction is a non-atomic write ([atomics.types.operations]
// /3: initialization is not an atomic operation), so an access not ordered
// after it by happens-before is a data race. Only the accessing thread's
// clock matters: the access itself cannot acquire its own initialization.
void Engine::ReportUninitialized(const Pending& op) {
  if (!IsLoc(op.loc)) {
    // A live generation but no location of this execution: the object's
    // memory no longer holds the atomic it held (its lifetime ended, and
    // the compiler reused or dropped its bytes).
    std::ostringstream s;
    s << "access to freed memory: an rl::atomic whose lifetime has ended "
      << "(no location #" << op.loc << " in this execution), accessed by "
      << RunningName() << " at " << BaseName(op.info.file_) << ":"
      << op.info.line_;
    Fail(test_result_access_to_freed_memory, s.str(), op.info);
    return;
  }
  const Loc& l = locs_[op.loc];
  const ThreadState& th = threads_[cur_];
  if (l.freed) {
    FreedAccess("rl::atomic", l.info, l.freed, op.info);
    return;
  }
  if (l.init < 0 || Hb(l.init, th.clock)) return;
  // Java / CLI mode: managed memory is zeroed before any thread can reach
  // an object, so a racy read of a field is no error (it reads the value
  // a coherent write left, the construction's or a later one), as in
  // Relacy (its test_unitialized_var: a jvar published through a plain
  // jvar).
  if (garbage_collected_) return;
  static const char* kOpNames[] = {"?", "load", "store", "RMW", "CAS", "?"};
  const Event& init = events_[l.init];
  std::ostringstream s;
  s << "data race on " << LocStr(op.loc) << ": its initialization (#" << l.init
    << " by ";
  if (init.tid == static_cast<int>(n_))
    s << "main";
  else
    s << "thread " << init.tid;
  s << " at " << BaseName(init.info.file_) << ":" << init.info.line_
    << ") does not happen before the " << kOpNames[static_cast<int>(op.kind)]
    << "(" << MoStr(op.mo) << ") by thread " << cur_ << " at "
    << BaseName(op.info.file_) << ":" << op.info.line_;
  Fail(test_result_data_race, s.str(), op.info);
}

uint64_t Engine::Op() {
  ThreadState& th = threads_[cur_];
  const Pending& op = th.op;
  CheckInitialized(op);
  MarkPending(th);
  // The running thread is started, not finished and not blocked: pending,
  // it is schedulable (SyncBits() for the one bit that changed).
  if (in_thread_) {
    SetBit(&sched_mask_, cur_, true);
    if (!StepInThread()) SwitchToScheduler();
  } else {
    MainOp();
  }
  return th.result;
}

// Op() in the main context (constructor, before, after): decided inline;
// most operations here have one coherent action and decide nothing. Out of
// line: a test thread's operation, the common case, keeps a smaller frame.
__attribute__((noinline)) void Engine::MainOp() {
  ThreadState& th = threads_[cur_];
  const Pending& op = th.op;
  // A run's store before the threads start (random or exhaustive; a
  // replay makes the event, for the trace), to an atomic nothing has
  // accessed since its construction (before() setting its initial
  // value): it becomes that construction's value, with no event of its
  // own. The two writes are the main thread's, which happen before every
  // thread's events, so each thread's lower bound is past both and only
  // the newer can be read; nothing read the older. Its release or seq_cst
  // order adds nothing either: the threads' creation orders after it all
  // the main thread did (and the main thread is no SC-order node). It is
  // a step all the same (CheckDepth), so a replay, which makes the event
  // (for the trace), reaches the depth limit where the run did; and it
  // decides nothing (MainOnlyAction), so the replay takes the same
  // decisions. Nor has the exhaustive search anything to discover for it:
  // no read came before it. -4.9% instructions on a random run of the
  // seqcount port, -5.8% on Peterson's lock, -4.2% on the exhaustive
  // seqcount port (callgrind; three such stores per execution).
  if (mode_ != Mode::kReplay && !threads_started_ &&
      op.kind == OpKind::kStore && locs_[op.loc].acc.size() == 1) {
    events_[locs_[op.loc].acc[0]].wval = op.val;
    th.pending = false;
    th.result = 0;
    th.cas_ok = false;
    CheckDepth();
    if (failed_) throw AbortExecution();
    return;
  }
  Action a;
  if (!MainOnlyAction(op, &a) && !Decide(DecideKind::kMain, 0, &a)) Prune();
  if (op.await && !AwaitReadable(op, events_[a.rf])) {
    Fail(test_result_deadlock,
         "a wait outside a thread (constructor, before(), after()) that "
         "the current value does not end can never end",
         op.info);
    throw AbortExecution();
  }
  th.pending = false;
  Built& b = built_;
  PlaceEvent(n_, a, b);
  Commit(n_, b);
  th.result = events_.back().reads ? events_.back().rval : 0;
  th.cas_ok = events_.back().kind == Kind::kRmw;
  if (failed_) throw AbortExecution();
}

// The main thread runs only while no test thread runs (MainOutsideThreads):
// every event of the execution happens before its operation, so a read's
// only coherent write is the last in modification order and a store's only
// place is after it (read-read, write-read and write-write coherence), and
// the operation lies on no SC-order cycle. One action, nothing to decide,
// record or probe, except for a weak CAS that may also fail spuriously (two
// actions: decided as any other). Checked against ActionsFor() under
// RL_SC_CHECK.
bool Engine::MainOnlyAction(const Pending& op, Action* out) {
  if (op.kind == OpKind::kCas && op.weak && p_.spurious_cas_failures &&
      threads_[n_].spurious_loc != op.loc)
    return false;
  const Loc& l = locs_[op.loc];
  Action a;
  a.tid = static_cast<int>(n_);
  if (op.kind == OpKind::kStore) {
    a.pos = static_cast<int>(l.mo.size());
  } else {
    a.rf = l.mo.back();
    if (op.kind == OpKind::kCas) a.cas_ok = events_[a.rf].wval == op.expected;
  }
  *out = a;
#ifdef RL_SC_CHECK
  std::vector<Action> all;
  lazy_probe_ = false;
  ActionsFor(n_, &all);
  // A wait the newest write does not end has none (Op: a deadlock).
  const bool waits = op.await && !AwaitReadable(op, events_[a.rf]);
  if (waits ? !all.empty()
            : all.size() != 1 || all[0].rf != a.rf || all[0].pos != a.pos ||
                  all[0].cas_ok != a.cas_ok) {
    std::fprintf(stderr,
                 "RL_SC_CHECK: the main thread's operation on %s has %zu "
                 "coherent actions, not the one MainOnlyAction() took\n",
                 LocStr(op.loc).c_str(), all.size());
    std::abort();
  }
#endif
  return true;
}

Event& Engine::NewFence(unsigned t, memory_order mo, const debug_info& info,
                        Built& b) {
  const ThreadState& th = threads_[t];
  b.sc_src.clear();
  Event& e = NewEvent();
  e.kind = Kind::kFence;
  StampLocal(t, e);
  e.mo = mo;
  e.info = info;
  e.acq = IsAcq(mo);
  e.rel = IsRel(mo);
  e.sc = mo == mo_seq_cst && !MainOutsideThreads(t);
  if (e.acq) {
    e.post.Join(th.acq_pending);
    b.sc_src.assign(th.sc_pending.begin(), th.sc_pending.end());
  }
  return e;
}

void Engine::AdvanceThread(unsigned t, const Event& e) {
  ThreadState& th = threads_[t];
  th.idx = e.idx;
  th.clock = e.post;
  if (track_porf_) th.porf = e.porf;
  if (e.kind == Kind::kFence && e.rel)
    th.rel_fence = static_cast<int>(&e - events_.data());
}

void Engine::Fence(memory_order mo, const debug_info& info) {
  if (mo == mo_relaxed) return;
  [[maybe_unused]] bool sc = false;
  if (mode_ == Mode::kRandom && IsAcq(mo) && !IsRel(mo) && sc_fences_.empty()) {
    // A random run's acquire fence, while no SC fence exists: no event. It
    // acquires what the thread's relaxed reads saw released (acq_pending);
    // as no later event refers to it (only a release fence is a write's
    // rel_fence, only an SC one enters the SC order), that is all it does.
    // It is a step all the same (below), as MainOp()'s merged store, so a
    // replay, which makes the event (for the trace), decides and ends the
    // same.
    ThreadState& th = threads_[cur_];
    th.clock.Join(th.acq_pending);
  } else {
    Built& b = built_;
    const Event& e = NewFence(cur_, mo, info, b);
    // A fence names no location: Push() would only add it to the SC graph
    // or raise the floors (sc_floors_), which it decides itself.
    if (e.sc || !sc_fences_.empty()) Push(b);
    AdvanceThread(cur_, e);
    sc = e.sc;
  }
  CheckDepth();
  if (failed_) {
    if (in_thread_) SwitchToScheduler();
    throw AbortExecution();
  }
  // An SC fence adds only edges into itself (AddScEdges()): it cannot make
  // the SC order inconsistent.
#ifdef RL_SC_CHECK
  if (sc) CrossCheckSc(true);
#endif
}

// FlushProcessWriteBuffers (Win32): a seq_cst fence in every other thread
// where it stands now, between two of the caller's. Each of them follows
// the caller's first fence and precedes its second in happens-before (the
// kernel's interrupt and acknowledgement carry it), so the SC order puts
// them in between. Where the other threads stand depends on the schedule:
// the flush is discovered as conflicting with their events so far, so the
// exhaustive search also runs them after it (Discover()).
void Engine::SystemFence(const debug_info& info) {
  if (!in_thread_) {
    Fence(mo_seq_cst, info);
    return;
  }
  Fence(mo_seq_cst, info);
  const unsigned me = cur_;
  const Clock caller = threads_[me].clock;
  const Clock caller_porf = threads_[me].porf;
  if (track_porf_) {
    for (size_t id = 0; id < events_.size(); ++id) {
      const Event& r = events_[id];
      if (r.choice < 0 || r.tid == static_cast<int>(me)) continue;
      const size_t k = static_cast<size_t>(r.choice);
      if (k >= pos_ || k >= stack_.size()) continue;
      Choice& c = stack_[k];
      if (c.ev != static_cast<int>(id) || c.seg_end.empty()) continue;
      if (caller_porf.get(r.tid) >= r.idx) continue;
      c.Enable(c.SegOf(c.cur) + 2);
    }
  }
  Clock joined = caller, joined_porf = caller_porf;
  for (unsigned t = 0; t < n_; ++t) {
    ThreadState& th = threads_[t];
    if (t == me || !(th.started || th.spawned)) continue;
    if (th.finished) {  // all it did precedes the caller's second fence
      joined.Join(th.clock);
      joined_porf.Join(th.porf);
      continue;
    }
    Built& b = built_;
    Event& e = NewFence(t, mo_seq_cst, info, b);
    e.post.Join(caller);
    e.porf.Join(caller_porf);
    Push(b);
    AdvanceThread(t, e);
    joined.Join(e.post);
    joined_porf.Join(e.porf);
  }
  threads_[me].clock = joined;
  threads_[me].porf = joined_porf;
  Fence(mo_seq_cst, info);
}

void Engine::Yield(const debug_info& info, uintptr_t cfa) {
  ThreadState& th = threads_[cur_];
  if (!in_thread_) return;
  // Every way out has the masks match the fields it changed (continuing).
  struct SyncOnExit {
    Engine* e;
    unsigned t;
    ~SyncOnExit() {
      SetBit(&e->continuing_mask_, t, e->threads_[t].continuing != 0);
    }
  } sync_on_exit{this, cur_};
  CheckDepth();  // a yield is a step: a loop of bare yields ends
  if (sampling_) {  // DrawDirectIndex
    th.yield_idx = th.idx;
    ++th.yields;
  }
  bool same = th.has_prev && !th.iter_wrote && th.cur_reads == th.prev_reads;
  if (th.must_leave) {
    // The iteration after a stale one's wait branch (below): if it read
    // every write the stale one read, it is the running-on branch's.
    th.must_leave = false;
    if (SameSources(th.cur_reads, th.prev_reads)) Prune();
  }
  // test_params::stateless_spins: an iteration of a loop that carries no
  // state, failed and wrote nothing, is treated as the identical one
  // (below: pruned if a read was stale, else it waits). Only between two
  // yields at one call site, reading the same locations in the same order
  // as the iteration before: the code since the thread's first yield, or
  // since another loop's, also runs code outside the loop, whose reads
  // are made once.
  const bool same_site =
      th.yield_line == info.line_ && th.yield_file == info.file_;
  if (p_.stateless_spins && !stateless_broken_)
    CheckStatelessPromise(th, same && same_site, same_site, cfa, info);
  if (!same && p_.stateless_spins && th.has_prev && !th.iter_wrote &&
      same_site && SameLocations(th.cur_reads, th.prev_reads))
    same = true;
  th.yield_file = info.file_;
  th.yield_line = info.line_;
  // An iteration that wrote -- a counter bumped while waiting -- but read
  // the same values of the other threads' writes as the one before. Until
  // another thread writes, each further iteration would read them again
  // and only write more. Past spin_bound such iterations in a row it is
  // treated as identical: it waits for another thread's write, or is
  // pruned if a read was stale. Before, an exhaustive search ran it to
  // the depth limit in the executions where the writer was never
  // scheduled and reported a LIVELOCK no fair scheduler produces (Relacy
  // says SUCCESS).
  bool writing_spin = false;
  if (!same && th.has_prev && th.iter_wrote && p_.spin_bound > 0 &&
      ForeignReadsRepeat(th)) {
    writing_spin = ++th.writing_repeats > p_.spin_bound;
  } else {
    th.writing_repeats = 0;
  }
  if (writing_spin) {
    same = true;
    th.writing_repeats = 0;
    th.iter_wrote = false;
  }
  if (!same) {
    // The state this try leaves, if it read a stale write: if the next try
    // repeats it, whether the loop keeps a count decides (below) whether
    // waiting after that try is an execution of its own.
    // (Under stateless_spins, CheckStatelessPromise keeps loop_state.)
    if (!p_.stateless_spins) {
      th.loop_state_known = !sampling_ && p_.spin_bound > 0 &&
                            AnyStale(th.cur_reads, false) &&
                            CaptureLoopState(cfa, &th.loop_state);
    }
    th.spin_waited = false;
    th.prev_reads.swap(th.cur_reads);
    th.cur_reads.clear();
    th.has_prev = true;
    th.iter_wrote = false;
    th.continuing = 0;
    return;
  }
  // The iteration read exactly what the previous one did. If some value was
  // stale, an execution reading the newer write exists; this one is
  // redundant. Otherwise the thread waits for another thread to write.
  const bool stale = AnyStale(th.cur_reads, writing_spin);
  // The next identical iteration repeats this one (the same values; for a
  // test-and-set, reading this iteration's own write).
  th.prev_reads.swap(th.cur_reads);
  th.cur_reads.clear();
  if (th.continuing > 0) {
    // Running on: one more identical iteration. If it changed the
    // thread's own state (a count of tries), waiting after it is another
    // execution than waiting after the first: the search may wait here
    // too, so a count checked after the loop reaches spin_bound + 2. A
    // loop whose state repeats waits only after its first identical
    // iteration (spin-assume). Past the bound, the execution in which the
    // thread waited covers the rest; a sampled run (no such branch) waits
    // now instead of ending unchecked. If a read was stale, the write it
    // waits for exists already: it runs on, and its next try must read a
    // newer write (must_leave).
    //
    // A sampled run (draws_each_try_) draws at every try it runs on,
    // whatever its state: where the state repeats, running on until
    // spin_bound only repeated the try, invisible to the other threads
    // (Peterson's lock, random: -6% instructions), and where a count is
    // kept where the capture does not look (memory allocated before the
    // run), a draw still reaches every count, as for a visible one. Its
    // running on needs no capture.
    bool wait_now = false;
    if (draws_each_try_ || ((!stale || sampling_ || !th.spin_waited) &&
                            LoopStateChanged(th, cfa))) {
      Action a;
      wait_now = Decide(DecideKind::kRand, 2, &a) && a.value == 0;
    }
    if (wait_now && stale && !sampling_) {
      th.continuing = 0;
      th.must_leave = true;
      return;
    }
    if (!wait_now) {
      if (++th.continuing <= p_.spin_bound) return;
      if (!sampling_) Prune();
    }
    th.continuing = 0;
  } else if (!writing_spin && !(released_mask_ >> cur_ & 1) &&
             p_.spin_bound > 0 && !p_.stateless_spins) {
    // (Stateless loops have no count of tries a slow path could need.)
    // (A writing spin already ran on spin_bound iterations.)
    // Fairness without losing bounded spins: either wait for another
    // thread's write, or run on (up to spin_bound identical iterations),
    // so a loop that gives up after a few tries reaches its slow path
    // while the writer is still late. A stale try (the write it would wait
    // for exists) that changed the thread's state since the try before it
    // (a count of tries) is no repeat of that try: its wait branch runs on
    // and the next try must read a newer write (must_leave). Before, it
    // was pruned as redundant, so a count of stale tries never got past 1
    // when the writer had already run (a writer numbered below the
    // spinner: RL_ASSERT(tries < 2) passed, which Relacy reports).
    const bool captured = stale && !sampling_ && same_site && !th.spin_waited;
    const bool changed = captured && LoopStateChanged(th, cfa);
    Action a;
    if (Decide(DecideKind::kRand, 2, &a) && a.value == 1) {
      th.continuing = 1;
      if (!captured && !draws_each_try_)
        th.loop_state_known = CaptureLoopState(cfa, &th.loop_state);
      return;
    }
    if (changed) {
      th.must_leave = true;
      return;
    }
  }
  if (stale) {
    // Redundant for the exhaustive search; a random run is a sample, and
    // its next iteration may read the newer write: it runs on.
    if (sampling_) return;
    Prune();
  }
  th.blocked = true;
  th.spin_waited = true;
  th.op = ResumeOp(debug_info());
  th.pending = true;
  SyncBits(cur_);
  SwitchToScheduler();
}

// Whether some read of an iteration of the running thread read a write
// older than its location's newest. A writing spin's RMW (its counter) is
// followed by its own write, which makes no read stale: only another
// thread's newer write does.
bool Engine::AnyStale(const std::vector<SpinRead>& reads,
                      bool writing_spin) const {
  for (const SpinRead& r : reads) {
    const int newest = locs_[r.loc].mo.back();
    if (newest != r.rf &&
        !(writing_spin && events_[newest].tid == static_cast<int>(cur_)))
      return true;
  }
  return false;
}

// Whether the reads of the running thread's iteration that read another
// thread's write (or an initial value) repeat the previous iteration's,
// leaving out the reads of its own writes (a counter it bumps).
bool Engine::ForeignReadsRepeat(const ThreadState& th) const {
  const std::vector<SpinRead>& a = th.cur_reads;
  const std::vector<SpinRead>& b = th.prev_reads;
  auto own = [&](const SpinRead& r) {
    return events_[r.rf].tid == static_cast<int>(cur_);
  };
  size_t i = 0, j = 0;
  for (;;) {
    while (i < a.size() && own(a[i])) ++i;
    while (j < b.size() && own(b[j])) ++j;
    if (i == a.size() || j == b.size()) return i == a.size() && j == b.size();
    if (!(a[i] == b[j])) return false;
    ++i;
    ++j;
  }
}

// Whether the running thread's own state (LoopState) differs from the one
// at its previous identical iteration, which it then replaces; false if
// either is unknown.
bool Engine::LoopStateChanged(ThreadState& th, uintptr_t cfa) {
  const bool known = CaptureLoopState(cfa, &th.loop_state_next);
  const bool changed =
      known && th.loop_state_known && th.loop_state_next != th.loop_state;
  th.loop_state.swap(th.loop_state_next);
  th.loop_state_known = known;
  return changed;
}

// test_params::stateless_spins promises that no retry loop carries state
// from one try into the next. A try that read exactly what the one before
// it read and wrote nothing, yet changed the thread's own state (a count
// of tries), shows the promise broken: the reduction may then have pruned
// executions that matter. Said once per run, on the output stream; the
// verdict stands. (With the promise, loops do not run on, so the running-
// on captures' vectors are free here.)
void Engine::CheckStatelessPromise(ThreadState& th, bool identical,
                                   bool same_site, uintptr_t cfa,
                                   const debug_info& info) {
  if (!same_site) {
    th.loop_state_known = CaptureLoopState(cfa, &th.loop_state);
    return;
  }
  if (LoopStateChanged(th, cfa) && identical) {
    stateless_broken_ = true;
    *out_ << name_ << ": stateless_spins does not hold: the loop yielding at "
          << BaseName(info.file_) << ":" << info.line_ << " (thread " << cur_
          << ") changed its own state in a try that read what the try before "
             "it read (a count of tries?); executions that depend on it may "
             "have been left out: run without stateless_spins\n";
  }
}

// LoopState(), then the contents of the test's live heap blocks (a count
// kept in a node or a container's buffer) and of its globals and
// thread_locals (TestGlobals). Between two captures only the running-on
// thread ran, so a difference is its own doing.
bool Engine::CaptureLoopState(uintptr_t cfa, Words* out) {
  if (!LoopState(cfa, ThreadStackLo(), ThreadStackTop(), suite_, out))
    return false;
  for (const auto& [addr, block] : heap_) {
    if (block.freed) continue;
    out->push_back(addr);
    CopyBytes(addr, block.size, out);
  }
#ifndef RL_NO_LOOP_STATE
  if (!globals_scanned_) {
    std::vector<ByteRange> ranges;
    TestGlobals(&ranges);  // none where they cannot be told apart
    globals_scanned_ = true;
    PlanGlobals(ranges, &globals_);
  }
  if (globals_.words > 0) GatherGlobals(globals_, out);
#endif
  return true;
}

bool Engine::WaitBlocked(const debug_info& info, bool on_last_read,
                         bool timed) {
  ThreadState& th = threads_[cur_];
  th.timed_out = false;
  if (!in_thread_) {
    Fail(test_result_deadlock,
         "a wait (mutex or condition variable) outside a thread can never "
         "end",
         info);
    return false;
  }
  CheckDepth();
  // The read that found the mutex held / no signal is the last one.
  // If it read a stale value, an execution reading the newer write (the
  // unlock, the signal) exists: redundant for the exhaustive search. A
  // sampled run retries at once instead, as if woken by that write.
  const bool stale = !th.cur_reads.empty() &&
                     locs_[th.cur_reads.back().loc].mo.back() !=
                         th.cur_reads.back().rf;
  if (stale && !sampling_) Prune();
  // Like a blocked spinner (AfterWrite): until that location is written,
  // the wait's read would read the same write and wait again.
  th.wait_loc = on_last_read && !th.cur_reads.empty()
                    ? th.cur_reads.back().loc
                    : -1;
  th.cur_reads.clear();
  th.prev_reads.clear();
  th.has_prev = false;
  th.continuing = 0;
  SyncBits(cur_);
  if (stale) return true;
  th.blocked = true;
  th.sync_wait = true;
  th.op = ResumeOp(info);
  th.op.await_cond.timed = timed;  // TimeOutAWait may end it
  th.pending = true;
  SyncBits(cur_);
  SwitchToScheduler();
  th.sync_wait = false;
  return true;
}

int Engine::CreateThread(void* (*fn)(void*), void* arg,
                         const debug_info& info) {
  if (n_static_ + n_spawned_ >= n_) {
    Fail(test_result_inconsistent_test_suite,
         "more threads created than the suite's dynamic_thread_count", info);
    return -1;
  }
  unsigned t = n_static_ + n_spawned_++;
  ThreadState& me = threads_[cur_];
  // A virtual spawn event: everything the creator did so far (its rl::var
  // accesses included) happens before the new thread's first step.
  me.idx += 1;
  me.clock.set(cur_, me.idx);
  me.porf.set(cur_, me.idx);
  ThreadState& th = threads_[t];
  th.clock = me.clock;
  th.porf = me.porf;
  th.fn = fn;
  th.arg = arg;
  th.spawned = true;
  return static_cast<int>(t);
}

void* Engine::JoinThread(int handle, const debug_info& info) {
  if (handle < static_cast<int>(n_static_) ||
      handle >= static_cast<int>(n_static_ + n_spawned_) ||
      handle == static_cast<int>(cur_)) {
    Fail(test_result_user_assert_failed, "join of an invalid thread handle",
         info);
    return nullptr;
  }
  ThreadState& target = threads_[handle];
  while (!target.finished) {
    ThreadState& th = threads_[cur_];
    if (!in_thread_) {
      Fail(test_result_deadlock, "a join outside a thread cannot wait", info);
      return nullptr;
    }
    CheckDepth();
    th.join_target = handle;
    th.blocked = true;
    th.sync_wait = true;
    th.wait_loc = -1;  // the target's end writes nothing
    th.op = ResumeOp(info);
    th.pending = true;
    SyncBits(cur_);
    SwitchToScheduler();
    th.sync_wait = false;
    th.join_target = -1;
  }
  // A virtual join event: the finished thread happens before what follows.
  ThreadState& th = threads_[cur_];
  th.clock.Join(target.clock);
  th.clock.set(handle, target.idx + 1);
  th.porf.Join(target.porf);
  th.porf.set(handle, target.idx + 1);
  return target.ret;
}

// Every unfinished thread waits or spins, so nobody can write: a timed
// wait (AwaitCond::timed, or WaitBlocked's timed) among them times out
// instead of the run ending in a DEADLOCK, as Relacy's scheduler unparks
// a timed thread when no thread can run. Which one, when several: a decision.
// Its operation ends with no event (resumed, result 0, AwaitTimedOut()). A
// timeout while other threads could still run needs no step here: the callers
// explore one at the start of the wait (a timeout at once), and the exhaustive
// search can then run the others first. False if no thread waits timed.
bool Engine::TimeOutAWait() {
  unsigned timed[kMaxThreads];
  unsigned count = 0;
  for (unsigned t = 0; t < n_; ++t) {
    const ThreadState& th = threads_[t];
    // A timed await (its operation) or a timed WaitBlocked (a resumption).
    if (!th.finished && th.blocked && th.pending && th.op.await_cond.timed)
      timed[count++] = t;
  }
  if (count == 0) return false;
  Action pick;
  if (count > 1 && !Decide(DecideKind::kRand, count, &pick)) return false;
  const unsigned t = timed[count > 1 ? pick.value : 0];
  ThreadState& th = threads_[t];
  if (trace_) {
    std::ostringstream s;
    s << "   " << ThreadName(static_cast<int>(t))
      << ": wait timed out (every thread waited)  ["
      << BaseName(th.op.info.file_) << ":" << th.op.info.line_ << "]";
    var_trace_.emplace_back(events_.size(), s.str());
  }
  th.op = ResumeOp(th.op.info);
  th.blocked = false;
  SyncBits(t);
  th.sync_wait = false;
  th.constraint = 0;
  th.result = 0;
  th.timed_out = true;
  stalled_ = false;
  return true;
}

bool Engine::AllBlocked() {
  bool spinner = false;
  for (unsigned t = 0; t < n_; ++t) {
    const ThreadState& th = threads_[t];
    if (!th.finished && th.blocked && !th.sync_wait) spinner = true;
  }
  if (!spinner) {
    failed_ = true;
    result_ = test_result_deadlock;
    fail_desc_ =
        "every unfinished thread waits and no thread can wake it (a "
        "deadlock, or a lost wake-up of a condition variable)";
    for (unsigned t = 0; t < n_; ++t)
      if (!threads_[t].finished && threads_[t].blocked)
        fail_info_ = threads_[t].op.info;
    return false;
  }
  // Nobody can write, but a spinning thread runs, as Relacy's scheduler
  // sees it: a spin may end by itself (a bounded retry, a backoff, a loop
  // of yields), and then write, or leave only waiters (a DEADLOCK, as
  // Relacy's test_deadlock2). So the spinners run on; one that never ends
  // reaches the execution depth limit, a LIVELOCK (DepthExceeded), as in
  // Relacy, also while other threads wait. Until 0.2.0, 2 * spin_bound + 2
  // such rounds were a LIVELOCK, or a DEADLOCK if a thread waited: a loop
  // of 30 yields before the write another thread spun for was a false
  // LIVELOCK, a spin while another thread waited a DEADLOCK.
  stalled_ = true;
  for (unsigned t = 0; t < n_; ++t) {
    ThreadState& th = threads_[t];
    if (th.finished || !th.blocked || th.sync_wait) continue;
    th.blocked = false;
    SyncBits(t);
    SetBit(&released_mask_, t, true);
  }
  return true;
}

void Engine::CheckInvariantNow() {
  struct Reset {
    Engine* e;
    ~Reset() {
      e->observing_ = false;
      e->in_invariant_ = false;
    }
  } reset{this};
  observing_ = true;
  in_invariant_ = true;
  UserScope user(kFreesOnly);
  suite_.Invariant();
}

// An access to a freed object. Either the free happens before it (a use
// after free in every schedule of this execution's graph), or the two are
// unordered: a data race between the free and the access ([intro.races],
// [basic.life]), which some schedule runs in this order. The second kind
// needs no stale read: a thread loads a pointer, another takes the object
// and frees it, the first reads a field. Relacy schedules only at atomic
// operations and so never between that load and the read.
void Engine::FreedAccess(const char* what, const debug_info& decl,
                         const FreedBy& by, const debug_info& info) {
  std::ostringstream s;
  s << "access to freed memory: " << what << " declared at "
    << BaseName(decl.file_) << ":" << decl.line_ << ", accessed by "
    << RunningName() << " at " << BaseName(info.file_) << ":" << info.line_;
  if (by && FreeBefore(by))
    s << " after " << ThreadName(by.tid) << " freed it";
  else if (by)
    s << ": " << ThreadName(by.tid)
      << "'s free of it does not happen before this access (they race)";
  Fail(test_result_access_to_freed_memory, s.str(), info);
}

// The destructor ends the object's lifetime as a free ends a heap block's
// ([basic.life]/1): the location is poisoned for the rest of the execution,
// and an access by another thread that does not happen before the
// destruction is a use after free, as in HeapFree(). The main thread runs
// alone, before or after every test thread (MainOutsideThreads): each
// access happens before its destruction.
void Engine::DestroyAtomic(int loc) {
  if (!IsLoc(loc)) return;
  Loc& l = locs_[loc];
  if (l.freed) return;
  l.freed = FreeMark();
  if (failed_ || aborting_ || cur_ == n_) return;
  if (const int e = AccessNotBefore(l); e >= 0) {
    std::ostringstream s;
    s << "access to freed memory: " << EventStr(e).substr(0, 200)
      << " is not ordered before the destruction of " << LocStr(loc) << " by "
      << RunningName();
    RecordFailure(test_result_access_to_freed_memory, s.str(), l.info);
  }
}

int Engine::AccessNotBefore(const Loc& l) const {
  const Clock& clock = threads_[cur_].clock;
  for (int e : l.acc)
    if (events_[e].tid != static_cast<int>(cur_) && !Hb(e, clock)) return e;
  // A load that made no event. Only a random run makes none, and what it
  // reports comes from its replay, which makes the event and names it: the
  // construction stands in for it here.
  for (uint64_t m = l.unevented_mask; m != 0; m &= m - 1) {
    const int u = __builtin_ctzll(m);
    if (u != static_cast<int>(cur_) && clock.get(u) < l.unevented[u].next)
      return l.acc.front();
  }
  return -1;
}

void Engine::RecordFailure(test_result_e r, const std::string& desc,
                           const debug_info& info) {
  if (failed_ || aborting_) return;
  failed_ = true;
  result_ = r;
  fail_desc_ = desc;
  fail_info_ = info;
}

void* Engine::HeapAlloc(size_t size, size_t align, int kind) {
  EngineScope engine;
  void* p;
  if (align > alignof(std::max_align_t))
    p = std::aligned_alloc(align, (size + align - 1) / align * align);
  else
    p = std::malloc(size != 0 ? size : 1);
  if (p == nullptr) return nullptr;
  Block b;
  b.size = size;
  b.kind = kind;
  b.tid = static_cast<int>(cur_);
  b.after = static_cast<int>(events_.size()) - 1;
  b.real = p;
  heap_[reinterpret_cast<uintptr_t>(p)] = b;
  return p;
}

bool Engine::HeapFree(void* p, int kind, const debug_info& info,
                      bool report_foreign) {
  (void)kind;
  EngineScope engine;
  auto it = heap_.find(reinterpret_cast<uintptr_t>(p));
  if (it == heap_.end() && (!report_foreign || OutsideErase(p))) return false;
  // Reported from operator delete (noexcept): RecordFailure. Report text
  // is built only when a failure is recorded: frees are on the hot path
  // (an abandoned execution's destructors free everything).
  // An abandoned or already failed execution records nothing more: the
  // block is still poisoned, the ordering checks are skipped.
  const bool can_report = !failed_ && !aborting_;
  if (it == heap_.end()) {
    // Not a block of this execution nor one allocated outside it: a stack
    // or static object, an interior pointer, or memory already released.
    // It is not released (the program is wrong either way).
    std::ostringstream s;
    s << "free of memory this execution did not allocate (" << p << ") by "
      << RunningName();
    RecordFailure(test_result_double_free, s.str(), info);
    return true;
  }
  Block& b = it->second;
  if (b.freed) {
    std::ostringstream s;
    s << "double free of a " << b.size << "-byte block by " << RunningName();
    RecordFailure(test_result_double_free, s.str(), info);
    return true;
  }
  b.freed = true;
  // Poison: every rl::atomic and rl::var inside the block is dead; the
  // memory itself stays allocated until the execution ends, so no later
  // allocation can reuse it. The free is a write to all of them: an access
  // that does not happen before it could as well come after it (C++20
  // [basic.life], [intro.races]), which is a use after free.
  const char* lo = static_cast<const char*>(p);
  const char* hi = lo + b.size;
  for (size_t i = 0; i < locs_.size(); ++i) {
    Loc& l = locs_[i];
    if (l.addr < lo || l.addr >= hi) continue;
    l.freed = FreeMark();
    if (!can_report) continue;
    if (const int e = AccessNotBefore(l); e >= 0) {
      std::ostringstream s;
      s << "access to freed memory: " << EventStr(e).substr(0, 200)
        << " is not ordered before the free by " << RunningName();
      RecordFailure(test_result_access_to_freed_memory, s.str(), info);
      return true;
    }
  }
  for (VarState& v : vars_) {
    if (v.addr < lo || v.addr >= hi) continue;
    v.freed = FreeMark();
    if (!can_report) continue;
    if (VarAccessNotBefore(v)) {
      std::ostringstream s;
      s << "access to freed memory: an access to rl::var declared at "
        << BaseName(v.decl.file_) << ":" << v.decl.line_
        << " is not ordered before the free by " << RunningName();
      RecordFailure(test_result_access_to_freed_memory, s.str(), info);
      return true;
    }
  }
  return true;
}

void Engine::CheckLeaks() {
  size_t blocks = 0, bytes = 0, resources = 0;
  const Block* first = nullptr;
  const Block* first_resource = nullptr;
  for (const auto& [addr, b] : heap_) {
    if (b.freed) continue;
    if (b.kind == kHeapResource) {
      ++resources;
      if (first_resource == nullptr) first_resource = &b;
      continue;
    }
    ++blocks;
    bytes += b.size;
    if (first == nullptr) first = &b;
  }
  if (blocks == 0 && resources != 0) {
    // Relacy's RESOURCE LEAK: a pthread mutex, condition variable or
    // semaphore initialized (*_init) and never destroyed.
    std::ostringstream s;
    s << "resource leak: " << resources
      << " pthread mutex/condition variable/semaphore(s) initialized and "
         "never destroyed; the first by "
      << ThreadName(first_resource->tid) << " after event #"
      << first_resource->after;
    failed_ = true;
    result_ = test_result_resource_leak;
    fail_desc_ = s.str();
    fail_info_ = debug_info();
    return;
  }
  // Java / CLI mode: what is left is garbage, collected in ReleaseHeap.
  if (blocks == 0 || garbage_collected_) return;
  std::ostringstream s;
  s << "memory leak: " << blocks << " block(s), " << bytes
    << " bytes, never freed; the first (" << first->size
    << " bytes) allocated by " << ThreadName(first->tid) << " after event #"
    << first->after;
  failed_ = true;
  result_ = test_result_memory_leak;
  fail_desc_ = s.str();
  fail_info_ = debug_info();
}

void Engine::ReleaseHeap() {
  // Freed blocks are released now. Leaked ones (also those of an abandoned
  // execution, whose threads were dropped mid-way) are left allocated: code
  // outside the execution, such as a static created on first use, may
  // still hold them. In Java / CLI mode they are garbage and collected
  // (a test in that mode cannot delete what it allocates, as in Relacy).
  for (auto& [addr, b] : heap_) {
    if (b.freed || garbage_collected_)
      std::free(b.real);
    else
      OutsideInsert(b.real);
  }
  heap_.clear();
}

unsigned Engine::Rand(unsigned limit) {
  if (limit <= 1) return 0;
  Action a;
  if (!Decide(DecideKind::kRand, limit, &a)) return 0;
  return a.value;
}

void Engine::Fail(test_result_e r, const std::string& desc,
                  const debug_info& info) {
  if (failed_ || aborting_) return;
  failed_ = true;
  result_ = r;
  if (r == test_result_user_assert_failed && in_invariant_)
    result_ = test_result_user_invariant_failed;
  fail_desc_ = desc;
  fail_info_ = info;
  if (in_thread_) {
    SwitchToScheduler();
    if (threads_[cur_].noabort > 0) return;  // stopped after the section
  } else if (threads_[cur_].noabort > 0) {
    // The main context inside a no-abort section (a destructor): recorded;
    // RunOne sees failed_ once the section's code returns.
    return;
  }
  throw AbortExecution();
}

int Engine::NewVar(bool initialized, const debug_info& info,
                   const void* addr) {
  VarState& v = vars_.Next();
  v.init = initialized;
  v.decl = info;
  v.addr = static_cast<const char*>(addr);
  return static_cast<int>(vars_.size()) - 1;
}

void Engine::UserLog(const debug_info& info, const std::string& text) {
  if (!trace_ || observing_) return;
  std::ostringstream s;
  s << "   " << RunningName() << ": " << text << "  [" << BaseName(info.file_)
    << ":" << info.line_ << "]";
  var_trace_.emplace_back(events_.size(), s.str());
}

bool Engine::VarAccessNotBefore(const VarState& v) const {
  const Clock& clock = threads_[cur_].clock;
  auto unordered = [&](const VarAcc& a) {
    return a.tid != static_cast<int>(cur_) && clock.get(a.tid) < a.epoch;
  };
  if (v.has_write && unordered(v.w)) return true;
  for (const VarAcc& r : v.reads)
    if (unordered(r)) return true;
  return false;
}

namespace {
// Per ShimKind (in its order): the name in reports and Relacy's results.
struct ShimResults {
  const char* name;
  test_result_e set_up_twice, not_set_up;
};
constexpr ShimResults kShimResults[] = {
    {"mutex", test_result_double_initialization_of_mutex,
     test_result_usage_of_non_initialized_mutex},
    {"condition variable", test_result_double_initialization_of_condvar,
     test_result_usage_of_non_initialized_condvar},
    {"semaphore", test_result_double_initialization_of_semaphore,
     test_result_usage_of_non_initialized_semaphore},
    {"event", test_result_double_initialization_of_event,
     test_result_usage_of_non_initialized_event},
};
const ShimResults& ResultsOf(ShimKind kind) {
  return kShimResults[static_cast<int>(kind)];
}
}  // namespace

void Engine::ShimInit(const void* obj, ShimKind kind, const debug_info& info) {
  auto [it, added] =
      shim_life_.try_emplace(reinterpret_cast<uintptr_t>(obj), true);
  if (!added && it->second) {
    Fail(ResultsOf(kind).set_up_twice,
         std::string("a ") + ResultsOf(kind).name +
             " initialized again before it was destroyed",
         info);
    return;
  }
  it->second = true;
}

void Engine::ShimUse(const void* obj, ShimKind kind, bool statically_live,
                     const debug_info& info) {
  if (!ShimLive(obj, statically_live))
    Fail(ResultsOf(kind).not_set_up,
         std::string("a ") + ResultsOf(kind).name +
             " used before its initialization or after its destruction",
         info);
}

void Engine::ShimDestroy(const void* obj, ShimKind kind, bool statically_live,
                         const debug_info& info) {
  ShimUse(obj, kind, statically_live, info);
  shim_life_[reinterpret_cast<uintptr_t>(obj)] = false;
}

void Engine::DestroyVar(int var) {
  if (!IsVar(var)) return;
  VarState& v = vars_[var];
  if (v.freed) return;
  v.freed = FreeMark();
  if (failed_ || aborting_ || cur_ == n_) return;
  if (VarAccessNotBefore(v)) {
    std::ostringstream s;
    s << "access to freed memory: an access to rl::var declared at "
      << BaseName(v.decl.file_) << ":" << v.decl.line_
      << " is not ordered before its destruction by " << RunningName();
    RecordFailure(test_result_access_to_freed_memory, s.str(), v.decl);
  }
}

void Engine::VarAccess(int var, bool write, const debug_info& info) {
  if (observing_) {
    // invariant() between steps: its reads are no thread's, so not
    // checked for races; reading a freed or never-written variable is
    // still reported, as Relacy's var does.
    if (!IsVar(var)) return;
    const VarState& v = vars_[var];
    // No thread's access: no order with the free to tell (an empty
    // FreedBy leaves the report without one).
    if (v.freed) FreedAccess("rl::var", v.decl, FreedBy{}, info);
    if (!write && !v.init && !v.has_write)
      Fail(test_result_unitialized_access,
           "read of uninitialized rl::var in invariant()", info);
    return;
  }
  if (!IsVar(var)) {
    // A live generation but no variable of this execution: as
    // ReportUninitialized's dead atomic.
    std::ostringstream s;
    s << "access to freed memory: an rl::var whose lifetime has ended (no "
      << "variable #" << var << " in this execution), accessed by "
      << RunningName() << " at " << BaseName(info.file_) << ":" << info.line_;
    Fail(test_result_access_to_freed_memory, s.str(), info);
    return;
  }
  VarState& v = vars_[var];
  const ThreadState& th = threads_[cur_];
  if (v.freed) FreedAccess("rl::var", v.decl, v.freed, info);
  if (trace_) {
    std::ostringstream s;
    s << "   " << RunningName() << ": var " << (write ? "write " : "read ")
      << "var#" << var << "(" << BaseName(v.decl.file_) << ":" << v.decl.line_
      << ")  [" << BaseName(info.file_) << ":" << info.line_ << "]";
    var_trace_.emplace_back(events_.size(), s.str());
  }
  auto ordered = [&](const VarAcc& a) {
    return a.tid == static_cast<int>(cur_) || th.clock.get(a.tid) >= a.epoch;
  };
  auto race = [&](const VarAcc& a, const char* what) {
    std::ostringstream s;
    s << "data race on non-atomic variable: " << what << " by thread " << a.tid
      << " at " << BaseName(a.info.file_) << ":" << a.info.line_ << " and "
      << (write ? "write" : "read") << " by thread " << cur_ << " at "
      << BaseName(info.file_) << ":" << info.line_;
    Fail(test_result_data_race, s.str(), info);
  };
  if (v.has_write && !ordered(v.w)) race(v.w, "write");
  if (!write && !v.init && !v.has_write)
    Fail(test_result_unitialized_access, "read of uninitialized rl::var", info);
  VarAcc me{static_cast<int>(cur_), th.idx + 1, info};
  if (write) {
    for (const VarAcc& r : v.reads)
      if (!ordered(r)) race(r, "read");
    v.reads.clear();
    v.has_write = true;
    v.w = me;
  } else {
    for (VarAcc& r : v.reads) {
      if (r.tid == me.tid) {
        r = me;
        return;
      }
    }
    v.reads.push_back(me);
  }
}

// ---------------------------------------------------------------- driver

void Engine::ResetExecution() {
  // Per-execution containers keep their capacity (clear(), pools): an
  // execution re-running the same test makes the same allocations, so after
  // the first few executions the engine allocates nothing per execution.
  events_.clear();
  addr_hash_.clear();
  shim_life_.clear();
  track_porf_ = mode_ == Mode::kDfs && p_.lazy_deferral;
  locs_.clear();
  vars_.clear();
  sc_events_.clear();
  sc_sw_.clear();
  sc_mark_.clear();
  for (auto [from, to] : sc_edge_log_)
    sc_adj_[from * sc_words_ + to / 64] = 0;
  sc_edge_log_.clear();
  for (auto& list : sc_by_thread_) list.clear();
  kept_probe_ = false;
  sc_fences_.clear();
  floors_live_ = false;
  floor_fences_.clear();
  floor_snap_at_.clear();
  floor_snaps_.clear();
  for (auto& th : threads_) {
    // Not th = ThreadState(): that zeroes and copies the ucontext_t too.
    // Rebuilt in place (ThreadVars is trivially destructible): assigning
    // a temporary built it and then copied it, twice the stores.
    static_assert(std::is_trivially_destructible_v<ThreadVars>);
    new (static_cast<ThreadVars*>(&th)) ThreadVars();
    th.sc_pending.clear();
    th.cur_reads.clear();
    th.prev_reads.clear();
  }
  sched_mask_ = blocked_mask_ = continuing_mask_ = released_mask_ = 0;
  cur_ = n_;
  in_thread_ = false;
  threads_started_ = false;
  aborting_ = false;
  failed_ = false;
  pruned_ = false;
  in_invariant_ = false;
  result_ = test_result_success;
  skips_ = 0;
  n_spawned_ = 0;
  steps_ = 0;
  stalled_ = false;
  observing_ = false;
  var_trace_.clear();
  pos_ = 0;
  replay_pos_ = 0;
  taken_n_ = 0;
  alts_.clear();
}

Engine::Outcome Engine::RunOne() {
  ResetExecution();
  g_generation = g_next_generation++;
  bool created = false;
  try {
    {
      UserScope user;
      suite_.Create();
      created = true;
      suite_.Before();
    }
    // The state before any thread's first step is one invariant() must
    // hold in too, as Relacy checks it at its first scheduling point: the
    // threads' code up to their first operation runs in StartThread below.
    if (has_invariant_ && !failed_) CheckInvariantNow();
    // Thread creation synchronizes: a virtual spawn event after before().
    ThreadState& m = threads_[n_];
    m.idx += 1;
    m.clock.set(n_, m.idx);
    m.porf.set(n_, m.idx);
    // Every write so far happens before each thread's first event: a
    // thread's lower bound is at least each location's newest write.
    for (Loc& l : locs_) l.rmw_free = 1;
    for (unsigned t = 0; t < n_static_; ++t) {
      threads_[t].clock = m.clock;
      threads_[t].porf = m.clock;
      StartThread(t);
      if (failed_ || pruned_) break;
    }
    threads_started_ = true;
    while (!failed_ && !pruned_) {
      // Threads created since the last step run to their first operation.
      bool started_one = false;
      for (unsigned t = n_static_; t < n_static_ + n_spawned_; ++t) {
        if (threads_[t].spawned && !threads_[t].started) {
          StartThread(t);
          started_one = true;
          if (failed_ || pruned_) break;
        }
      }
      if (started_one) continue;
      Action a;
      last_choice_ = -1;
      if (!Decide(DecideKind::kSched, 0, &a)) {
        bool all_done = true, any_runnable = false;
        for (unsigned t = 0; t < n_; ++t) {
          ThreadState& th = threads_[t];
          if (th.finished || !th.started) continue;
          all_done = false;
          if (!th.blocked && th.pending && AwaitBlocked(t)) {
            // A wait no write ends blocks as a thread in WaitBlocked
            // does: woken by a write to its location (AfterWrite), a
            // deadlock if nobody can write.
            th.blocked = true;
            th.sync_wait = true;
            th.wait_loc = th.op.loc;
            SyncBits(t);
          }
          if (!th.blocked) any_runnable = true;
        }
        if (all_done) break;
        if (any_runnable) {
          pruned_ = true;  // a deferred read never found its write
          break;
        }
        if (TimeOutAWait()) continue;
        if (!AllBlocked()) break;
        continue;
      }
      Apply(a);
      if (has_invariant_ && !failed_ && !pruned_) CheckInvariantNow();
    }
    if (!failed_ && !pruned_) {
      ThreadState& main = threads_[n_];
      for (unsigned t = 0; t < n_; ++t) {
        if (!threads_[t].started) continue;
        main.clock.Join(threads_[t].clock);
        main.clock.set(t, threads_[t].idx + 1);  // virtual join event
      }
      UserScope user(kFreesOnly);
      suite_.After();
      in_invariant_ = true;
      suite_.Invariant();
      in_invariant_ = false;
    }
  } catch (const AbortExecution&) {
    if (!failed_) pruned_ = true;
  } catch (...) {
    if (!failed_) {
      failed_ = true;
      result_ = test_result_unhandled_exception;
      fail_desc_ = "unhandled exception in before()/after()";
    }
  }
  bool fail = failed_;
  const bool complete = !failed_ && !pruned_;
  AbortThreads();
  failed_ = fail;
  // A complete execution ends with the suite's destructor, whose reports
  // count (a member mutex still held: DESTROYING OWNED MUTEX, as Relacy's);
  // an abandoned one's destructors report nothing.
  if (complete) aborting_ = false;
  if (created) {
    try {
      UserScope user;
      suite_.Destroy();
    } catch (...) {
    }
  }
  // The heap model: a complete execution must have freed what it
  // allocated (checked after the suite's destructor).
  if (!failed_ && !pruned_ && !t_warmup) CheckLeaks();
  ReleaseHeap();
  g_generation = 0;
  if (failed_) return Outcome::kFailed;
  return pruned_ ? Outcome::kPruned : Outcome::kComplete;
}

std::string Engine::EncodeState() const {
  std::ostringstream s;
  // v2:<stop_iteration> (r7: for a sampled run with the SC order as
  // executed, r6: for one without; r2: to r5: states of
  // earlier versions replay as they were recorded),
  // then the decisions taken.
  s << (!sampling_                      ? "v2:"
        : draws_each_try_ && sc_floors_ ? "r7:"
        : draws_each_try_               ? "r6:"
        : sc_floors_                    ? "r5:"
        : thread_first_                 ? "r4:"
        : lazy_sampling_                ? "r3:"
                                        : "r2:")
    << (stop_iteration_ != 0 ? stop_iteration_
                             : p_.executions + p_.blocked_executions + 1);
  if (mode_ == Mode::kDfs) {
    for (size_t i = 0; i < pos_ && i < stack_.size(); ++i)
      if (stack_[i].opts.size() > 1) s << ' ' << stack_[i].cur;
  } else {
    for (size_t i = 0; i < taken_n_; ++i) s << ' ' << taken_[i];
  }
  return s.str();
}

std::string Engine::LocStr(int loc) const {
  std::ostringstream s;
  const debug_info& i = locs_[loc].info;
  s << "atomic#" << loc << "(" << BaseName(i.file_) << ":" << i.line_ << ")";
  return s.str();
}

std::string Engine::EventStr(int id) const {
  const Event& e = events_[id];
  std::ostringstream s;
  s << "#" << id << " ";
  if (e.tid == static_cast<int>(n_))
    s << "main";
  else
    s << "thread " << e.tid;
  s << ": ";
  static const char* kRmwNames[] = {"exchange",  "fetch_add", "fetch_sub",
                                    "fetch_and", "fetch_or",  "fetch_xor"};
  switch (e.kind) {
    case Kind::kInit:
      s << "init " << LocStr(e.loc) << " = " << e.wval;
      break;
    case Kind::kLoad:
      s << "load(" << MoStr(e.mo) << ") " << LocStr(e.loc) << " -> " << e.rval;
      break;
    case Kind::kStore:
      s << "store(" << MoStr(e.mo) << ") " << LocStr(e.loc) << " = " << e.wval;
      break;
    case Kind::kRmw:
      s << kRmwNames[static_cast<int>(e.op)] << "(" << MoStr(e.mo) << ") "
        << LocStr(e.loc) << " " << e.rval << " -> " << e.wval;
      break;
    case Kind::kCasFail:
      s << "cas-fail(" << MoStr(e.mo) << ") " << LocStr(e.loc) << " -> "
        << e.rval;
      break;
    case Kind::kFence:
      s << "fence(" << MoStr(e.mo) << ")";
      break;
  }
  s << "  [" << BaseName(e.info.file_) << ":" << e.info.line_ << "]";
  if (e.writes) s << " mo#" << e.mo_pos;
  if (e.reads) {
    s << "\n      reads-from #" << e.rf << " (" << events_[e.rf].wval << ")";
    if (static_cast<size_t>(id) < alts_.size() && !alts_[id].empty()) {
      s << "; could also read:";
      for (int w : alts_[id]) s << " #" << w << " (" << events_[w].wval << ")";
    }
    if (const int a = Cxx11OnlyRelease(id); a >= 0)
      s << "\n      no synchronization with #" << a
        << ": C++11's release sequence of #" << a
        << " reaches this write through later stores of its thread, "
           "C++20's does not (P0982; Relacy follows C++11)";
  }
  return s.str();
}

// For an acquire read: a release write it synchronizes with under C++11's
// release sequences but not under C++20's, and that does not happen before
// it otherwise; -1 if none. C++11 ([intro.multithread] of N3337): the
// release sequence of A is the longest run of writes after A in
// modification order that are A's thread's or RMWs. C++20 (P0982) keeps
// only the RMWs, and Build() joins those. So: some write of the run from A
// to the write read is a plain store, and all of the run's plain stores
// are A's thread's. (A release fence needs no such search: the run's last
// plain store comes after any fence before A, and C++20's hypothetical
// release sequence of that store already synchronizes.) Found for the
// trace only; an acquire fence after a relaxed read is not considered.
int Engine::Cxx11OnlyRelease(int id) const {
  const Event& e = events_[id];
  if (!e.reads || !e.acq) return -1;
  const Loc& l = locs_[e.loc];
  // Walking down from the write read (at q), with p the candidate A's
  // position: plain_tid is the thread of the plain stores at p + 1..q, -1
  // while there are none (then C++20's sequence covers the run too).
  int plain_tid = -1;
  for (int p = events_[e.rf].mo_pos; p >= 0; --p) {
    const int w = l.mo[p];
    const Event& W = events_[w];
    if (plain_tid == W.tid && W.rel && !Hb(w, e.post)) return w;
    if (W.kind != Kind::kRmw) {
      if (plain_tid >= 0 && plain_tid != W.tid) return -1;
      plain_tid = W.tid;
    }
  }
  return -1;
}

void Engine::PrintTrace() {
  std::ostream& o = *out_;
  o << "---- failing execution (" << events_.size() << " events) ----\n";
  size_t v = 0;
  for (size_t i = 0; i <= events_.size(); ++i) {
    for (; v < var_trace_.size() && var_trace_[v].first <= i; ++v)
      o << "  " << var_trace_[v].second << "\n";
    if (i < events_.size()) o << "  " << EventStr(static_cast<int>(i)) << "\n";
  }
  o << "  => " << test_result_str(result_) << ": " << fail_desc_ << "  ["
    << BaseName(fail_info_.file_) << ":" << fail_info_.line_ << "]\n";
}

// test_params::jobs, or RL_JOBS where set (a suite's tests forked without
// changing them); 0 means one per online CPU. At most 64.
unsigned Engine::Jobs() const {
  unsigned long jobs = p_.jobs;
  if (const char* env = std::getenv("RL_JOBS"); env != nullptr && *env) {
    char* end = nullptr;
    const unsigned long v = std::strtoul(env, &end, 10);
    if (*end == '\0') jobs = v;
  }
  if (jobs == 0) {
    const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    jobs = cpus > 0 ? static_cast<unsigned long>(cpus) : 1;
  }
  return static_cast<unsigned>(std::min<unsigned long>(jobs, 64));
}

uint64_t Engine::IterationSeed(uint64_t seed, uint64_t iter) {
  // The iter-th draw of a SplitMix64 stream seeded with seed: each
  // iteration has its own stream, so iteration i is the same execution
  // whichever process of a forked search runs it, and whatever ran before.
  SplitMix64 seeds;
  seeds.seed(seed + iter * 0x9e3779b97f4a7c15);
  return seeds();
}

// The random search in test_params::jobs forked processes (workers): each
// takes the next chunk of iterations from a shared counter and runs it as
// the one-process search would (IterationSeed), until an iteration fails;
// every worker then stops at its first iteration past the lowest failing
// one. The result is the one-process search's: the lowest failing
// iteration, its state and the counts of the iterations before it (every
// chunk below the failing one ran whole; the failing one up to the
// failure). The workers' records live in a shared anonymous mapping and
// are read once every worker has ended (a pipe's EOF, then waitpid()),
// which orders their writes before the reads. This
// process runs no iteration itself: its state stays the one before the
// search, as the failing execution's replay (Run) needs. False, with
// nothing counted, where it cannot fork, or if a worker did not finish (a
// crash in the code under test, exit() called, a signal): the caller then
// runs the search in this process, where the same iterations run again
// and a crash can be debugged.
bool Engine::RunForked(uint64_t seed, unsigned jobs, test_result_e* found,
                       std::string* state) {
  uint64_t n = p_.iteration_count;
  if (p_.max_executions != 0) n = std::min<uint64_t>(n, p_.max_executions);
  // About 64 chunks per worker (an even share when their iterations cost
  // differently), at least 16 iterations each.
  const uint64_t chunk = std::max<uint64_t>(16, n / (uint64_t{jobs} * 64));
  const uint64_t chunks = (n + chunk - 1) / chunk;
  if (chunks < 2) return false;
  constexpr uint64_t kNone = ~uint64_t{0};
  struct Shared {
    std::atomic<uint64_t> next_chunk;
    // The lowest failing iteration reported so far, or kNone.
    std::atomic<uint64_t> fail_iter;
  };
  struct ChunkCounts {
    // Atomic only for the progress lines, read while workers run.
    std::atomic<uint32_t> complete, pruned;
  };
  static_assert(std::atomic<uint32_t>::is_always_lock_free,
                "lock-free, so usable between processes");
  struct Worker {
    bool finished;       // set last, before _exit(0)
    uint64_t fail_iter;  // its failing iteration, or kNone
    int result;
    uint32_t state_len;
    char state[kForkStateMax];  // EncodeState(), cut at kForkStateMax
  };
  static_assert(std::atomic<uint64_t>::is_always_lock_free,
                "lock-free, so usable between processes");
  const size_t counts_at = sizeof(Shared);
  const size_t workers_at =
      (counts_at + chunks * sizeof(ChunkCounts) + 63) / 64 * 64;
  const size_t bytes = workers_at + jobs * sizeof(Worker);
  // Zeroed; the pages of a worker's state are touched only if it fails.
  void* mem = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (mem == MAP_FAILED) return false;
  char* base = static_cast<char*>(mem);
  Shared* shared = new (base) Shared;
  // Relaxed, as every access to shared: the workers are forked after these
  // stores, and fork() copies them in.
  shared->next_chunk.store(0, std::memory_order_relaxed);
  shared->fail_iter.store(kNone, std::memory_order_relaxed);
  ChunkCounts* counts = reinterpret_cast<ChunkCounts*>(base + counts_at);
  for (uint64_t c = 0; c < chunks; ++c) new (&counts[c]) ChunkCounts{};
  Worker* workers = reinterpret_cast<Worker*>(base + workers_at);
  for (unsigned w = 0; w < jobs; ++w) workers[w].fail_iter = kNone;
  // Buffered output would be written again by each worker's exit.
  std::fflush(nullptr);
  std::cout.flush();
  std::cerr.flush();
  out_->flush();
  int ended[2];
  if (pipe(ended) != 0) {
    munmap(mem, bytes);
    return false;
  }
  std::vector<pid_t> pids;
  for (unsigned w = 0; w < jobs; ++w) {
    const pid_t pid = fork();
    if (pid < 0) break;  // fewer workers: the others take more chunks
    if (pid > 0) {
      pids.push_back(pid);
      continue;
    }
    close(ended[0]);
    Worker& me = workers[w];
    for (bool stop = false; !stop;) {
      // Relaxed: the counter only hands out each chunk once (an atomic
      // RMW does); nothing else is published through it.
      const uint64_t c =
          shared->next_chunk.fetch_add(1, std::memory_order_relaxed);
      if (c >= chunks) break;
      const uint64_t end = std::min(n, (c + 1) * chunk);
      for (uint64_t iter = c * chunk; iter < end && !stop; ++iter) {
        // Relaxed: a stale bound only lets an iteration past the lowest
        // failure run, and such an iteration is not counted.
        if (iter > shared->fail_iter.load(std::memory_order_relaxed)) {
          stop = true;
          break;
        }
        rng_.seed(IterationSeed(seed, iter));
        const Outcome o = RunOne();
        if (o != Outcome::kFailed) {
          std::atomic<uint32_t>& count =
              o == Outcome::kComplete ? counts[c].complete : counts[c].pruned;
          // Relaxed: one writer per chunk; the progress lines may read a
          // count late, the final counts are read after the worker ended.
          count.store(count.load(std::memory_order_relaxed) + 1,
                      std::memory_order_relaxed);
          continue;
        }
        stop_iteration_ = iter + 1;  // as the one-process search counts
        const std::string st = EncodeState();
        me.fail_iter = iter;
        me.result = static_cast<int>(result_);
        me.state_len =
            static_cast<uint32_t>(std::min<size_t>(st.size(), kForkStateMax));
        std::memcpy(me.state, st.data(), me.state_len);
        // Relaxed: only lowers the bound the workers stop at; the
        // failure itself is read after this worker has ended.
        uint64_t low = shared->fail_iter.load(std::memory_order_relaxed);
        while (iter < low && !shared->fail_iter.compare_exchange_weak(
                                 low, iter, std::memory_order_relaxed)) {
        }
        stop = true;
      }
    }
    std::fflush(nullptr);
    std::cout.flush();
    std::cerr.flush();
    me.finished = true;
    _exit(0);
  }
  bool ok = !pids.empty();
  // Every worker has ended once the pipe's last write end is closed (the
  // kernel closes a worker's at its exit, whatever ends it): then its
  // records are read. waitpid() tells how it ended, unless SIGCHLD is
  // ignored here (children reaped unseen): then its flag alone does.
  close(ended[1]);
  // Meanwhile a progress line every progress_output_period seconds, as
  // the one-process search prints (the counts so far, in any order).
  // (A period of 0, a line every 1,024 iterations in one process: 10 ms.)
  int period_ms = 10;
  if (p_.quiet_progress)
    period_ms = -1;  // no timeout: no lines
  else if (p_.progress_output_period != 0)
    period_ms =
        static_cast<int>(std::min(p_.progress_output_period, 1000000u)) * 1000;
  for (;;) {
    pollfd pfd = {ended[0], POLLIN, 0};
    const int ready = poll(&pfd, 1, period_ms);
    if (ready == 0) {
      uint64_t complete = 0, pruned = 0;
      for (uint64_t c = 0; c < chunks; ++c) {
        complete += counts[c].complete.load(std::memory_order_relaxed);
        pruned += counts[c].pruned.load(std::memory_order_relaxed);
      }
      ProgressStream() << name_ << ": " << complete << " executions, " << pruned
                       << " pruned (" << pids.size() << " worker processes)"
                       << std::endl;
      continue;
    }
    if (ready < 0) {
      if (errno == EINTR) continue;
      break;
    }
    char c;
    const ssize_t r = read(ended[0], &c, 1);
    if (r == 0 || (r < 0 && errno != EINTR)) break;
  }
  close(ended[0]);
  for (size_t k = 0; k < pids.size(); ++k) {
    int status = 0;
    pid_t waited;
    while ((waited = waitpid(pids[k], &status, 0)) < 0 && errno == EINTR) {
    }
    const int wait_error = waited == pids[k] ? 0 : errno;
    const bool exited_0 = waited == pids[k]
                              ? WIFEXITED(status) && WEXITSTATUS(status) == 0
                              : wait_error == ECHILD;
    if (exited_0 && workers[k].finished) continue;
    ok = false;
    std::cerr << name_ << ": a worker of the forked random search ";
    if (wait_error != 0 && wait_error != ECHILD)
      std::cerr << "could not be waited for (" << std::strerror(wait_error)
                << ")";
    else if (waited == pids[k] && WIFSIGNALED(status))
      std::cerr << "died of signal " << WTERMSIG(status);
    else if (waited == pids[k] && WEXITSTATUS(status) != 0)
      std::cerr << "exited with status " << WEXITSTATUS(status);
    else
      std::cerr << "exited before its end";
    std::cerr << "; running the search in this process\n";
  }
  const uint64_t fail = shared->fail_iter.load(std::memory_order_relaxed);
  if (ok) {
    const uint64_t counted = fail == kNone ? chunks : fail / chunk + 1;
    for (uint64_t c = 0; c < counted; ++c) {
      p_.executions += counts[c].complete.load(std::memory_order_relaxed);
      p_.blocked_executions += counts[c].pruned.load(std::memory_order_relaxed);
    }
    for (size_t k = 0; fail != kNone && k < pids.size(); ++k) {
      const Worker& f = workers[k];
      if (f.fail_iter != fail) continue;
      *found = static_cast<test_result_e>(f.result);
      state->assign(f.state, f.state_len);
      if (f.state_len == kForkStateMax) ok = false;  // cut: not replayable
    }
  }
  if (!ok) {
    p_.executions = p_.blocked_executions = 0;
    *found = test_result_success;
    state->clear();
  }
  munmap(mem, bytes);
  return ok;
}

test_result_e Engine::Run(test_result_e expected) {
  using SteadyClock = std::chrono::steady_clock;
  auto start = SteadyClock::now();
  auto last_progress = start;
  p_.executions = p_.blocked_executions = 0;
  p_.final_state.clear();
  // Warm-up: one execution (the first of the full search) without the leak
  // check, so function-local statics and caches that the code under test
  // creates on first use exist before the search and are not reported as
  // leaks. Its verdict is ignored; it is not counted.
  {
    Mode saved = mode_;
    mode_ = Mode::kDfs;
    sc_floors_ = false;
    t_warmup = true;
    RunOne();
    t_warmup = false;
    while (!stack_.empty()) PopChoice();
    mode_ = saved;
  }
  test_result_e found = test_result_success;
  std::string state;
  unsigned long long seed = p_.seed;

  if (!p_.initial_state.empty()) {
    mode_ = Mode::kReplay;
    std::istringstream in(p_.initial_state);
    std::string tag;
    in >> tag;
    draws_each_try_ = tag.rfind("r6:", 0) == 0 || tag.rfind("r7:", 0) == 0;
    sc_floors_ = tag.rfind("r5:", 0) == 0 || tag.rfind("r7:", 0) == 0;
    thread_first_ = tag.rfind("r4:", 0) == 0 || sc_floors_ || draws_each_try_;
    lazy_sampling_ = tag.rfind("r3:", 0) == 0 || thread_first_;
    sampling_ = tag.rfind("r2:", 0) == 0 || lazy_sampling_;
    if (tag.rfind("v2:", 0) == 0 || sampling_)
      stop_iteration_ = std::stoull(tag.substr(3));
    unsigned v;
    while (in >> v) replay_.push_back(v);
    trace_ = true;
    Outcome o = RunOne();
    if (o == Outcome::kComplete) ++p_.executions;
    if (o == Outcome::kPruned) ++p_.blocked_executions;
    if (o == Outcome::kFailed) {
      found = result_;
      state = EncodeState();
    }
  } else {
    if (p_.search_type == sched_random) {
      mode_ = Mode::kRandom;
      sampling_ = true;
      lazy_sampling_ = true;
      thread_first_ = true;
      draws_each_try_ = true;
      sc_floors_ = p_.sc_order_as_executed;
      if (seed == 0)
        seed = static_cast<unsigned long long>(
            SteadyClock::now().time_since_epoch().count());
    } else {
      mode_ = Mode::kDfs;
    }
    const unsigned jobs = mode_ == Mode::kRandom ? Jobs() : 1;
    const bool forked = jobs > 1 && RunForked(seed, jobs, &found, &state);
    for (unsigned long long iter = 0; !forked; ++iter) {
      if (mode_ == Mode::kRandom && iter >= p_.iteration_count) break;
      if (p_.max_executions != 0 && iter >= p_.max_executions) break;
      if (mode_ == Mode::kRandom) rng_.seed(IterationSeed(seed, iter));
      Outcome o = RunOne();
      if (o == Outcome::kComplete) ++p_.executions;
      if (o == Outcome::kPruned) ++p_.blocked_executions;
      if (o == Outcome::kFailed) {
        found = result_;
        state = EncodeState();
        break;
      }
      if (mode_ == Mode::kDfs) {
        // Next branch: deepest decision with an untried option.
        while (!stack_.empty() &&
               stack_.back().cur + 1 >= stack_.back().EnabledEnd())
          PopChoice();
        if (stack_.empty()) break;
        ++stack_.back().cur;
      }
      if (!p_.quiet_progress && (iter & 1023) == 0) {
        auto now = SteadyClock::now();
        if (now - last_progress >=
            std::chrono::seconds(p_.progress_output_period)) {
          last_progress = now;
          ProgressStream() << name_ << ": " << p_.executions << " executions, "
                           << p_.blocked_executions << " pruned, depth "
                           << stack_.size() << "\n";
        }
      }
    }
  }
  p_.seconds =
      std::chrono::duration<double>(SteadyClock::now() - start).count();
  p_.test_result = found;
  // Relacy counts executions from 1: the failing one's number, kept on
  // replay (it travels in the state string).
  p_.stop_iteration = p_.executions + p_.blocked_executions +
                      (found != test_result_success ? 1 : 0);
  if (!p_.initial_state.empty() && stop_iteration_ != 0)
    p_.stop_iteration = stop_iteration_;
  if (found != test_result_success) {
    p_.final_state = state;
    // Re-run the failing execution with tracing to print it.
    if (p_.output_history) {
      mode_ = Mode::kReplay;
      std::istringstream in(state);
      std::string tag;
      in >> tag;
      replay_.clear();
      unsigned v;
      while (in >> v) replay_.push_back(v);
      trace_ = true;
      std::ostream& o = *out_;
      o << name_ << ": " << test_result_str(found) << " (expected "
        << test_result_str(expected) << ")";
      if (p_.search_type == sched_random && p_.initial_state.empty())
        o << ", seed " << seed;
      o << "\n";
      RunOne();
      if (!events_.empty() || failed_) PrintTrace();
      o << "  replay with test_params::initial_state = \"" << state << "\"\n";
    }
  }
  if (p_.print_summary) {
    *out_ << name_ << ": " << test_result_str(found) << ", " << p_.executions
          << " executions (+" << p_.blocked_executions << " pruned) in "
          << p_.seconds << " s";
    if (mode_ == Mode::kRandom) *out_ << ", seed " << seed;
    *out_ << "\n";
  }
  return found;
}

}  // namespace

// ---------------------------------------------------------------- C API

uint64_t g_generation = 0;

bool TestGlobalsRead() {
#ifdef RL_NO_LOOP_STATE
  return false;
#else
  std::vector<ByteRange> ranges;
  return TestGlobals(&ranges);
#endif
}

int NewAtomic(unsigned width, uint64_t init, const debug_info& info,
              const void* addr, size_t size) {
  (void)size;
  EngineScope engine;
  return g_engine->NewAtomic(width, init, info, addr);
}

// The operation of an API entry point, its other fields at their defaults.
// The running thread's next operation (Engine::NextOp), every field but
// the wait condition (read only with await) set: no copy of a Pending.
static Pending& NewOp(OpKind kind, int loc, memory_order mo,
                      const debug_info& info) {
  Pending& op = g_engine->NextOp();
  op.kind = kind;
  op.weak = false;
  op.await = false;
  op.loc = loc;
  op.mo = mo;
  op.mo_fail = mo_relaxed;
  op.op = RmwOp::kXchg;
  op.val = 0;
  op.expected = 0;
  op.info = info;
  return op;
}

uint64_t AtomicLoad(int loc, memory_order mo, const debug_info& info) {
  if (g_engine->aborting()) return 0;
  if (g_engine->observing()) return g_engine->Observe(loc);
  EngineScope engine;
  NewOp(OpKind::kLoad, loc, mo, info);
  return g_engine->Op();
}

void AtomicStore(int loc, uint64_t v, memory_order mo, const debug_info& info) {
  if (g_engine->aborting() || g_engine->observing()) return;
  EngineScope engine;
  NewOp(OpKind::kStore, loc, mo, info).val = v;
  g_engine->Op();
}

uint64_t AtomicRmw(int loc, RmwOp rop, uint64_t operand, memory_order mo,
                   const debug_info& info) {
  if (g_engine->aborting()) return 0;
  if (g_engine->observing()) return g_engine->Observe(loc);
  EngineScope engine;
  Pending& op = NewOp(OpKind::kRmw, loc, mo, info);
  op.op = rop;
  op.val = operand;
  return g_engine->Op();
}

bool AtomicCas(int loc, uint64_t* expected, uint64_t desired,
               memory_order success, memory_order failure,
               const debug_info& info, bool weak) {
  if (g_engine->aborting()) return false;
  if (g_engine->observing()) {
    *expected = g_engine->Observe(loc);
    return false;
  }
  EngineScope engine;
  Pending& op = NewOp(OpKind::kCas, loc, success, info);
  op.weak = weak;
  op.mo_fail = failure;
  op.val = desired;
  op.expected = *expected;
  uint64_t old = g_engine->Op();
  if (g_engine->LastCasOk()) return true;
  *expected = old;
  return false;
}

bool Abandoning() { return g_generation != 0 && g_engine->aborting(); }

// A wait's operation: NewOp's, waiting for cond (Pending::await).
static Pending& NewAwaitOp(OpKind kind, int loc, const AwaitCond& cond,
                           memory_order mo, const debug_info& info) {
  g_engine->ClearTimedOut();
  Pending& op = NewOp(kind, loc, mo, info);
  op.await = true;
  op.await_cond = cond;
  return op;
}

uint64_t AtomicAwaitRmw(int loc, const AwaitCond& cond, RmwOp rop,
                        uint64_t operand, memory_order mo,
                        const debug_info& info) {
  if (g_engine->aborting() || g_engine->observing()) return 0;
  EngineScope engine;
  Pending& op = NewAwaitOp(OpKind::kRmw, loc, cond, mo, info);
  op.op = rop;
  op.val = operand;
  return g_engine->Op();
}

uint64_t AtomicAwaitLoad(int loc, const AwaitCond& cond, memory_order mo,
                         const debug_info& info) {
  if (g_engine->aborting()) return 0;
  if (g_engine->observing()) return g_engine->Observe(loc);
  EngineScope engine;
  NewAwaitOp(OpKind::kLoad, loc, cond, mo, info);
  return g_engine->Op();
}

bool AwaitTimedOut() { return g_engine->TimedOut(); }

void Fence(memory_order mo, const debug_info& info) {
  if (g_generation == 0) {
    std::atomic_thread_fence(mo);
    return;
  }
  if (g_engine->aborting() || g_engine->observing()) return;
  EngineScope engine;
  g_engine->Fence(mo, info);
}

void SystemFence(const debug_info& info) {
  if (g_generation == 0) {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    return;
  }
  if (g_engine->aborting() || g_engine->observing()) return;
  EngineScope engine;
  g_engine->SystemFence(info);
}

void Yield(unsigned count, const debug_info& info) {
  (void)count;
  // Saves every callee-saved register of the caller in this frame, where
  // LoopState() reads them (a spin loop's own state).
  __builtin_unwind_init();
#ifdef RL_FP_AT_YIELD_ENTRY
  // The caller's d8-d15, first: nothing here has used them yet (see
  // kFpCalleeSaved).
  uint64_t fp_regs[kFpCalleeSaved];
  asm volatile("vstmia %0, {d8-d15}" : : "r"(fp_regs) : "memory");
#endif
  if (g_generation == 0 || g_engine->aborting() || g_engine->observing())
    return;
#ifdef RL_FP_AT_YIELD_ENTRY
  std::memcpy(g_yield_fp_regs, fp_regs, sizeof(fp_regs));
#endif
  EngineScope engine;
  g_engine->Yield(info, reinterpret_cast<uintptr_t>(__builtin_dwarf_cfa()));
}

void AtomicDestroyed(int loc) {
  if (g_generation == 0) return;
  EngineScope engine;
  g_engine->DestroyAtomic(loc);
}

int NewSideAtomic(uint64_t init, const debug_info& info) {
  if (g_generation == 0) return -1;
  EngineScope engine;
  return g_engine->NewAtomic(8, init, info, nullptr, /*side=*/true);
}

bool WaitBlocked(const debug_info& info, bool on_last_read, bool timed) {
  if (g_generation == 0 || g_engine->aborting()) return false;
  EngineScope engine;
  return g_engine->WaitBlocked(info, on_last_read, timed);
}

unsigned Rand(unsigned limit, const debug_info& info) {
  (void)info;
  if (g_generation == 0 || g_engine->aborting() || g_engine->observing())
    return 0;
  EngineScope engine;
  return g_engine->Rand(limit);
}

size_t AddrHash(const void* p) {
  if (g_generation == 0) return std::hash<const void*>()(p);
  EngineScope engine;
  return g_engine->AddrHash(p);
}

bool CollectingHistory() {
  return g_generation != 0 && !g_engine->aborting() && g_engine->tracing();
}

void UserLog(const debug_info& info, const std::string& text) {
  if (!CollectingHistory()) return;
  EngineScope engine;  // the trace line's memory is the checker's
  g_engine->UserLog(info, text);
}

unsigned ThreadIndex() {
  if (g_generation == 0) return 0;
  return g_engine->ThreadIndex();
}

void Fail(test_result_e result, const char* desc, const debug_info& info) {
  if (g_generation == 0) {
    std::fprintf(stderr, "%s:%u: %s\n", info.file_, info.line_, desc);
    std::abort();
  }
  EngineScope engine;
  g_engine->Fail(result, desc, info);
}

void Until(const char* desc, const debug_info& info) {
  if (g_generation == 0) return;
  EngineScope engine;
  g_engine->Fail(test_result_until_condition_hit, desc, info);
}

int NewVar(bool initialized, const debug_info& info, const void* addr,
           size_t size) {
  (void)size;
  EngineScope engine;
  return g_engine->NewVar(initialized, info, addr);
}

void VarAccess(int var, bool write, const debug_info& info) {
  if (g_engine->aborting()) return;
  EngineScope engine;
  g_engine->VarAccess(var, write, info);
}

void ShimInit(const void* obj, ShimKind kind, const debug_info& info) {
  if (g_generation == 0 || g_engine->aborting()) return;
  EngineScope engine;
  g_engine->ShimInit(obj, kind, info);
}

void ShimUse(const void* obj, ShimKind kind, bool statically_live,
             const debug_info& info) {
  if (g_generation == 0 || g_engine->aborting()) return;
  EngineScope engine;
  g_engine->ShimUse(obj, kind, statically_live, info);
}

void ShimDestroy(const void* obj, ShimKind kind, bool statically_live,
                 const debug_info& info) {
  if (g_generation == 0 || g_engine->aborting()) return;
  EngineScope engine;
  g_engine->ShimDestroy(obj, kind, statically_live, info);
}

void VarDestroyed(int var) {
  if (g_generation == 0) return;
  EngineScope engine;
  g_engine->DestroyVar(var);
}

void NoAbort(int delta) {
  if (g_generation != 0 && g_engine != nullptr) g_engine->NoAbort(delta);
}

bool Tracking() {
  return t_user != kEngine && g_generation != 0 && g_engine != nullptr;
}

void* HeapAlloc(size_t size, size_t align, int kind) {
  if (Tracking() && t_user == kTracked)
    return g_engine->HeapAlloc(size, align, kind);
  void* p = align > alignof(std::max_align_t)
                ? std::aligned_alloc(align, (size + align - 1) / align * align)
                : std::malloc(size != 0 ? size : 1);
  // The engine's own allocations (during an execution, outside user code)
  // are never freed by the test: not recorded.
  if (p != nullptr && RecordsOutside()) OutsideInsert(p);
  return p;
}

void HeapFree(void* p, int kind, const debug_info& info) {
  if (p == nullptr) return;
  if (Tracking() && g_engine->HeapFree(p, kind, info, t_user == kTracked))
    return;
  if (RecordsOutside()) OutsideErase(p);
  std::free(p);
}

void* HeapRealloc(void* p, size_t size, const debug_info& info) {
  if (p == nullptr) return HeapAlloc(size, 0, 0);
  if (size == 0) {
    HeapFree(p, 0, info);
    return nullptr;
  }
  size_t old = 0;
  if (!(Tracking() && g_engine->LiveBlockSize(p, &old))) {
    // Not a live block of this execution. In the test's code, unless it
    // was allocated outside the execution, it is a freed or foreign
    // pointer: HeapFree reports it.
    if (Tracking() && t_user == kTracked && !OutsideContains(p)) {
      HeapFree(p, 0, info);
      return nullptr;
    }
    old = malloc_usable_size(p);  // plain malloc memory
  }
  void* q = HeapAlloc(size, 0, 0);
  if (q == nullptr) return nullptr;
  std::memcpy(q, p, std::min(old, size));
  HeapFree(p, 0, info);
  return q;
}

int CreateThread(void* (*fn)(void*), void* arg, const debug_info& info) {
  if (g_generation == 0 || g_engine->aborting()) return -1;
  EngineScope engine;
  return g_engine->CreateThread(fn, arg, info);
}

void* JoinThread(int handle, const debug_info& info) {
  if (g_generation == 0 || handle < 0 || g_engine->aborting()) return nullptr;
  EngineScope engine;
  return g_engine->JoinThread(handle, info);
}

test_result_e Run(SuiteIface& suite, test_params& params, unsigned threads,
                  test_result_e expected, const std::string& name,
                  unsigned dynamic_threads, bool garbage_collected) {
  unsigned static_threads = threads;
  threads += dynamic_threads;
  if (threads + 1 > static_cast<unsigned>(kMaxThreads)) {
    std::cerr << name << ": at most " << kMaxThreads - 1
              << " threads (static and dynamic); link "
                 "//verification:relacy_wide (RL_MAX_THREADS=64) for more\n";
    params.test_result = test_result_inconsistent_test_suite;
    return test_result_inconsistent_test_suite;
  }
  Engine engine(suite, params, threads, static_threads,
                params.test_name.empty() ? name : params.test_name);
  engine.has_invariant_ = suite.HasInvariant();
  engine.garbage_collected_ = garbage_collected;
  Engine* saved = g_engine;
  g_engine = &engine;
  bool saved_in_run = t_in_run;
  t_in_run = true;
  int saved_width = g_clock_width;
  g_clock_width = (static_cast<int>(threads) + 1 + kClockChunk - 1) /
                  kClockChunk * kClockChunk;
  const std::terminate_handler saved_terminate =
      std::set_terminate(&AbandonOnTerminate);
  if (saved_terminate != &AbandonOnTerminate)
    g_prev_terminate = saved_terminate;
  test_result_e r = engine.Run(expected);
  std::set_terminate(saved_terminate);
  g_clock_width = saved_width;
  t_in_run = saved_in_run;
  g_engine = saved;
  return r;
}

}  // namespace detail
}  // namespace rl

// ---------------------------------------------------------------- heap

// The test's new/delete go through the heap model while an execution's
// user code runs (rl::detail::Tracking()); everything else, the engine
// included, gets plain malloc/free.
namespace {
void* NewOrThrow(std::size_t n, std::size_t align, int kind) {
  void* p = rl::detail::HeapAlloc(n, align, kind);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
}  // namespace

void* operator new(std::size_t n) { return NewOrThrow(n, 0, 1); }
void* operator new[](std::size_t n) { return NewOrThrow(n, 0, 2); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  return rl::detail::HeapAlloc(n, 0, 1);
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  return rl::detail::HeapAlloc(n, 0, 2);
}
void* operator new(std::size_t n, std::align_val_t a) {
  return NewOrThrow(n, static_cast<std::size_t>(a), 1);
}
void* operator new[](std::size_t n, std::align_val_t a) {
  return NewOrThrow(n, static_cast<std::size_t>(a), 2);
}
void* operator new(std::size_t n, std::align_val_t a,
                   const std::nothrow_t&) noexcept {
  return rl::detail::HeapAlloc(n, static_cast<std::size_t>(a), 1);
}
void* operator new[](std::size_t n, std::align_val_t a,
                     const std::nothrow_t&) noexcept {
  return rl::detail::HeapAlloc(n, static_cast<std::size_t>(a), 2);
}
void operator delete(void* p) noexcept { rl::detail::HeapFree(p, 1, {}); }
void operator delete[](void* p) noexcept { rl::detail::HeapFree(p, 2, {}); }
void operator delete(void* p, std::size_t) noexcept {
  rl::detail::HeapFree(p, 1, {});
}
void operator delete[](void* p, std::size_t) noexcept {
  rl::detail::HeapFree(p, 2, {});
}
void operator delete(void* p, const std::nothrow_t&) noexcept {
  rl::detail::HeapFree(p, 1, {});
}
void operator delete[](void* p, const std::nothrow_t&) noexcept {
  rl::detail::HeapFree(p, 2, {});
}
void operator delete(void* p, std::align_val_t) noexcept {
  rl::detail::HeapFree(p, 1, {});
}
void operator delete[](void* p, std::align_val_t) noexcept {
  rl::detail::HeapFree(p, 2, {});
}
void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
  rl::detail::HeapFree(p, 1, {});
}
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept {
  rl::detail::HeapFree(p, 2, {});
}
void operator delete(void* p, std::align_val_t,
                     const std::nothrow_t&) noexcept {
  rl::detail::HeapFree(p, 1, {});
}
void operator delete[](void* p, std::align_val_t,
                       const std::nothrow_t&) noexcept {
  rl::detail::HeapFree(p, 2, {});
}
