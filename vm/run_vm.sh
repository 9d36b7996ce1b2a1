#!/usr/bin/env bash
# Bazel entry point of the VM lane: boots the guest through run_vm.py (next
# to this script in the runfiles). Arguments as run_vm.py's; a single
# argument after "--" is split into words (so BUILD can pass one string).
set -euo pipefail
here=$(dirname "$0")
py="${here}/run_vm.py"
[ -f "$py" ] || py="${TEST_SRCDIR:-.}/${TEST_WORKSPACE:-percpu}/vm/run_vm.py"
opts=()
while (($#)) && [ "$1" != "--" ]; do
  opts+=("$1")
  shift
done
[ "${1:-}" = "--" ] && shift
# shellcheck disable=SC2206
words=($*)
exec /usr/bin/python3 "$py" "${opts[@]}" -- "${words[@]}"
