#include "primitives/percpu_counter.h"

#include <new>
#include <string>
#include <utility>

#include "primitives/contract.h"
#include "primitives/fold.h"

namespace percpu {

namespace {

int OnlineCount(const Topology& topo) {
  int n = 0;
  topo.ForEachOnline([&](int) { ++n; });
  return n;
}

}  // namespace

int32_t ApproxCounter::DefaultBatch(const Topology& topo) {
  const int online = OnlineCount(topo);
  return online * 2 > 32 ? online * 2 : 32;
}

StatusOr<std::unique_ptr<ApproxCounter>> ApproxCounter::Create(
    Topology& topo, PerCpuAllocator& alloc, int64_t initial, int32_t batch) {
  if (batch < 0) {
    return InvalidArgumentError("ApproxCounter::Create: batch " +
                                std::to_string(batch) + " is negative");
  }
  if (batch == 0) batch = DefaultBatch(topo);
  StatusOr<PerCpuPtr<ApproxCounterSlot>> slots =
      alloc.Allocate<ApproxCounterSlot>();
  if (!slots.ok()) return slots.status();
  std::unique_ptr<ApproxCounter> counter(
      new (std::nothrow) ApproxCounter(topo, alloc, batch, *slots, initial));
  if (counter == nullptr || !counter->writers_.Init(topo.num_possible())) {
    if (counter != nullptr) counter->slots_ = PerCpuPtr<ApproxCounterSlot>();
    (void)alloc.Free(*slots);
    return ResourceExhaustedError("ApproxCounter::Create: out of memory");
  }
  // Registered before the counter is handed to any writer: an event that
  // completed before registration found every slot still zero.
  ApproxCounter* self = counter.get();
  StatusOr<uint64_t> id = topo.RegisterHotplugCallbacks(
      nullptr, [self](HotplugEvent event, int cpu) {
        return self->FoldCallback(event, cpu);
      });
  if (!id.ok()) {
    (void)alloc.Free(self->slots_);
    self->slots_ = PerCpuPtr<ApproxCounterSlot>();
    return id.status();
  }
  counter->callback_id_ = *id;
  // CPUs offline now are dead for writers (later events are the callback's
  // job). Racing an event is harmless: the callback runs for every event
  // after registration and sets the same states.
  for (int cpu = 0; cpu < topo.num_possible(); ++cpu) {
    if (!topo.IsOnline(cpu)) (void)counter->writers_.MarkDead(cpu);
  }
  return counter;
}

StatusOr<ApproxCounter::WriterToken> ApproxCounter::AcquireWriter(int cpu) {
  Status valid = topo_.ValidateCpu(cpu);
  if (!valid.ok()) {
    return OutOfRangeError("ApproxCounter::AcquireWriter: " +
                           valid.message());
  }
  if (!writers_.TryClaim(cpu, internal::CpuWriterTable::kToken)) {
    return FailedPreconditionError(
        "ApproxCounter::AcquireWriter: cpu " + std::to_string(cpu) +
        (writers_.StateOf(cpu) == internal::CpuWriterTable::kDead
             ? " is offline"
             : " already has a writer"));
  }
  return WriterToken(this, cpu);
}

ApproxCounter::ApproxCounter(Topology& topo, PerCpuAllocator& alloc,
                             int32_t batch, PerCpuPtr<ApproxCounterSlot> slots,
                             int64_t initial)
    : topo_(topo),
      alloc_(alloc),
      batch_(batch),
      num_possible_(topo.num_possible()),
      slots_(slots) {
  // Relaxed suffices: the counter is not shared yet. This is the only plain
  // store to count_; afterwards it is modified by fetch_add only.
  count_.store(initial, std::memory_order_relaxed);
}

ApproxCounter::~ApproxCounter() {
  // Unregister first: after it returns the fold callback is not running and
  // never runs again, so it cannot touch freed slots.
  if (callback_id_ != 0) (void)topo_.UnregisterHotplugCallbacks(callback_id_);
  if (slots_) (void)alloc_.Free(slots_);
}

Status ApproxCounter::AddChecked(int cpu, int64_t amount) {
  Status valid = topo_.ValidateCpu(cpu);
  if (!valid.ok()) {
    return OutOfRangeError("ApproxCounter::Add: " + valid.message());
  }
  if (!topo_.IsOnline(cpu)) {
    return FailedPreconditionError("ApproxCounter::Add: cpu " +
                                   std::to_string(cpu) + " is not online");
  }
  Add(cpu, amount);
  return Status::Ok();
}

int64_t ApproxCounter::SumOnline() const {
  for (;;) {
    // Pass 1: every online CPU's flush_seq, waiting for even values. The
    // acquire load in ReadBegin makes every flush that completed before it
    // visible to the loads below.
    // Pairs with: release store of flush_seq in SeqCount::WriteEnd() (Flush).
    uint64_t begin_total = 0;
    topo_.ForEachOnline([&](int cpu) {
      begin_total += slots_.on(cpu)->flush_seq.ReadBegin();
    });
    // Relaxed suffices: ordered by the seqcount reads and fence around it.
    uint64_t sum =
        static_cast<uint64_t>(count_.load(std::memory_order_relaxed));
    topo_.ForEachOnline([&](int cpu) {
      // Relaxed suffices: ordered by the seqcount reads and fence around it.
      sum += static_cast<uint64_t>(static_cast<int64_t>(
          slots_.on(cpu)->delta.load(std::memory_order_relaxed)));
    });
    // Orders the data loads above before the re-reads of flush_seq below.
    // Pairs with: release fence in SeqCount::WriteBegin() (Flush and the
    // offline FoldCallback): if a load above saw a value written after some
    // flush's WriteBegin (count_ values later in its release sequence, or
    // the delta store), the re-read below sees that flush's odd count.
    internal::ThreadFence(std::memory_order_acquire);  // Pairs with: WriteBegin() fence.
    uint64_t end_total = 0;
    topo_.ForEachOnline([&](int cpu) {
      // Relaxed suffices: ordered after the data loads by the fence above.
      end_total += slots_.on(cpu)->flush_seq.RawCount();
    });
    // Each flush_seq only grows (read-read coherence), so equal totals mean
    // every CPU's count was unchanged: no flush overlapped.
    if (end_total == begin_total) return static_cast<int64_t>(sum);
    internal::SpinPause();
  }
}

int64_t ApproxCounter::Sum() const {
  return ReadHotplugConsistent(topo_, [this] { return SumOnline(); });
}

int64_t ApproxCounter::ErrorBound() const {
  return static_cast<int64_t>(batch_) * OnlineCount(topo_);
}

int ApproxCounter::Compare(int64_t rhs) const {
  const int64_t approx = Read();
  const uint64_t bound = static_cast<uint64_t>(ErrorBound());
  // |approx - rhs| computed without signed overflow.
  const uint64_t distance =
      approx >= rhs
          ? static_cast<uint64_t>(approx) - static_cast<uint64_t>(rhs)
          : static_cast<uint64_t>(rhs) - static_cast<uint64_t>(approx);
  if (distance > bound) return approx > rhs ? 1 : -1;
  const int64_t exact = Sum();
  if (exact > rhs) return 1;
  if (exact < rhs) return -1;
  return 0;
}

Status ApproxCounter::FoldCallback(HotplugEvent event, int cpu) {
  if (cpu < 0 || cpu >= num_possible_) {
    return OutOfRangeError("ApproxCounter::FoldCallback: cpu " +
                           std::to_string(cpu));
  }
  if (event == HotplugEvent::kOffline) {
    // Take the CPU from writers: wait out a transient Add (a few
    // instructions), then mark it dead, so later Add(cpu) calls go to the
    // shared count. A token holder should have released (P1).
    const uint32_t was = writers_.MarkDead(cpu);
    // This callback is the slot's only writer now. The move is both a
    // flush_seq write section (for Sum's per-CPU check) and part of the
    // hotplug write section (the online bit clears in the same one).
    ApproxCounterSlot& s = *slots_.on(cpu);
    // Relaxed suffices: single writer now, ordered after the last owner by
    // MarkDead's acquire CAS.
    const int32_t d = s.delta.load(std::memory_order_relaxed);
    if (d != 0) Flush(s, d);
    if (was == internal::CpuWriterTable::kToken) {
      // A usage error, reported loudly (the event returns this Status).
      return FailedPreconditionError(
          "ApproxCounter: a WriterToken of the CPU is still held at Offline "
          "(release it before the CPU goes offline)");
    }
  } else if (event == HotplugEvent::kOnline) {
    // Relaxed suffices: the CPU has no writer yet (dead or a stale token).
    const int32_t d = slots_.on(cpu)->delta.load(std::memory_order_relaxed);
    // A stale token's late adds: moved, not lost.
    if (d != 0) Flush(*slots_.on(cpu), d);
    writers_.MarkOnline(cpu);
  }
  return Status::Ok();
}

}  // namespace percpu
