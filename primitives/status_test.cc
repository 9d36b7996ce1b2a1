#include "primitives/status.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <utility>

#include "doctest/doctest.h"

namespace percpu {
namespace {

struct ChildResult {
  bool aborted = false;
  std::string stderr_text;
};

// Runs f in a forked child with stderr captured; reports whether the child
// died of SIGABRT and what it printed.
template <typename F>
ChildResult RunInChild(F&& f) {
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    dup2(fds[1], 2);
    close(fds[0]);
    f();
    _exit(0);  // f returned: the access did not abort
  }
  close(fds[1]);
  ChildResult r;
  char buf[512];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) r.stderr_text.append(buf, n);
  close(fds[0]);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  r.aborted = WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
  return r;
}

StatusOr<std::unique_ptr<int>> Failing() {
  return NotFoundError("Lookup: no such widget 42");
}

TEST_CASE("StatusOr: value() on an error aborts with the status, every build") {
  // The old behaviour returned a default T (here a null unique_ptr).
  for (int how = 0; how < 5; ++how) {
    CAPTURE(how);
    ChildResult r = RunInChild([how] {
      StatusOr<std::unique_ptr<int>> s = Failing();
      volatile bool null = false;
      switch (how) {
        case 0: null = s.value() == nullptr; break;
        case 1: null = *s == nullptr; break;
        case 2: null = s->get() == nullptr; break;
        case 3: null = std::move(s).value() == nullptr; break;
        case 4: {
          const StatusOr<std::unique_ptr<int>>& c = s;
          null = c.value() == nullptr;
          break;
        }
      }
      (void)null;  // only the abort matters
    });
    CHECK(r.aborted);
    CHECK(r.stderr_text.find("NOT_FOUND: Lookup: no such widget 42") !=
          std::string::npos);
  }
}

TEST_CASE("StatusOr: ok values and statuses are reachable without aborting") {
  StatusOr<std::unique_ptr<int>> s = std::make_unique<int>(7);
  REQUIRE(s.ok());
  CHECK(**s == 7);
  CHECK(*s.value() == 7);
  std::unique_ptr<int> moved = std::move(s).value();
  CHECK(*moved == 7);
  StatusOr<int> e = OutOfRangeError("x");
  CHECK(e.status().code() == StatusCode::kOutOfRange);
  Status taken = std::move(e).status();
  CHECK(taken.message() == "x");
}

}  // namespace
}  // namespace percpu
