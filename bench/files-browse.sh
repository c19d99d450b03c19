#!/usr/bin/env bash
# Issue 29's listing benchmark over HTTP: one folder of 10,000 files (and a third of them tagged),
# listed through the file manager's session-authenticated `GET /files` by the release server on
# SQLite. One client, one keep-alive connection, sequential requests, so the figures are the
# server's own latency (routing, session, query, rendering) with no queueing; p50 and p99 per
# query. The storage-level figures (no HTTP) come from
# `cargo run --release -p vellum-storage --example browse_10k`.
#
# Usage: bench/files-browse.sh [FILES] [REQUESTS]     (default 10000 files, 500 requests per query)
# Environment: BENCH_PORT (18097), BENCH_BIN (directory with built release binaries: skips the
# build), BENCH_KEEP=1 (keep the work directory).
# Needs curl and python3. Run by hand on an otherwise idle machine, never in CI.
set -euo pipefail

files="${1:-10000}"
requests="${2:-500}"
port="${BENCH_PORT:-18097}"
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

if [ -n "${BENCH_BIN:-}" ]; then
  bin="$BENCH_BIN"
else
  echo "building the release binaries ..." >&2
  cargo build --release --quiet -p vellum-server -p vellum-admin --manifest-path "$root/Cargo.toml"
  bin="$root/target/release"
fi

export VELLUM_DATABASE_URL="sqlite://$work/vellum.db?mode=rwc"
export VELLUM_FILES_DIR="$work/files"
export VELLUM_LISTEN="127.0.0.1:$port"
export VELLUM_LOG=warn

echo '{"settings": {}}' >"$work/manifest.json"
"$bin/vellum-admin" apply "$work/manifest.json" >/dev/null
printf '%s' "$password" | "$bin/vellum-admin" users create --email "$email" --name Bench \
  --role super-admin --password-stdin >/dev/null

echo "seeding one folder of $files files ..." >&2
python3 - "$work/vellum.db" "$files" <<'PY'
import sqlite3, sys
db, n = sys.argv[1], int(sys.argv[2])
con = sqlite3.connect(db)
now = "2026-01-01T00:00:00Z"
con.execute("INSERT INTO files (id, parent_id, type, filename, created_at, updated_at) "
            "VALUES (1, NULL, 'folder', 'big', ?, ?)", (now, now))
con.executemany(
    "INSERT INTO files (id, parent_id, type, filename, mime_type, extension, filesize, "
    "created_at, updated_at) VALUES (?, 1, 'file', ?, 'image/jpeg', 'jpg', ?, ?, ?)",
    ((i + 2, f"File {(i * 7919) % n:05} {i}.jpg", (i * 104729) % 1000000, now, now)
     for i in range(n)))
con.executemany("INSERT INTO file_tags (file_id, tag) VALUES (?, 'third')",
                ((i + 2,) for i in range(0, n, 3)))
con.commit()
con.execute("ANALYZE")
con.close()
PY

"$bin/vellum-server" >"$work/server.log" 2>&1 &
server=$!
for _ in $(seq 1 300); do
  curl -fs "$base/up" >/dev/null 2>&1 && break
  kill -0 "$server" 2>/dev/null || { tail -5 "$work/server.log" >&2; exit 1; }
  sleep 0.1
done
cookie="$(curl -s -D - -o /dev/null -H 'content-type: application/json' \
  -d "{\"email\":\"$email\",\"password\":\"$password\"}" "$base/login" | grep -io 'vellum_session=[A-Za-z0-9_-]*')"
[ -n "$cookie" ] || { echo "could not sign in" >&2; exit 1; }

python3 - "$port" "$cookie" "$requests" "$files" <<'PY'
import http.client, json, sys, time
port, cookie, requests, files = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
last = max(1, -(-files // 100))
queries = [
    ("first page of 15, by name", "/files?parent_id=1&per_page=15"),
    ("first page of 100, by name", "/files?parent_id=1&per_page=100"),
    (f"last page of 100 (page {last})", f"/files?parent_id=1&per_page=100&page={last}"),
    ("15 by size, descending", "/files?parent_id=1&per_page=15&sort=size&direction=desc"),
    ("tag filter, 15", "/files?parent_id=1&per_page=15&tag=third"),
    ("name search, 15", "/files?search=File%2000042&per_page=15"),
]
conn = http.client.HTTPConnection("127.0.0.1", port)
headers = {"Cookie": cookie, "Accept": "application/json"}

def get(path):
    conn.request("GET", path, headers=headers)
    res = conn.getresponse()
    body = res.read()
    if res.status != 200:
        sys.exit(f"{path}: HTTP {res.status}: {body[:300]!r}")
    return body

print(f"{files} files in one folder, {requests} sequential requests per query, one keep-alive connection")
print(f"{'query':34} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}  rows / total")
for name, path in queries:
    for _ in range(max(10, requests // 10)):
        get(path)
    times = []
    for _ in range(requests):
        t = time.perf_counter()
        body = get(path)
        times.append((time.perf_counter() - t) * 1000)
    times.sort()
    doc = json.loads(body)
    total = doc.get("meta", {}).get("total", "?")
    p = lambda q: times[min(len(times) - 1, int(q * len(times)))]
    print(f"{name:34} {p(0.5):8.2f} {p(0.99):8.2f} {times[-1]:8.2f}  {len(doc['data'])} / {total}")
PY
