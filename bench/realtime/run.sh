#!/usr/bin/env bash
# The realtime benchmark of issue 20: release vellum-server processes driven by
# vellum-bench-realtime, one scenario after the other; prints each scenario's table and a summary.
#
#   hold      one server (SQLite) holding $SOCKETS subscribed sockets: connected, failures, RSS
#   redis     two replicas (one SQLite file, fan-out over Redis): client events at $RATE/s to
#             $SUBSCRIBERS subscribers; loss and delivery p50/p95/p99/max
#   redis-stalled    the same with $STALLED subscribers that stop reading: are they dropped
#             (4200) without slowing the others?
#   redis-presence   one user in two tabs on the two replicas: one member_added, one member_removed
#   pg, pg-stalled, pg-presence   the same three on two replicas sharing a fresh PostgreSQL
#             database, fan-out over LISTEN/NOTIFY (no Redis)
#   chat      team chat (issue 21): one server (SQLite), $CHAT_SUBSCRIBERS sockets on a direct
#             thread's presence channel, a signed-in member posting $CHAT_RATE messages/s through
#             POST /chat/{chat}/messages: request latency and delivery latency
#
# Usage: bench/realtime/run.sh [SERVER_BIN [CLIENT_BIN]]
#   SERVER_BIN default ${CARGO_TARGET_DIR:-target}/release/vellum-server (build it first:
#   cargo build --release -p vellum-server); CLIENT_BIN default the same directory's
#   vellum-bench-realtime, built here when missing.
# Environment (defaults in brackets):
#   SCENARIOS        space-separated names to run [hold redis redis-stalled redis-presence pg pg-stalled pg-presence chat]
#   CHAT_SUBSCRIBERS [1000]  CHAT_RATE [20]  CHAT_POSTERS [2]
#   SOCKETS [5000]   HOLD_SECONDS [20]
#   SUBSCRIBERS [5000]  RATE [20]  BENCH_SECONDS [30]  PUBLISHERS [4]  PAYLOAD_BYTES [0]
#   STALLED [20]  STALLED_SECONDS [$BENCH_SECONDS]
#   STALL_FLOOD_BYTES [60000]: the stalled sockets also join a channel of their own flooded with
#   events this big (8/s), so the megabytes of kernel buffers in front of the server's queue
#   fill within seconds while the healthy subscribers get exactly what they got in `redis`/`pg`
#   REDIS_URL [redis://127.0.0.1:6379]
#   PG_URL [postgres://postgres@127.0.0.1:5432/postgres]: a server where a database may be
#   created; PG_DATABASE [vellum_rt_bench] is created there (replacing a leftover) and dropped
#   at the end
#   BENCH_OUT [target/bench-realtime]: results.jsonl (one JSON line per scenario)
#   BENCH_KEEP=1     keep the temporary directory (SQLite file, server logs)
#   VELLUM_LOG [warn] and any other VELLUM_* variable are passed to the servers
# Needs curl, python3 (free ports, summary), psql for the pg scenarios, a Redis for the redis
# ones. Run by hand, never in CI; the client shares the machine with the servers, so its own
# CPU use is part of the latency it measures.
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
target="${CARGO_TARGET_DIR:-$root/target}"
server_bin="${1:-$target/release/vellum-server}"
client_bin="${2:-$(dirname "$server_bin")/vellum-bench-realtime}"
scenarios="${SCENARIOS:-hold redis redis-stalled redis-presence pg pg-stalled pg-presence chat}"
chat_subscribers="${CHAT_SUBSCRIBERS:-1000}"
chat_rate="${CHAT_RATE:-20}"
chat_posters="${CHAT_POSTERS:-2}"
sockets="${SOCKETS:-5000}"
hold_seconds="${HOLD_SECONDS:-20}"
subscribers="${SUBSCRIBERS:-5000}"
rate="${RATE:-20}"
seconds="${BENCH_SECONDS:-30}"
publishers="${PUBLISHERS:-4}"
payload="${PAYLOAD_BYTES:-0}"
stalled="${STALLED:-20}"
stalled_seconds="${STALLED_SECONDS:-$seconds}"
stall_flood="${STALL_FLOOD_BYTES:-60000}"
redis_url="${REDIS_URL:-redis://127.0.0.1:6379}"
pg_url="${PG_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
pg_database="${PG_DATABASE:-vellum_rt_bench}"
out="${BENCH_OUT:-$root/target/bench-realtime}"
work="$(mktemp -d)"
results="$work/results.jsonl"
: >"$results"
pids=()
pg_created=0

export VELLUM_LOG="${VELLUM_LOG:-warn}"
export VELLUM_REALTIME_KEY="bench-key"
export VELLUM_REALTIME_SECRET="bench-secret-$RANDOM$RANDOM"
export VELLUM_REALTIME_CLIENT_EVENTS=true
# Every load socket comes from 127.0.0.1.
export VELLUM_REALTIME_MAX_CONNECTIONS_PER_ADDRESS=100000
export VELLUM_FILES_DIR="$work/files"

stop_servers() {
  local pid
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  pids=()
}

