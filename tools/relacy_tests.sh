#!/usr/bin/env bash
# Builds Relacy's own test programs (the test/ directory of a Relacy
# checkout, e.g. dvyukov/relacy 9f25438) twice with the same compiler, once
# against that real Relacy and once against this project's checker
# (verification/relacy/ laid out as relacy/, as the tests include
# "../relacy/..."), runs both and prints, per program, whether it built and
# its result; for test/main.cpp (about a hundred suites, each run under
# sched_random, sched_bound and sched_full with its expected verdict) one
# line per suite whose verdict was not the expected one. Nothing of Relacy
# is copied into the project: the trees are built under a scratch
# directory, where main.cpp is patched to go on after a failed suite
# (Relacy's stops at the first) and, on this checker's side only, to cap
# each search at MAX_EXECUTIONS executions (complete plus pruned; real
# Relacy has no such cap, and a few exhaustive searches here run for
# millions of executions: docs/verification.md, "Relacy's own tests side by
# side").
#
#   tools/relacy_tests.sh /path/to/relacy [workdir]
#
# Env: CXX (g++), TIMEOUT seconds per program (1800), MAX_EXECUTIONS
# (2000000), CXXFLAGS (-std=c++20 -O2).
set -u
RELACY=${1:?usage: relacy_tests.sh /path/to/relacy [workdir]}
RELACY=$(cd "$RELACY" && pwd)
WORK=${2:-/tmp/relacy_tests}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CXX=${CXX:-g++}
TIMEOUT=${TIMEOUT:-1800}
MAX_EXECUTIONS=${MAX_EXECUTIONS:-2000000}
read -r -a FLAGS <<<"${CXXFLAGS:--std=c++20 -O2}"

# shellcheck source=tools/relacy_workdir.sh
source "$ROOT/tools/relacy_workdir.sh"
relacy_workdir "$WORK" .relacy_tests "$RELACY" test || exit 1

# main.cpp: report every failed suite and go on (both sides); cap our
# searches.
for side in real ours; do
  perl -0pi -e 's/\breturn 1;/continue;/g' "$WORK/$side/test/main.cpp"
done
perl -0pi -e "s/(params\.execution_depth_limit = 500;)/\$1 params.max_executions = ${MAX_EXECUTIONS};/g" \
  "$WORK/ours/test/main.cpp"

# program (relative to test/) and whether it builds with fakestd/ on the
# include path (Relacy's CMakeLists: USE_FAKESTD).
PROGRAMS=(
  "main.cpp fakestd" "atomic.cpp fakestd" "atomic_flag.cpp fakestd"
  "atomic_wait_notify.cpp fakestd" "cxx11_thread.cpp fakestd"
  "stdmutex.cpp fakestd" "debug_info.cpp -" "defaulted_debug_info.cpp -"
  "new_delete.cpp -" "stdlib/with_std_overrides.cpp fakestd"
  "stdlib/without_std_overrides.cpp -" "ntest/ntest.cpp -" "jtest/jtest.cpp -"
)

run() {  # side program fakestd -> prints a row
  local side=$1 prog=$2 fake=$3 name
  name=$(echo "$prog" | tr '/.' '__')
  local bin="$WORK/out/$name.$side" log="$WORK/out/$name.$side.build"
  local inc=(-I"$WORK/$side")
  [[ $fake == fakestd ]] && inc=(-I"$WORK/$side/relacy/fakestd" "${inc[@]}")
  local extra=()
  [[ $side == ours ]] && extra=("$WORK/out/engine.o")
  if ! (cd "$WORK/$side/test/$(dirname "$prog")" &&
        "$CXX" "${FLAGS[@]}" -w "${inc[@]}" "$(basename "$prog")" \
          "${extra[@]}" -o "$bin" >"$log" 2>&1); then
    printf '%-34s %-5s does not build: %s\n' "$prog" "$side" \
      "$(grep -m1 error "$log" | sed "s|$WORK/[a-z]*/||g" | cut -c1-140)"
    return
  fi
  local t0=$SECONDS out="$WORK/out/$name.$side.out"
  (cd "$WORK/$side/test" && timeout "$TIMEOUT" "$bin" >"$out" 2>&1 </dev/null)
  local rc=$?
  local failed
  failed=$(grep -c '^FAILED' "$out")
  printf '%-34s %-5s rc=%d %ds, %d suite runs OK, %d failed\n' "$prog" "$side" \
    "$rc" $((SECONDS - t0)) "$(grep -c '\.\.\.OK' "$out")" "$failed"
  # The suites not given their expected verdict: the line after FAILED
  # names the suite on both sides.
  grep -A2 '^FAILED' "$out" | grep -vE '^(FAILED|--)$' | grep -v '^$' |
    cut -c1-150 | sed 's/^/    /' | head -40
}

for entry in "${PROGRAMS[@]}"; do
  read -r prog fake <<<"$entry"
  run real "$prog" "$fake"
  run ours "$prog" "$fake"
done
