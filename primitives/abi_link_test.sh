#!/usr/bin/env bash
# Two translation units built with different configurations must not link
# silently (primitives/internal/abi.h). Builds, with the host compiler, the
# library's contract.cc in one configuration and a user's main
# (testdata/abi_probe_main.cc: U64Stat + rseq.h) in another, then links:
#   * mismatched PERCPU_FORCE_SEQCOUNT or PERCPU_NO_RSEQ: the link must FAIL
#     naming the missing percpu_abi_v1_... tag;
#   * matched configurations: the link must succeed and the program run;
#   * PERCPU_CONTRACT_CHECKS / NDEBUG mismatched: must link (it changes no
#     layout; //primitives:abi_mix_test shows the mix is harmless).
set -euo pipefail

src=${TEST_SRCDIR:-$PWD}/${TEST_WORKSPACE:-percpu}
[[ -f "$src/primitives/contract.cc" ]] || src=$PWD
cxx=${CXX:-g++}
command -v "$cxx" >/dev/null || { echo "FAIL: no host compiler $cxx"; exit 1; }
out=${TEST_TMPDIR:-$(mktemp -d)}/abi
mkdir -p "$out"
fail=0

# build NAME "LIBFLAGS" "MAINFLAGS" EXPECT(link|nolink)
build() {
  local name=$1 libflags=$2 mainflags=$3 expect=$4
  # shellcheck disable=SC2086
  "$cxx" -std=c++17 -c -I"$src" $libflags "$src/primitives/contract.cc" \
    -o "$out/$name.lib.o"
  # shellcheck disable=SC2086
  "$cxx" -std=c++17 -c -I"$src" $mainflags \
    "$src/primitives/testdata/abi_probe_main.cc" -o "$out/$name.main.o"
  if "$cxx" "$out/$name.main.o" "$out/$name.lib.o" -o "$out/$name" \
      2>"$out/$name.link.err"; then
    if [[ $expect == nolink ]]; then
      echo "FAIL: $name: library [$libflags] and main [$mainflags] linked"
      fail=1
      return
    fi
    if ! "$out/$name"; then
      echo "FAIL: $name: linked but the program failed"
      fail=1
      return
    fi
    echo "ok: $name links and runs"
  else
    if [[ $expect == link ]]; then
      echo "FAIL: $name: expected to link"
      cat "$out/$name.link.err"
      fail=1
      return
    fi
    if ! grep -q "undefined reference to .percpu_abi_v1_" \
        "$out/$name.link.err"; then
      echo "FAIL: $name: link failed, but not on the ABI tag:"
      cat "$out/$name.link.err"
      fail=1
      return
    fi
    echo "ok: $name refused to link: $(grep -o 'percpu_abi_v1_[a-z0-9_]*' \
      "$out/$name.link.err" | head -1)"
  fi
}

build matched_default "" "" link
build matched_seqcount "-DPERCPU_FORCE_SEQCOUNT" "-DPERCPU_FORCE_SEQCOUNT" link
build matched_norseq "-DPERCPU_NO_RSEQ" "-DPERCPU_NO_RSEQ" link
build seqcount_main_vs_default_lib "" "-DPERCPU_FORCE_SEQCOUNT" nolink
build default_main_vs_seqcount_lib "-DPERCPU_FORCE_SEQCOUNT" "" nolink
build norseq_main_vs_rseq_lib "" "-DPERCPU_NO_RSEQ" nolink
build rseq_main_vs_norseq_lib "-DPERCPU_NO_RSEQ" "" nolink
build debug_main_vs_release_lib "-DNDEBUG" "-UNDEBUG" link
build release_main_vs_debug_lib "-UNDEBUG" "-DNDEBUG -DPERCPU_CONTRACT_CHECKS=0" link

exit $fail
