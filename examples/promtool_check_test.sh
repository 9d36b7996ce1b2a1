#!/usr/bin/env bash
# `promtool check metrics` on the exporter's output (examples/metrics_server
# --once), in the Prometheus text format with and without the cpu label, and
# in OpenMetrics 1.0 as far as promtool supports it. Needs Debian's
# prometheus package (tools/setup.sh); a missing promtool FAILS this test.
#
# promtool 2.42 parses its input with the Prometheus text parser only. The
# text format must pass cleanly (exit 0, no output). OpenMetrics output must
# parse (no parsing error); the only lint findings allowed are promtool's
# reading of OpenMetrics' "# HELP <name>" + "<name>_total" as a family
# without help, i.e. exactly "<name>_total no help text" for a <name> whose
# HELP line is in the body. (The real Prometheus server parses OpenMetrics
# strictly: //examples:prometheus_e2e_test scrapes it.)
set -euo pipefail

server="$1"
if ! command -v promtool >/dev/null 2>&1; then
  echo "FAIL: promtool not found (install Debian's prometheus package: bash tools/setup.sh)"
  exit 1
fi
tmp="${TEST_TMPDIR:-$(mktemp -d)}"
status=0

for per_cpu in "" "--per_cpu"; do
  "$server" --once --format=text $per_cpu --requests=1000 >"$tmp/text.txt"
  grep -q '^demo_requests_total' "$tmp/text.txt"
  if out=$(promtool check metrics <"$tmp/text.txt" 2>&1); [ -z "$out" ]; then
    echo "PASS: promtool check metrics, text format ${per_cpu}"
  else
    echo "FAIL: promtool check metrics, text format ${per_cpu}:"
    echo "$out"
    status=1
  fi

  "$server" --once --format=openmetrics $per_cpu --requests=1000 >"$tmp/om.txt"
  [ "$(tail -n 1 "$tmp/om.txt")" = "# EOF" ] || { echo "FAIL: no # EOF"; status=1; }
  set +e
  out=$(promtool check metrics <"$tmp/om.txt" 2>&1)
  rc=$?
  set -e
  bad=0
  if [ $rc -ne 0 ] && [ $rc -ne 3 ]; then bad=1; fi  # 3: lint findings only
  while IFS= read -r line; do
    [ -z "$line" ] && continue
    name=${line%_total no help text}
    if [ "$name" = "$line" ] || ! grep -q "^# HELP ${name} " "$tmp/om.txt"; then
      bad=1
      echo "unexpected promtool finding: $line"
    fi
  done <<<"$out"
  if [ $bad -eq 0 ]; then
    echo "PASS: promtool check metrics, OpenMetrics ${per_cpu} (parses; only the text-parser HELP artifact)"
  else
    echo "FAIL: promtool check metrics, OpenMetrics ${per_cpu} (exit $rc):"
    echo "$out"
    status=1
  fi
done
exit $status
