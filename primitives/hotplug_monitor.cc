#include "primitives/hotplug_monitor.h"

#include <errno.h>
#include <linux/netlink.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cassert>
#include <cstring>
#include <string_view>

namespace percpu {
namespace internal {
namespace {

constexpr std::string_view kCpuDevPrefix = "/devices/system/cpu/cpu";

// N of "/devices/system/cpu/cpuN", or -1.
int CpuOfDevpath(std::string_view path) {
  if (path.substr(0, kCpuDevPrefix.size()) != kCpuDevPrefix) return -1;
  std::string_view digits = path.substr(kCpuDevPrefix.size());
  if (digits.empty() || digits.size() > 6) return -1;
  int cpu = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return -1;
    cpu = cpu * 10 + (c - '0');
  }
  return cpu;
}

CpuUeventAction ActionOf(std::string_view a) {
  if (a == "online") return CpuUeventAction::kOnline;
  if (a == "offline") return CpuUeventAction::kOffline;
  if (a == "add") return CpuUeventAction::kAdd;
  if (a == "remove") return CpuUeventAction::kRemove;
  return CpuUeventAction::kNone;
}

}  // namespace

CpuUevent ParseCpuUevent(const char* buf, size_t len) {
  CpuUevent none;
  if (buf == nullptr || len == 0) return none;
  // Split into NUL-terminated fields; a final field without its NUL is
  // truncated and ignored.
  std::string_view header, action, devpath;
  bool have_action = false, have_devpath = false;
  size_t pos = 0;
  bool first = true;
  while (pos < len) {
    const void* nul = std::memchr(buf + pos, '\0', len - pos);
    if (nul == nullptr) break;
    const size_t end = static_cast<const char*>(nul) - buf;
    std::string_view field(buf + pos, end - pos);
    pos = end + 1;
    if (first) {
      header = field;
      first = false;
      continue;
    }
    if (field.substr(0, 7) == "ACTION=") {
      action = field.substr(7);
      have_action = true;
    } else if (field.substr(0, 8) == "DEVPATH=") {
      devpath = field.substr(8);
      have_devpath = true;
    }
  }
  // "libudev" messages (udev's re-broadcast) and anything without the
  // kernel's "ACTION@DEVPATH" header are not kernel uevents.
  const size_t at = header.find('@');
  if (!have_action || !have_devpath || at == std::string_view::npos) {
    return none;
  }
  if (header.substr(0, at) != action || header.substr(at + 1) != devpath) {
    return none;
  }
  CpuUevent ev;
  ev.action = ActionOf(action);
  ev.cpu = CpuOfDevpath(devpath);
  if (ev.action == CpuUeventAction::kNone || ev.cpu < 0) return none;
  return ev;
}

}  // namespace internal

namespace {
// The monitor whose Run() executes on this thread (nullptr elsewhere), so
// that Stop() from a hotplug callback on that thread only signals.
thread_local const HotplugMonitor* tls_running_monitor = nullptr;
}  // namespace

HotplugMonitor::HotplugMonitor(Topology& topo, const Options& options)
    : topo_(topo), options_(options) {}

StatusOr<std::unique_ptr<HotplugMonitor>> HotplugMonitor::Start(
    Topology& topo, Options options) {
  if (topo.sysfs_dir().empty()) {
    if (options.uevent_fd >= 0) close(options.uevent_fd);
    return FailedPreconditionError(
        "HotplugMonitor::Start: the Topology is simulated (no sysfs "
        "directory to follow)");
  }
  if (options.poll_interval.count() <= 0 ||
      options.resync_interval.count() <= 0) {
    if (options.uevent_fd >= 0) close(options.uevent_fd);
    return InvalidArgumentError(
        "HotplugMonitor::Start: poll_interval and resync_interval must be "
        "positive");
  }
  std::unique_ptr<HotplugMonitor> m(new HotplugMonitor(topo, options));
  m->stop_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (m->stop_fd_ < 0) {
    const int e = errno;
    if (options.uevent_fd >= 0) close(options.uevent_fd);
    return InternalError(std::string("HotplugMonitor::Start: eventfd: ") +
                         std::strerror(e));
  }
  if (options.uevent_fd >= 0) {
    m->uevent_fd_ = options.uevent_fd;
    m->using_netlink_ = true;
  } else if (options.source == Options::Source::kPollOnly) {
    m->netlink_error_ = "kPollOnly";
  } else {
    const int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
                          NETLINK_KOBJECT_UEVENT);
    if (fd < 0) {
      m->netlink_error_ = std::string("socket(NETLINK_KOBJECT_UEVENT): ") +
                          std::strerror(errno);
    } else {
      sockaddr_nl addr;
      std::memset(&addr, 0, sizeof(addr));
      addr.nl_family = AF_NETLINK;
      addr.nl_pid = 0;     // the kernel assigns a port id
      addr.nl_groups = 1;  // the kernel's uevent group (udev's is 2)
      if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
        m->netlink_error_ =
            std::string("bind(NETLINK_KOBJECT_UEVENT): ") + std::strerror(errno);
        close(fd);
      } else {
        m->uevent_fd_ = fd;
        m->using_netlink_ = true;
      }
    }
  }
  // The initial Rescan: events that happened since FromSysfs (or the last
  // Rescan) fire now, before Start returns.
  m->DoRescan();
  try {
    m->thread_ = std::thread([p = m.get()] { p->Run(); });
  } catch (const std::exception& e) {
    return InternalError(std::string("HotplugMonitor::Start: thread: ") +
                         e.what());
  }
  return m;
}