cleanup() {
  stop_servers
  if [ "$pg_created" = 1 ]; then
    psql -q "$pg_url" -c "DROP DATABASE IF EXISTS $pg_database WITH (FORCE)" >/dev/null 2>&1 || true
  fi
  if [ "${BENCH_KEEP:-0}" = 1 ]; then echo "kept $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

wanted() { [[ " $scenarios " == *" $1 "* ]]; }
wanted_prefix() { [[ " $scenarios " == *" $1"* ]]; }

if [ ! -x "$server_bin" ]; then
  echo "no server binary at $server_bin: cargo build --release -p vellum-server" >&2
  exit 1
fi
if [ ! -x "$client_bin" ]; then
  echo "building the load client ..." >&2
  cargo build --release --quiet -p vellum-bench-realtime --manifest-path "$root/Cargo.toml"
  client_bin="$target/release/vellum-bench-realtime"
fi

# Each socket is a file descriptor on both ends; 5,000 need more than the usual 1,024.
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
echo "open files limit: $(ulimit -n)" >&2

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# start_server NAME DATABASE_URL [REDIS_URL]: starts one replica on a free port and waits until
# it is ready; sets $port and $pid.
start_server() {
  local name="$1" database="$2" redis="${3:-}"
  port="$(free_port)"
  if [ -n "$redis" ]; then
    VELLUM_DATABASE_URL="$database" VELLUM_LISTEN="127.0.0.1:$port" \
      VELLUM_BASE_URL="http://127.0.0.1:$port" VELLUM_REDIS_URL="$redis" \
      "$server_bin" >>"$work/$name.log" 2>&1 &
  else
    VELLUM_DATABASE_URL="$database" VELLUM_LISTEN="127.0.0.1:$port" \
      VELLUM_BASE_URL="http://127.0.0.1:$port" \
      env -u VELLUM_REDIS_URL "$server_bin" >>"$work/$name.log" 2>&1 &
  fi
  pid=$!
  pids+=("$pid")
  local _
  for _ in $(seq 300); do
    if curl -sf -o /dev/null "http://127.0.0.1:$port/health/ready"; then
      echo "$name: pid $pid on port $port" >&2
      return
    fi
    if ! kill -0 "$pid" 2>/dev/null; then break; fi
    sleep 0.2
  done
  echo "$name did not become ready; its log:" >&2
  cat "$work/$name.log" >&2
  exit 1
}

client() { # SCENARIO SUBCOMMAND ARGS…: runs the client, its table on stderr, its JSON to results
  local name="$1"
  shift
  echo >&2
  echo "== $name" >&2
  local status=0
  "$client_bin" "$@" --key "$VELLUM_REALTIME_KEY" --secret "$VELLUM_REALTIME_SECRET" \
    >"$work/$name.json" || status=$?
  python3 - "$name" "$status" "$work/$name.json" >>"$results" <<'PY'
import json, sys
name, status, path = sys.argv[1:]
lines = [l for l in open(path) if l.strip()]
print(json.dumps({"name": name, "exit": int(status), "report": json.loads(lines[-1]) if lines else None}))
PY
}

deliver() { # NAME STALLED SECONDS FLOOD_BYTES: on the pair in $url_a/$pid_a, $url_b/$pid_b
  local name="$1" stalled_n="$2" secs="$3" flood="$4"
  client "$name" deliver --url "$url_a" --url "$url_b" --server-pid "$pid_a" --server-pid "$pid_b" \
    --subscribers "$subscribers" --rate "$rate" --seconds "$secs" --publishers "$publishers" \
    --payload-bytes "$payload" --stalled "$stalled_n" --stall-flood-bytes "$flood"
}

pair_scenarios() { # PREFIX
  local prefix="$1"
  if wanted "$prefix"; then deliver "$prefix" 0 "$seconds" 0; fi
  if wanted "$prefix-stalled"; then
    deliver "$prefix-stalled" "$stalled" "$stalled_seconds" "$stall_flood"
  fi
  if wanted "$prefix-presence"; then
    client "$prefix-presence" presence --url "$url_a" --url "$url_b"
  fi
}

if wanted hold; then
  start_server hold "sqlite://$work/hold.db?mode=rwc"
  client hold hold --url "ws://127.0.0.1:$port" --sockets "$sockets" --server-pid "$pid" \
    --seconds "$hold_seconds"
  stop_servers
fi

if wanted_prefix redis; then
  # Two processes on one SQLite file: the first creates the schema before the second starts.
  start_server redis-a "sqlite://$work/redis.db?mode=rwc" "$redis_url"
  url_a="ws://127.0.0.1:$port" pid_a="$pid"
  start_server redis-b "sqlite://$work/redis.db?mode=rwc" "$redis_url"
  url_b="ws://127.0.0.1:$port" pid_b="$pid"
  pair_scenarios redis
  stop_servers
fi

if wanted_prefix pg; then
  PGOPTIONS="-c client_min_messages=warning" \
    psql -q "$pg_url" -c "DROP DATABASE IF EXISTS $pg_database WITH (FORCE)" >/dev/null
  psql -q "$pg_url" -c "CREATE DATABASE $pg_database" >/dev/null
  pg_created=1
  pg_db_url="${pg_url%/*}/$pg_database"
  start_server pg-a "$pg_db_url"
  url_a="ws://127.0.0.1:$port" pid_a="$pid"
  start_server pg-b "$pg_db_url"
  url_b="ws://127.0.0.1:$port" pid_b="$pid"
  pair_scenarios pg
  stop_servers
fi

if wanted chat; then
  admin_bin="$(dirname "$server_bin")/vellum-admin"
  [ -x "$admin_bin" ] || { echo "no $admin_bin: cargo build --release -p vellum-admin" >&2; exit 1; }
  chat_db="sqlite://$work/chat.db?mode=rwc"
  start_server chat "$chat_db"
  make_user() { # NAME: creates NAME@bench.test, prints its id
    printf 'bench-password-%s\n' "$1" | VELLUM_DATABASE_URL="$chat_db" "$admin_bin" users create \
      --email "$1@bench.test" --name "$1" --role super-admin --password-stdin |
      tail -n 1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])'
  }
  make_user ada >/dev/null
  bob_id="$(make_user bob)"
  login() { # EMAIL PASSWORD: prints the vellum_session=… pair
    curl -sf -D - -o /dev/null -H 'Accept: application/json' -H 'Content-Type: application/json' \
      -d "{\"email\": \"$1\", \"password\": \"$2\"}" "http://127.0.0.1:$port/login" |
      tr -d '\r' | sed -n 's/^[Ss]et-[Cc]ookie: \(vellum_session=[^;]*\).*/\1/p'
  }
  cookie="$(login ada@bench.test bench-password-ada)"
  chat_id="$(curl -sf -H 'Accept: application/json' -H 'Content-Type: application/json' -H "Cookie: $cookie" \
    -d "{\"kind\": \"direct\", \"user_ids\": [$bob_id]}" "http://127.0.0.1:$port/chat/threads" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["id"])')"
  VELLUM_BENCH_COOKIE="$cookie" client chat chat --url "ws://127.0.0.1:$port" --http "http://127.0.0.1:$port" \
    --chat "$chat_id" --subscribers "$chat_subscribers" --rate "$chat_rate" --posters "$chat_posters" \
    --seconds "$seconds"
  stop_servers
