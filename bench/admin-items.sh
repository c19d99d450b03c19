#!/usr/bin/env bash
# Issue 18's admin benchmark: the release server on a SQLite database seeded with 100,000
# articles (vellum-bench-storage's collection: title, status, views, body, tags), one super-admin
# and a super-admin API key (the admin app acts with full access too), driven by `oha`. Measures, and prints PASS/MISS against the
# issue's targets:
#   1. the admin list (session, GET /collections/articles/items, 15 per page) next to the public
#      list of the same page through an API key (response cache off for both): figures only;
#   2. the 5,000-row CSV and JSON exports (capped from 100,000 matches): each under 1 s;
#   3. server RSS growth over eight exports of the 100,000-item collection, four at a time, on a
#      cold server and again warm: under 32 MiB (peak VmRSS sampled every 20 ms minus VmRSS
#      before), split into anonymous and file-backed memory;
#   4. a schema change on the 100,000 items (the `views` field from number to string, dry-run,
#      then `?confirm=true`): its time, and the slowest reader response meanwhile (a public read
#      of one item per request, 8 connections): at most 100 ms.
#
# Usage: bench/admin-items.sh [SECONDS]        (seconds per throughput scenario, default 10)
# Environment: BENCH_CONNECTIONS (32), BENCH_PORT (18095), BENCH_BIN (directory with built
# release binaries: skips the build), BENCH_KEEP=1 (keep the work directory).
# Needs `oha` (cargo install oha --locked), curl and python3. Run by hand, never in CI.
set -euo pipefail

seconds="${1:-10}"
connections="${BENCH_CONNECTIONS:-32}"
port="${BENCH_PORT:-18095}"
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
base="http://127.0.0.1:$port"
server=""
password="bench password $(date +%s)"
email="bench@vellum.test"

