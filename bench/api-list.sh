#!/usr/bin/env bash
# Throughput of `GET /api/v1/collections/articles/items` (anonymous, 10,000 items, 15 per page),
# with the response cache on and off, against the release server on SQLite.
#
# Usage: bench/api-list.sh [SECONDS] [CONNECTIONS]     (defaults: 10 s, 32 connections)
# Needs `oha` (cargo install oha) or `wrk` (apt-get install wrk) on PATH. Run by hand, not in CI.
set -euo pipefail

seconds="${1:-10}"
connections="${2:-32}"
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
port=18089
trap 'kill "${server:-}" 2>/dev/null || true; rm -rf "$work"' EXIT

cargo build --release --quiet -p vellum-server -p vellum-admin --manifest-path "$root/Cargo.toml"
bin="$root/target/release"

python3 - "$work/manifest.json" <<'PY'
import json, sys
items = [{"data": {
    "title": f"Article {i}",
    "status": "published" if i % 3 else "draft",
    "views": (i * 7919) % 10000,
    "body": "Lorem ipsum dolor sit amet, consectetur adipiscing elit. " * 4,
}} for i in range(1, 10001)]
manifest = {
    "collections": [{"slug": "articles", "name": "Articles", "fields": [
        {"name": "title", "type": "string", "settings": {"required": True}},
        {"name": "status", "type": "select", "settings": {"options": ["draft", "published"]}},
        {"name": "views", "type": "number", "settings": {}},
        {"name": "body", "type": "markdown", "settings": {}},
    ]}],
    "roles": [{"name": "public", "collection_permissions": {"articles": {"read": True}}}],
    "items": {"articles": items},
}
json.dump(manifest, open(sys.argv[1], "w"))
PY

export VELLUM_DATABASE_URL="sqlite://$work/vellum.db?mode=rwc"
export VELLUM_FILES_DIR="$work/files"
export VELLUM_LOG=warn
"$bin/vellum-admin" apply "$work/manifest.json" >/dev/null
url="http://127.0.0.1:$port/api/v1/collections/articles/items"

load() {
  if command -v oha >/dev/null; then
    oha --no-tui -z "${seconds}s" -c "$connections" "$url" \
      | grep -E "Requests/sec|Slowest|Fastest|Average|50.00%|99.00%|\[200\]" || true
  else
    wrk -t2 -c "$connections" -d "${seconds}s" --latency "$url" | grep -E "Requests/sec|50%|99%|Latency" || true
  fi
}

for cache in on off; do
  VELLUM_CACHE="$cache" VELLUM_LISTEN="127.0.0.1:$port" "$bin/vellum-server" &
  server=$!
  for _ in $(seq 50); do curl -sf "http://127.0.0.1:$port/up" >/dev/null && break; sleep 0.1; done
  curl -sf "$url" >/dev/null
  echo "== cache $cache: GET /api/v1/collections/articles/items, ${connections} connections, ${seconds}s"
  load
  rss=$(ps -o rss= -p "$server" | tr -d ' ')
  echo "server RSS after load: $((rss / 1024)) MiB"
  kill "$server"; wait "$server" 2>/dev/null || true
  server=
done
