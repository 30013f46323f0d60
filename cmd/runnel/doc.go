// Command runnel is Runnel's one binary. Its client commands talk to any
// Kafka-compatible cluster through franz-go (kgo, kadm), never through
// Runnel internals:
//
//	runnel topic create NAME [-p N] [-r N] [-c key=value]... [--if-not-exists] [--validate-only]
//	runnel topic list [--internal]
//	runnel topic describe NAME...
//	runnel topic alter NAME [-c key=value]... [--delete-config key]... [-p N]
//	runnel topic delete NAME... [--if-exists]
//	runnel produce TOPIC [-f file] [-K sep] [-H key=value]... [-p N] [--acks all|1|0] [--compression codec]
//	runnel consume TOPIC [--from where] [-p N] [-n count] [-f] [-o text|json] [-g group] [--isolation level]
//	runnel group list [--state Stable,Empty,...]
//	runnel group describe GROUP... [--members [--verbose] | --state] [-o text|json]
//	runnel group reset-offsets -g GROUP (--topic T[:P,P...]... | --all-topics) MODE [--execute]
//	runnel group delete GROUP... [--topic T[:P,P...]...]
//	runnel txn list [--state S,...] [--duration-filter MS] [--transactional-id-pattern RE] [-o text|json]
//	runnel txn describe TRANSACTIONAL-ID... [-o text|json]
//	runnel txn describe-producers --topic T --partition N [-o text|json]
//	runnel cluster status [-o text|json] [--limit N] [--fail-unhealthy]
//	runnel perf produce --topic T --num-records N [--record-size B] [--throughput recs/s] ...
//	runnel perf consume --topic T --messages N [--group G]
//
// Every command takes -b/--brokers (default $RUNNEL_BROKERS, else
// localhost:9092) and --client-id. Flags follow Kafka's CLI tools and kcat
// where they have one (-b, -K, -H, -p, --acks, --compression, --from, and
// kafka-consumer-groups' --state, --members, --to-earliest, --shift-by ...,
// kafka-transactions' --duration-filter, --transactional-id-pattern).
//
// Output contract: data goes to stdout (records, tables, perf summaries);
// progress, counts and errors go to stderr. Errors say what to do next and
// make the process exit with status 1 (cluster status --fail-unhealthy
// exits 2 on an unhealthy cluster).
//
// The command tree is built by newRootCmd with explicit stdin, stdout and
// stderr, so tests run commands in-process against a broker on loopback.
// See DESIGN.md in this folder for the file map and the goroutines.
package main
