#!/usr/bin/env bash
# A bounded libFuzzer run of //fuzz:allocator_hotplug_fuzzer (what CI runs,
# see tools/ci.sh), over a COPY of the committed corpus: the inputs libFuzzer
# adds during the run are thrown away, so the corpus in the repository only
# grows when someone adds an input on purpose (docs/percpu_alloc.md,
# "Fuzzing").
#
#   bash fuzz/run_fuzz.sh            # 60 seconds
#   bash fuzz/run_fuzz.sh 3600       # an hour
#
# Environment:
#   BAZEL               the bazel command (default: bazel)
#   BAZEL_STARTUP       startup options, e.g. "--output_base=/tmp/fuzz_ob"
#   BAZEL_BUILD_ARGS    more build options, e.g. "--symlink_prefix=/"
#   FUZZ_ARTIFACTS      where a crashing input is written (default: a new
#                       directory under ${TMPDIR:-/tmp}, kept on failure)
#   FUZZ_KEEP_CORPUS    a directory to copy the grown corpus into (optional)
#   FUZZ_EXTRA_ARGS     more libFuzzer flags, e.g. "-jobs=2 -workers=2"
#
# Exit status: 0 if the run ended without a crash, non-zero if the build
# failed or libFuzzer found an input that crashes or disagrees with the
# model (the input's path and a command to reproduce it are printed).
set -euo pipefail
cd "$(dirname "$0")/.."

secs=${1:-60}
if ! [[ "$secs" =~ ^[0-9]+$ ]] || [ "$secs" -eq 0 ]; then
  echo "usage: $0 [seconds > 0]" >&2
  exit 2
fi
bazel=${BAZEL:-bazel}
# shellcheck disable=SC2206
startup=(${BAZEL_STARTUP:-})
# shellcheck disable=SC2206
build_args=(--config=fuzz ${BAZEL_BUILD_ARGS:-})
target=//fuzz:allocator_hotplug_fuzzer

"$bazel" "${startup[@]}" build "${build_args[@]}" "$target"
bin="$("$bazel" "${startup[@]}" info "${build_args[@]}" bazel-bin 2>/dev/null)/fuzz/allocator_hotplug_fuzzer"
if [ ! -x "$bin" ]; then
  echo "run_fuzz: $bin was not built" >&2
  exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/percpu-fuzz.XXXXXX")
artifacts=${FUZZ_ARTIFACTS:-$work/artifacts}
mkdir -p "$work/corpus" "$artifacts"
cp fuzz/corpus/allocator_hotplug/* "$work/corpus/"
seeds=$(find "$work/corpus" -type f | wc -l)

echo "=== fuzzing $target for ${secs}s over a copy of $seeds corpus input(s)"
set +e
# -timeout: one input taking 30 s is a hang. -rss_limit_mb: libFuzzer's
# default (2 GiB); the harness bounds an input's live objects. -max_len:
# room for a few hundred operations (the seeds are much shorter).
# shellcheck disable=SC2086
ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1} \
  "$bin" -max_total_time="$secs" -timeout=30 -rss_limit_mb=2048 -max_len=2048 \
  -print_final_stats=1 -artifact_prefix="$artifacts/" \
  ${FUZZ_EXTRA_ARGS:-} "$work/corpus" 2>&1 | tee "$work/log"
rc=${PIPESTATUS[0]}
set -e

runs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$work/log" | grep -oE '[0-9]+$' || true)
rate=$(grep -oE 'stat::average_exec_per_sec: *[0-9]+' "$work/log" | grep -oE '[0-9]+$' || true)
grown=$(find "$work/corpus" -type f | wc -l)
if [ -n "${FUZZ_KEEP_CORPUS:-}" ]; then
  mkdir -p "$FUZZ_KEEP_CORPUS"
  cp "$work/corpus"/* "$FUZZ_KEEP_CORPUS/"
fi

crashes=$(find "$artifacts" -type f | sort)
if [ "$rc" -ne 0 ] || [ -n "$crashes" ]; then
  echo "=== run_fuzz: FAILED (libFuzzer exit $rc) after ${runs:-?} runs"
  for c in $crashes; do
    echo "  input: $c"
    echo "  replay: PERCPU_FUZZ_TRACE=1 $bin $c"
  done
  echo "  keep it: cp INPUT fuzz/corpus/allocator_hotplug/crash-NAME" \
       "(see docs/percpu_alloc.md, Fuzzing)"
  exit 1
fi
rm -rf "$work"
echo "=== run_fuzz: ok, ${runs:-?} runs (${rate:-?}/s), corpus $seeds -> $grown (copy discarded)"
