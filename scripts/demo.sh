#!/usr/bin/env bash
# demo.sh walks through Runnel on a single-node broker: it starts
# `bin/runnel broker` in the background, waits until the broker says it is
# ready, creates a topic, produces and consumes with the runnel CLI (printing
# each command before it runs), and stops the broker again.
#
# Environment (the Makefile's `demo` target sets them):
#   RUNNEL     the runnel binary                  (bin/runnel)
#   DEMO_DIR   the broker's log.dirs              (.data/demo)
#   DEMO_PORT  Kafka listener port on 127.0.0.1   (9092)
#   DEMO_HTTP  HTTP port for /readyz, /metrics    (9644)
#
# DEMO_DIR starts empty on every run. The script only ever deletes a directory
# it created itself (it leaves a .runnel-demo marker in it).
set -euo pipefail

cd "$(dirname "$0")/.."

RUNNEL=${RUNNEL:-bin/runnel}
DEMO_DIR=${DEMO_DIR:-.data/demo}
DEMO_PORT=${DEMO_PORT:-9092}
DEMO_HTTP=${DEMO_HTTP:-9644}
BROKERS=127.0.0.1:$DEMO_PORT
TOPIC=demo.orders

if [[ -t 1 ]]; then
	say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
else
	say() { printf '\n== %s\n' "$*"; }
fi
run() {
	printf '$ %s\n' "$*"
	"$@"
}
port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

[[ -x $RUNNEL ]] || { echo "demo: $RUNNEL is missing: run make build" >&2; exit 1; }
for port in "$DEMO_PORT" "$DEMO_HTTP"; do
	if port_busy "$port"; then
		echo "demo: port $port on 127.0.0.1 is taken; pick others: make demo DEMO_PORT=19092 DEMO_HTTP=19644" >&2
		exit 1
	fi
done

if [[ -e $DEMO_DIR && ! -e $DEMO_DIR/.runnel-demo && -n $(ls -A "$DEMO_DIR") ]]; then
	echo "demo: $DEMO_DIR is not empty and was not made by this demo; not touching it (set DEMO_DIR)" >&2
	exit 1
fi
rm -rf "$DEMO_DIR"
mkdir -p "$DEMO_DIR"
touch "$DEMO_DIR/.runnel-demo"
log=$DEMO_DIR/broker.log

say "start a single-node broker (log: $log)"
printf '$ %s &\n' "$RUNNEL broker --listeners PLAINTEXT://$BROKERS --log.dirs $DEMO_DIR --runnel.http.listener 127.0.0.1:$DEMO_HTTP"
"$RUNNEL" broker --listeners "PLAINTEXT://$BROKERS" --log.dirs "$DEMO_DIR" \
	--runnel.http.listener "127.0.0.1:$DEMO_HTTP" >"$log" 2>&1 &
broker=$!

stop_broker() {
	if kill -0 "$broker" 2>/dev/null; then
		kill -TERM "$broker"
		for _ in $(seq 100); do # up to 10s to shut down cleanly
			kill -0 "$broker" 2>/dev/null || break
			sleep 0.1
		done
		if kill -0 "$broker" 2>/dev/null; then
			echo "demo: broker did not stop within 10s; killing it" >&2
			kill -KILL "$broker" 2>/dev/null || true
		fi
		wait "$broker" 2>/dev/null || true
	fi
}
trap stop_broker EXIT

ready=
for _ in $(seq 300); do # up to 30s
	if ! kill -0 "$broker" 2>/dev/null; then
		echo "demo: the broker exited; its log:" >&2
		cat "$log" >&2
		exit 1
	fi
	if curl -fsS --max-time 1 "http://127.0.0.1:$DEMO_HTTP/readyz" >/dev/null 2>&1; then
		ready=1
		break
	fi
	sleep 0.1
done
[[ -n $ready ]] || { echo "demo: broker not ready after 30s; its log:" >&2; cat "$log" >&2; exit 1; }
run curl -fsS "http://127.0.0.1:$DEMO_HTTP/readyz"
echo

say "create a topic with three partitions"
run "$RUNNEL" topic create "$TOPIC" --partitions 3 -b "$BROKERS"
run "$RUNNEL" topic list -b "$BROKERS"
run "$RUNNEL" topic describe "$TOPIC" -b "$BROKERS"

say "produce five records: key:value lines, with a header"
records=(store-1:apples=12 store-2:pears=3 store-1:apples=11 store-3:plums=40 store-2:pears=2)
printf "\$ printf '%%s\\\\n' %s | %s\n" "${records[*]}" "$RUNNEL produce $TOPIC -K: -H source=demo -b $BROKERS"
printf '%s\n' "${records[@]}" | "$RUNNEL" produce "$TOPIC" -K: -H source=demo -b "$BROKERS"

say "consume them from the beginning"
run "$RUNNEL" consume "$TOPIC" --from beginning -n 5 --print-key -b "$BROKERS"

say "the same records as JSON (partition, offset, key, headers, timestamp)"
run "$RUNNEL" consume "$TOPIC" --from beginning -n 5 -o json -b "$BROKERS"

say "stop the broker"
stop_broker
trap - EXIT
echo "done. The broker's data is in $DEMO_DIR; run it again with:"
echo "  $RUNNEL broker --log.dirs $DEMO_DIR"
