#!/usr/bin/env bash
# Throughput of `GET /api/v1/collections/articles/items?per_page=15` (anonymous, 10,000 seeded
# articles) with the response cache on and off: the two list scenarios of bench/run.sh, which
# builds, seeds and measures (see docs/benchmarks.md).
#
# Usage: bench/api-list.sh [SECONDS] [CONNECTIONS]     (defaults: 10 s, 32 connections)
set -euo pipefail
BENCH_CONNECTIONS="${2:-${BENCH_CONNECTIONS:-32}}" BENCH_SCENARIOS="list-cached,list" \
  exec "$(dirname "$0")/run.sh" "${1:-10}"
