# Sourced by relacy_examples.sh and relacy_tests.sh: lays out a scratch
# workdir with a real Relacy tree (real/) and this checker laid out as
# Relacy's relacy/ directory (ours/), each with a copy of the Relacy
# checkout's directory SUBDIR (example or test), and builds the checker's
# engine into out/engine.o. Uses CXX, FLAGS and ROOT of the caller.
#
#   relacy_workdir WORK MARKER RELACY SUBDIR
relacy_workdir() {
  local work=$1 marker=$2 relacy=$3 subdir=$4
  if [[ -e $work && ! -e $work/$marker ]]; then
    echo "$work exists and is not a workdir of this script; not removing it" >&2
    return 1
  fi
  rm -rf "$work" && mkdir -p "$work/real" "$work/ours/relacy/internal" "$work/out"
  touch "$work/$marker"
  cp -r "$relacy/relacy" "$relacy/$subdir" "$work/real/"
  cp -r "$relacy/$subdir" "$work/ours/"
  cp -r "$ROOT"/verification/relacy/. "$work/ours/relacy/"
  cp "$ROOT/verification/internal/engine.h" "$work/ours/relacy/internal/"
  "$CXX" "${FLAGS[@]}" -c -iquote "$work/ours/relacy" \
    "$ROOT/verification/internal/engine.cc" -o "$work/out/engine.o"
}
