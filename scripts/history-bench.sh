#!/bin/sh
# history-bench.sh — session start and receipts verify on a host with a
# long history (issue 26): builds a quickstart host with N finished runs
# and their signed, chained receipts in bulk (coordtest.BuildHistory),
# then runs BenchmarkHistory on it. The built host is kept in DIR, so a
# second run measures only.
#
#   scripts/history-bench.sh [N] [DIR]      (defaults: 1000000 /tmp/oa-history)
#
# Output is `go test -bench` format (benchstat reads it).
set -eu
N=${1:-1000000}
DIR=${2:-/tmp/oa-history}
mkdir -p "$DIR"
cd "$(dirname "$0")/.."
export OA_HISTORY_RUNS="$N" OA_HISTORY_DIR="$DIR"
go test ./coordinator -run '^$' -bench 'BenchmarkHistory/(start|start-counted|run|read|verify-incremental-100-new)$' -benchtime 5x -count 3 -timeout 2h
go test ./coordinator -run '^$' -bench 'BenchmarkHistory/verify-full$' -benchtime 1x -count 1 -timeout 2h
