#!/usr/bin/env bash
# The HTTP benchmark of issue 10: the release server on a fresh SQLite database seeded with the
# demo project and 10,000 articles with cover images, driven by `oha`, one scenario after the
# other; prints requests per second, p50/p99 latency, the server's peak RSS and CPU per scenario,
# the idle RSS after start, and PASS/MISS against the targets. See docs/benchmarks.md.
#
# Usage: bench/run.sh [SECONDS]          (seconds per scenario, default 10)
# Environment:
#   BENCH_CONNECTIONS  concurrent connections (default 32)
#   BENCH_ITEMS        seeded articles (default 10000)
#   BENCH_SCENARIOS    comma-separated scenario names to run (default: all; see `scenarios` below)
#   BENCH_OUT          directory for results.jsonl and table.md (default target/bench)
#   BENCH_KEEP=1       keep the temporary directory (database, files, server logs)
#   BENCH_PORT         port of the server (default 18093)
#   BENCH_BIN          directory with already built vellum-server and vellum-admin (skips the build)
#   BENCH_POSTGRES     a PostgreSQL server URL without database (postgres://postgres@127.0.0.1:5432):
#                      the run then uses a fresh database there (created and dropped with psql)
#                      instead of SQLite
#   VELLUM_WORKERS, VELLUM_DB_MAX_CONNECTIONS, …  passed through to the server (defaults: cores)
# Needs `oha` (cargo install oha --locked), curl and python3. Run by hand, never in CI.
set -euo pipefail

seconds="${1:-10}"
connections="${BENCH_CONNECTIONS:-32}"
count="${BENCH_ITEMS:-10000}"
only="${BENCH_SCENARIOS:-all}"
port="${BENCH_PORT:-18093}"
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${BENCH_OUT:-$root/target/bench}"
work="$(mktemp -d)"
base="http://127.0.0.1:$port"
api="$base/api/v1"
server=""

