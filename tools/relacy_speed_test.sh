#!/usr/bin/env bash
# tools/relacy_speed.cpp against this checker: every program runs the
# random iterations it is given and says so ("executions N"), and the
# loops' retries are counted in random searches ("retries N", which
# relacy_speed.sh compares with real Relacy's) but not in the exhaustive
# one, where a growing count would make the seqcount reader's spin a loop
# that keeps state (explored to its bound: millions of executions).
set -euo pipefail
BIN=$1
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
value() { awk -v k="$1" '$1 == k {print $2}' <<<"$2"; }

for p in seqcount loads counter counter-relaxed cas-counter peterson mailbox \
  spsc stats stack; do
  out=$("$BIN" "$p" random 300 1 1) || fail "$p exited with $?: $out"
  [[ $(value executions "$out") == 300 ]] || fail "$p: $out"
  [[ $(value retries "$out") =~ ^[0-9]+$ ]] || fail "$p: no retries line: $out"
  # Three threads bumping one counter by CAS loops, 300 executions: some
  # CAS fails (seed 1 is deterministic).
  if [[ $p == cas-counter ]]; then
    (($(value retries "$out") > 0)) || fail "cas-counter: no failed CAS counted: $out"
  fi
  # Two readers spinning on flags published by two other threads: some
  # reader waits in 300 executions (seed 1).
  if [[ $p == mailbox ]]; then
    (($(value retries "$out") > 0)) || fail "mailbox: no wait counted: $out"
  fi
  # A ring of 4 slots passing 24 items, and a stack three threads push
  # and pop by CAS loops: some side waits, some CAS fails (seed 1).
  if [[ $p == spsc || $p == stack ]]; then
    (($(value retries "$out") > 0)) || fail "$p: no retry counted: $out"
  fi
done

out=$("$BIN" seqcount full) || fail "seqcount full exited with $?: $out"
[[ $(value retries "$out") == 0 ]] || fail "seqcount full counted retries: $out"
n=$(value executions "$out")
((n > 0 && n < 1000000)) || fail "seqcount full: $n executions"
echo "PASS"
