#!/usr/bin/env bash
# The vm-aarch64 config of tools/ci.sh: three Bazel builds of the aarch64
# guest, since a TSan binary cannot share a build with static ones:
#   1. //vm:counters_vm_test //vm:hotplug_vm_test   (--config=vm-aarch64)
#   2. //vm:stress_vm_test under TSan               (--config=vm-aarch64-tsan)
#   3. the same with the planted seqcount bug, which MUST fail
#                                                   (--config=vm-aarch64-planted-bug)
# Exit status 0 only if 1 and 2 pass and 3 fails its test.
set -uo pipefail
cd "$(dirname "$0")/.."
status=0
bazel test --test_summary=short --config=vm-aarch64 -- \
  //vm:counters_vm_test //vm:hotplug_vm_test || status=1
bazel test --test_summary=short --config=vm-aarch64-tsan -- \
  //vm:stress_vm_test || status=1
bazel test --test_summary=short --config=vm-aarch64-planted-bug -- \
  //vm:stress_vm_test
rc=$?
# Bazel exits 3 when a test ran and failed: the planted bug was caught.
if [ "$rc" -eq 3 ]; then
  echo "vm-aarch64: planted bug caught inside the guest (ok)"
else
  echo "vm-aarch64: FAILED: the planted bug was not caught (bazel exit $rc)"
  status=1
fi
exit "$status"
