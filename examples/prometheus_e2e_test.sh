#!/usr/bin/env bash
# End to end: a real Prometheus server (Debian's prometheus package) on
# 127.0.0.1 scrapes examples/metrics_server every second and the counters'
# values are read back through Prometheus's HTTP API (/api/v1/query).
#
# Two endpoints: one negotiates (Prometheus 2.42 asks for OpenMetrics first,
# so its strict OpenMetrics parser reads our output), one forces the
# Prometheus text format. Loopback only, temp config and storage, free
# ports, bounded in time (DEADLINE seconds); every process it starts is
# killed on exit. A missing prometheus binary FAILS the test.
set -uo pipefail

server="$1"
DEADLINE=${DEADLINE:-90}
if ! command -v prometheus >/dev/null 2>&1; then
  echo "FAIL: prometheus not found (install Debian's prometheus package: bash tools/setup.sh)"
  exit 1
fi
tmp="$(mktemp -d "${TEST_TMPDIR:-/tmp}/prom_e2e.XXXXXX")"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT
start=$(date +%s)
elapsed() { echo $(($(date +%s) - start)); }

# A raw HTTP GET on 127.0.0.1 (no curl needed): prints the body.
http_get() {  # port path
  local port=$1 path=$2 reply
  exec 3<>"/dev/tcp/127.0.0.1/$port" || return 1
  printf 'GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n' "$path" >&3
  reply=$(timeout 5 cat <&3)
  exec 3<&-
  printf '%s' "${reply#*$'\r\n\r\n'}"
}

wait_file() {  # path
  while [ ! -s "$1" ]; do
    if [ "$(elapsed)" -ge "$DEADLINE" ]; then return 1; fi
    sleep 0.1
  done
}

# The two exporters (ports chosen by the kernel, written to files).
"$server" --port=0 --port_file="$tmp/om.port" --format=auto \
  --requests=12345 --seconds="$DEADLINE" 2>"$tmp/om.log" >/dev/null &
pids+=($!)
"$server" --port=0 --port_file="$tmp/text.port" --format=text --per_cpu \
  --requests=777 --seconds="$DEADLINE" 2>"$tmp/text.log" >/dev/null &
pids+=($!)
wait_file "$tmp/om.port" && wait_file "$tmp/text.port" || {
  echo "FAIL: the metrics servers did not start"; exit 1; }
om_port=$(cat "$tmp/om.port")
text_port=$(cat "$tmp/text.port")

cat >"$tmp/prometheus.yml" <<YAML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: om
    static_configs:
      - targets: ['127.0.0.1:${om_port}']
  - job_name: text
    static_configs:
      - targets: ['127.0.0.1:${text_port}']
YAML

# A free loopback port for Prometheus itself: retry if another process
# takes it first.
prom_port=""
for attempt in 1 2 3 4 5; do
  port=$((20000 + RANDOM % 40000))
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then continue; fi
  prometheus --config.file="$tmp/prometheus.yml" \
    --storage.tsdb.path="$tmp/data" \
    --web.listen-address="127.0.0.1:${port}" \
    --log.level=warn >"$tmp/prometheus.log" 2>&1 &
  ppid=$!
  pids+=($ppid)
  ready=0
  while [ "$(elapsed)" -lt "$DEADLINE" ] && kill -0 "$ppid" 2>/dev/null; do
    if [ "$(http_get "$port" /-/ready 2>/dev/null)" != "" ]; then ready=1; break; fi
    sleep 0.2
  done
  if [ $ready -eq 1 ]; then prom_port=$port; break; fi
  kill "$ppid" 2>/dev/null
done
if [ -z "$prom_port" ]; then
  echo "FAIL: prometheus did not become ready"; cat "$tmp/prometheus.log"; exit 1
fi
echo "prometheus on 127.0.0.1:${prom_port}, exporters on ${om_port} (negotiated) and ${text_port} (text, cpu label)"

# Polls an instant query until its (single) value equals the expected one.
expect_value() {  # promql(url-encoded) expected
  local body value
  while [ "$(elapsed)" -lt "$DEADLINE" ]; do
    body=$(http_get "$prom_port" "/api/v1/query?query=$1" 2>/dev/null)
    value=$(printf '%s' "$body" | sed -n 's/.*"value":\[[0-9.]*,"\([0-9.e+]*\)"\].*/\1/p')
    if [ "$value" = "$2" ]; then
      echo "PASS: $1 = $value (after $(elapsed) s)"
      return 0
    fi
    sleep 0.5
  done
  echo "FAIL: $1: wanted $2, last answer: $body"
  return 1
}

status=0
expect_value 'demo_requests_total%7Bjob%3D%22om%22%7D' 12345 || status=1
expect_value 'demo_rx_bytes_total%7Bjob%3D%22om%22%7D' $((64 * 12345)) || status=1
expect_value 'demo_rx_packets_total%7Bjob%3D%22om%22%7D' 12345 || status=1
# The text target has one series per CPU: their sum is the total.
expect_value 'sum(demo_requests_total%7Bjob%3D%22text%22%7D)' 777 || status=1
expect_value 'sum(demo_rx_bytes_total%7Bjob%3D%22text%22%7D)' $((64 * 777)) || status=1
expect_value 'up%7Bjob%3D%22om%22%7D' 1 || status=1

# The negotiated endpoint really served OpenMetrics to Prometheus.
if grep -q 'GET /metrics -> openmetrics' "$tmp/om.log"; then
  echo "PASS: Prometheus scraped OpenMetrics from the negotiating endpoint"
else
  echo "FAIL: the negotiating endpoint never served OpenMetrics"; status=1
fi
if ! grep -q 'GET /metrics -> text' "$tmp/text.log"; then
  echo "FAIL: the text endpoint was never scraped"; status=1
fi
if [ $status -ne 0 ]; then
  echo "--- prometheus log"; cat "$tmp/prometheus.log"
  echo "--- targets"; http_get "$prom_port" /api/v1/targets; echo
fi
exit $status
