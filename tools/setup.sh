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
  # The build outside Bazel (tools/cmake_ci.sh): CMake, Ninja, make and
  # pkg-config for the installed-package consumers.
  cmake ninja-build make pkgconf
  # util-linux provides setarch (qemu-aarch64 + TSan needs ASLR off).
  util-linux
  # prometheus and promtool for the exporter's tests (ci.sh config prometheus).
  prometheus
  # The VM lane (docs/vm_lane.md): full-system emulation of x86_64 and
  # aarch64 guests (TCG), and cpio to pack their initramfs.
  qemu-system-x86 qemu-system-arm cpio
  # The VM harness (vm/run_vm.py) is Python 3; readelf comes with binutils.
  python3 binutils
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

# --- VM lane kernels (docs/vm_lane.md) -------------------------------------
# Debian 12's current kernel images for amd64 and arm64, downloaded (never
# installed) and unpacked into a cache folder that the VM tests read:
#   $PERCPU_VM_CACHE/<arch>/boot/vmlinuz-*   (default /var/cache/percpu-vm)
# The version follows Debian's linux-image-<arch> metapackage. Skipped when
# that version is already unpacked.
VM_CACHE=${PERCPU_VM_CACHE:-/var/cache/percpu-vm}
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  echo "setup: adding the arm64 architecture for the aarch64 guest kernel"
  $SUDO dpkg --add-architecture arm64
  $SUDO apt-get update -qq
fi
for arch in amd64 arm64; do
  # "Depends: linux-image-6.1.0-57-amd64" -> linux-image-6.1.0-57-amd64
  pkg=$(apt-cache depends "linux-image-${arch}:${arch}" 2>/dev/null |
    sed -n "s/^ *Depends: \(linux-image-[0-9][^ :]*-${arch}\)\(:${arch}\)\?$/\1/p" |
    grep -v -- '-unsigned' | head -n 1)
  if [ -z "$pkg" ]; then
    $SUDO apt-get update -qq
    pkg=$(apt-cache depends "linux-image-${arch}:${arch}" |
      sed -n "s/^ *Depends: \(linux-image-[0-9][^ :]*-${arch}\)\(:${arch}\)\?$/\1/p" |
      grep -v -- '-unsigned' | head -n 1)
  fi
  if [ -z "$pkg" ]; then
    echo "setup: cannot resolve the Debian kernel package for ${arch}" >&2
    exit 1
  fi
  dest="${VM_CACHE}/${arch}"
  if [ -f "${dest}/.package" ] && [ "$(cat "${dest}/.package")" = "$pkg" ] &&
    ls "${dest}"/boot/vmlinuz-* >/dev/null 2>&1; then
    continue
  fi
  echo "setup: fetching ${pkg} for the VM lane into ${dest}"
  tmp=$(mktemp -d)
  (cd "$tmp" && apt-get download -q "${pkg}:${arch}")
  $SUDO rm -rf "${dest}"
  $SUDO mkdir -p "${dest}"
  $SUDO dpkg-deb -x "$tmp"/*.deb "${dest}"
  echo "$pkg" | $SUDO tee "${dest}/.package" >/dev/null
  rm -rf "$tmp"
done
