#!/usr/bin/env bash
# Parse cost of the writer-side public headers against a baseline of
# <thread> <vector> <string> <memory> (issue 13), side by side in one run:
# preprocessed lines (g++ -E | wc -l) and parse user time (best of N runs of
# g++ -fsyntax-only -ftime-report, "TOTAL" user seconds).
# Usage: tools/header_cost.sh [-std=c++17] [runs]   (from the repo root)
set -euo pipefail
std=${1:--std=c++17}
runs=${2:-5}
cxx=${CXX:-g++}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '#include <thread>\n#include <vector>\n#include <string>\n#include <memory>\n' \
  >"$tmp/baseline.h"
best_user() {
  local best=""
  for _ in $(seq "$runs"); do
    local u
    u=$("$cxx" "$std" -I. -fsyntax-only -ftime-report -x c++ "$1" 2>&1 |
      awk '/^ TOTAL/ {for (i = 1; i <= NF; i++) if ($i == ":") {print $(i+1); exit}}')
    if [[ -z "$best" ]] || awk -v a="$u" -v b="$best" 'BEGIN{exit !(a < b)}'; then
      best=$u
    fi
  done
  echo "$best"
}
printf '%-34s %8s %8s\n' header lines user_s
for h in "$tmp/baseline.h" primitives/percpu_stats.h primitives/percpu_pair.h \
  primitives/percpu_mib.h primitives/percpu_counter.h primitives/per_thread.h \
  primitives/cpu_slot.h primitives/counter.h primitives/topology.h \
  primitives/percpu_alloc.h primitives/internal/atomic.h; do
  name=$h
  [[ $h == "$tmp/baseline.h" ]] && name="baseline <thread><vector><string><memory>"
  printf '%-34s %8s %8s\n' "$name" \
    "$("$cxx" "$std" -I. -E -x c++ "$h" | wc -l)" "$(best_user "$h")"
done
