#!/usr/bin/env bash
# Server memory while a large file is uploaded: POST /files with a SIZE_MIB file (default 1024)
# through the release server on SQLite and the local blob store, reporting the server's RSS before,
# its peak (VmHWM) after, the growth, and the upload throughput. The requirement: growth under
# 32 MiB for 1 GiB. Run by hand, not in CI.
#
# Usage: bench/upload-rss.sh [SIZE_MIB]
set -euo pipefail

size_mib="${1:-1024}"
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
port=18091
secret="ek_benchbenchbenchbenchbenchbenchbench01"
trap 'kill "${server:-}" 2>/dev/null || true; rm -rf "$work"' EXIT

cargo build --release --quiet -p vellum-server -p vellum-admin --manifest-path "$root/Cargo.toml"
bin="$root/target/release"
cat > "$work/manifest.json" <<JSON
{"settings": {"files_max_upload_bytes": $(( (size_mib + 1) * 1024 * 1024 ))},
 "api_keys": [{"name": "bench", "role": "super-admin", "secret": "$secret"}]}
JSON
export VELLUM_DATABASE_URL="sqlite://$work/vellum.db?mode=rwc" VELLUM_FILES_DIR="$work/files" VELLUM_LOG=warn
"$bin/vellum-admin" apply "$work/manifest.json" >/dev/null
head -c "$((size_mib * 1024 * 1024))" /dev/urandom > "$work/big.bin"

VELLUM_LISTEN="127.0.0.1:$port" "$bin/vellum-server" &
server=$!
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$port/up" >/dev/null && break; sleep 0.1; done
curl -sf "http://127.0.0.1:$port/api/v1/collections" >/dev/null
before=$(awk '/VmRSS/ {print $2}' "/proc/$server/status")
start=$(date +%s.%N)
status=$(curl -s -o "$work/response.json" -w '%{http_code}' -H "Authorization: Bearer $secret" \
  -F "file=@$work/big.bin" "http://127.0.0.1:$port/api/v1/files")
end=$(date +%s.%N)
peak=$(awk '/VmHWM/ {print $2}' "/proc/$server/status")
echo "upload of ${size_mib} MiB: HTTP $status in $(echo "$end - $start" | bc) s"
echo "server RSS before: $((before / 1024)) MiB, peak: $((peak / 1024)) MiB, growth: $(((peak - before) / 1024)) MiB"
head -c 300 "$work/response.json"; echo
