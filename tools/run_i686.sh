#!/usr/bin/env bash
# Runs an i686 (32-bit x86, static) test binary: natively where the kernel
# executes 32-bit x86 code, else under qemu-i386. Some x86_64 kernels (and
# sandboxed VMs) refuse 32-bit ELF files with "Exec format error" although
# the CPU runs them; the test must still run, not be skipped.
#
# The decision comes from a probe, not from the test binary itself: an
# 93-byte static ELF32 program (xor ebx,ebx; mov eax,1; int 0x80 -- exit(0))
# written to a temporary file and executed once.
set -u
probe=$(mktemp "${TMPDIR:-/tmp}/percpu-i686-probe.XXXXXX") || exit 1
printf '\177\105\114\106\001\001\001\000\000\000\000\000\000\000\000\000\002\000\003\000\001\000\000\000\124\200\004\010\064\000\000\000\000\000\000\000\000\000\000\000\064\000\040\000\001\000\000\000\000\000\000\000\001\000\000\000\000\000\000\000\000\200\004\010\000\200\004\010\135\000\000\000\135\000\000\000\005\000\000\000\000\020\000\000\061\333\270\001\000\000\000\315\200' >"$probe"
chmod +x "$probe"
if "$probe" 2>/dev/null; then
  rm -f "$probe"
  exec "$@"
fi
rm -f "$probe"
if ! command -v qemu-i386 >/dev/null; then
  echo "run_i686: this kernel cannot execute i686 binaries and qemu-i386 is missing (apt-get install qemu-user)" >&2
  exit 1
fi
# Emulated: the stress loops run a quarter of their iterations
# (primitives/internal/test_work.h), as in the other qemu-user lanes.
export PERCPU_TEST_WORK_DIVISOR=${PERCPU_TEST_WORK_DIVISOR:-4}
# Tests that qemu-i386 cannot run reliably skip themselves (reported as
# skipped): primitives/cpu_slot_test.cc's signals case.
export PERCPU_QEMU_I386=1
exec qemu-i386 "$@"
