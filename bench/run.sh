#!/usr/bin/env bash
# `make bench`: Runnel's throughput benchmarks, the broker memory check and
# the table with ratios (see bench/README.md). Settings, by environment:
#
#   BENCHTIME           go test -benchtime per benchmark (default 1s)
#   BENCH_COUNT         go test -count, runs per benchmark; the table takes medians (default 1)
#   BENCH               go test -bench pattern (default ., all)
#   RUNNEL_BENCH_BYTES  bytes memcheck pushes through a broker process (default 10GB; 0 skips it)
#   BENCH_OUT           also save the raw output there (for benchstat)
#
# It exits non-zero when a benchmark or the memory check failed; a missed
# target is reported in the table but is not a failure.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN="${GOTOOLCHAIN:-go1.27.3}"
GO="${GO:-go}"
BENCHTIME="${BENCHTIME:-1s}"
BENCH_COUNT="${BENCH_COUNT:-1}"
BENCH="${BENCH:-.}"
export RUNNEL_BENCH_BYTES="${RUNNEL_BENCH_BYTES:-10GB}"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# Build everything first, so a compile error shows before the long run.
"$GO" build -o "$tmp/runnel" ./cmd/runnel
"$GO" build -o "$tmp/memcheck" ./bench/cmd/memcheck
"$GO" build -o "$tmp/benchtable" ./bench/cmd/benchtable
"$GO" test -c -o "$tmp/bench.test" ./bench
export RUNNEL_BIN="$tmp/runnel"

{
	echo "# $(date -u +%FT%TZ) $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
	# The test binary runs in bench/, as go test would run it.
	(cd bench && "$tmp/bench.test" -test.run '^$' -test.bench "$BENCH" \
		-test.benchtime "$BENCHTIME" -test.count "$BENCH_COUNT" -test.timeout 60m) || echo "FAIL: bench.test exited $?"
	if [[ "$RUNNEL_BENCH_BYTES" != "0" ]]; then
		"$tmp/memcheck" -runnel "$RUNNEL_BIN" || echo "FAIL: memcheck exited $?"
	fi
} 2>&1 | tee "${BENCH_OUT:-/dev/null}" | "$tmp/benchtable"
