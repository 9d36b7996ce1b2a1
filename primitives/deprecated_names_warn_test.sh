#!/usr/bin/env bash
# The old (0.1) type names are deprecated: each use below must get its own
# -Wdeprecated-declarations diagnostic from g++ (clang 14 does not warn on
# deprecated alias templates, so g++ is the reference here), the file must
# not compile under -Werror=deprecated-declarations, and the same uses
# spelled with the new names must compile under it (the control).
# Uses the host compiler in syntax-only mode.
set -euo pipefail

src=${TEST_SRCDIR:-$PWD}/${TEST_WORKSPACE:-percpu}
[[ -f "$src/primitives/status.h" ]] || src=$PWD
cxx=${CXX:-g++}
command -v "$cxx" >/dev/null || { echo "FAIL: no host compiler $cxx"; exit 1; }
out=${TEST_TMPDIR:-$(mktemp -d)}/deprecated_names
mkdir -p "$out"
fail=0

prelude='#include <memory>
#include "primitives/cpu_slot.h"
#include "primitives/lazy_percpu.h"
#include "primitives/per_thread.h"
#include "primitives/percpu_counter.h"
#include "primitives/percpu_mib.h"
using namespace percpu;
void f() {'

# old name use | the same use with the new name
pairs=(
  'std::unique_ptr<PerCpuMib<4>> a;|std::unique_ptr<LcoreStats<4>> a;'
  'std::unique_ptr<PerCpuCounter> b;|std::unique_ptr<ApproxCounter> b;'
  'PerCpuCounterSlot* c = nullptr; (void)c;|ApproxCounterSlot* c = nullptr; (void)c;'
  'std::unique_ptr<LazyFlowStats> d;|std::unique_ptr<FlowStats> d;'
  'std::unique_ptr<BasicLazyFlowStats<>> e;|std::unique_ptr<BasicFlowStats<>> e;'
  'LazyFlowStatsSlot* g = nullptr; (void)g;|FlowStatsSlot* g = nullptr; (void)g;'
  'PerThreadCounter h; h.Inc();|ThreadCounter h; h.Inc();'
  'auto i = CpuSlotCounter::Create(1); (void)i;|auto i = PerCpuU64::Create; (void)i;'
)

first_line=$(($(printf '%s\n' "$prelude" | wc -l) + 1))
{
  printf '%s\n' "$prelude"
  for p in "${pairs[@]}"; do printf '  %s\n' "${p%%|*}"; done
  printf '}\n'
} >"$out/old.cc"
{
  printf '#include "primitives/percpu_stats.h"\n%s\n' "$prelude"
  for p in "${pairs[@]}"; do printf '  %s\n' "${p#*|}"; done
  printf '}\n'
} >"$out/new.cc"

if "$cxx" -std=c++17 -fsyntax-only -Werror=deprecated-declarations \
    -I"$src" "$out/old.cc" 2>"$out/old_werror.err"; then
  echo "FAIL: the old names compiled under -Werror=deprecated-declarations"
  fail=1
fi
"$cxx" -std=c++17 -fsyntax-only -Wdeprecated-declarations -I"$src" \
  "$out/old.cc" 2>"$out/old.err" || {
  echo "FAIL: the old names do not compile at all"
  cat "$out/old.err"
  fail=1
}
line=$first_line
for p in "${pairs[@]}"; do
  if grep -q "old.cc:$line:[0-9]*: warning: .*is deprecated: use .*removed in 0.3" \
      "$out/old.err"; then
    echo "ok: deprecated: ${p%%|*}"
  else
    echo "FAIL: no deprecation warning for: ${p%%|*} (line $line)"
    fail=1
  fi
  line=$((line + 1))
done

if ! "$cxx" -std=c++17 -fsyntax-only -Werror=deprecated-declarations \
    -I"$src" "$out/new.cc" 2>"$out/new.err"; then
  echo "FAIL: the new names did not compile without deprecation warnings"
  cat "$out/new.err"
  fail=1
fi
exit $fail
