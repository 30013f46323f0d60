#!/usr/bin/env bash
# `make bench`: Runnel's throughput benchmarks, the broker memory check and
# the table with ratios (see bench/README.md). Settings, by environment:
#
#   BENCHTIME           go test -benchtime per benchmark (default 1s)
#   BENCH_COUNT         rounds over every benchmark; the table takes medians (default 1)
#   BENCH               go test -bench pattern (default ., all)
#   BENCH_TARGETS       with BENCH=., the targets of each throughput corner and
#                       of the transaction benchmarks, a pattern (default ., all
#                       four; '-proc$' the process pair)
#   BENCH_REPLICATION   with BENCH=., 0 skips the replication benchmarks (a
#                       3-process cluster: RF=1 vs RF=3 produce, latency at
#                       20k records/s; about 1 minute at the default BENCHTIME)
#   RUNNEL_BENCH_LATENCY_TIME  length of the latency run (default 10 × BENCHTIME)
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
BENCH_TARGETS="${BENCH_TARGETS:-.}"
BENCH_REPLICATION="${BENCH_REPLICATION:-1}"
export RUNNEL_BENCH_BYTES="${RUNNEL_BENCH_BYTES:-10GB}"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# Build everything first, so a compile error shows before the long run.
"$GO" build -o "$tmp/runnel" ./cmd/runnel
"$GO" build -o "$tmp/kfakebroker" ./bench/cmd/kfakebroker
"$GO" build -o "$tmp/memcheck" ./bench/cmd/memcheck
"$GO" build -o "$tmp/benchtable" ./bench/cmd/benchtable
"$GO" test -c -o "$tmp/bench.test" ./bench
export RUNNEL_BIN="$tmp/runnel" KFAKE_BIN="$tmp/kfakebroker"

{
	echo "# $(date -u +%FT%TZ) $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
	# Each throughput corner runs its targets back to back (runnel,
	# runnel-proc, kfake, kfake-proc, seconds apart), and the rounds
	# repeat the whole list, so a change in the machine's load hits both
	# sides of a ratio alike. (One go test -count run would take every
	# Runnel corner first and every kfake corner minutes later.) A BENCH
	# pattern runs as given.
	patterns=("$BENCH")
	if [[ "$BENCH" == "." ]]; then
		patterns=()
		for op in Produce Consume; do
			for corner in 1KB/1p 1KB/8p 100B/1p 100B/8p; do
				patterns+=("^Benchmark$op\$/$BENCH_TARGETS/^${corner%/*}\$/^${corner#*/}\$")
			done
		done
		patterns+=('^BenchmarkRaw$' '^BenchmarkRebalance$' '^BenchmarkCommit$')
		# Each target runs its idempotent and transactional producers back
		# to back, the two sides of the ratios the table prints.
		patterns+=("^BenchmarkTxnProduce\$/$BENCH_TARGETS")
		# Runnel Streams and goka count the same input back to back;
		# then a store's restore (issue 6).
		patterns+=('^BenchmarkStreamsCount$' '^BenchmarkStreamsRestore$')
		# Connect: topic → PostgreSQL (insert, upsert), file → topic
		# (issue 7).
		patterns+=('^BenchmarkConnectPostgresSink$' '^BenchmarkConnectFileSource$')
		# RF=1 and RF=3 run back to back on one cluster, as a corner's
		# targets do.
		if [[ "$BENCH_REPLICATION" != "0" ]]; then
			patterns+=('^BenchmarkReplication$' '^BenchmarkReplicationLatency$')
		fi
	fi
	for ((round = 1; round <= BENCH_COUNT; round++)); do
		for pattern in "${patterns[@]}"; do
			# The test binary runs in bench/, as go test would run it.
			(cd bench && "$tmp/bench.test" -test.run '^$' -test.bench "$pattern" \
				-test.benchtime "$BENCHTIME" -test.count 1 -test.timeout 60m) || echo "FAIL: bench.test exited $?"
		done
	done
	if [[ "$RUNNEL_BENCH_BYTES" != "0" ]]; then
		"$tmp/memcheck" -runnel "$RUNNEL_BIN" || echo "FAIL: memcheck exited $?"
	fi
} 2>&1 | tee "${BENCH_OUT:-/dev/null}" | "$tmp/benchtable"