cleanup() {
  if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
  if [ "${BENCH_KEEP:-0}" = 1 ]; then echo "kept $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT

oha="$(command -v oha || echo "$HOME/.cargo/bin/oha")"
[ -x "$oha" ] || { echo "oha not found: cargo install oha --locked" >&2; exit 1; }
if "$oha" --help | grep -q -- '--output-format'; then oha_json=(--output-format json); else oha_json=(-j); fi

if [ -n "${BENCH_BIN:-}" ]; then
  bin="$BENCH_BIN"
else
  echo "building the release binaries ..." >&2
  cargo build --release --quiet -p vellum-server -p vellum-admin -p vellum-bench \
    --manifest-path "$root/Cargo.toml"
  bin="$root/target/release"
fi

export VELLUM_DATABASE_URL="sqlite://$work/vellum.db?mode=rwc"
export VELLUM_FILES_DIR="$work/files"
export VELLUM_LISTEN="127.0.0.1:$port"
export VELLUM_LOG=warn
export VELLUM_CACHE=off

echo "seeding 100,000 articles ..." >&2
"$bin/vellum-bench-storage" --database-url "$VELLUM_DATABASE_URL" --iterations 1 >"$work/seed.log" 2>&1

# --demo on a database with collections applies nothing; it creates the demo admin only.
"$bin/vellum-server" --demo >"$work/server.log" 2>&1 &
server=$!
for _ in $(seq 1 300); do
  curl -fs "$base/up" >/dev/null 2>&1 && break
  kill -0 "$server" 2>/dev/null || { tail -5 "$work/server.log" >&2; exit 1; }
  sleep 0.1
done
printf '%s' "$password" | "$bin/vellum-admin" users create --email "$email" --name Bench \
  --role super-admin --password-stdin >/dev/null
key="$("$bin/vellum-admin" keys create --role super-admin --name bench | python3 -c 'import json,sys; print(json.load(sys.stdin)["secret"])')"
cookie="$(curl -s -D - -o /dev/null -H 'content-type: application/json' \
  -d "{\"email\":\"$email\",\"password\":\"$password\"}" "$base/login" | grep -io 'vellum_session=[A-Za-z0-9_-]*')"
[ -n "$cookie" ] || { echo "could not sign in" >&2; exit 1; }

run() {
  local name=$1; shift
  "$oha" --no-tui "${oha_json[@]}" "$@" >"$work/$name.json"
}
rss() { awk -v k="$1:" '$1 == k { print $2 }' "/proc/$server/status"; }

# 3. RSS over eight exports, four at a time, measured twice: first on a cold server (the worst
# case: each pooled connection maps the database file and fills its page cache for the first
# time) and again after the list and export scenarios. Sampled every 20 ms: the peak of the
# total (VmRSS) and of its two parts: anonymous memory (heap: the exports' buffers, SQLite's
# page caches) and file-backed pages (the database file as SQLite memory-maps it, shared with the
# kernel's page cache and reclaimable).
measure_rss() {
  local name=$1
  local before anon_before file_before sampler
  before="$(rss VmRSS)"; anon_before="$(rss RssAnon)"; file_before="$(rss RssFile)"
  rm -f "$work/rss.stop"
  (
    peak=0; peak_anon=0; peak_file=0
    while [ ! -e "$work/rss.stop" ]; do
      t="$(rss VmRSS)"; a="$(rss RssAnon)"; f="$(rss RssFile)"
      [ "${t:-0}" -gt "$peak" ] && peak=$t
      [ "${a:-0}" -gt "$peak_anon" ] && peak_anon=$a
      [ "${f:-0}" -gt "$peak_file" ] && peak_file=$f
      echo "$peak $peak_anon $peak_file" >"$work/rss.peaks"
      sleep 0.02
    done
  ) &
  sampler=$!
  for _ in 1 2; do
    exports=()
    for n in 1 2 3 4; do
      curl -s -o /dev/null -H "Cookie: $cookie" "$base/collections/articles/items/export?format=json" &
      exports+=($!)
    done
    # Not a bare `wait`: that would wait for the server (and the sampler) too.
    wait "${exports[@]}"
  done
  sleep 0.1
  touch "$work/rss.stop"
  wait "$sampler"
  echo "$before $anon_before $file_before $(cat "$work/rss.peaks")" >"$work/rss-$name"
}
measure_rss cold

# 1. admin list vs public list.
admin_list=(-H "Cookie: $cookie" -H 'Accept: application/json' "$base/collections/articles/items?per_page=15")
public_list=(-H "Authorization: Bearer $key" "$base/api/v1/collections/articles/items?per_page=15")
run warm -z 2s -c "$connections" "${admin_list[@]}"
run admin-list -z "${seconds}s" -c "$connections" "${admin_list[@]}"
run public-list -z "${seconds}s" -c "$connections" "${public_list[@]}"

# 2. the exports' time (each twice: the slower counts).
for format in csv json; do
  for n in 1 2; do
    curl -s -o "$work/export.$format" -D "$work/export-$format.headers" -w '%{time_total}\n' \
      -H "Cookie: $cookie" "$base/collections/articles/items/export?format=$format" >"$work/export-$format-$n.time"
  done
done

measure_rss warm

# 4. the schema change under readers.
# oha generates the URLs from a regex: the dots of the address are escaped.
rbase="http://127\\.0\\.0\\.1:$port"
run readers-alone -z 5s -c 8 --rand-regex-url "$rbase/api/v1/collections/articles/items/[1-9][0-9]{0,4}" \
  -H "Authorization: Bearer $key"
"$oha" --no-tui "${oha_json[@]}" -z 40s -c 8 --rand-regex-url "$rbase/api/v1/collections/articles/items/[1-9][0-9]{0,4}" \
  -H "Authorization: Bearer $key" >"$work/readers.json" &
readers=$!
sleep 2
field='{"name":"views","type":"string"}'
curl -s -o "$work/dry-run.json" -w '%{http_code} %{time_total}\n' -X PUT -H "Cookie: $cookie" \
  -H 'Accept: application/json' -H 'content-type: application/json' -d "$field" \
  "$base/collections/articles/fields/views" >"$work/dry-run.status"
curl -s -o "$work/change.json" -w '%{http_code} %{time_total}\n' -X PUT -H "Cookie: $cookie" \
  -H 'Accept: application/json' -H 'content-type: application/json' -d "$field" \
  "$base/collections/articles/fields/views?confirm=true" >"$work/change.status"
wait "$readers" 2>/dev/null || true

python3 - "$work" <<'PY'
import json, sys, pathlib
work = pathlib.Path(sys.argv[1])
def load(name):
    return json.loads((work / f"{name}.json").read_text())
def rps(name):
    return load(name)["summary"]["requestsPerSec"]
rows = []
def row(what, figure, target, met):
    rows.append((what, figure, target, "" if met is None else ("PASS" if met else "MISS")))
a, p = rps("admin-list"), rps("public-list")
row("admin list (session) vs public list (API key), req/s", f"{a:,.0f} vs {p:,.0f} = {a / p:.0%}", "figures", None)
for fmt in ("csv", "json"):
    t = max(float((work / f"export-{fmt}-{n}.time").read_text()) for n in (1, 2))
    headers = (work / f"export-{fmt}.headers").read_text().lower()
    rows_hdr = [l.split(":", 1)[1].strip() for l in headers.splitlines() if l.startswith("x-export-rows")]
    row(f"export {fmt} of 100,000 matches (rows {rows_hdr[0] if rows_hdr else '?'})", f"{t * 1000:.0f} ms", "< 1 s", t < 1.0)
for name in ("cold", "warm"):
    before, anon0, file0, peak, anon1, file1 = (int(x) for x in (work / f"rss-{name}").read_text().split())
    growth = (peak - before) / 1024
    row(f"RSS growth over 8 exports, 4 at a time ({name})", f"{growth:.1f} MiB ({before / 1024:.0f} -> {peak / 1024:.0f})", "< 32 MiB", growth < 32)
    anon = (anon1 - anon0) / 1024
    row("  of it anonymous (heap) / file-backed (mmap)", f"{anon:.1f} / {(file1 - file0) / 1024:.1f} MiB", "< 32 MiB", anon < 32)
dry = (work / "dry-run.status").read_text().split()
change = (work / "change.status").read_text().split()
row("schema change dry-run (views number -> string)", f"{dry[0]} in {float(dry[1]) * 1000:.0f} ms", "figure", None)
row("schema change applied on 100,000 items", f"{change[0]} in {float(change[1]):.2f} s", "figure", change[0] == "200")
slow_alone = load("readers-alone")["summary"]["slowest"] * 1000
slow = load("readers")["summary"]["slowest"] * 1000
row("slowest reader during the change (alone before)", f"{slow:.0f} ms ({slow_alone:.0f} ms)", "<= 100 ms", slow <= 100)
print((work / "change.json").read_text()[:400], file=sys.stderr)
width = max(len(r[0]) for r in rows)
for what, figure, target, verdict in rows:
    print(f"{what:<{width}}  {figure:<34} {target:<10} {verdict}")
PY
