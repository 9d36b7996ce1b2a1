#include "primitives/topology.h"

#include <fstream>
#include <sstream>
#include <utility>

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

Status Topology::FireLocked(HotplugEvent event, int cpu) {
  const bool bring_up =
      event == HotplugEvent::kPresent || event == HotplugEvent::kOnline;
  std::string failures;
  int num_failures = 0;
  StatusCode first_code = StatusCode::kOk;
  const auto record = [&](const char* phase, uint64_t id, const Status& s) {
    if (s.ok()) return;
    if (num_failures++ == 0) first_code = s.code();
    if (!failures.empty()) failures += "; ";
    failures += std::string(phase) + " callback #" + std::to_string(id) +
                ": " + s.ToString();
  };
  const auto result = [&](const char* suffix) {
    if (num_failures == 0) return Status::Ok();
    return Status(first_code,
                  std::string("Topology: ") + HotplugEventName(event) +
                      " of CPU " + std::to_string(cpu) + ": " +
                      std::to_string(num_failures) +
                      " hotplug callback(s) failed: " + failures + suffix);
  };

  CallbackScope scope(this);
  if (bring_up) {
    for (const Registration& r : regs_) {
      if (r.prepare) record("prepare", r.id, r.prepare(event, cpu));
    }
    if (num_failures > 0) return result(" (event vetoed; masks unchanged)");
  }

  internal::Atomic<uint64_t>* words =
      (event == HotplugEvent::kPresent || event == HotplugEvent::kAbsent)
          ? present_words_.get()
          : online_words_.get();
  const uint64_t bit = uint64_t{1} << (cpu % 64);
  seq_.WriteBegin();
  for (const Registration& r : regs_) {
    if (r.fold) record("fold", r.id, r.fold(event, cpu));
  }
  // Relaxed suffices: mu_ makes this thread the only writer of the words,
  // and the seqcount write section (WriteEnd's release store) orders the
  // store for readers in a read section.
  const uint64_t old = words[cpu / 64].load(std::memory_order_relaxed);
  // Relaxed: see above.
  words[cpu / 64].store(bring_up ? (old | bit) : (old & ~bit),
                        std::memory_order_relaxed);
  seq_.WriteEnd();
  // Relaxed suffices: diagnostic counter, written under mu_ only.
  events_fired_.store(events_fired_.load(std::memory_order_relaxed) + 1,
                      std::memory_order_relaxed);

  if (!bring_up) {
    for (auto it = regs_.rbegin(); it != regs_.rend(); ++it) {
      if (it->prepare) record("teardown", it->id, it->prepare(event, cpu));
    }
  }
  return result("");
}

Status Topology::SetPresent(int cpu) {
  if (InCallbackOfThis()) {
    return FailedPreconditionError(CpuOp("SetPresent", cpu) +
                                   ": called from inside a hotplug callback");
  }
  std::lock_guard<std::mutex> lock(mu_);
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
  std::lock_guard<std::mutex> lock(mu_);
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
  std::lock_guard<std::mutex> lock(mu_);
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
  std::lock_guard<std::mutex> lock(mu_);
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
  std::lock_guard<std::mutex> lock(mu_);
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
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t id = next_id_++;
  regs_.push_back(Registration{id, std::move(prepare), std::move(fold)});
  return id;
}

Status Topology::UnregisterHotplugCallbacks(uint64_t id) {
  if (InCallbackOfThis()) {
    return FailedPreconditionError(
        "Topology::UnregisterHotplugCallbacks: called from inside a hotplug "
        "callback");
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = regs_.begin(); it != regs_.end(); ++it) {
    if (it->id == id) {
      regs_.erase(it);
      return Status::Ok();
    }
  }
  return NotFoundError("Topology::UnregisterHotplugCallbacks: no callbacks "
                       "registered with id " + std::to_string(id));
}

}  // namespace percpu
