#!/bin/sh
# bench-compare.sh — benchmarks of this tree against another commit, run
# interleaved so that both see the same load. Builds each package's test
# binary at REF (in a temporary worktree) and here, then runs every
# PKG:BENCH:BENCHTIME triple ROUNDS times, base and new alternating, and
# prints benchstat's comparison (base first). A package moved since REF is
# given as OLDPKG=NEWPKG.
#
#   scripts/bench-compare.sh REF ROUNDS PKG:BENCH:BENCHTIME …
#   scripts/bench-compare.sh 9ec8c30 6 ./coordinator:'ReadStdio$':500x ./signing:VerifySignatureIdentity:200x
set -eu
REF=$1
ROUNDS=$2
shift 2
cd "$(dirname "$0")/.."
ROOT=$(pwd)
OUT=$(mktemp -d)
trap 'git worktree remove --force "$OUT/base" >/dev/null 2>&1 || true; rm -rf "$OUT"' EXIT
git worktree add --detach "$OUT/base" "$REF" >/dev/null
i=0
for spec in "$@"; do
	i=$((i + 1))
	pkgs=${spec%%:*}
	old=${pkgs%%=*}
	new=${pkgs#*=}
	(cd "$OUT/base" && go test -c -o "$OUT/base$i.test" "$old")
	go test -c -o "$OUT/new$i.test" "$new"
done
for r in $(seq "$ROUNDS"); do
	i=0
	for spec in "$@"; do
		i=$((i + 1))
		pkgs=${spec%%:*}
		rest=${spec#*:}
		bench=${rest%:*}
		benchtime=${rest##*:}
		(cd "$OUT/base/${pkgs%%=*}" && "$OUT/base$i.test" -test.run '^$' -test.bench "$bench" -test.benchtime "$benchtime" | grep '^Benchmark' >>"$OUT/base.txt")
		(cd "$ROOT/${pkgs#*=}" && "$OUT/new$i.test" -test.run '^$' -test.bench "$bench" -test.benchtime "$benchtime" | grep '^Benchmark' >>"$OUT/new.txt")
	done
	echo "round $r of $ROUNDS done" >&2
done
go run golang.org/x/perf/cmd/benchstat@latest "$OUT/base.txt" "$OUT/new.txt"
