#!/usr/bin/env bash
# Builds Relacy's own example programs (the example/ directory of a Relacy
# checkout, e.g. dvyukov/relacy 9f25438) twice with the same compiler, once
# against that real Relacy and once against this project's checker
# (verification/relacy/ laid out as relacy/, as the examples include it:
# "../../relacy/relacy_std.hpp"), runs both and prints one table row per
# example: compiles (real / ours, with the first error), each simulated
# test's verdict and its executions. Nothing of Relacy is copied into the
# project: the trees are built under a scratch directory.
#
#   tools/relacy_examples.sh /path/to/relacy [workdir] [example ...]
#
# Env: CXX (g++), TIMEOUT seconds per run (300), CXXFLAGS (-std=c++20 -O2).
# Executions: Relacy's iterations; this checker's complete executions, then
# "+N pruned" (executions it abandoned, which check nothing to the end).
# Real Relacy of 9f25438 refuses a standard header before relacy_std.hpp
# (the examples' stdafx.h includes relacy/pch.hpp first): that build is
# retried with the example's Relacy header force-included first (-include)
# and the real Relacy's fakestd/ on the include path, and the row says so.
# Likewise an example "ours" cannot build as is (e.g. ws_deque's `using
# namespace std;` with unqualified atomic<T>) is retried with this
# project's fakestd mode, verification/relacy/fakestd/, on the include
# path (-I, as Relacy's), and the row says "ours with fakestd/".
set -u
RELACY=${1:?usage: relacy_examples.sh /path/to/relacy [workdir] [example ...]}
RELACY=$(cd "$RELACY" && pwd)
WORK=${2:-/tmp/relacy_examples}
shift $(($# < 2 ? $# : 2))
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CXX=${CXX:-g++}
TIMEOUT=${TIMEOUT:-300}
read -r -a FLAGS <<<"${CXXFLAGS:--std=c++20 -O2}"

# shellcheck source=tools/relacy_workdir.sh
source "$ROOT/tools/relacy_workdir.sh"
relacy_workdir "$WORK" .relacy_examples "$RELACY" example || exit 1

# Verdicts in a run's output, as "name=RESULT/executions" words.
verdicts() {  # file kind(real|ours)
  awk -v kind="$2" '
    BEGIN {
      n = split("SUCCESS|UNTIL CONDITION HIT|INCONSISTENT TEST SUITE|" \
        "USER ASSERT FAILED|USER INVARIANT FAILED|DATA RACE|" \
        "ACCESS TO FREED MEMORY|DOUBLE FREE|MEMORY LEAK|RESOURCE LEAK|" \
        "ACCESS TO UNINITIALIZED VARIABLE|DEADLOCK|LIVELOCK|" \
        "RECURSION ON NON-RECURSIVE MUTEX|UNLOCKING MUTEX W/O OWNERSHIP|" \
        "DESTROYING OWNED MUTEX|UNHANDLED EXCEPTION", r, "|")
      for (i = 1; i <= n; i++) res[r[i]] = 1
    }
    function result_of(s,  i) {
      for (i in res) if (s == i || index(s, i " (") == 1) return i
      return ""
    }
    kind == "ours" && /^[^ ].*: [A-Z].*, [0-9]+ executions/ {
      name = $0; sub(/: .*/, "", name)
      v = $0; sub(/^[^:]*: /, "", v); sub(/, [0-9]+ executions.*/, "", v)
      e = $0; sub(/ executions.*/, "", e); sub(/.*, /, "", e)
      pr = $0; sub(/ pruned.*/, "", pr); sub(/.*\(\+/, "", pr)
      gsub(/ /, "_", v); out = out " " name "=" v "/" e "+" pr "pruned"; next
    }
    kind == "real" {
      r0 = result_of($0)
      if (r0 != "" && name != "") { cur = r0; next }
      if ($0 ~ /^[A-Za-z_][A-Za-z0-9_]*$/) { flush(); name = $0; cur = ""; next }
      if ($0 ~ /^iterations: [0-9]+$/ && name != "") {
        out = out " " name "=SUCCESS/" $2; name = ""; next
      }
      if ($0 ~ /^iteration: [0-9]+$/ && name != "" && cur != "") {
        gsub(/ /, "_", cur); out = out " " name "=" cur "/" $2; name = ""; cur = ""
      }
    }
    function flush() {
      if (name != "" && cur != "") { gsub(/ /, "_", cur); out = out " " name "=" cur "/?" }
    }
    END { flush(); print out }
  ' "$1"
}

build_run() {  # side example -> sets BUILT RUNOUT NOTE
  local side=$1 ex=$2 dir="$WORK/$1/example/$2" bin="$WORK/out/$2.$1"
  local log="$WORK/out/$2.$1.build" srcs=("$dir"/*.cpp) extra=()
  [[ $side == ours ]] && extra=("$WORK/out/engine.o")
  NOTE=""
  if ! (cd "$dir" && "$CXX" "${FLAGS[@]}" -w "${srcs[@]}" "${extra[@]}" \
         -o "$bin" >"$log" 2>&1); then
    local hdr
    hdr=$(cat "$dir"/stdafx.h "${srcs[@]}" 2>/dev/null |
          grep -o 'relacy/relacy[a-z_]*\.hpp' | head -1)
    if [[ $side == real ]] && grep -q 'standard library headers were included before' "$log" &&
       [[ -n $hdr ]] &&
       (cd "$dir" && "$CXX" "${FLAGS[@]}" -w -I"$WORK/real/relacy/fakestd" \
          -include "$WORK/real/$hdr" "${srcs[@]}" -o "$bin" >"$log.2" 2>&1); then
      NOTE="real needs -include $hdr"
    elif [[ $side == ours ]] &&
       (cd "$dir" && "$CXX" "${FLAGS[@]}" -w -I"$WORK/ours/relacy/fakestd" \
          "${srcs[@]}" "${extra[@]}" -o "$bin" >"$log.2" 2>&1); then
      NOTE="ours with fakestd/"
    else
      [[ -s $log.2 ]] && log=$log.2 &&
        if [[ $side == ours ]]; then NOTE="also with fakestd/"; else NOTE="also with -include $hdr"; fi
      BUILT="no: $(grep -m1 -E 'error|Error' "$log" | sed "s|$WORK/[a-z]*/||g" | cut -c1-160)"
      return
    fi
  fi
  BUILT=yes
  local t0=$SECONDS
  (cd "$dir" && timeout "$TIMEOUT" "$bin" >"$WORK/out/$ex.$side.out" 2>&1 </dev/null)
  local rc=$?
  RUNOUT="rc=$rc $((SECONDS - t0))s$(verdicts "$WORK/out/$ex.$side.out" "$side")"
  [[ $rc == 124 ]] && RUNOUT="TIMEOUT ${TIMEOUT}s$(verdicts "$WORK/out/$ex.$side.out" "$side")"
}

if (($# > 0)); then EXAMPLES=("$@"); else
  EXAMPLES=(); for d in "$RELACY"/example/*/; do EXAMPLES+=("$(basename "$d")"); done
fi
printf '| example | side | builds | run: verdicts (test=RESULT/executions) | note |\n'
printf '|---|---|---|---|---|\n'
for ex in "${EXAMPLES[@]}"; do
  for side in real ours; do
    RUNOUT=""
    build_run "$side" "$ex"
    printf '| %s | %s | %s | %s | %s |\n' "$ex" "$side" "$BUILT" "$RUNOUT" "$NOTE"
  done
done
echo "outputs and build logs: $WORK/out" >&2
