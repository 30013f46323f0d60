// Package bench holds Runnel's throughput benchmarks: produce and consume
// through franz-go against Runnel and franz-go's kfake, each both inside
// the benchmark process and as a process of its own (`runnel broker`,
// cmd/kfakebroker: the fair pair), and the machine's raw limit (the same
// bytes over loopback TCP into an fsynced file); consumer groups;
// replication; and transactional against idempotent produce (committing
// every 100 ms and every 10,000 records). `make bench` runs them,
// then cmd/memcheck (broker memory while 10 GB flow through), and prints
// the table of cmd/benchtable. README.md says what is measured and how to
// read the table; the load itself lives in internal/harness.
package bench
