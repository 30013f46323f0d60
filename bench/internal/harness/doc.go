// Package harness drives the load of Runnel's benchmarks: it produces and
// consumes through franz-go with checked counts and offsets, measures the
// machine's raw limit (loopback TCP into an fsynced file), runs a broker
// (`runnel broker`, or kfake through cmd/kfakebroker) as a child process
// and reads its memory and CPU from /proc.
//
// Every driver fails loudly: a record that is not acknowledged, a missing,
// duplicated or out-of-order offset, or a run that stops making progress
// (see Watch) is an error that names what was seen, never a quietly lower
// number.
//
// Files: kafka.go (produce, consume, topics), txn.go (produce in
// transactions, waiting for their markers), clientlog.go (kgo warnings),
// watch.go (stall detection), raw.go (raw limit), process.go (broker
// child processes), cluster.go (a cluster of broker processes), latency.go
// (paced produce with end-to-end latency), procfs.go (/proc and
// getrusage), memcheck.go (the memory check behind cmd/memcheck).
package harness
