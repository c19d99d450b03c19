#!/usr/bin/env bash
# Instructions per request of one route, counted by callgrind: repeatable where wall-clock
# benchmarks on a small shared machine are not (bench/run.sh varies by up to 25 % between runs of
# the same binary on 2 cores). Used to compare two builds at the 5 % level (issue 16).
#
# Usage: bench/instructions.sh BIN_DIR PATH [N]
#   BIN_DIR  a directory with a release vellum-server
#   PATH     a path on the demo project, e.g. /api/v1/collections/articles/items?per_page=15
#   N        requests counted (default 500), after 50 uncounted warm-up requests
# Environment: VELLUM_CACHE=off to count uncached reads; other VELLUM_* reach the server.
# Needs valgrind (callgrind_control), curl and oha. Run by hand, never in CI.
set -euo pipefail

bin="$1"
path="$2"
n="${3:-500}"
port="${BENCH_PORT:-18191}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export VELLUM_DATABASE_URL="sqlite://$work/vellum.db?mode=rwc"
export VELLUM_FILES_DIR="$work/files"
export VELLUM_LISTEN="127.0.0.1:$port"
export VELLUM_LOG="${VELLUM_LOG:-warn}"
export VELLUM_WORKERS=1
oha="$(command -v oha || echo "$HOME/.cargo/bin/oha")"

# Instrumentation starts off, so start-up, migrations, the demo and the warm-up are not counted.
valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$work/callgrind.out" \
  "$bin/vellum-server" --demo >"$work/server.log" 2>&1 &
pid=$!
for _ in $(seq 1 300); do
  curl -sf "http://127.0.0.1:$port/up" >/dev/null 2>&1 && break
  sleep 0.2
done
url="http://127.0.0.1:$port$path"
for _ in $(seq 1 50); do curl -sf -o /dev/null "$url"; done
callgrind_control -i on "$pid" >/dev/null
"$oha" --no-tui -n "$n" -c 1 "$url" >/dev/null
callgrind_control -i off "$pid" >/dev/null
callgrind_control -d "$pid" >/dev/null
sleep 1
kill "$pid"
wait "$pid" 2>/dev/null || true
total="$(grep -h '^totals:' "$work"/callgrind.out* | awk '{s += $2} END {print s}')"
echo "$(basename "$bin") $path: $((total / n)) instructions per request ($total over $n)"