HotplugMonitor::~HotplugMonitor() {
  // Joins the thread (a destructor running on the monitor's own thread, from
  // a hotplug callback, is a contract violation: it would join itself).
  assert(tls_running_monitor != this);
  Stop();
  if (uevent_fd_ >= 0) close(uevent_fd_);
  if (stop_fd_ >= 0) close(stop_fd_);
  uevent_fd_ = stop_fd_ = -1;
}

void HotplugMonitor::Stop() {
  // stop_fd_ is set before the thread starts and closed only by the
  // destructor after the join: writing to it here is safe.
  const uint64_t one = 1;
  // A full eventfd counter (EAGAIN) still means "readable": ignore.
  ssize_t r = write(stop_fd_, &one, sizeof(one));
  (void)r;
  // On the monitor's own thread (a hotplug callback): only signal, never
  // take stop_mu_ (the destructor may hold it while joining this thread).
  if (tls_running_monitor == this) return;
  std::lock_guard<std::mutex> lock(stop_mu_);
  if (stopped_) return;
  if (!thread_.joinable()) return;
  thread_.join();
  stopped_ = true;
  if (uevent_fd_ >= 0) close(uevent_fd_);
  uevent_fd_ = -1;
}

Status HotplugMonitor::last_error() const {
  std::lock_guard<std::mutex> lock(error_mu_);
  return last_error_;
}

void HotplugMonitor::DoRescan() {
  Status s = topo_.Rescan();
  // Relaxed: diagnostics counters.
  rescans_.fetch_add(1, std::memory_order_relaxed);
  if (!s.ok()) {
    rescan_errors_.fetch_add(1, std::memory_order_relaxed);
    std::lock_guard<std::mutex> lock(error_mu_);
    last_error_ = std::move(s);
  }
}

bool HotplugMonitor::DrainUevents() {
  bool want = false;
  // A uevent is at most a few KiB (UEVENT_BUFFER_SIZE is 2048).
  alignas(8) char buf[8192];
  for (;;) {
    sockaddr_storage from;
    std::memset(&from, 0, sizeof(from));
    iovec iov{buf, sizeof(buf)};
    msghdr msg;
    std::memset(&msg, 0, sizeof(msg));
    msg.msg_name = &from;
    msg.msg_namelen = sizeof(from);
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    const ssize_t n = recvmsg(uevent_fd_, &msg, MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      // ENOBUFS: the kernel dropped messages; the masks may have changed.
      if (errno == ENOBUFS) {
        want = true;
        continue;
      }
      break;  // EAGAIN: drained (other errors: retry at the next wake-up)
    }
    if (n == 0) break;
    if ((msg.msg_flags & MSG_TRUNC) != 0) {
      want = true;  // unknown content: be safe
      continue;
    }
    if (msg.msg_namelen >= sizeof(sa_family_t) &&
        from.ss_family == AF_NETLINK) {
      // Only the kernel (port id 0) sends real uevents.
      const auto* nl = reinterpret_cast<const sockaddr_nl*>(&from);
      if (nl->nl_pid != 0) continue;
    }
    const internal::CpuUevent ev =
        internal::ParseCpuUevent(buf, static_cast<size_t>(n));
    if (ev.action != internal::CpuUeventAction::kNone) {
      cpu_uevents_.fetch_add(1, std::memory_order_relaxed);
      want = true;
    }
  }
  return want;
}

void HotplugMonitor::Run() {
  tls_running_monitor = this;
  bool events = uevent_fd_ >= 0;
  for (;;) {
    const int timeout_ms = static_cast<int>(
        events ? options_.resync_interval.count()
               : options_.poll_interval.count());
    pollfd fds[2];
    fds[0] = {stop_fd_, POLLIN, 0};
    int nfds = 1;
    if (events) {
      fds[1] = {uevent_fd_, POLLIN, 0};
      nfds = 2;
    }
    const int r = poll(fds, nfds, timeout_ms);
    if (r < 0) {
      // EINTR: retry; anything else should not happen: do not spin.
      if (errno != EINTR) usleep(10 * 1000);
      continue;
    }
    if ((fds[0].revents & POLLIN) != 0) return;
    if (r == 0) {
      DoRescan();  // the poll interval, or the netlink resync interval
      continue;
    }
    if (nfds == 2 && fds[1].revents != 0) {
      const bool want = DrainUevents();
      if ((fds[1].revents & (POLLHUP | POLLERR | POLLNVAL)) != 0 &&
          (fds[1].revents & POLLIN) == 0) {
        // The event source is gone (a closed test socketpair): poll from
        // now on rather than spin on a dead descriptor.
        events = false;
      }
      if (want || !events) DoRescan();
    }
  }
}

}  // namespace percpu
