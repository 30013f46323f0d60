// Package bench holds Runnel's throughput benchmarks: produce and consume
// through franz-go against Runnel (in-process and as a `runnel broker`
// process), against franz-go's kfake, and the machine's raw limit (the same
// bytes over loopback TCP into an fsynced file). `make bench` runs them,
// then cmd/memcheck (broker memory while 10 GB flow through), and prints
// the table of cmd/benchtable. README.md says what is measured and how to
// read the table; the load itself lives in internal/harness.
package bench
