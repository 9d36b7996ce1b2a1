// Runs every input of the allocator + hotplug corpus through the fuzz
// harness, without libFuzzer (so it builds with every toolchain and runs in
// every CI config). Arguments: files or directories (every regular file in
// a directory, sorted). Fails if any input disagrees with the model, or if
// no input was found.
//
//   bazel test //fuzz:allocator_hotplug_regression_test
//   PERCPU_FUZZ_TRACE=1 bazel-bin/fuzz/allocator_hotplug_regression_test FILE
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz/allocator_hotplug_harness.h"
#include "primitives/status.h"

namespace {

bool IsDirectory(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

void Collect(const std::string& path, std::vector<std::string>* out) {
  if (!IsDirectory(path)) {
    out->push_back(path);
    return;
  }
  DIR* d = opendir(path.c_str());
  if (d == nullptr) {
    std::fprintf(stderr, "cannot open directory %s\n", path.c_str());
    out->push_back(path);  // reported as unreadable below
    return;
  }
  std::vector<std::string> names;
  for (;;) {
    errno = 0;
    const dirent* e = readdir(d);
    if (e == nullptr) {
      if (errno != 0) {
        // E.g. EOVERFLOW from a 32-bit readdir on a file system with 64-bit
        // inode numbers (the BUILD file sets _FILE_OFFSET_BITS=64 for that).
        std::fprintf(stderr, "readdir(%s): %s\n", path.c_str(),
                     std::strerror(errno));
        out->push_back(path);  // reported as unreadable below
      }
      break;
    }
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    names.push_back(path + "/" + name);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  for (const std::string& n : names) {
    if (!IsDirectory(n)) out->push_back(n);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) Collect(argv[i], &files);
  if (files.empty()) {
    std::fprintf(stderr, "usage: %s FILE_OR_DIR...: no input found\n", argv[0]);
    return 2;
  }
  const percpu::fuzz::HarnessOptions options =
      percpu::fuzz::HarnessOptionsFromEnv();
  int failures = 0;
  for (const std::string& f : files) {
    std::ifstream in(f, std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "FAIL %s: cannot read\n", f.c_str());
      ++failures;
      continue;
    }
    const std::vector<uint8_t> data((std::istreambuf_iterator<char>(in)),
                                    std::istreambuf_iterator<char>());
    const percpu::Status s = percpu::fuzz::RunAllocatorHotplugInput(
        data.data(), data.size(), options);
    if (s.ok()) {
      std::printf("ok   %s (%zu bytes)\n", f.c_str(), data.size());
    } else {
      std::printf("FAIL %s: %s\n", f.c_str(), s.ToString().c_str());
      ++failures;
    }
  }
  std::printf("%zu input(s), %d failure(s)\n", files.size(), failures);
  return failures == 0 ? 0 : 1;
}
