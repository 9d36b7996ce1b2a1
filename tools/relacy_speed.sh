#!/usr/bin/env bash
# Times this checker against real Relacy (a checkout, e.g. dvyukov/relacy
# 9f25438) on the same Relacy-dialect programs (tools/relacy_speed.cpp),
# built with the same compiler and flags, side by side in one run:
#
# * random search: ROUNDS rounds, each running real Relacy, this checker
#   and this checker's forked search (test_params::jobs = JOBS, in a
#   rotating order) for ITERATIONS iterations of the two-writes seqcount;
#   prints each round's seconds, the medians and their ratios;
# * exhaustive search of the same program: this checker each round, and
#   real Relacy's (about 40 s and 29 million executions) once if FULL=1;
#   prints executions per second;
# * instruction counts (valgrind --tool=callgrind, repeatable where times
#   are noisy), if valgrind is installed: 20,000 random iterations of the
#   seqcount, the instructions per relaxed load (100 loads per execution,
#   1,000 executions against 0, start-up subtracted), and 5,000 random
#   iterations of a counter incremented by four threads (seq_cst and
#   relaxed fetch_adds: chains of RMWs), of a counter three threads bump
#   by CAS loops (failed tries), and 5,000 of Peterson's lock in the
#   dialect's default order (seq_cst), 20,000 of the mailbox (two
#   readers spinning on published flags), and 2,000 of each long program
#   (the SPSC ring, five threads' per-slot stats, the CAS stack);
# * every program's random search side by side: PROGRAM_ROUNDS rounds
#   (real Relacy and this checker in turn) of PROGRAM_ITERATIONS
#   iterations (a tenth for the long programs), the medians and their
#   ratio;
# * retries per execution on each side (100,000 random iterations of the
#   seqcount, the CAS loop, Peterson's lock and the mailbox, 10,000 of the
#   ring and the stack): how long the executions each checker samples are.
#
#   tools/relacy_speed.sh /path/to/relacy [workdir]
#
# Env: CXX (g++), CXXFLAGS (-O2), ROUNDS (8), ITERATIONS (1000000), FULL (0),
# JOBS (nproc: the forked random search's processes, timed as a third side),
# PROGRAM_ROUNDS (5), PROGRAM_ITERATIONS (200000).
# Nothing of Relacy is copied into the project: both builds happen in the
# workdir. Run on a quiet machine; docs/verification.md, "Speed against
# Relacy", has the figures measured so.
set -u
RELACY=${1:?usage: relacy_speed.sh /path/to/relacy [workdir]}
RELACY=$(cd "$RELACY" && pwd)
WORK=${2:-/tmp/relacy_speed}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CXX=${CXX:-g++}
read -r -a FLAGS <<<"${CXXFLAGS:--O2}"
ROUNDS=${ROUNDS:-8}
ITERATIONS=${ITERATIONS:-1000000}
FULL=${FULL:-0}
JOBS=${JOBS:-$(nproc)}
PROGRAM_ROUNDS=${PROGRAM_ROUNDS:-5}
PROGRAM_ITERATIONS=${PROGRAM_ITERATIONS:-200000}

if [[ -e $WORK && ! -e $WORK/.relacy_speed ]]; then
  echo "$WORK exists and is not a workdir of this script; not removing it" >&2
  exit 1
fi
rm -rf "$WORK" && mkdir -p "$WORK" && touch "$WORK/.relacy_speed"
SRC=$ROOT/tools/relacy_speed.cpp
"$CXX" "${FLAGS[@]}" -DRL_REAL -w -I"$RELACY" "$SRC" -o "$WORK/real" \
  >"$WORK/real.build" 2>&1 || { echo "real Relacy: build failed (see $WORK/real.build)"; exit 1; }
"$CXX" -std=c++20 "${FLAGS[@]}" -I"$ROOT/verification" -I"$ROOT" "$SRC" \
  "$ROOT/verification/internal/engine.cc" -o "$WORK/ours" \
  >"$WORK/ours.build" 2>&1 || { echo "this checker: build failed (see $WORK/ours.build)"; exit 1; }

seconds() {  # command... -> prints its wall-clock seconds; fails with it.
  # The command's output is kept in $WORK/last.out (executions reads it).
  local start end
  start=$(date +%s.%N)
  "$@" >"$WORK/last.out" || return 1
  end=$(date +%s.%N)
  echo "$start $end" | awk '{printf "%.3f", $2 - $1}'
}
median() { sort -g | awk '{v[NR] = $1} END {m = int((NR + 1) / 2); if (NR % 2) print v[m]; else printf "%.3f\n", (v[m] + v[m + 1]) / 2}'; }
# The last run's "KEY N" line (relacy_speed.cpp prints executions, retries).
reported() { awk -v k="$1" '$1 == k {print $2}' "$WORK/last.out" | tail -1; }
per_second() { echo "$1 $2" | awk '{printf "%.0f", $1 / $2}'; }

