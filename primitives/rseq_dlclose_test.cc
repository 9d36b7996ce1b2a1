// rseq after dlclose (issue 12 item 3): a plugin (a real shared object built
// by Bazel) runs the inlined per-CPU add once and is dlclose()d; then the
// thread is signalled and yields 1000 times. The kernel reads rseq_cs on
// every return to user space after a preemption or signal: had the section
// left rseq_cs pointing at the plugin's (now unmapped) descriptor, the
// process dies with SIGSEGV (si_code SI_KERNEL). Before the fix (main at
// 4257396) every run died. Each run is a forked child; 5 must exit 0.
#include <dlfcn.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "doctest/doctest.h"

namespace {

// The plugin in the test's runfiles (workspace "percpu").
std::string PluginPath() {
  const char* dir = std::getenv("TEST_SRCDIR");
  return std::string(dir != nullptr ? dir : ".") +
         "/percpu/primitives/rseq_plugin.so";
}

void OnUsr1(int) {}

bool StillMapped(const char* name) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find(name) != std::string::npos) return true;
  }
  return false;
}

// The child: 0 on success, 10+ for setup failures.
int RunChild(const char* path) {
  void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    std::fprintf(stderr, "dlopen: %s\n", dlerror());
    return 10;
  }
  using Fn = int (*)();
  auto fn = reinterpret_cast<Fn>(dlsym(h, "PercpuPluginAddOnce"));
  if (fn == nullptr) return 11;
  const int ran = fn();
  if (ran < 0) return 12;
  std::fprintf(stderr, "plugin add done (rseq section ran: %d)\n", ran);
  if (dlclose(h) != 0) return 13;
  // The plugin's code and descriptor must be unmapped now (RTLD_LOCAL, no
  // other reference), or the test proves nothing.
  if (StillMapped("rseq_plugin.so")) return 14;
  // Signals and yields make the kernel look at rseq_cs.
  signal(SIGUSR1, OnUsr1);
  for (int i = 0; i < 1000; ++i) {
    if (i % 100 == 0) raise(SIGUSR1);
    sched_yield();
  }
  return 0;
}

TEST_CASE("rseq: a dlclose()d plugin's section leaves no dangling rseq_cs") {
  const std::string path = PluginPath();
  REQUIRE(access(path.c_str(), R_OK) == 0);
  for (int run = 0; run < 5; ++run) {
    CAPTURE(run);
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) _exit(RunChild(path.c_str()));
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    if (WIFSIGNALED(status)) {
      FAIL("child killed by signal " << WTERMSIG(status));
    }
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
}

}  // namespace
