#!/usr/bin/env bash
# Installs, from Debian 12 packages only, exactly what percpu needs to build,
# test and benchmark on all four targets. Idempotent: packages already present
# are not reinstalled and apt-get update runs only when something is missing.
set -euo pipefail

PACKAGES=(
  # Build system: Debian's Bazel 4.2.3 and the rules it does not reference.
  bazel-bootstrap bazel-rules-cc bazel-rules-java
  # Host toolchains: gcc 12 (default) and clang-14 with its sanitizer runtimes.
  g++ clang-14 libclang-rt-14-dev
  # Header-only libraries: doctest for unit tests, Boost.Atomic for
  # boost::atomic_ref under C++17, Google Benchmark for bench/.
  doctest-dev libboost-atomic-dev libbenchmark-dev
  # Cross toolchains and user-mode emulation for aarch64, armhf and i686.
  crossbuild-essential-arm64 crossbuild-essential-armhf crossbuild-essential-i386
  qemu-user libtsan2-arm64-cross
  # Instruction counts for benchmarks; plots for the report.
  valgrind gnuplot-nox
  # util-linux provides setarch (qemu-aarch64 + TSan needs ASLR off).
  util-linux
  # prometheus and promtool for the exporter's tests (ci.sh config prometheus).
  prometheus
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
