#!/usr/bin/env bash
# The AI chat benchmark of issue 22: release vellum-server replicas against a fake
# OpenAI-compatible provider (fake_provider.py), driven by load.py; prints each result.
#
#   first-delta  100 prompts in turn: how long the provider's first fragment takes to reach the
#                client, with the app's compression on (the client asks for gzip)
#   streams      200 prompts at once, each a 10-second answer: do all complete, and the
#                server's RSS meanwhile (VmRSS sampled every 200 ms, and VmHWM)
#   limit        31 prompts of one user alternating between two replicas sharing Redis: the
#                31st must be 429
#
# Usage: bench/ai/run.sh [SERVER_BIN]   (default ${CARGO_TARGET_DIR:-target}/release/vellum-server;
#        vellum-admin from the same directory)
# Environment: STREAMS [200], PROMPTS [100], REDIS_URL [redis://127.0.0.1:6379]
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
here="$root/bench/ai"
target="${CARGO_TARGET_DIR:-$root/target}"
server_bin="${1:-$target/release/vellum-server}"
admin_bin="$(dirname "$server_bin")/vellum-admin"
streams="${STREAMS:-200}"
prompts="${PROMPTS:-100}"
redis_url="${REDIS_URL:-redis://127.0.0.1:6379}"
work="$(mktemp -d)"
pids=()

cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [ "${BENCH_KEEP:-0}" = 1 ]; then echo "kept $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

for bin in "$server_bin" "$admin_bin"; do
  [ -x "$bin" ] || { echo "no $bin: cargo build --release -p vellum-server -p vellum-admin" >&2; exit 1; }
done
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
wait_port() {
  for _ in $(seq 1 200); do
    if python3 -c "import socket,sys; socket.create_connection(('127.0.0.1', $1), 0.2)" 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  echo "nothing listens on $1" >&2
  exit 1
}

provider_port="$(free_port)"
python3 "$here/fake_provider.py" "$provider_port" &
pids+=($!)
wait_port "$provider_port"

export VELLUM_LOG="${VELLUM_LOG:-warn}"
export VELLUM_FILES_DIR="$work/files"
export VELLUM_DATABASE_URL="sqlite://$work/ai.db?mode=rwc"
export VELLUM_REDIS_URL="$redis_url"
export VELLUM_AI_BASE_URL="http://127.0.0.1:$provider_port/v1"
export VELLUM_AI_MODEL="fake"

"$admin_bin" migrate >/dev/null
"$admin_bin" settings set daily_prompt_limit 0 >/dev/null

start_server() { # NAME: sets $port and $pid
  port="$(free_port)"
  VELLUM_LISTEN="127.0.0.1:$port" VELLUM_BASE_URL="http://127.0.0.1:$port" \
    "$server_bin" >>"$work/$1.log" 2>&1 &
  pid=$!
  pids+=("$pid")
  wait_port "$port"
}
start_server a
port_a="$port" pid_a="$pid"
start_server b
port_b="$port"

# Users: the server allows 30 AI requests a minute per user, so the load is spread over enough.
users=$(( (streams + 24) / 25 ))
: >"$work/cookies"
for i in $(seq 1 $((users + 1))); do
  printf 'bench-password-%s\n' "$i" | "$admin_bin" users create --email "u$i@bench.test" \
    --name "User $i" --role super-admin --password-stdin >/dev/null
  curl -sf -D - -o /dev/null -H 'Accept: application/json' -H 'Content-Type: application/json' \
    -d "{\"email\": \"u$i@bench.test\", \"password\": \"bench-password-$i\"}" \
    "http://127.0.0.1:$port_a/login" |
    tr -d '\r' | sed -n 's/^[Ss]et-[Cc]ookie: \(vellum_session=[^;]*\).*/\1/p' >>"$work/cookies"
done
# The last user is kept fresh for the limit scenario.
limit_cookie="$(tail -n 1 "$work/cookies")"
head -n "$users" "$work/cookies" >"$work/load-cookies"

echo "Vellum AI chat benchmark: $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, server $server_bin"
python3 "$here/load.py" latency "http://127.0.0.1:$port_a" "$work/load-cookies" "$prompts"
# The latency prompts used part of each user's minute; start the next minute afresh.
sleep 61
python3 "$here/load.py" streams "http://127.0.0.1:$port_a" "$work/load-cookies" "$streams" "$pid_a"
python3 "$here/load.py" limit "http://127.0.0.1:$port_a" "http://127.0.0.1:$port_b" "$limit_cookie"
