#!/bin/sh
# confine-bench.sh — what a confined start costs against another commit
# (issue 36: no more than 15 ms over the one before the layers):
# BenchmarkOpenConfinement of the connector, interleaved with REF's, ROUNDS
# times (scripts/bench-compare.sh), benchstat's comparison printed.
#
#   scripts/confine-bench.sh [REF] [ROUNDS]   (defaults: 17477ea 6)
set -eu
exec "$(dirname "$0")/bench-compare.sh" "${1:-17477ea}" "${2:-6}" ./connector:BenchmarkOpenConfinement:40x
