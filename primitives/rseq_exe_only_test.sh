#!/usr/bin/env bash
# Issue 14: on x86_64 the rseq sequences skip the disarming store of
# rseq_cs in code compiled for an executable (-fPIE / non-PIC) and instead
# carry a PC-relative relocation against __rseq_offset that ld refuses in a
# shared object. Checks, with the host compiler and linker:
#   * -fPIC objects keep the store (they may be dlclose()d) and link into a
#     shared object;
#   * -fPIE, -fno-pic and -fPIE -mno-direct-extern-access objects have no
#     store and FAIL to link into a shared object;
#   * the -fPIE object links and runs as a PIE executable, the -fno-pic one
#     as a static executable, and their adds are counted;
#   * -DPERCPU_RSEQ_ALWAYS_DISARM keeps the store in -fPIE code.
set -euo pipefail

src=${TEST_SRCDIR:-$PWD}/${TEST_WORKSPACE:-percpu}
[[ -f "$src/primitives/internal/rseq_asm.h" ]] || src=$PWD
cxx=${CXX:-g++}
command -v "$cxx" >/dev/null || { echo "FAIL: no host compiler $cxx"; exit 1; }
command -v objdump >/dev/null || { echo "FAIL: no objdump"; exit 1; }
out=${TEST_TMPDIR:-$(mktemp -d)}/exe_only
mkdir -p "$out"
fail=0

cat > "$out/add.cc" <<'CC'
#include <sys/rseq.h>
#include <cstdio>
#include "primitives/internal/rseq_asm.h"
struct alignas(64) Slot { unsigned long long v = 0; };
static Slot slots[4096];
static uintptr_t base = reinterpret_cast<uintptr_t>(slots);
static uint32_t n = 4096;
extern "C" int add_one() {
  return percpu::internal::RseqTryAddU64Shift<6>(base, n, 1) ? 1 : 0;
}
extern "C" unsigned long long total() {
  unsigned long long t = 0;
  for (const Slot& s : slots) t += s.v;
  return t;
}
#ifdef WITH_MAIN
int main() {
  if (__rseq_size == 0) { std::puts("SKIPRUN"); return 0; }
  int ok = 0;
  for (int i = 0; i < 100000; ++i) ok += add_one();
  std::printf("%d %llu\n", ok, total());
  return ok == 100000 && total() == 100000 ? 0 : 1;
}
#endif
CC

stores() {  # number of "movq $0x0,%fs:..." (the disarm) in an object
  objdump -d --no-show-raw-insn "$1" | grep -c 'movq *\$0x0,%fs:' || true
}
compile() {  # name flags...
  local name=$1; shift
  "$cxx" -std=c++20 -O2 -I"$src" "$@" -c "$out/add.cc" -o "$out/$name.o"
}

compile pic -fPIC
[[ $(stores "$out/pic.o") -ge 1 ]] || { echo "FAIL: -fPIC object has no disarming store"; fail=1; }
"$cxx" -shared "$out/pic.o" -o "$out/pic.so" || { echo "FAIL: -fPIC object does not link into a shared object"; fail=1; }

for variant in "pie:-fPIE" "nopic:-fno-pic" "noextern:-fPIE -mno-direct-extern-access"; do
  name=${variant%%:*}; flags=${variant#*:}
  # shellcheck disable=SC2086
  compile "$name" $flags
  [[ $(stores "$out/$name.o") -eq 0 ]] || { echo "FAIL: $flags object still disarms"; fail=1; }
  if "$cxx" -shared "$out/$name.o" -o "$out/$name.so" 2>"$out/$name.err"; then
    echo "FAIL: $flags object linked into a shared object"; fail=1
  elif [[ $name != nopic ]] && ! grep -q '__rseq_offset' "$out/$name.err"; then
    # (non-PIC code fails there for its own absolute relocations too)
    echo "FAIL: $flags shared link failed for another reason:"; cat "$out/$name.err"; fail=1
  fi
done

compile always -fPIE -DPERCPU_RSEQ_ALWAYS_DISARM
[[ $(stores "$out/always.o") -ge 1 ]] || { echo "FAIL: PERCPU_RSEQ_ALWAYS_DISARM did not keep the store"; fail=1; }

"$cxx" -std=c++20 -O2 -I"$src" -fPIE -pie -DWITH_MAIN "$out/add.cc" -o "$out/pie_exe"
"$cxx" -std=c++20 -O2 -I"$src" -fno-pic -no-pie -static -DWITH_MAIN "$out/add.cc" -o "$out/static_exe"
for exe in pie_exe static_exe; do
  if ! r=$("$out/$exe"); then echo "FAIL: $exe: $r"; fail=1; else echo "$exe: $r"; fi
done

[[ $fail -eq 0 ]] && echo PASS
exit $fail
