// Package compat proves that Kafka clients we did not write work against the
// broker: franz-go, IBM/sarama and segmentio/kafka-go in process, and kcat
// (librdkafka), kafkajs and kafka-python as child processes.
//
// Each test starts its own broker with startBroker (broker_test.go, the one
// place that decides which broker the tests run against), creates its own
// topics, round-trips records with keys, headers and timestamps through the
// client under test once per compression codec the client supports, and
// asserts exactly what came back: partition, offset, key, value, headers (in
// order) and timestamp. Between the client's produce and its consume, the log
// is read independently with franz-go, which also checks that the batches on
// the log carry the codec the client was asked to use.
//
// The group tests (files *group_test.go, and goka_test.go) consume through
// consumer groups: franz-go with the range and cooperative-sticky assignors
// and static membership, sarama's ConsumerGroup, kafkajs, kafka-python and
// `kcat -G`, and a goka processor with a group table. They produce known
// records over four partitions, require every record exactly once, and hand a
// group's committed offsets from one client to another: each hand-over is
// read back with kadm, and the next client must get exactly the records after
// it.
//
// startBroker is Runnel's broker. Built with `-tags kfake`, the tests run
// against franz-go's kfake instead (kfake_ref_test.go), a reference for
// telling a broker bug from a wrong test.
//
// The external clients are installed by `make tools` (which `make test` runs
// first). A missing client is a test failure, never a skip. Every child
// process runs under a context deadline.
package compat
