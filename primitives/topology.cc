#include "primitives/topology.h"

#include <fstream>
#include <sstream>
#include <utility>

#if !defined(PERCPU_MODEL_CHECK) && defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#if defined(__NR_membarrier)
#define PERCPU_HAVE_MEMBARRIER_RSEQ 1
#endif
#endif
#if !defined(PERCPU_HAVE_MEMBARRIER_RSEQ)
#define PERCPU_HAVE_MEMBARRIER_RSEQ 0
#endif

namespace percpu {
namespace {

// The Topology whose hotplug callbacks this thread is running, if any. Lets
// hotplug/registration calls made from inside a callback fail cleanly
// instead of deadlocking on the (non-recursive) hotplug mutex.
thread_local const Topology* tls_in_callback = nullptr;

class CallbackScope {
 public:
  explicit CallbackScope(const Topology* t) : saved_(tls_in_callback) {
    tls_in_callback = t;
  }
  ~CallbackScope() { tls_in_callback = saved_; }
  CallbackScope(const CallbackScope&) = delete;
  CallbackScope& operator=(const CallbackScope&) = delete;

 private:
  const Topology* saved_;
};

Status ReadMaskFile(const std::string& op, const std::string& path,
                    CpuMask* out) {
  std::ifstream in(path, std::ios::in | std::ios::binary);
  if (!in) return NotFoundError(op + ": cannot open " + path);
  std::ostringstream buf;
  buf << in.rdbuf();
  if (in.bad()) return NotFoundError(op + ": cannot read " + path);
  StatusOr<CpuMask> mask = CpuMask::Parse(buf.str());
  if (!mask.ok()) {
    return InvalidArgumentError(op + ": " + path + ": " +
                                mask.status().message());
  }
  *out = *mask;
  return Status::Ok();
}

struct SysfsMasks {
  CpuMask possible, present, online;
};

Status ReadSysfs(const std::string& op, const std::string& dir,
                 SysfsMasks* m) {
  Status s = ReadMaskFile(op, dir + "/possible", &m->possible);
  if (!s.ok()) return s;
  s = ReadMaskFile(op, dir + "/present", &m->present);
  if (!s.ok()) return s;
  s = ReadMaskFile(op, dir + "/online", &m->online);
  if (!s.ok()) return s;
  if (m->possible.Empty()) {
    return FailedPreconditionError(op + ": " + dir +
                                   "/possible lists no CPU");
  }
  if (!m->present.IsSubsetOf(m->possible)) {
    return FailedPreconditionError(
        op + ": present CPUs " + m->present.ToString() +
        " are not all possible (" + m->possible.ToString() + ")");
  }
  if (!m->online.IsSubsetOf(m->present)) {
    return FailedPreconditionError(
        op + ": online CPUs " + m->online.ToString() +
        " are not all present (" + m->present.ToString() + ")");
  }
  if (m->online.Empty()) {
    return FailedPreconditionError(op + ": " + dir + "/online lists no CPU");
  }
  return Status::Ok();
}

std::string CpuOp(const char* op, int cpu) {
  return std::string("Topology::") + op + "(" + std::to_string(cpu) + ")";
}

}  // namespace

const char* HotplugEventName(HotplugEvent event) {
  switch (event) {
    case HotplugEvent::kPresent: return "kPresent";
    case HotplugEvent::kOnline: return "kOnline";
    case HotplugEvent::kOffline: return "kOffline";
    case HotplugEvent::kAbsent: return "kAbsent";
  }
  return "unknown";
}

Topology::Topology(std::string dir, const CpuMask& possible,
                   const CpuMask& present, const CpuMask& online)
    : dir_(std::move(dir)),
      possible_(possible),
      num_possible_(possible.Last() + 1),
      num_words_((possible.Last() + 1 + 63) / 64),
      present_words_(new internal::Atomic<uint64_t>[num_words_]),
      online_words_(new internal::Atomic<uint64_t>[num_words_]) {
  for (int w = 0; w < num_words_; ++w) {
    // Relaxed suffices: the object is not shared yet; it is published to
    // other threads by whatever hands out the unique_ptr.
    present_words_[w].store(present.word(w), std::memory_order_relaxed);
    online_words_[w].store(online.word(w), std::memory_order_relaxed);
  }
}

Topology::~Topology() = default;

StatusOr<std::shared_ptr<Topology>> Topology::FromSysfs(
    const std::string& dir) {
  SysfsMasks m;
  Status s = ReadSysfs("Topology::FromSysfs", dir, &m);
  if (!s.ok()) return s;
  return std::shared_ptr<Topology>(
      new Topology(dir, m.possible, m.present, m.online));
}

StatusOr<std::shared_ptr<Topology>> Topology::Simulated(int possible,
                                                        int present,
                                                        int online) {
  if (!(1 <= online && online <= present && present <= possible &&
        possible <= kMaxCpus)) {
    return InvalidArgumentError(
        "Topology::Simulated: need 1 <= online <= present <= possible <= " +
        std::to_string(kMaxCpus) + ", got possible=" +
        std::to_string(possible) + " present=" + std::to_string(present) +
        " online=" + std::to_string(online));
  }
  return std::shared_ptr<Topology>(
      new Topology("", CpuMask::FirstN(possible), CpuMask::FirstN(present),
                   CpuMask::FirstN(online)));
}

bool Topology::InCallbackOfThis() const { return tls_in_callback == this; }

CpuMask Topology::SnapshotWords(const internal::Atomic<uint64_t>* words) const {
  CpuMask mask;
  const auto collect = [&] {
    mask = CpuMask();
    // (void): cpu < num_possible_ <= kMaxCpus, so Set cannot fail.
    ForEachInWords(words, [&](int cpu) { (void)mask.Set(cpu); });
  };
  if (InCallbackOfThis()) {
    // Inside our own write section a read section would spin forever; the
    // words are stable here because this thread is the only writer.
    collect();
    return mask;
  }
  uint32_t start;
  do {
    start = seq_.ReadBegin();
    collect();
  } while (seq_.ReadRetry(start));
  return mask;
}

CpuMask Topology::present() const { return SnapshotWords(present_words_.get()); }
CpuMask Topology::online() const { return SnapshotWords(online_words_.get()); }

uint64_t Topology::events_fired() const {
  // Relaxed suffices: a diagnostic count that publishes nothing.
  return events_fired_.load(std::memory_order_relaxed);
}

Status Topology::ValidateCpu(int cpu) const {
  if (cpu < 0 || cpu >= num_possible_) {
    return OutOfRangeError("Topology: CPU id " + std::to_string(cpu) +
                           " is not in [0, " + std::to_string(num_possible_) +
                           ")");
  }
  return Status::Ok();
}

Status Topology::CheckCpuLocked(const char* op, int cpu) const {
  if (cpu < 0 || cpu >= num_possible_) {
    return OutOfRangeError(CpuOp(op, cpu) + ": CPU id " + std::to_string(cpu) +
                           " is not in [0, " + std::to_string(num_possible_) +
                           ")");
  }
  if (!possible_.Test(cpu)) {
    return FailedPreconditionError(CpuOp(op, cpu) + ": CPU " +
                                   std::to_string(cpu) +
                                   " is not possible (possible: " +
                                   possible_.ToString() + ")");
  }
  return Status::Ok();
}

void Topology::RunCallbackLocked(const char* phase, const Registration& r,
                                 const HotplugCallback& cb, HotplugEvent event,
                                 int cpu) {
  if (r.dead || !cb) return;
  // Nothing here allocates: failures_ has room for every callback of the
  // event, and a Status is moved, not copied. A throwing callback is
  // caught, so a write section is always closed (an exception escaping it
  // would leave the seqcount odd and every reader spinning forever).
  try {
    Status s = cb(event, cpu);
    if (!s.ok()) failures_.push_back(Failure{phase, r.id, std::move(s)});
  } catch (...) {
    failures_.push_back(Failure{phase, r.id, Status(), true});
  }
}

void Topology::UpdateMaskLocked(HotplugEvent event, int cpu) {
  const bool set =
      event == HotplugEvent::kPresent || event == HotplugEvent::kOnline;
  internal::Atomic<uint64_t>* words =
      (event == HotplugEvent::kPresent || event == HotplugEvent::kAbsent)
          ? present_words_.get()
          : online_words_.get();
  const uint64_t bit = uint64_t{1} << (cpu % 64);
  // Relaxed suffices: mu_ makes this thread the only writer of the words,
  // and the seqcount write section (WriteEnd's release store) orders the
  // store for readers in a read section. rseq writers that test the
  // present bit are ordered by the membarrier fence at kAbsent instead
  // (see FireLocked).
  const uint64_t old = words[cpu / 64].load(std::memory_order_relaxed);
  // Relaxed: see above.
  words[cpu / 64].store(set ? (old | bit) : (old & ~bit),
                        std::memory_order_relaxed);
}

void Topology::EraseDeadLocked() {
  if (!has_dead_) return;
  for (auto it = regs_.begin(); it != regs_.end();) {
    it = it->dead ? regs_.erase(it) : it + 1;
  }
  has_dead_ = false;
}

Status Topology::FireLocked(HotplugEvent event, int cpu) {
  const bool bring_up =
      event == HotplugEvent::kPresent || event == HotplugEvent::kOnline;
  failures_.clear();
  // Room for one failure per callback and phase, so recording a failure
  // inside a write section never allocates (reserve may throw bad_alloc
  // here, outside any section, leaving everything unchanged).
  failures_.reserve(2 * regs_.size() + 1);
  bool fence_failed = false;
  // Formats the result after every write section is closed.
  const auto result = [&](const char* suffix) {
    if (failures_.empty() && !fence_failed) return Status::Ok();
    std::string text;
    StatusCode first_code =
        fence_failed ? StatusCode::kInternal : StatusCode::kOk;
    if (fence_failed) {
      text = "membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ) failed";
    }
    for (const Failure& f : failures_) {
      if (first_code == StatusCode::kOk) {
        first_code = f.threw ? StatusCode::kInternal : f.status.code();
      }
      if (!text.empty()) text += "; ";
      text += std::string(f.phase) + " callback #" + std::to_string(f.id) +
              ": " +
              (f.threw ? std::string("INTERNAL: threw an exception")
                       : f.status.ToString());
    }
    const size_t n = failures_.size() + (fence_failed ? 1 : 0);
    return Status(first_code, std::string("Topology: ") +
                                  HotplugEventName(event) + " of CPU " +
                                  std::to_string(cpu) + ": " +
                                  std::to_string(n) +
                                  " hotplug callback(s) failed: " + text +
                                  suffix);
  };

  Status out;
  {
    CallbackScope scope(this);
    if (bring_up) {
      const size_t before = failures_.size();
      for (size_t i = 0; i < regs_.size(); ++i) {
        RunCallbackLocked("prepare", regs_[i], regs_[i].prepare, event, cpu);
      }
      if (failures_.size() > before) {
        EraseDeadLocked();
        return result(" (event vetoed; masks unchanged)");
      }
    }
    seq_.WriteBegin();
    if (event == HotplugEvent::kAbsent) {
      // Hot-remove: clear the present bit FIRST, then fence rseq writers,
      // then fold. After the fence no restartable section that read the old
      // bit is still running (each committed before the fence or was
      // aborted and will re-read the mask), so the fold's exchange races no
      // rseq store; fallback writers re-check the bit and their RMWs are
      // atomic with the exchange. Readers spin for the fence's duration
      // (one syscall, about 1 us here; docs/fold_and_hotplug.md).
      UpdateMaskLocked(event, cpu);
      if (!internal::RunRseqHotplugFence()) fence_failed = true;
      for (size_t i = 0; i < regs_.size(); ++i) {
        RunCallbackLocked("fold", regs_[i], regs_[i].fold, event, cpu);
      }
    } else {
      // kPresent's folds run here, before the bit is set: they move what a
      // unit holds (a fallback add delayed across the CPU's removal) into
      // accumulators; the allocator's prepare does not discard unit
      // contents, so nothing is lost.
      for (size_t i = 0; i < regs_.size(); ++i) {
        RunCallbackLocked("fold", regs_[i], regs_[i].fold, event, cpu);
      }
      UpdateMaskLocked(event, cpu);
    }
    seq_.WriteEnd();
    // Relaxed suffices: diagnostic counter, written under mu_ only.
    events_fired_.store(events_fired_.load(std::memory_order_relaxed) + 1,
                        std::memory_order_relaxed);

    if (!bring_up) {
      for (size_t i = regs_.size(); i-- > 0;) {
        RunCallbackLocked("teardown", regs_[i], regs_[i].prepare, event, cpu);
      }
    }
    EraseDeadLocked();
    out = result("");
  }
  return out;
}

Status Topology::SetPresent(int cpu) {
  if (InCallbackOfThis()) {
    return FailedPreconditionError(CpuOp("SetPresent", cpu) +
                                   ": called from inside a hotplug callback");
  }
  std::lock_guard<internal::SystemMutex> lock(mu_);
  Status s = CheckCpuLocked("SetPresent", cpu);
  if (!s.ok()) return s;
  if (IsPresent(cpu)) return Status::Ok();
  return FireLocked(HotplugEvent::kPresent, cpu);
}

Status Topology::SetAbsent(int cpu) {
  if (InCallbackOfThis()) {
    return FailedPreconditionError(CpuOp("SetAbsent", cpu) +
                                   ": called from inside a hotplug callback");
  }
  std::lock_guard<internal::SystemMutex> lock(mu_);
  Status s = CheckCpuLocked("SetAbsent", cpu);
  if (!s.ok()) return s;
  if (!IsPresent(cpu)) return Status::Ok();
  if (IsOnline(cpu)) {
    return FailedPreconditionError(CpuOp("SetAbsent", cpu) + ": CPU " +
                                   std::to_string(cpu) +
                                   " is online; Offline() it first");
  }
  return FireLocked(HotplugEvent::kAbsent, cpu);
}

Status Topology::Online(int cpu) {
  if (InCallbackOfThis()) {
    return FailedPreconditionError(CpuOp("Online", cpu) +
                                   ": called from inside a hotplug callback");
  }
  std::lock_guard<internal::SystemMutex> lock(mu_);
  Status s = CheckCpuLocked("Online", cpu);
  if (!s.ok()) return s;
  if (IsOnline(cpu)) return Status::Ok();
  if (!IsPresent(cpu)) {
    return FailedPreconditionError(CpuOp("Online", cpu) + ": CPU " +
                                   std::to_string(cpu) + " is not present");
  }
  return FireLocked(HotplugEvent::kOnline, cpu);
}

Status Topology::Offline(int cpu) {
  if (InCallbackOfThis()) {
    return FailedPreconditionError(CpuOp("Offline", cpu) +
                                   ": called from inside a hotplug callback");
  }
  std::lock_guard<internal::SystemMutex> lock(mu_);
  Status s = CheckCpuLocked("Offline", cpu);
  if (!s.ok()) return s;
  if (!IsOnline(cpu)) return Status::Ok();
  int online_count = 0;
  ForEachOnline([&](int) { ++online_count; });
  if (online_count <= 1) {
    return FailedPreconditionError(CpuOp("Offline", cpu) + ": CPU " +
                                   std::to_string(cpu) +
                                   " is the last online CPU");
  }
  return FireLocked(HotplugEvent::kOffline, cpu);
}

Status Topology::Rescan() {
  if (InCallbackOfThis()) {
    return FailedPreconditionError(
        "Topology::Rescan: called from inside a hotplug callback");
  }
  if (dir_.empty()) {
    return FailedPreconditionError(
        "Topology::Rescan: a simulated topology has no sysfs directory");
  }
  std::lock_guard<internal::SystemMutex> lock(mu_);
  SysfsMasks m;
  Status s = ReadSysfs("Topology::Rescan", dir_, &m);
  if (!s.ok()) return s;
  if (m.possible != possible_) {
    return FailedPreconditionError("Topology::Rescan: possible CPUs changed "
                                   "from " + possible_.ToString() + " to " +
                                   m.possible.ToString());
  }
  CpuMask cur_present, cur_online;
  // (void): ids come from our own mask words (< kMaxCpus); Set cannot fail.
  ForEachPresent([&](int cpu) { (void)cur_present.Set(cpu); });
  ForEachOnline([&](int cpu) { (void)cur_online.Set(cpu); });

  std::string failures;
  StatusCode first_code = StatusCode::kOk;
  const auto record = [&](const Status& st) {
    if (st.ok()) return;
    if (failures.empty()) first_code = st.code();
    else failures += " | ";
    failures += st.message();
  };
  m.present.AndNot(cur_present).ForEach([&](int cpu) {
    record(FireLocked(HotplugEvent::kPresent, cpu));
  });
  m.online.AndNot(cur_online).ForEach([&](int cpu) {
    if (!IsPresent(cpu)) {
      record(FailedPreconditionError(
          CpuOp("Rescan", cpu) +
          ": not onlined because its kPresent event was vetoed"));
      return;
    }
    record(FireLocked(HotplugEvent::kOnline, cpu));
  });
  cur_online.AndNot(m.online).ForEach([&](int cpu) {
    record(FireLocked(HotplugEvent::kOffline, cpu));
  });
  cur_present.AndNot(m.present).ForEach([&](int cpu) {
    record(FireLocked(HotplugEvent::kAbsent, cpu));
  });
  if (failures.empty()) return Status::Ok();
  return Status(first_code, "Topology::Rescan: " + failures);
}

StatusOr<uint64_t> Topology::RegisterHotplugCallbacks(HotplugCallback prepare,
                                                      HotplugCallback fold) {
  if (InCallbackOfThis()) {
    return FailedPreconditionError(
        "Topology::RegisterHotplugCallbacks: called from inside a hotplug "
        "callback");
  }
  std::lock_guard<internal::SystemMutex> lock(mu_);
  const uint64_t id = next_id_++;
  regs_.push_back(Registration{id, std::move(prepare), std::move(fold)});
  return id;
}

Status Topology::UnregisterHotplugCallbacks(uint64_t id) {
  if (InCallbackOfThis()) {
    // From inside a callback of this topology (e.g. a counter destroyed by
    // a user's hotplug callback): this thread already holds mu_. Mark the
    // registration dead: it never runs again, also later in this event,
    // and is erased when the event ends (not now: that could destroy the
    // std::function that is running).
    for (Registration& r : regs_) {
      if (r.id == id && !r.dead) {
        r.dead = true;
        has_dead_ = true;
        return Status::Ok();
      }
    }
    return NotFoundError("Topology::UnregisterHotplugCallbacks: no callbacks "
                         "registered with id " + std::to_string(id));
  }
  std::lock_guard<internal::SystemMutex> lock(mu_);
  for (auto it = regs_.begin(); it != regs_.end(); ++it) {
    if (it->id == id && !it->dead) {
      regs_.erase(it);
      return Status::Ok();
    }
  }
  return NotFoundError("Topology::UnregisterHotplugCallbacks: no callbacks "
                       "registered with id " + std::to_string(id));
}

namespace internal {

#if PERCPU_HAVE_MEMBARRIER_RSEQ
namespace {
// The kernel ABI's values (include/uapi/linux/membarrier.h; an enum there,
// so not testable with #ifdef, and absent from older headers).
constexpr int kMembarrierCmdQuery = 0;
constexpr int kMembarrierCmdPrivateExpeditedRseq = 1 << 7;
constexpr int kMembarrierCmdRegisterPrivateExpeditedRseq = 1 << 8;

// Relaxed suffices for both flags below: g_fence_enabled is set once, under
// g_fence_once, after the registration syscall returned; a thread that sees
// it set runs the fence syscall (the kernel orders the registration). A
// thread that does not see it yet cannot have created an rseq object that
// relies on it (Create calls EnableRseqHotplugFence on its own thread and
// publishes the object afterwards through the caller's synchronization).
std::atomic<bool> g_fence_enabled{false};
std::once_flag g_fence_once;
}  // namespace

bool EnableRseqHotplugFence() {
  std::call_once(g_fence_once, [] {
    const long cmds = syscall(__NR_membarrier, kMembarrierCmdQuery, 0, 0);
    if (cmds < 0 || (cmds & kMembarrierCmdPrivateExpeditedRseq) == 0) return;
    if (syscall(__NR_membarrier,
                kMembarrierCmdRegisterPrivateExpeditedRseq, 0, 0) != 0) {
      return;
    }
    // Relaxed: see above.
    g_fence_enabled.store(true, std::memory_order_relaxed);
  });
  return RseqHotplugFenceEnabled();
}

bool RseqHotplugFenceEnabled() {
  // Relaxed: see above.
  return g_fence_enabled.load(std::memory_order_relaxed);
}

bool RunRseqHotplugFence() {
  if (!RseqHotplugFenceEnabled()) return true;
  // A full barrier on every CPU running a thread of this process, and an
  // abort of every restartable section in flight there (Pairs with: the
  // rseq writer's present-bit load, which a restarted section repeats and
  // which then observes the cleared bit stored before this call).
  return syscall(__NR_membarrier, kMembarrierCmdPrivateExpeditedRseq, 0, 0) ==
         0;
}
#else
#if defined(PERCPU_MODEL_CHECK)
void (*g_model_rseq_fence)() = nullptr;
bool RseqHotplugFenceEnabled() { return g_model_rseq_fence != nullptr; }
bool RunRseqHotplugFence() {
  if (g_model_rseq_fence != nullptr) g_model_rseq_fence();
  return true;
}
#else
bool RseqHotplugFenceEnabled() { return false; }
bool RunRseqHotplugFence() { return true; }
#endif
bool EnableRseqHotplugFence() { return false; }
#endif

}  // namespace internal

}  // namespace percpu
