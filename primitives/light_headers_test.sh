#!/usr/bin/env bash
# Issue 13: the writer-side public headers stay light. None of them may pull
# <functional>, <mutex>, <unordered_map>, <map> or <set> (together ~100k
# preprocessed lines) into a hot-path translation unit. Runs the host
# compiler with -H (the include tree) on each header, in C++17 and C++20,
# and first checks that the detector does flag a header that includes one
# of them (so this test can fail). Measure the cost with tools/header_cost.sh.
set -euo pipefail

src=${TEST_SRCDIR:-$PWD}/${TEST_WORKSPACE:-percpu}
[[ -f "$src/primitives/percpu_stats.h" ]] || src=$PWD
cxx=${CXX:-g++}
command -v "$cxx" >/dev/null || { echo "FAIL: no host compiler $cxx"; exit 1; }
out=${TEST_TMPDIR:-$(mktemp -d)}/light_headers
mkdir -p "$out"

headers=(
  primitives/percpu_stats.h
  primitives/percpu_pair.h
  primitives/percpu_mib.h
  primitives/percpu_counter.h
  primitives/per_thread.h
  primitives/cpu_slot.h
  primitives/counter.h
  primitives/topology.h
  primitives/percpu_alloc.h
  primitives/internal/atomic.h
  primitives/internal/mutex.h
  primitives/internal/callable.h
)
banned='/(functional|mutex|unordered_map|map|set)$'

# Prints the banned standard headers in the include tree of $2 (std $1).
heavy() {
  "$cxx" "$1" -I"$src" -fsyntax-only -H -x c++ "$2" 2>&1 >/dev/null |
    sed -n 's/^\.\{1,\} //p' | grep -E "$banned" | sort -u || true
}

fail=0
# The detector must see a banned header, also one included indirectly.
printf '#include <vector>\n#include <mutex>\n' >"$out/control.h"
if [[ -z "$(heavy -std=c++17 "$out/control.h")" ]]; then
  echo "FAIL: the detector misses <mutex> in a control header"
  fail=1
fi

for std in -std=c++17 -std=c++20; do
  for h in "${headers[@]}"; do
    found=$(heavy "$std" "$src/$h")
    if [[ -n "$found" ]]; then
      echo "FAIL: $h ($std) pulls in:" $found
      fail=1
    else
      echo "ok: $h ($std)"
    fi
  done
done
exit $fail