fi

mkdir -p "$out"
cp "$results" "$out/results.jsonl"
echo
echo "Vellum realtime benchmark: $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, server $server_bin"
python3 - "$out/results.jsonl" <<'PY'
import json, sys
failed = False
for line in open(sys.argv[1]):
    r = json.loads(line)
    d, name = r["report"] or {}, r["name"]
    if r["exit"] != 0:
        failed = True
    if d.get("scenario") == "hold":
        mem = d.get("server_end") or {}
        print(f"{name:16} {d['connected']}/{d['sockets']} sockets held, failures {sum(d['failures'].values())}, "
              f"server RSS {mem.get('rss_mib')} MiB (HWM {mem.get('hwm_mib')} MiB, "
              f"{d.get('server_kib_per_socket')} KiB/socket)")
    elif d.get("scenario") == "deliver":
        lat = d.get("latency") or {}
        cross = d.get("latency_cross_replica") or {}
        line = (f"{name:16} {d['healthy_subscribers']} subscribers, {d['published']} events at {d['rate']}/s: "
                f"loss {d['loss_pct']} %, p50 {lat.get('p50_ms')} p95 {lat.get('p95_ms')} "
                f"p99 {lat.get('p99_ms')} max {lat.get('max_ms')} ms (cross-replica p99 {cross.get('p99_ms')})")
        if d["stalled"]:
            secs = d.get("stalled_dropped_by_server_secs") or []
            span = f" ({min(secs):.0f}-{max(secs):.0f} s in)" if secs else ""
            line += (f"; stalled dropped by the server: {d.get('stalled_dropped_by_server', 0)}/{d['stalled']}"
                     f"{span}, 4200 frames read: {d['stalled_closed_4200']}")
        cpu = ", ".join(f"{c['process']} {c['percent']:.0f}%" for c in d.get("cpu_percent", []))
        line += f"; CPU {cpu}"
        print(line)
    elif d.get("scenario") == "chat":
        req, dl = d.get("request") or {}, d.get("delivery") or {}
        print(f"{name:16} {d['subscribers']} subscribers, {d['posted']} messages posted: request p50 {req.get('p50_ms')} "
              f"p99 {req.get('p99_ms')} ms; delivery p50 {dl.get('p50_ms')} p99 {dl.get('p99_ms')} max {dl.get('max_ms')} ms; "
              f"{d['delivered']}/{d['expected_deliveries']} delivered")
    elif d.get("scenario") == "presence":
        print(f"{name:16} member_added {d['member_added']} member_removed {d['member_removed']} "
              f"(expect 1 each): {'ok' if d['ok'] else 'FAILED'}")
    else:
        print(f"{name:16} exit {r['exit']}, no report")
print(f"(results: {sys.argv[1]})")
sys.exit(1 if failed else 0)
PY
