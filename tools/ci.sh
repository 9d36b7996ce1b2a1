#!/usr/bin/env bash
# The whole test suite, as CI runs it: every config of .bazelrc that the
# project supports, then a per-config summary. Exit status is non-zero if
# any config failed.
#
#   bash tools/setup.sh && bash tools/ci.sh          # everything
#   bash tools/ci.sh host tsan                        # chosen configs only
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

# name | bazel arguments | targets. Arguments starting with '@' name another
# workspace to test; arguments starting with 'sh:' are a shell command run
# instead of bazel test (no targets), counted as 1 passed or 1 failed by its
# exit status; a name starting with '!' is a check that must FAIL (a
# planted bug the stress tests have to catch).
#
# config_independent: tests whose result no build flag changes (they run
# the host compiler on the sources); they run in the host config only.
CONFIGS=(
  "host||//..."
  # The model checker switches stacks under the sanitizers' feet (it has no
  # fiber annotations): its tests run in the other host configs instead.
  "tsan|--config=tsan --test_tag_filters=-model,-config_independent|//..."
  "tsan-clang|--config=tsan-clang --test_tag_filters=-model,-config_independent|//..."
  # checker_self: the checker's own tests, which do not depend on
  # //primitives, so forcing the primitives' seqcount path changes nothing
  # in them (they run in the host and ubsan configs). benchmark-smoke: the
  # report checks that its rows are produced, and already builds its
  # forced-seqcount and 32-bit rows through transitions in the host config;
  # here and under norseq it only cost a build of the report and ~45 s.
  "seqcount|--config=seqcount --test_tag_filters=-no_forced_seqcount,-checker_self,-benchmark-smoke,-config_independent|//..."
  "tsan-seqcount|--config=tsan-seqcount --test_tag_filters=-model,-config_independent|//..."
  # Under PERCPU_MODEL_CHECK the rseq path is compiled out whatever
  # PERCPU_NO_RSEQ says (internal/rseq_asm.h), so the model tests here would
  # be the host's programs again: they run in host, seqcount and ubsan.
  "norseq|--config=norseq --test_tag_filters=-model,-benchmark-smoke,-config_independent|//..."
  "aarch64|--config=aarch64 --test_tag_filters=-model,-benchmark|//..."
  "aarch64-tsan|--config=aarch64-tsan --test_tag_filters=qemu_tsan|//..."
  "armhf|--config=armhf --test_tag_filters=-model,-benchmark|//..."
  "i686|--config=i686 --test_tag_filters=-model,-benchmark|//..."
  # ASan and UBSan together (one -fsanitize=address,undefined build, which
  # both entries share: the second builds only what the first did not).
  # First the library's own tests; then the checker's self-tests (the
  # checker announces its stack switches to ASan as fibers). The
  # primitives' model tests (their algorithms run under the checker) are
  # left to host and seqcount, and the checker's _sc_check variants (the
  # same engine plus a test-only reference check) to host. Until 0.2.0
  # asan and ubsan were two lanes with two full builds (129 s + 127 s, and
  # 252 s for the checker lane, in one fresh-clone run).
  # per_thread_fork_test is incompatible with ASan (primitives/BUILD says
  # why): it runs in the other configs.
  "asan-ubsan|--config=asan-ubsan --test_tag_filters=-model,-config_independent|//..."
  "checker-asan-ubsan|--config=asan-ubsan --test_tag_filters=checker_self,-sc_check|//..."
  "!planted-bug|--config=planted-bug --test_env=STRESS_DURATION_MS=4000|//stress:u64_stats_stress"
  "!planted-bug-hotplug|--config=planted-bug-hotplug|//stress:percpu_stress"
  "!planted-bug-hotplug-model|--config=planted-bug-hotplug|//verification:fold_hotplug_model_test"
  # The exporter against Debian's prometheus package: promtool check metrics
  # and a real Prometheus scrape (tagged "manual prometheus", so //... in
  # the configs above skips them; a missing binary fails them here).
  "prometheus|--test_tag_filters=prometheus|//examples:promtool_check_test //examples:prometheus_e2e_test"
  # Real kernels under qemu-system-* TCG (docs/vm_lane.md): rseq, sysfs
  # hotplug with the HotplugMonitor, x86_64 ACPI vCPU hot-add/remove; on
  # aarch64 also the stress tests under TSan inside the guest and the planted
  # bug they must catch there (three builds: vm/ci_aarch64.sh).
  "vm-x86_64|--config=vm-x86_64|//vm:counters_vm_test //vm:hotplug_vm_test //vm:hotadd_vm_test //vm:hotadd_fallback_vm_test //vm:hotadd_lag_vm_test"
  "vm-aarch64|sh:bash vm/ci_aarch64.sh|"
  # A separate workspace that depends on percpu as a user's would.
  "consumer|@examples/consumer|//..."
  # The CMake build: configure, build, install to a temporary prefix, then
  # a find_package(percpu) consumer and a pkg-config consumer, each run.
  "cmake|sh:bash tools/cmake_ci.sh|"
  # A bounded libFuzzer run (clang-14 + ASan) of the allocator + hotplug
  # fuzzer over a copy of fuzz/corpus/allocator_hotplug (the corpus itself
  # runs in every config above as //fuzz:allocator_hotplug_regression_test).
  "fuzz|sh:bash fuzz/run_fuzz.sh 60|"
)

