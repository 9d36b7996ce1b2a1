// Interface between the Relacy-dialect front end (relacy/*.hpp) and the
// exploration engine (engine.cc). Everything the templates need is here, in
// terms of type-erased 64-bit values, so the engine is compiled once.
#ifndef PERCPU_VERIFICATION_INTERNAL_ENGINE_H_
#define PERCPU_VERIFICATION_INTERNAL_ENGINE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <version>
#if defined(__cpp_lib_source_location)
#include <source_location>
#endif
#include <string>

namespace rl {

using memory_order = std::memory_order;
inline constexpr memory_order mo_relaxed = std::memory_order_relaxed;
inline constexpr memory_order mo_consume = std::memory_order_consume;
inline constexpr memory_order mo_acquire = std::memory_order_acquire;
inline constexpr memory_order mo_release = std::memory_order_release;
inline constexpr memory_order mo_acq_rel = std::memory_order_acq_rel;
inline constexpr memory_order mo_seq_cst = std::memory_order_seq_cst;

// Source position of an operation, for traces and race reports.
struct debug_info {
  const char* file_ = "";
  unsigned line_ = 0;
  const char* func_ = "";

  // noexcept, as Relacy's: `$` may appear where an exception is not
  // allowed (Relacy's own tests assert noexcept($)).
  constexpr debug_info() noexcept = default;
  constexpr debug_info(const char* file, unsigned line,
                       const char* func = "") noexcept
      : file_(file), line_(line), func_(func) {}
#if defined(__cpp_lib_source_location)
  constexpr debug_info(const std::source_location& loc) noexcept  // NOLINT
      : file_(loc.file_name()), line_(loc.line()), func_(loc.function_name()) {}
#endif
};

typedef unsigned thread_id_t;

enum test_result_e {
  test_result_success,
  test_result_until_condition_hit,
  test_result_inconsistent_test_suite,
  test_result_user_assert_failed,
  test_result_user_invariant_failed,
  test_result_data_race,
  test_result_access_to_freed_memory,
  test_result_double_free,
  test_result_memory_leak,
  test_result_resource_leak,
  test_result_unitialized_access,
  test_result_deadlock,
  test_result_livelock,
  // Mutexes (rl::mutex, rl::recursive_mutex), Relacy's values.
  test_result_recursion_on_nonrecursive_mutex,
  test_result_unlocking_mutex_wo_ownership,
  test_result_destroying_owned_mutex,
  test_result_double_initialization_of_mutex,
  test_result_usage_of_non_initialized_mutex,
  test_result_mutex_write_to_read_upgrade,
  test_result_mutex_read_to_write_upgrade,
  // Condition variables, semaphores and events of the POSIX and Win32 shims
  // (Relacy's values).
  test_result_double_initialization_of_condvar,
  test_result_usage_of_non_initialized_condvar,
  test_result_double_initialization_of_semaphore,
  test_result_usage_of_non_initialized_semaphore,
  test_result_double_initialization_of_event,
  test_result_usage_of_non_initialized_event,
  // Additional results.
  test_result_unhandled_exception,
  // No longer produced: exceeding execution_depth_limit is a livelock
  // (Relacy's verdict). Kept so existing code compiles.
  test_result_execution_depth_limit,
};

const char* test_result_str(test_result_e r);

enum scheduler_type_e {
  sched_random,
  sched_bound,
  sched_full,
  sched_count,
};

struct test_params {
  // sched_random: number of executions. sched_full/sched_bound: ignored
  // (see max_executions).
  unsigned iteration_count = 1000;
  // Name printed in reports (empty: the suite's type name).
  std::string test_name;
  std::ostream* output_stream = nullptr;  // null = std::cout
  // Progress lines on long runs (every progress_output_period seconds);
  // null = std::cout. Set quiet_progress to disable.
  std::ostream* progress_stream = nullptr;
  bool quiet_progress = false;
  unsigned progress_output_period = 2;  // seconds between progress lines
  bool collect_history = true;
  bool output_history = true;  // print the trace of a failing execution
  // Relacy's default: 1000 random executions. sched_full explores every
  // execution (what the project's tests ask for explicitly).
  scheduler_type_e search_type = sched_random;
  // sched_bound: maximal number of deferred reads per execution (reads that
  // are scheduled after a later-indexed thread to read a later write).
  unsigned context_bound = 2;
  // Maximal number of steps (events and yields) per execution; exceeding it
  // is reported as test_result_livelock (a loop that never ends).
  unsigned execution_depth_limit = 2000;
  // Spin handling (see docs/verification.md, "Spin loops and fairness"):
  // how many further identical iterations a spinning thread runs when it
  // could also wait for another thread's write (so a loop that gives up
  // after a few tries reaches its slow path). Spinners that nobody's
  // write can end run on to the execution depth limit (a livelock).
  unsigned spin_bound = 4;
  // compare_exchange_weak may fail spuriously (C++20 [atomics.types.
  // operations]); at most once in a row per thread and location.
  bool spurious_cas_failures = true;
  // Extension (off: Relacy's behaviour). The test promises that every
  // retry loop ending its iterations with rl::yield (or a backoff) carries
  // nothing from one iteration into the next: no retry counter, no value
  // kept from a failed try (a seqlock reader's loop, a spin on a flag).
  // A failed iteration that writes nothing is then redundant (the
  // execution without it has the same outcomes): from a thread's second
  // yield at the same call site on, an iteration reading the same
  // locations as the one before is pruned if it read a stale value, and
  // otherwise waits for a write to what it read; spins do not run on
  // (spin_bound). Far fewer executions (docs/verification.md, "Stateless
  // retry loops"); a loop that does carry state is then not explored past
  // its first failed tries (a bounded spin's slow path is missed).
  bool stateless_spins = false;
  // sched_random: the SC order is the order in which the execution runs
  // its seq_cst operations and fences, as in Relacy's random scheduler
  // (and no SC-order graph is kept: seq_cst executions cost about what
  // acquire/release ones do). false: any SC order C++20 allows, as the
  // exhaustive search explores (an execution whose only SC orders differ
  // from the order run is then reachable too). docs/verification.md,
  // "The SC order as executed".
  bool sc_order_as_executed = true;
  // Replay: if non-empty, run exactly the execution it encodes.
  std::string initial_state;
  // Out: the encoded failing execution (feed back as initial_state).
  std::string final_state;
  // Out: result of the run and the number of the failing/last execution.
  test_result_e test_result = test_result_success;
  unsigned long long stop_iteration = 0;
  // Extensions.
  unsigned long long seed = 0;            // sched_random; 0 = time based
  // sched_random: the iterations are shared among this many forked
  // processes (the calling one waits), for more executions per second on
  // more cores; 0: one per online CPU. The environment variable RL_JOBS,
  // where set, overrides it. The result is the one-process search's: each
  // iteration has its own seed, and the lowest failing iteration is
  // reported, with the counts of those before it. 1 (one process) by
  // default: forked, the code under test runs in other processes, so what
  // it keeps across iterations (a global count, a file written) is not
  // shared, and its output interleaves. Progress lines count all workers. A
  // worker that dies (a crash) makes the search run again in the calling
  // process. docs/verification.md, "A forked random search".
  unsigned jobs = 1;
  unsigned long long max_executions = 0;  // 0 = unlimited
  // Out: complete executions and pruned ones (dead ends, redundant spins).
  unsigned long long executions = 0;
  unsigned long long blocked_executions = 0;
  double seconds = 0;
  bool print_summary = true;  // one summary line on output_stream
  // Exploration: offer deferring a read only once a later write it could
  // read has been seen (false: always offer it; same graphs, more dead ends).
  bool lazy_deferral = true;
};

namespace detail {

// Type-erased test suite, implemented by a template in relacy.hpp.
class SuiteIface {
 public:
  virtual ~SuiteIface() = default;
  virtual void Create() = 0;
  virtual void Before() = 0;
  virtual void Thread(unsigned index) = 0;
  virtual void After() = 0;
  virtual void Invariant() = 0;
  virtual bool HasInvariant() const = 0;
  virtual void Destroy() = 0;
  // The suite object's bytes (after Create()): plain members a spin loop
  // changes (a count of tries kept in the suite) are part of its thread's
  // own state (docs/verification.md, "Spin loops").
  virtual const unsigned char* Bytes(size_t* size) const = 0;
};

enum class RmwOp : uint8_t { kXchg, kAdd, kSub, kAnd, kOr, kXor };

// Thrown (inside a checker thread or the driver) to unwind an execution
// that is being abandoned. Not derived from std::exception on purpose.
struct AbortExecution {};

// Serial of the running execution, 0 when none runs. Objects remember it
// so objects from outside an execution fall back to plain behaviour.
// Inline: every rl::atomic and rl::var access reads it (Live()).
extern uint64_t g_generation;
inline uint64_t Generation() { return g_generation; }

// Whether a spin loop's state includes the test's globals and
// thread_locals in this process (docs/verification.md, "A loop that keeps
// a count"): false in a statically linked program, one without a symbol
// table, a build with coverage counters, or where loop state is not read
// at all.
bool TestGlobalsRead();

int NewAtomic(unsigned width, uint64_t init, const debug_info& info,
              const void* addr = nullptr, size_t size = 0);
// The destructor of the rl::atomic that NewAtomic() returned loc for: the
// location is freed memory from now on (later accesses are reported).
void AtomicDestroyed(int loc);
// A 64-bit location of the front end's own bookkeeping (a wait queue),
// made on first use by whichever thread: its initialization is no write
// an access could race with (a thread that never synchronized with the
// maker reads the initial value as a relaxed load would).
int NewSideAtomic(uint64_t init, const debug_info& info);
uint64_t AtomicLoad(int loc, memory_order mo, const debug_info& info);
void AtomicStore(int loc, uint64_t v, memory_order mo, const debug_info& info);
uint64_t AtomicRmw(int loc, RmwOp op, uint64_t operand, memory_order mo,
                   const debug_info& info);
bool AtomicCas(int loc, uint64_t* expected, uint64_t desired,
               memory_order success, memory_order failure,
               const debug_info& info, bool weak = false);
// What a wait waits for: a value v with ((v & mask) == want) == equal (a
// lock word 0, a wake-up bit set or cleared, a count not 0, a doorbell
// changed).
struct AwaitCond {
  uint64_t mask = ~uint64_t{0};
  uint64_t want = 0;
  bool equal = true;
  // A timed wait (a deadline, any duration: the checker has no clock). When
  // every unfinished thread waits, instead of a DEADLOCK one timed wait
  // times out (which one: a decision the search explores), as a Relacy
  // thread parked with a timeout does; AwaitTimedOut() then says so.
  bool timed = false;
};
// An RMW that waits, with no event, until it can read a value meeting
// cond (a lock acquisition, a semaphore's decrement): only such reads are
// explored; a thread no write lets go on waits until the location is
// written, and if nobody can write, the run is a DEADLOCK. Returns the
// value read (0 when the execution is being abandoned).
uint64_t AtomicAwaitRmw(int loc, const AwaitCond& cond, RmwOp op,
                        uint64_t operand, memory_order mo,
                        const debug_info& info);
// A load that waits as AtomicAwaitRmw does; returns the value read.
uint64_t AtomicAwaitLoad(int loc, const AwaitCond& cond, memory_order mo,
                         const debug_info& info);
// Whether the calling thread's last wait (AtomicAwaitRmw, AtomicAwaitLoad)
// ended by its timeout (AwaitCond::timed), with no event and no value read.
bool AwaitTimedOut();
// Whether the running execution is being abandoned (its threads unwind).
bool Abandoning();
void Fence(memory_order mo, const debug_info& info);
// A seq_cst fence in the calling thread and, where each stands now, in
// every other running thread (Win32's FlushProcessWriteBuffers).
void SystemFence(const debug_info& info);
void Yield(unsigned count, const debug_info& info);
// Blocks the calling thread until another thread writes (a mutex or
// condition-variable wait). If nothing can ever write again, the run is a
// deadlock. Reads since the last wait that were not the newest prune the
// execution (another one reads the newer value). Returns false if it could
// not wait (no execution, an abandoned one being unwound, or outside a
// thread: then the run already failed): the caller stops waiting and goes
// on with dummy state instead of looping.
// Blocks the calling thread in a wait (mutex, condition variable,
// semaphore) until another thread writes; the wait's last read found it
// must wait. on_last_read: only a write to that read's location can end
// the wait (a mutex's lock word, a semaphore's count), so only such a
// write wakes the thread; otherwise any write does (a wait on several
// objects). timed: a wait with a deadline, which times out instead of a
// DEADLOCK when every thread waits (as AwaitCond::timed; AwaitTimedOut()
// then says so).
bool WaitBlocked(const debug_info& info, bool on_last_read = false,
                 bool timed = false);
unsigned Rand(unsigned limit, const debug_info& info);
// Relacy's rl::hash_ptr: the order in which the execution first hashed the
// address (0, 1, ...), so a hash does not depend on where the allocator put
// an object, and an execution replays with the same hashes.
size_t AddrHash(const void* p);
unsigned ThreadIndex();
// Dynamic threads (rl::dyn_thread, pthread_create): a checker thread running
// fn(arg), created with the calling thread's knowledge (creation
// synchronizes-with its start). Returns its handle (thread index), -1 if
// none. JoinThread waits until it finished and then knows all it did.
int CreateThread(void* (*fn)(void*), void* arg, const debug_info& info);
void* JoinThread(int handle, const debug_info& info);  // fn's result
void Fail(test_result_e result, const char* desc, const debug_info& info);
void Until(const char* desc, const debug_info& info);
int NewVar(bool initialized, const debug_info& info,
           const void* addr = nullptr, size_t size = 0);
// The heap model: allocations made by a test's code during an execution are
// tracked (leaks, double free, use after free through rl::atomic/rl::var in
// freed memory). Freed blocks stay allocated (poisoned) until the execution
// ends. kind: 0 malloc, 1 new, 2 new[], kHeapResource: a token standing
// for an initialized pthread mutex / condition variable / semaphore (never
// dereferenced; left unfreed it is a RESOURCE LEAK, not a MEMORY LEAK).
inline constexpr int kHeapResource = 3;
void* HeapAlloc(size_t size, size_t align, int kind);
void HeapFree(void* p, int kind, const debug_info& info);
// realloc: a new block holding the old one's bytes (as many as both
// have), then the old block freed, so a later use of the old pointer is a
// use after free. Null p: HeapAlloc; size 0: HeapFree, returns null. A p
// that is no live block is reported as HeapFree reports it (DOUBLE FREE),
// and null is returned; so it is if the new block cannot be allocated (p
// stays valid, as with realloc).
void* HeapRealloc(void* p, size_t size, const debug_info& info);
// Brackets code that may run in a noexcept destructor (rl::mutex::unlock):
// an abandoned execution does not throw at the thread there.
void NoAbort(int delta);
struct NoAbortScope {
  NoAbortScope() { NoAbort(1); }
  ~NoAbortScope() { NoAbort(-1); }
  NoAbortScope(const NoAbortScope&) = delete;
  NoAbortScope& operator=(const NoAbortScope&) = delete;
};
// True while an execution's user code runs on this OS thread.
bool Tracking();
void VarAccess(int var, bool write, const debug_info& info);
// The lives of the shims' objects that C code must set up by a call
// (pthread_*_init, sem_init, InitializeCriticalSection, an event's or
// semaphore's init) and end by another (*_destroy, Delete*, CloseHandle),
// kept by address for the execution, as Relacy checks them: setting up a
// live object is DOUBLE INITIALIZATION, using or ending one that is not
// live USAGE OF NON INITIALIZED (of that kind). statically_live: the
// object was built by its *_INITIALIZER and is live until ended. Outside
// an execution nothing is checked.
enum class ShimKind { kMutex, kCondvar, kSemaphore, kEvent };
void ShimInit(const void* obj, ShimKind kind, const debug_info& info);
void ShimUse(const void* obj, ShimKind kind, bool statically_live,
             const debug_info& info);
void ShimDestroy(const void* obj, ShimKind kind, bool statically_live,
                 const debug_info& info);
// The destructor of the rl::var that NewVar() returned var for: as
// AtomicDestroyed().
void VarDestroyed(int var);
// User history (RL_HIST_IMPL / RL_LOG): true only while the failing
// execution is replayed for its trace, so a test's history events cost
// nothing otherwise. UserLog adds a line to that trace after the events
// so far, under the running thread.
bool CollectingHistory();
void UserLog(const debug_info& info, const std::string& text);

// Explores the suite; returns the result found (success if none).
// threads: the suite's static threads; dynamic_threads more slots for
// threads created during an execution (CreateThread). garbage_collected:
// Relacy's Java and CLI modes; memory never freed is collected at the end
// of each execution instead of reported as a MEMORY LEAK.
test_result_e Run(SuiteIface& suite, test_params& params, unsigned threads,
                  test_result_e expected, const std::string& name,
                  unsigned dynamic_threads = 0,
                  bool garbage_collected = false);

}  // namespace detail
}  // namespace rl

#endif  // PERCPU_VERIFICATION_INTERNAL_ENGINE_H_
