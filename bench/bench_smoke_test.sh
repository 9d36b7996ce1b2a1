#!/usr/bin/env bash
# Smoke test of the benchmark suite: the report runs with --quick and
# prints every row (text, CSV and JSON) and the plot; each Google Benchmark
# binary runs briefly. Timings are not checked (a loaded CI machine gives
# any numbers); that every experiment ran and produced a figure is.
#
# Arguments: report fold_benchmark update_benchmark alloc_benchmark.
set -euo pipefail

report=$1
shift
out=${TEST_TMPDIR:-$(mktemp -d)}/smoke
mkdir -p "$out"
fail=0

echo "=== report --quick"
if ! "$report" --quick --csv_out="$out/report.csv" \
    --json_out="$out/report.json" --plot="$out/fold_cost.svg" \
    >"$out/report.txt" 2>"$out/report.err"; then
  echo "FAIL: report exited with an error"
  cat "$out/report.err" "$out/report.txt"
  exit 1
fi
cat "$out/report.txt"

# Every row of the table, in every format, with a value.
rows=(
  1.present_vs_possible
  1.online_vs_possible
  1.present_vs_possible_backed
  2.cpu_vs_item_major
  2.cpu_vs_item_major_192
  3.read_once_vs_plain
  3.u64_stats_vs_read_once
  3.group_vs_read_once
  3.u64_stats_vs_staged
  3.group_vs_staged
  3.insns_group_vs_read_once
  3.seqcount_i686_vs_64bit
  3.seqcount_forced_vs_64bit
  4.percpu_vs_librseq_shape
  4.percpu_vs_rseq_floor
  4.percpu_vs_plain_tls
  4.librseq_shape_vs_plain_tls
  4.rseq_floor_vs_plain_tls
  4.per_thread_vs_relaxed_tls
  4.per_thread_vs_lookup_floor
  4.lookup_floor_vs_relaxed_tls
  4.per_thread_vs_plain_tls
  4.percpu_vs_shared_atomic.t1
  4.percpu_vs_shared_atomic.t2
  4.percpu_vs_fallback.t1
  4.percpu_vs_fallback.t2
  4.percpu_vs_mutex.t1
  4.percpu_vs_mutex.t2
  4.ovs_percpu_vs_numa_locked.t1
  4.ovs_percpu_vs_numa_locked.t2
  5.fill_16B_200k
  5.fill_16B_1M
  5.churn_16B_200k
  5.churn_16B_1M
  5.alloc_derived_vs_min
  5.fill_derived_vs_min
  5.alloc_forced64_vs_min
  5.alloc_large_forced64_vs_min
  5.rss_present_units
  6.fold_vs_stream
  6.fold_vs_stream_192
)
for kind in plain_tls percpu_add per_thread fallback_getcpu shared_fetch_add \
    mutex ovs_numa_locked percpu_pair relaxed_tls rseq_floor librseq_shape per_thread_lookup; do
  rows+=("4.cost.$kind.t1" "4.cost.$kind.t2")
done
for id in "${rows[@]}"; do
  if ! grep -q "^$id " "$out/report.txt"; then
    echo "FAIL: row $id missing from the text table"
    fail=1
  fi
  line=$(grep "^$id," "$out/report.csv" || true)
  if [ -z "$line" ]; then
    echo "FAIL: row $id missing from the CSV"
    fail=1
  elif [ -z "$(echo "$line" | awk -F, '{print $3}')" ]; then
    echo "FAIL: row $id has no value (not measured): $line"
    fail=1
  fi
  if ! grep -q "\"id\": \"$id\"" "$out/report.json"; then
    echo "FAIL: row $id missing from the JSON"
    fail=1
  fi
done
nrows=$(($(wc -l <"$out/report.csv") - 1))
if [ "$nrows" -ne "${#rows[@]}" ]; then
  echo "FAIL: the CSV has $nrows rows, this test knows ${#rows[@]}"
  fail=1
fi
for fact in cpu kernel compiler writer_mode; do
  if ! grep -q "^  $fact " "$out/report.txt"; then
    echo "FAIL: machine description lacks '$fact'"
    fail=1
  fi
done
# With valgrind installed, every read kernel has an instruction count.
# A kernel without IA32 emulation cannot execute the i686 kernels (the
# report then says "read_kernels (i686): exit status 126" and leaves that
# row n/a); every other row must still have its counts.
i686_filter='^$'
if grep -q "read_kernels (i686): exit status 126" "$out/report.txt"; then
  echo "NOTE: this kernel cannot execute i686 binaries; i686 row not checked"
  i686_filter='^3\.seqcount_i686_vs_64bit,'
fi
if command -v valgrind >/dev/null 2>&1 &&
    grep -v "$i686_filter" "$out/report.csv" |
    grep -E "\((n/a|0\.00) insns\)"; then
  echo "FAIL: valgrind is installed but an instruction count is missing"
  fail=1
fi
if ! grep -q "<svg" "$out/fold_cost.svg" 2>/dev/null; then
  echo "FAIL: --plot wrote no SVG"
  fail=1
fi

for bin in "$@"; do
  echo "=== $(basename "$bin") --benchmark_min_time=0.01"
  if ! "$bin" --benchmark_min_time=0.01 >"$out/gb.txt" 2>&1; then
    echo "FAIL: $bin exited with an error"
    fail=1
  fi
  cat "$out/gb.txt"
  if ! grep -q "^BM_" "$out/gb.txt"; then
    echo "FAIL: $bin printed no benchmark"
    fail=1
  fi
  if grep -q "ERROR OCCURRED" "$out/gb.txt"; then
    echo "FAIL: $bin reported an error"
    fail=1
  fi
done

if [ "$fail" -ne 0 ]; then
  echo "bench_smoke_test: FAILED"
  exit 1
fi
echo "bench_smoke_test: all rows present, all benchmarks ran"
