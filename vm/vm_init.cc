// /init of the VM lane's initramfs (docs/vm_lane.md). Static; runs as PID 1
// inside a real kernel under qemu-system-*:
//   1. mounts proc, sysfs and devtmpfs, and makes /dev/console its stdio;
//   2. runs each command given on the kernel command line after "--"
//      (commands separated by the word "::"), one after the other, each in a
//      child process with a time limit, and prints for each
//        PERCPU-VM-RESULT: <index> <command> exit=<code>
//      (or signal=<n> / timeout);
//   3. prints "PERCPU-VM-DONE: passed=<p> failed=<f>", syncs and powers off.
// The host harness (vm/run_vm.py) reads these lines from the serial console;
// a missing DONE line is a failure there.
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

void MountOrSay(const char* src, const char* target, const char* type) {
  mkdir(target, 0755);
  if (mount(src, target, type, 0, nullptr) != 0 && errno != EBUSY) {
    std::printf("PERCPU-VM: mount %s on %s failed: %s\n", type, target,
                std::strerror(errno));
  }
}

[[noreturn]] void PowerOff() {
  std::fflush(stdout);
  sync();
  reboot(RB_POWER_OFF);
  // Not PID 1 (run by hand on a host): just exit.
  _exit(0);
}

// The time limit of one command, from PERCPU_VM_CMD_TIMEOUT_S (kernel
// command-line variables land in init's environment), default 240 s.
int TimeoutSeconds() {
  const char* s = std::getenv("PERCPU_VM_CMD_TIMEOUT_S");
  const int v = s != nullptr ? std::atoi(s) : 0;
  return v > 0 ? v : 240;
}

}  // namespace

int main(int argc, char** argv) {
  const bool pid1 = getpid() == 1;
  if (pid1) {
    MountOrSay("proc", "/proc", "proc");
    MountOrSay("sysfs", "/sys", "sysfs");
    MountOrSay("devtmpfs", "/dev", "devtmpfs");
    MountOrSay("tmpfs", "/tmp", "tmpfs");
    const int fd = open("/dev/console", O_RDWR | O_NOCTTY);
    if (fd >= 0) {
      dup2(fd, 0);
      dup2(fd, 1);
      dup2(fd, 2);
      if (fd > 2) close(fd);
    }
  }
  setvbuf(stdout, nullptr, _IOLBF, 0);
  // Split argv[1..] into commands at "::".
  std::vector<std::vector<char*>> cmds(1);
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "::") == 0) {
      cmds.emplace_back();
    } else {
      cmds.back().push_back(argv[i]);
    }
  }
  int passed = 0, failed = 0;
  const int limit = TimeoutSeconds();
  for (size_t c = 0; c < cmds.size(); ++c) {
    std::vector<char*>& cmd = cmds[c];
    if (cmd.empty()) continue;
    std::string text;
    for (char* a : cmd) text += std::string(text.empty() ? "" : " ") + a;
    cmd.push_back(nullptr);
    std::printf("PERCPU-VM: run %zu: %s\n", c, text.c_str());
    const pid_t pid = fork();
    if (pid == 0) {
      execv(cmd[0], cmd.data());
      std::printf("PERCPU-VM: exec %s failed: %s\n", cmd[0],
                  std::strerror(errno));
      _exit(127);
    }
    std::string verdict;
    bool ok = false;
    if (pid < 0) {
      verdict = std::string("fork failed: ") + std::strerror(errno);
    } else {
      timespec start;
      clock_gettime(CLOCK_MONOTONIC, &start);
      int status = 0;
      for (;;) {
        const pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid) break;
        timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - start.tv_sec > limit) {
          kill(pid, SIGKILL);
          waitpid(pid, &status, 0);
          status = -1;
          break;
        }
        usleep(20 * 1000);
      }
      if (status == -1) {
        verdict = "timeout";
      } else if (WIFEXITED(status)) {
        verdict = "exit=" + std::to_string(WEXITSTATUS(status));
        ok = WEXITSTATUS(status) == 0;
      } else if (WIFSIGNALED(status)) {
        verdict = "signal=" + std::to_string(WTERMSIG(status));
      }
    }
    // PID 1 also reaps orphans of the command (none expected).
    if (pid1) {
      while (waitpid(-1, nullptr, WNOHANG) > 0) {
      }
    }
    (ok ? passed : failed)++;
    std::printf("PERCPU-VM-RESULT: %zu %s %s\n", c, text.c_str(),
                verdict.c_str());
  }
  std::printf("PERCPU-VM-DONE: passed=%d failed=%d\n", passed, failed);
  if (pid1) PowerOff();
  return failed == 0 ? 0 : 1;
}
