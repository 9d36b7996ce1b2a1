#!/usr/bin/env bash
# The build outside Bazel, as CI runs it (tools/ci.sh config "cmake"):
# configures and builds percpu with CMake, installs it to a temporary
# prefix, then builds and runs two separate consumers of the installed
# copy: one with find_package(percpu), one with pkg-config. Each consumer
# checks its counts and exits non-zero if they are wrong.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix="$work/prefix"
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)

echo "--- percpu: configure, build, install to $prefix"
cmake "${gen[@]}" -S "$root" -B "$work/build" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_INSTALL_PREFIX="$prefix"
cmake --build "$work/build" --parallel 2
cmake --install "$work/build"

echo "--- consumer with find_package(percpu)"
cmake "${gen[@]}" -S "$root/examples/cmake_consumer" -B "$work/cmake_consumer" \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release
cmake --build "$work/cmake_consumer"
"$work/cmake_consumer/cmake_consumer"

echo "--- consumer with pkg-config"
cp -R "$root/examples/pkgconfig_consumer" "$work/pkgconfig_consumer"
pcdir=$(dirname "$(find "$prefix" -name percpu.pc -print -quit)")
PKG_CONFIG_PATH="$pcdir" make -C "$work/pkgconfig_consumer" run

echo "cmake: OK (built, installed, both consumers passed)"
