#!/usr/bin/env bash
# //cmake:sources_test: the CMake build must not drift from Bazel's.
#   $1 genquery output (labels of //:percpu's source files)
#   $2 cmake/percpu_sources.cmake   $3 CMakeLists.txt   $4 CHANGELOG.md
set -euo pipefail
query=$1 list=$2 cmakelists=$3 changelog=$4

# //pkg:path/file.h -> pkg/path/file.h; files of other repositories
# (@boost, @doctest) are not percpu's.
bazel_files=$(grep -E '^//' "$query" | sed -E 's#^//##; s#^:##; s#:#/#' | sort -u)
cmake_files=$(grep -E '^\s+[A-Za-z0-9_./-]+\.(h|cc)\s*$' "$list" | tr -d ' \t' | sort -u)

status=0
missing=$(comm -23 <(echo "$bazel_files") <(echo "$cmake_files"))
extra=$(comm -13 <(echo "$bazel_files") <(echo "$cmake_files"))
if [ -n "$missing" ]; then
  echo "cmake/percpu_sources.cmake lacks files that //:percpu builds; add:"
  echo "$missing" | sed 's/^/  /'
  status=1
fi
if [ -n "$extra" ]; then
  echo "cmake/percpu_sources.cmake lists files that //:percpu does not build; remove:"
  echo "$extra" | sed 's/^/  /'
  status=1
fi
n=$(echo "$bazel_files" | wc -l)
if [ "$n" -lt 10 ]; then
  echo "only $n files from the query: the query is wrong"
  status=1
fi

cmake_version=$(sed -nE 's/^project\(percpu VERSION ([0-9.]+).*/\1/p' "$cmakelists")
changelog_version=$(sed -nE 's/^## ([0-9]+\.[0-9]+\.[0-9]+).*/\1/p' "$changelog" | head -n1)
if [ -z "$cmake_version" ] || [ "$cmake_version" != "$changelog_version" ]; then
  echo "CMakeLists.txt version '$cmake_version' differs from CHANGELOG.md's newest '$changelog_version'"
  status=1
fi
[ "$status" -eq 0 ] && echo "OK: $n files agree; version $cmake_version"
exit "$status"
