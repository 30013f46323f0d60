// Package streams is Runnel Streams: a typed Go DSL for stream processing
// apps in the spirit of Kafka Streams. An app reads topics, transforms,
// aggregates, windows and joins their records with local state, and
// writes topics; it talks to brokers only through the Kafka protocol
// (franz-go), so the same app runs on Runnel, Apache Kafka or Redpanda.
//
// # Writing an app
//
// A Builder collects the topology: sources (From, TableFrom,
// GlobalTableFrom), operators on a Stream (Filter, Map, FlatMap,
// SelectKey, Branch, Merge, Process...), groupings (GroupByKey, GroupBy)
// aggregated into a Table (Count, Reduce, Aggregate, with or without
// windows), joins, and sinks (To, ToFunc). Types flow through generics:
// a Stream[string, Order] mapped with a func(string, Order) (int64, Total)
// is a Stream[int64, Total], and a mismatch is a compile error, not a
// runtime panic.
//
//	b := streams.NewBuilder()
//	streams.From[string, string](b, "sentences").
//		FlatMapValues(func(s string) []string { return strings.Fields(s) }).
//		GroupBy(func(_, word string) string { return word }).
//		Count(streams.Materialized("counts")).
//		ToStream().
//		To("word-counts")
//	topo, err := b.Build()
//
// DSL calls never fail on their own: the first problem (a serde of the
// wrong type, a store defined twice, a topic read twice) is returned by
// Build, wrapped in ErrTopology. Topology.Describe prints the nodes,
// subtopologies, stores and topics as Kafka Streams does.
//
// Keys and values are encoded by serdes (package serde): Kafka's formats
// for strings, bytes and numbers by default, JSON for other types, and
// protobuf on request. Records a serde cannot decode go to the app's
// BadRecordHandler: fail (the default), skip, or a dead-letter topic.
//
// # Running it
//
// NewApp and App.Run run a topology as one instance of an application.
// Instances with the same ApplicationID form a consumer group and share
// the work: each input partition (of each subtopology) is a task, and the
// group's assignor spreads the tasks over the instances, moving as few as
// it can when one joins or leaves. Internal topics — repartition topics
// between subtopologies and a compacted changelog per store — are created
// at start with the partition counts the topology needs.
//
// State lives in one pebble DB per instance (Config.StateDir, or memory).
// Store writes are buffered and committed together with the task's
// progress: at least once (the default), outputs are acknowledged, store
// changes reach their changelogs and local state commits before the input
// offsets do; exactly once, all of it is one Kafka transaction and local
// state commits only after the transaction did. A task moving to an
// instance restores its stores from their changelogs, from the checkpoint
// its local state holds.
//
// Run returns when its context ends (after a final commit: a graceful
// stop) or when a task fails; the error says which record or store.
//
// # Reading state while it runs
//
// Interactive queries read an instance's stores: Get, QueryKey and
// QueryStore in Go, and over HTTP with App.Handler (served on
// Config.Endpoint), which answers for the keys this instance hosts and
// redirects the others to their owner. Handler also serves /metrics:
// records processed per node, poll and commit latency, store sizes,
// restore progress and lag per task.
//
// # Testing
//
// Package streamstest runs a topology without a broker: pipe records in,
// read outputs and stores, move stream time and the wall clock by hand.
//
// # Concurrency
//
// A topology is immutable and may run in many Apps. An App runs one loop
// goroutine that polls, processes, punctuates, commits and restores; it
// owns the tasks and the state DB. franz-go's rebalance callbacks run on
// the client's goroutines only while the loop is polling, and take the same
// lock. Queries and the HTTP handler take that lock too, between two
// polls. Processors, punctuations and DSL functions are called from the
// loop goroutine only, one record at a time per task. See DESIGN.md for
// the file map and the lock order.
package streams
