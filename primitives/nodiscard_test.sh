#!/usr/bin/env bash
# Errors cannot be dropped silently: Status and StatusOr are [[nodiscard]],
# so every statement below that discards one must FAIL to compile under
# -Werror=unused-result, and the same call kept or cast to (void) must
# compile. Uses the host compiler in syntax-only mode.
set -euo pipefail

src=${TEST_SRCDIR:-$PWD}/${TEST_WORKSPACE:-percpu}
[[ -f "$src/primitives/status.h" ]] || src=$PWD
cxx=${CXX:-g++}
command -v "$cxx" >/dev/null || { echo "FAIL: no host compiler $cxx"; exit 1; }
out=${TEST_TMPDIR:-$(mktemp -d)}/nodiscard
mkdir -p "$out"
fail=0

prelude='#include "primitives/cpumask.h"
#include "primitives/percpu_alloc.h"
#include "primitives/percpu_counter.h"
#include "primitives/topology.h"
using namespace percpu;
void f(Topology* t, PerCpuAllocator* a, ApproxCounter* c, CpuMask m) {
  auto topo = Topology::Simulated(8, 8, 8);'

# One discarded result per line.
dropped=(
  '(*topo)->Offline(7);'
  '(*topo)->Online(7);'
  't->SetPresent(1);'
  't->SetAbsent(1);'
  't->Rescan();'
  't->UnregisterHotplugCallbacks(1);'
  't->RegisterHotplugCallbacks(nullptr, nullptr);'
  'Topology::Simulated(1, 1, 1);'
  'Topology::FromSysfs("/nonexistent");'
  'm.Set(3);'
  'm.Clear(3);'
  'CpuMask::Parse("0-3");'
  'a->Allocate(8);'
  'a->Allocate<int>();'
  'a->FreeAddress(0);'
  'a->Free(PerCpuPtr<int>());'
  'PerCpuAllocator::Create(t);'
  'ApproxCounter::Create(*t, *a);'
  'InvalidArgumentError("x");'
  'Status::Ok();'
)

# All dropped statements in one file, one per line, so three compiler runs
# check them all: with -Werror=unused-result the file must not compile, and
# every statement's line must carry its own unused-result diagnostic.
first_line=$(($(printf '%s\n' "$prelude" | wc -l) + 1))
{
  printf '%s\n' "$prelude"
  for stmt in "${dropped[@]}"; do printf '  %s\n' "$stmt"; done
  printf '}\n'
} >"$out/drop.cc"
if "$cxx" -std=c++17 -fsyntax-only -Werror=unused-result -I"$src" \
    "$out/drop.cc" 2>"$out/drop.err"; then
  echo "FAIL: dropping results compiled under -Werror=unused-result"
  fail=1
fi
"$cxx" -std=c++17 -fsyntax-only -Wunused-result -I"$src" "$out/drop.cc" \
  2>"$out/warn.err" || true
line=$first_line
for stmt in "${dropped[@]}"; do
  if grep -q "drop.cc:$line:[0-9]*: \(warning\|error\): ignoring return" \
      "$out/warn.err"; then
    echo "ok: refused: $stmt"
  else
    echo "FAIL: no unused-result diagnostic for: $stmt (line $line)"
    fail=1
  fi
  line=$((line + 1))
done

# The control: the same calls, explicitly ignored, compile.
{
  printf '%s\n' "$prelude"
  for stmt in "${dropped[@]}"; do printf '  (void)%s\n' "$stmt"; done
  printf '}\n'
} >"$out/keep.cc"
if ! "$cxx" -std=c++17 -fsyntax-only -Werror=unused-result -I"$src" \
    "$out/keep.cc" 2>"$out/keep.err"; then
  echo "FAIL: the (void) controls did not compile"
  cat "$out/keep.err"
  fail=1
fi
exit $fail
