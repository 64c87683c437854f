#!/bin/sh
# confine-bench.sh — what a confined start costs against another commit
# (issue 36: no more than 15 ms over the one before the layers). Builds
# the connector's test binary at REF (in a temporary worktree) and here,
# then runs BenchmarkOpenConfinement with the two interleaved, ROUNDS
# times, and prints benchstat's comparison (base first).
#
#   scripts/confine-bench.sh [REF] [ROUNDS]   (defaults: 17477ea 6)
set -eu
REF=${1:-17477ea}
ROUNDS=${2:-6}
cd "$(dirname "$0")/.."
OUT=$(mktemp -d)
trap 'git worktree remove --force "$OUT/base" >/dev/null 2>&1 || true; rm -rf "$OUT"' EXIT
git worktree add --detach "$OUT/base" "$REF" >/dev/null
(cd "$OUT/base" && go test -c -o "$OUT/base.test" ./connector/)
go test -c -o "$OUT/new.test" ./connector/
cd connector
for i in $(seq "$ROUNDS"); do
	"$OUT/base.test" -test.run '^$' -test.bench 'BenchmarkOpenConfinement' -test.benchtime 40x | grep '^Benchmark' >>"$OUT/base.txt"
	"$OUT/new.test" -test.run '^$' -test.bench 'BenchmarkOpenConfinement' -test.benchtime 40x | grep '^Benchmark' >>"$OUT/new.txt"
done
go run golang.org/x/perf/cmd/benchstat@latest "$OUT/base.txt" "$OUT/new.txt"
