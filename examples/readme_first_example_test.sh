#!/usr/bin/env bash
# The README's first code block is exactly the marked region of
# examples/three_lines.cc (which //examples:three_lines builds and runs), so
# the three-line example the README shows is the one that is tested.
set -euo pipefail
readme="$1"
example="$2"
block=$(awk '/^```cpp$/ && !done {on=1; next} on && /^```$/ {exit} on {print}' "$readme")
region=$(awk '/\[README first example\]/ {on=1; next} /\[\/README first example\]/ {exit} on {print}' "$example")
if [ -z "$region" ] || [ "$block" != "$region" ]; then
  echo "FAIL: README's first cpp block differs from the marked region of $example"
  diff <(printf '%s\n' "$block") <(printf '%s\n' "$region") || true
  exit 1
fi
echo "PASS: README's first example is examples/three_lines.cc's"