wanted=("$@")
declare -a summary
total_passed=0
total_failed=0
status=0
start_all=$(date +%s)

for entry in "${CONFIGS[@]}"; do
  IFS='|' read -r name args targets <<<"$entry"
  expect_failure=0
  if [[ "$name" == !* ]]; then
    expect_failure=1
    name=${name#!}
  fi
  if ((${#wanted[@]})); then
    selected=0
    for w in "${wanted[@]}"; do [[ "$w" == "$name" ]] && selected=1; done
    ((selected)) || continue
  fi
  is_command=0
  [[ "$args" == sh:* ]] && is_command=1
  if ((is_command)); then
    echo "=== config ${name}: ${args#sh:}"
  else
    echo "=== config ${name}: bazel test ${args} ${targets}"
  fi
  log=$(mktemp)
  start=$(date +%s)
  if ((is_command)); then
    bash -c "${args#sh:}" 2>&1 | tee "$log"
  elif [[ "$args" == @* ]]; then
    # Another workspace: its own Bazel server, shut down afterwards.
    # shellcheck disable=SC2086  # targets: a space-separated list
    (cd "${args#@}" && bazel test --test_summary=short -- ${targets} &&
      bazel shutdown) 2>&1 | tee "$log"
  else
    # shellcheck disable=SC2086
    bazel test --build_tests_only --test_summary=short ${args} -- ${targets} 2>&1 | tee "$log"
  fi
  rc=${PIPESTATUS[0]}
  secs=$(($(date +%s) - start))
  passed=$(grep -cE '^//[^ ]+ +(\(cached\) )?PASSED' "$log")
  failed=$(grep -cE '^//[^ ]+ +(\(cached\) )?(FAILED|TIMEOUT|NO STATUS|FLAKY|INCOMPLETE)' "$log")
  if ((is_command)); then
    # A command is one check: its exit status decides.
    passed=$((rc == 0 ? 1 : 0))
    failed=$((1 - passed))
  fi
  # Bazel exits 4 when no test matched: count it as a failure of the config,
  # since every config is meant to run tests.
  if ((expect_failure)); then
    # Bazel exits 3 when tests ran and some failed: the planted bug was
    # caught. Anything else (passed, or did not build) fails the check.
    if [ "$rc" -eq 3 ] && [ "$failed" -gt 0 ]; then
      verdict="ok (failed as expected)"
      passed=1
    else
      status=1
      verdict="FAILED (the planted bug was not caught)"
      passed=0
    fi
    failed=$((1 - passed))
  elif [ "$rc" -ne 0 ] || [ "$passed" -eq 0 ]; then
    status=1
    verdict=FAILED
    [ "$failed" -eq 0 ] && failed=1
  else
    verdict=ok
  fi
  rm -f "$log"
  total_passed=$((total_passed + passed))
  total_failed=$((total_failed + failed))
  summary+=("$(printf '%-14s %-6s %4d passed %4d failed %5ds' "$name" "$verdict" "$passed" "$failed" "$secs")")
done

echo
echo "=== per-config summary"
printf '%s\n' "${summary[@]}"
echo "total time: $(($(date +%s) - start_all))s"
echo "ci: ${total_passed} passed, ${total_failed} failed"
exit "$status"
