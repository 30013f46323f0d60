#!/usr/bin/env bash
# cluster.sh runs a three-node Runnel cluster on this machine until Ctrl-C:
# three `bin/runnel broker` processes, each a broker and a voter of the
# metadata quorum (Kafka's combined mode), on 127.0.0.1. It prints how to
# reach them, then waits; Ctrl-C stops every node cleanly (a controlled
# shutdown each) and keeps the data for the next run.
#
# Environment (the Makefile's `cluster` target sets them):
#   RUNNEL        the runnel binary                      (bin/runnel)
#   CLUSTER_DIR   data; node N uses $CLUSTER_DIR/nodeN   (.data/cluster)
#   CLUSTER_PORT  node 1's Kafka port; node N uses +N-1  (9092)
#   CLUSTER_CTRL  node 1's controller (quorum) port      (9192)
#   CLUSTER_HTTP  node 1's /metrics and /readyz port     (9644)
set -euo pipefail

cd "$(dirname "$0")/.."

RUNNEL=${RUNNEL:-bin/runnel}
CLUSTER_DIR=${CLUSTER_DIR:-.data/cluster}
CLUSTER_PORT=${CLUSTER_PORT:-9092}
CLUSTER_CTRL=${CLUSTER_CTRL:-9192}
CLUSTER_HTTP=${CLUSTER_HTTP:-9644}
NODES=3

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

[[ -x $RUNNEL ]] || { echo "cluster: $RUNNEL is missing: run make build" >&2; exit 1; }
voters=
seeds=
for n in $(seq $NODES); do
	for port in $((CLUSTER_PORT + n - 1)) $((CLUSTER_CTRL + n - 1)) $((CLUSTER_HTTP + n - 1)); do
		if port_busy "$port"; then
			echo "cluster: port $port on 127.0.0.1 is taken; pick others: make cluster CLUSTER_PORT=19092 CLUSTER_CTRL=19192 CLUSTER_HTTP=19644" >&2
			exit 1
		fi
	done
	voters+="${voters:+,}$n@127.0.0.1:$((CLUSTER_CTRL + n - 1))"
	seeds+="${seeds:+,}127.0.0.1:$((CLUSTER_PORT + n - 1))"
done

pids=()
stop_all() {
	for pid in "${pids[@]}"; do
		kill -TERM "$pid" 2>/dev/null || true
	done
	for pid in "${pids[@]}"; do
		wait "$pid" 2>/dev/null || true
	done
}
trap stop_all EXIT
trap 'exit 0' INT TERM

# Every node waits for a majority of the voters before it serves: start
# them together.
for n in $(seq $NODES); do
	dir=$CLUSTER_DIR/node$n
	mkdir -p "$dir"
	"$RUNNEL" broker --node.id "$n" --controller.quorum.voters "$voters" \
		--listeners "PLAINTEXT://127.0.0.1:$((CLUSTER_PORT + n - 1))" \
		--runnel.http.listener "127.0.0.1:$((CLUSTER_HTTP + n - 1))" \
		--log.dirs "$dir" --default.replication.factor 3 --min.insync.replicas 2 \
		--offsets.topic.replication.factor 3 >>"$dir/broker.log" 2>&1 &
	pids+=($!)
done

for n in $(seq $NODES); do
	url=http://127.0.0.1:$((CLUSTER_HTTP + n - 1))/readyz
	ready=
	for _ in $(seq 600); do # up to 60 s
		if ! kill -0 "${pids[n - 1]}" 2>/dev/null; then
			echo "cluster: node $n exited; its log ($CLUSTER_DIR/node$n/broker.log):" >&2
			tail -n 30 "$CLUSTER_DIR/node$n/broker.log" >&2
			exit 1
		fi
		if curl -fsS --max-time 1 "$url" >/dev/null 2>&1; then
			ready=1
			break
		fi
		sleep 0.1
	done
	[[ -n $ready ]] || { echo "cluster: node $n not ready after 60s; its log:" >&2; tail -n 30 "$CLUSTER_DIR/node$n/broker.log" >&2; exit 1; }
done

cat <<EOF
A three-node Runnel cluster is running (logs: $CLUSTER_DIR/node*/broker.log).
Topics get 3 replicas and acks=all writes need 2 in sync. In another terminal:

  $RUNNEL cluster status -b $seeds
  $RUNNEL topic create orders --partitions 6 -b $seeds
  printf 'a\nb\nc\n' | $RUNNEL produce orders -b $seeds
  $RUNNEL consume orders --from beginning -n 3 -b $seeds

Stop one node (kill -TERM ${pids[0]}, node 1) and the others take over its
partitions. Ctrl-C stops the cluster.
EOF
wait
