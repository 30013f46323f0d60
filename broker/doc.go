// Package broker embeds a Runnel broker: a node that speaks the Kafka wire
// protocol, so every Kafka client works against it unchanged.
//
// # Use
//
//	b, err := broker.New(broker.Config{Settings: map[string]string{
//		"log.dirs":  "/var/lib/runnel",
//		"listeners": "PLAINTEXT://127.0.0.1:9092",
//	}})
//	if err != nil { ... }
//	go b.Run(ctx)        // serves until ctx ends or Close is called
//	fmt.Println(b.Addr()) // the bound address, e.g. for listeners on port 0
//	defer b.Close()
//
// Settings take Kafka's config names (num.partitions, log.retention.ms,
// auto.create.topics.enable, ...); keys Kafka has no name for start with
// "runnel." (runnel.http.listener: the address of /metrics, /healthz and
// /readyz). LoadConfigFile reads them from YAML or a .properties file.
//
// # Lifecycle
//
// New opens the data directory — replaying the metadata journal and
// recovering every partition's log (a torn tail is cut at the last whole
// batch) — and binds the listeners, so Addr is valid as soon as New
// returns. Run accepts connections and runs background work (segment rolls,
// retention, log compaction) until its context ends or Close is called.
// Close stops accepting, stops the log cleaner (a pass in progress is
// abandoned; its half-written file is removed now or at the next start),
// closes connections, waits for every goroutine, then syncs and
// closes every partition; it is idempotent.
//
// # Concurrency
//
// Each connection has a reader goroutine (decodes and dispatches requests in
// order) and a writer goroutine (writes responses in request order);
// produces wait for their fsync and fetches wait for data on goroutines of
// their own, so pipelined requests overlap. One housekeeping goroutine rolls
// segments and enforces retention; log.cleaner.threads goroutines compact
// topics with cleanup.policy=compact; one more serves HTTP.
package broker