# Each round runs real Relacy, this checker in one process and this
# checker's forked search (test_params::jobs = JOBS processes), in a
# rotating order.
# Ratios of time differ from one processor to another (the same two
# builds: 1.36 on one machine, 1.76 on another; docs/verification.md), so
# the run says where it ran.
cpu=$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo 2>/dev/null)
echo "machine: ${cpu:-unknown processor}, $(nproc) CPUs; $("$CXX" --version | head -1)"
echo "random search, seqcount, $ITERATIONS iterations, $ROUNDS rounds (seconds; forked: $JOBS processes):"
: >"$WORK/random.real"
: >"$WORK/random.ours"
: >"$WORK/random.forked"
for ((r = 1; r <= ROUNDS; ++r)); do
  case $((r % 3)) in
    1) order=(real ours forked) ;;
    2) order=(ours forked real) ;;
    0) order=(forked real ours) ;;
  esac
  for side in "${order[@]}"; do
    case $side in
      real) cmd=("$WORK/real" seqcount random "$ITERATIONS" "$r") ;;
      ours) cmd=("$WORK/ours" seqcount random "$ITERATIONS" "$r" 1) ;;
      forked) cmd=("$WORK/ours" seqcount random "$ITERATIONS" "$r" "$JOBS") ;;
    esac
    s=$(seconds "${cmd[@]}") || { echo "$side failed"; exit 1; }
    echo "$s" >>"$WORK/random.$side"
  done
  echo "  round $r: real $(tail -1 "$WORK/random.real")  ours $(tail -1 "$WORK/random.ours")  forked $(tail -1 "$WORK/random.forked")"
done
real_med=$(median <"$WORK/random.real")
ours_med=$(median <"$WORK/random.ours")
forked_med=$(median <"$WORK/random.forked")
ratio() { echo "$1 $2" | awk '{printf "%.2f", $1 / $2}'; }
echo "  median: real $real_med s, ours $ours_med s, forked $forked_med s; ours / real = $(ratio "$ours_med" "$real_med"), forked / real = $(ratio "$forked_med" "$real_med")"

echo "exhaustive search, seqcount:"
: >"$WORK/full.ours"
for ((r = 1; r <= ROUNDS; ++r)); do
  seconds "$WORK/ours" seqcount full >>"$WORK/full.ours" && echo >>"$WORK/full.ours"
done
n_ours=$(reported executions)
full_med=$(median <"$WORK/full.ours")
echo "  ours: $n_ours executions (complete and pruned), median $full_med s, $(per_second "$n_ours" "$full_med") per second"
if [[ $FULL == 1 ]]; then
  s=$(seconds "$WORK/real" seqcount full)
  n_real=$(reported executions)
  echo "  real: $n_real executions in $s s, $(per_second "$n_real" "$s") per second"
else
  echo "  real: not run (FULL=1 runs it: about 40 s)"
fi

# Every program's random search, one process each side, the two sides in
# turn (which goes first alternates from round to round).
echo "random search, each program, $PROGRAM_ITERATIONS iterations, $PROGRAM_ROUNDS rounds (median seconds):"
for p in seqcount mailbox counter counter-relaxed cas-counter peterson spsc stats stack; do
  : >"$WORK/prog.real"
  : >"$WORK/prog.ours"
  # The long programs (about 200 steps an execution, ten times the others)
  # run a tenth of the iterations.
  n=$PROGRAM_ITERATIONS
  case $p in spsc | stats | stack) n=$((PROGRAM_ITERATIONS / 10)) ;; esac
  for ((r = 1; r <= PROGRAM_ROUNDS; ++r)); do
    if ((r % 2)); then order=(real ours); else order=(ours real); fi
    for side in "${order[@]}"; do
      case $side in
        real) cmd=("$WORK/real" "$p" random "$n" "$r") ;;
        ours) cmd=("$WORK/ours" "$p" random "$n" "$r" 1) ;;
      esac
      s=$(seconds "${cmd[@]}") || { echo "$p: $side failed"; exit 1; }
      echo "$s" >>"$WORK/prog.$side"
    done
  done
  real_p=$(median <"$WORK/prog.real")
  ours_p=$(median <"$WORK/prog.ours")
  echo "  $p ($n iterations): real $real_p, ours $ours_p; ours / real = $(ratio "$ours_p" "$real_p")"
done

# How long the executions each side samples are: the loops' retries (the
# seqcount's reader, the CAS loop's failed CASes, Peterson's and the
# mailbox readers' waits) per execution, one process each.
echo "retries per execution (100,000 random iterations; spsc and stack 10,000; one process):"
for p in seqcount cas-counter peterson mailbox spsc stack; do
  line="  $p:"
  n=100000
  case $p in spsc | stack) n=10000 ;; esac
  for side in real ours; do
    case $side in
      real) "$WORK/real" "$p" random $n 1 >"$WORK/last.out" ;;
      ours) "$WORK/ours" "$p" random $n 1 1 >"$WORK/last.out" ;;
    esac
    line+=" $side $(reported retries | awk -v n=$n '{printf "%.3f", $1 / n}')"
  done
  echo "$line"
done

if command -v valgrind >/dev/null; then
  instr() {  # command... -> instructions (callgrind)
    valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 >/dev/null |
      awk '/refs:/{gsub(",", "", $NF); print $NF}'
  }
  echo "instructions (callgrind):"
  for side in real ours; do
    i_sq=$(instr "$WORK/$side" seqcount random 20000 1)
    i0=$(instr "$WORK/$side" loads random 100 1)
    i1=$(instr "$WORK/$side" loads random 1100 1)
    echo "  $side: seqcount 20,000 random iterations $i_sq; per relaxed load $(( (i1 - i0) / 100000 ))"
    for c in counter counter-relaxed cas-counter; do
      echo "  $side: $c 5,000 random iterations $(instr "$WORK/$side" "$c" random 5000 1)"
    done
    echo "  $side: peterson 5,000 random iterations $(instr "$WORK/$side" peterson random 5000 1)"
    echo "  $side: mailbox 20,000 random iterations $(instr "$WORK/$side" mailbox random 20000 1)"
    for c in spsc stats stack; do
      echo "  $side: $c 2,000 random iterations $(instr "$WORK/$side" "$c" random 2000 1)"
    done
  done
else
  echo "instructions: valgrind not installed, not counted"
fi