pg_db=""
cleanup() {
  if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
  if [ -n "$pg_db" ] && [ "${BENCH_KEEP:-0}" = 1 ]; then echo "kept database $pg_db" >&2; pg_db=""; fi
  if [ -n "$pg_db" ]; then psql -q "$BENCH_POSTGRES/postgres" -c "DROP DATABASE IF EXISTS $pg_db" >/dev/null || true; fi
  if [ "${BENCH_KEEP:-0}" = 1 ]; then echo "kept $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT

oha="$(command -v oha || echo "$HOME/.cargo/bin/oha")"
if [ ! -x "$oha" ]; then
  echo "oha not found: cargo install oha --locked" >&2
  exit 1
fi
if "$oha" --help | grep -q -- '--output-format'; then oha_json=(--output-format json); else oha_json=(-j); fi

if [ -n "${BENCH_BIN:-}" ]; then
  bin="$BENCH_BIN"
else
  echo "building the release server ..." >&2
  cargo build --release --quiet -p vellum-server -p vellum-admin --manifest-path "$root/Cargo.toml"
  bin="$root/target/release"
fi

if [ -n "${BENCH_POSTGRES:-}" ]; then
  pg_db="vellum_bench_$$"
  psql -q "$BENCH_POSTGRES/postgres" -c "CREATE DATABASE $pg_db" >/dev/null
  export VELLUM_DATABASE_URL="$BENCH_POSTGRES/$pg_db"
else
  export VELLUM_DATABASE_URL="sqlite://$work/vellum.db?mode=rwc"
fi
export VELLUM_FILES_DIR="$work/files"
export VELLUM_LISTEN="127.0.0.1:$port"
export VELLUM_LOG="${VELLUM_LOG:-warn}"
editor="$(python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import seed; print(seed.EDITOR_SECRET)' "$root/bench")"
reader="$(python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import seed; print(seed.READER_SECRET)' "$root/bench")"

start_server() { # CACHE
  VELLUM_CACHE="$1" "$bin/vellum-server" >>"$work/server.log" 2>&1 &
  server=$!
  for _ in $(seq 100); do curl -sf "$base/up" >/dev/null && return; sleep 0.1; done
  echo "the server did not start; its log:" >&2
  cat "$work/server.log" >&2
  exit 1
}

stop_server() {
  kill "$server"
  wait "$server" 2>/dev/null || true
  server=""
}

json() { # EXPR: a Python expression over `d`, the JSON document on stdin
  python3 -c "import json, sys; d = json.load(sys.stdin); print($1)"
}

# --- Seeding: the demo project, three cover images uploaded through the API, then the articles.
echo "seeding $count articles ..." >&2
python3 "$root/bench/seed.py" base "$work/base.json"
"$bin/vellum-admin" apply "$work/base.json" >/dev/null
start_server off
folder="$(curl -sf -H "Authorization: Bearer $editor" "$api/files" \
  | json '[e["id"] for e in d["data"] if e.get("filename") == "covers" or e.get("name") == "covers"][0]')"
covers=""
for image in "$root"/fixtures/images/*.jpg; do
  id="$(curl -sf -H "Authorization: Bearer $editor" -F "file=@$image" -F "parent_id=$folder" "$api/files" \
    | json 'd.get("data", d)["id"]')"
  covers="$covers${covers:+,}$id"
done
authors="$(curl -sf -H "Authorization: Bearer $reader" "$api/collections/authors/items" \
  | json '",".join(str(i["id"]) for i in d["data"])')"
tags="$(curl -sf -H "Authorization: Bearer $reader" "$api/collections/tags/items" \
  | json '",".join(str(i["id"]) for i in d["data"])')"
stop_server
python3 "$root/bench/seed.py" full "$work/full.json" "$count" "$covers" "$authors" "$tags"
"$bin/vellum-admin" apply "$work/full.json" >/dev/null
file_id="${covers%%,*}"

# --- Scenarios: name|cache|kind|target req/s (0: none)|method|path|auth (none, reader, editor)|body
list="$api/collections/articles/items?per_page=15"
scenarios=(
  "list-cached|on|read|30000|GET|$list|none|"
  "list|off|read|8000|GET|$list|none|"
  "list-page50|off|read|8000|GET|$list&page=50|none|"
  "list-filtered|off|read|6000|GET|$list&filter%5Bstatus%5D%5B_eq%5D=published&filter%5Bviews%5D%5B_gt%5D=5000|none|"
  "show|off|read|20000|GET|$api/collections/articles/items/SHOW_ID|none|"
  "list-authenticated|off|read|7000|GET|$list|reader|"
  "list-include|off|read|0|GET|$list&include=files,author|none|"
  "file-content|off|read|0|GET|$api/files/$file_id/content|none|"
  "transform-warm|off|read|20000|GET|$api/files/$file_id/transforms/size-400|none|"
  "create|off|write|3000|POST|$api/collections/posts/items|editor|{\"data\":{\"title\":\"Benchmark post\",\"status\":\"published\",\"views\":42,\"body\":\"Some *markdown* text.\"}}"
)

wanted() { [ "$only" = all ] || [[ ",$only," == *",$1,"* ]]; }

results="$work/results.jsonl"
: >"$results"
clk_tck="$(getconf CLK_TCK)"
cpu_ticks() { awk '{print $14 + $15}' "/proc/$server/stat"; }

run_scenario() { # NAME CACHE KIND TARGET METHOD URL AUTH BODY
  local name="$1" cache="$2" kind="$3" target="$4" method="$5" url="$6" auth="$7" body="$8"
  local args=(--no-tui "${oha_json[@]}" -z "${seconds}s" -c "$connections" -m "$method")
  local curl_args=(-sf -o /dev/null -X "$method")
  local key=""
  case "$auth" in
    reader) key="$reader" ;;
    editor) key="$editor" ;;
  esac
  if [ -n "$key" ]; then
    args+=(-H "Authorization: Bearer $key")
    curl_args+=(-H "Authorization: Bearer $key")
  fi
  if [ -n "$body" ]; then
    args+=(-H "Content-Type: application/json" -d "$body")
    curl_args+=(-H "Content-Type: application/json" -d "$body")
  fi
  # One request first: a warm cache entry, a computed transform, a checked URL.
  curl "${curl_args[@]}" "$url" || { echo "$name: warm-up request failed: $method $url" >&2; exit 1; }
  # Reset the peak RSS (VmHWM) to the current RSS; where that is refused, sample VmRSS instead.
  local hwm_reset=0
  echo 5 >"/proc/$server/clear_refs" 2>/dev/null && hwm_reset=1
  (while :; do awk '/VmRSS/ {print $2}' "/proc/$server/status"; sleep 0.1; done) >"$work/rss.$name" 2>/dev/null &
  local sampler=$!
  local cpu0; cpu0="$(cpu_ticks)"
  echo "  $name (cache $cache): $method $url" >&2
  "$oha" "${args[@]}" "$url" >"$work/oha.$name.json"
  local cpu1; cpu1="$(cpu_ticks)"
  kill "$sampler"; wait "$sampler" 2>/dev/null || true
  local rss; rss="$(sort -n "$work/rss.$name" | tail -1)"
  if [ "$hwm_reset" = 1 ]; then rss="$(awk '/VmHWM/ {print $2}' "/proc/$server/status")"; fi
  python3 - "$work/oha.$name.json" "$name" "$cache" "$kind" "$target" "$seconds" "$rss" \
    "$(( cpu1 - cpu0 ))" "$clk_tck" >>"$results" <<'PY'
import json, sys
path, name, cache, kind, target, seconds, rss, ticks, tck = sys.argv[1:]
print(json.dumps({"name": name, "cache": cache, "kind": kind, "target_rps": int(target),
                  "seconds": float(seconds), "rss_kib": int(rss), "cpu_s": int(ticks) / int(tck),
                  "oha": json.load(open(path))}))
PY
}

echo "running: ${seconds}s per scenario, $connections connections" >&2
for cache in on off; do
  todo=()
  for s in "${scenarios[@]}"; do
    IFS='|' read -r name c _ <<<"$s"
    if [ "$c" = "$cache" ] && wanted "$name"; then todo+=("$s"); fi
  done
  [ "${#todo[@]}" -gt 0 ] || continue
  start_server "$cache"
  sleep 1
  echo "{\"idle\": {\"cache\": \"$cache\", \"rss_kib\": $(awk '/VmRSS/ {print $2}' "/proc/$server/status")}}" >>"$results"
  show_id="$(curl -sf "$list" | json 'd["data"][len(d["data"]) // 2]["id"]')"
  for s in "${todo[@]}"; do
    IFS='|' read -r name c kind target method url auth body <<<"$s"
    run_scenario "$name" "$c" "$kind" "$target" "$method" "${url//SHOW_ID/$show_id}" "$auth" "$body"
  done
  stop_server
done

mkdir -p "$out"
cp "$results" "$out/results.jsonl"
echo
echo "Vellum HTTP benchmark: $(date -u +%Y-%m-%dT%H:%MZ), ${VELLUM_DATABASE_URL%%:*}, $(nproc) cores, ${seconds}s per scenario," \
  "$connections connections, $count articles, VELLUM_WORKERS=${VELLUM_WORKERS:-default (cores)}," \
  "VELLUM_DB_MAX_CONNECTIONS=${VELLUM_DB_MAX_CONNECTIONS:-default}, oha $("$oha" --version | awk '{print $2}')"
python3 "$root/bench/report.py" "$results" "$out/table.md"
echo "(results: $out/results.jsonl, Markdown table: $out/table.md)"
