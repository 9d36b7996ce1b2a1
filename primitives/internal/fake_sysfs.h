// Test-only helper: a temporary folder laid out like
// /sys/devices/system/cpu (files "possible", "present", "online"), for
// Topology::FromSysfs, the HotplugMonitor and the lagging-sysfs tests.
#ifndef PERCPU_PRIMITIVES_INTERNAL_FAKE_SYSFS_H_
#define PERCPU_PRIMITIVES_INTERNAL_FAKE_SYSFS_H_

#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "doctest/doctest.h"

namespace percpu {
namespace testing {

class FakeSysfs {
 public:
  FakeSysfs() {
    char name[] = "/tmp/percpu_sysfs_XXXXXX";
    const char* made = mkdtemp(name);
    REQUIRE(made != nullptr);
    dir_ = made;
  }
  ~FakeSysfs() {
    for (const char* file : {"possible", "present", "online"}) Remove(file);
    rmdir(dir_.c_str());
  }
  FakeSysfs(const FakeSysfs&) = delete;
  FakeSysfs& operator=(const FakeSysfs&) = delete;

  // Replaces `file` with `text` atomically (written aside, then renamed), so
  // a concurrent reader such as the HotplugMonitor never sees half a file.
  void Write(const char* file, const std::string& text) {
    const std::string aside = dir_ + "/." + file + ".tmp";
    {
      std::ofstream out(aside, std::ios::trunc);
      out << text;
      REQUIRE(out.good());
    }
    REQUIRE(std::rename(aside.c_str(), (dir_ + "/" + file).c_str()) == 0);
  }
  void Remove(const char* file) { std::remove((dir_ + "/" + file).c_str()); }
  void WriteAll(const std::string& possible, const std::string& present,
                const std::string& online) {
    Write("possible", possible);
    Write("present", present);
    Write("online", online);
  }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
};

}  // namespace testing
}  // namespace percpu

#endif  // PERCPU_PRIMITIVES_INTERNAL_FAKE_SYSFS_H_
