package configs

import (
	"errors"
	"fmt"
	"net"
	"strconv"
)

// brokerTable lists every broker config. Kafka 4.0's defaults, except where
// a comment says why Runnel differs. The log.* and other topic-default keys
// are the BrokerSynonyms of topic configs; the Dynamic ones among them are
// exactly those Kafka lets kafka-configs change at runtime (the first name
// of each synonym list).
var brokerTable = newTable(true, []*Def{
	// --- node and cluster ---

	// Kafka requires node.id; a single Runnel node needs no setup, so 1.
	newDef("node.id", Int, "1", atLeast(0),
		"This node's id, unique in the cluster."),
	// Kafka requires process.roles; Runnel defaults to combined mode.
	newDef("process.roles", List, "broker,controller", listOf("broker", "controller"),
		"What this node does: broker, controller (a voter of the metadata quorum) or both. Must not be empty."),
	newDef("controller.quorum.voters", List, "", custom("id@host:port,...", func(v string) error {
		_, err := parseVoters(v)
		return err
	}), "The metadata quorum's voters as id@host:port. Empty: this node alone (single-node cluster)."),
	newDef("controller.quorum.election.timeout.ms", Int, "1000", atLeast(1),
		"How long a candidate of the metadata quorum waits for votes before it starts a new election."),
	newDef("controller.quorum.fetch.timeout.ms", Int, "2000", atLeast(1),
		"How long a voter goes without hearing from the quorum's leader before it becomes a candidate."),
	// Kafka keeps the cluster id in meta.properties, written by
	// kafka-storage format; Runnel lets the config set it.
	newDef("cluster.id", String, null, custom("1 to 64 of [a-zA-Z0-9_-]", validClusterID),
		"The cluster's id. Unset: generated on first start and kept in the data directory; when set it must match the stored one."),
	newDef("broker.rack", String, null, none,
		"The rack (or zone) of this node, used to spread replicas and reported in metadata."),

	// --- network ---

	newDef("listeners", String, "PLAINTEXT://:9092", custom("NAME://host:port,...", func(v string) error {
		_, err := parseListeners(v)
		return err
	}), "Addresses to accept Kafka clients on, as NAME://host:port; an empty host binds all interfaces, port 0 picks a free port."),
	newDef("advertised.listeners", String, null, custom("NAME://host:port,...", func(v string) error {
		_, err := parseListeners(v)
		return err
	}), "Addresses given to clients in metadata, as NAME://host:port. Unset: the listeners, with an empty host replaced by the machine's host name."),
	newDef("listener.security.protocol.map", String,
		"PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
		custom("NAME:PROTOCOL,...", func(v string) error {
			_, err := parseProtocolMap(v)
			return err
		}), "The security protocol of each listener name, as NAME:PROTOCOL pairs."),
	newDef("socket.request.max.bytes", Int, "104857600", atLeast(1),
		"The largest request frame a connection may send, in bytes."),
	newDef("connections.max.idle.ms", Long, "600000", none,
		"Close client connections idle for this long."),
	newDef("max.incremental.fetch.session.cache.slots", Int, "1000", atLeast(0),
		"The most incremental fetch sessions (KIP-227) the broker keeps; 0 answers every fetch sessionless."),
	// Runnel-specific (Kafka serves metrics over JMX and has no such key).
	newDef("runnel.http.listener", String, ":9099", custom("host:port, or empty", validHTTPListener),
		"Runnel's HTTP address for /metrics (Prometheus), /healthz and /readyz, as host:port. Empty disables it; port 0 picks a free port."),

	// --- topics ---

	newDef("num.partitions", Int, "1", atLeast(1),
		"Partitions of a topic created without a count (auto-created, or CreateTopics with -1)."),
	newDef("default.replication.factor", Int, "1", between(1, 32767),
		"Replication factor of a topic created without one (auto-created, or CreateTopics with -1)."),
	newDef("auto.create.topics.enable", Boolean, "true", none,
		"Create a topic when a client asks for its metadata or produces to it and it does not exist."),
	newDef("delete.topic.enable", Boolean, "true", none,
		"Allow DeleteTopics; false makes it fail with TOPIC_DELETION_DISABLED."),

	// --- log: storage and durability ---

	newDef("log.dir", String, "./data", custom("a directory", func(v string) error {
		if v == "" {
			return errors.New("must not be empty")
		}
		return nil
	}),
		"The data directory, used when log.dirs is unset."),
	newDef("log.dirs", String, null, custom("dir,dir,...", validDirs),
		"Comma-separated data directories; overrides log.dir."),
	// Runnel-specific; named in the project design (see doc.go).
	newDef("log.flush", String, "always", oneOf("always", "never"),
		"always: an acknowledged write (acks=1 or all) is fsynced first, with group commit. never: leave flushing to the OS page cache, as Kafka does, flushing only per flush.messages / flush.ms."),
	newDef("log.flush.interval.messages", Long, maxLong, atLeast(1),
		defaultOf("flush.messages", "")).dynamic(),
	newDef("log.flush.interval.ms", Long, null, atLeast(0),
		defaultOf("flush.ms", "Unset: log.flush.scheduler.interval.ms.")).dynamic(),
	newDef("log.flush.scheduler.interval.ms", Long, maxLong, none,
		"How often logs are checked for a due flush; also the default of flush.ms when log.flush.interval.ms is unset."),
	newDef("log.segment.bytes", Int, "1073741824", atLeast(1<<20),
		defaultOf("segment.bytes", "")).dynamic(),
	newDef("log.roll.ms", Long, null, atLeast(1),
		defaultOf("segment.ms", "Unset: log.roll.hours.")).dynamic(),
	newDef("log.roll.hours", Int, "168", atLeast(1),
		defaultOf("segment.ms", "In hours; used when log.roll.ms is unset.")).scaled(3600000),
	newDef("log.roll.jitter.ms", Long, null, atLeast(0),
		defaultOf("segment.jitter.ms", "Unset: log.roll.jitter.hours.")).dynamic(),
	newDef("log.roll.jitter.hours", Int, "0", atLeast(0),
		defaultOf("segment.jitter.ms", "In hours; used when log.roll.jitter.ms is unset.")).scaled(3600000),
	newDef("log.index.size.max.bytes", Int, "10485760", atLeast(4),
		defaultOf("segment.index.bytes", "")).dynamic(),
	newDef("log.index.interval.bytes", Int, "4096", atLeast(0),
		defaultOf("index.interval.bytes", "")).dynamic(),
	newDef("log.preallocate", Boolean, "false", none,
		defaultOf("preallocate", "")).dynamic(),
	newDef("log.segment.delete.delay.ms", Long, "60000", atLeast(0),
		defaultOf("file.delete.delay.ms", "")).dynamic(),
	newDef("message.max.bytes", Int, "1048588", atLeast(0),
		defaultOf("max.message.bytes", "")).dynamic(),

	// --- log: retention and cleaning ---

	newDef("log.cleanup.policy", List, "delete", listOf("delete", "compact"),
		defaultOf("cleanup.policy", "")).dynamic(),
	newDef("log.retention.ms", Long, null, atLeast(-1),
		defaultOf("retention.ms", "Unset: log.retention.minutes.")).dynamic(),
	newDef("log.retention.minutes", Int, null, atLeast(-1),
		defaultOf("retention.ms", "In minutes; used when log.retention.ms is unset. Unset: log.retention.hours.")).scaled(60000),
	newDef("log.retention.hours", Int, "168", atLeast(-1),
		defaultOf("retention.ms", "In hours; used when log.retention.ms and log.retention.minutes are unset.")).scaled(3600000),
	newDef("log.retention.bytes", Long, "-1", none,
		defaultOf("retention.bytes", "")).dynamic(),
	newDef("log.retention.check.interval.ms", Long, "300000", atLeast(1),
		"How often the broker looks for segments to delete under the retention settings."),
	newDef("log.cleaner.enable", Boolean, "true", none,
		"Run the log cleaner, which compacts topics with cleanup.policy=compact. Off: compacted topics grow without bound."),
	// Kafka lets kafka-configs change log.cleaner.threads at runtime; Runnel
	// reads the cleaner keys at start.
	newDef("log.cleaner.threads", Int, "1", atLeast(0),
		"Goroutines that clean logs; each cleans one log at a time."),
	newDef("log.cleaner.backoff.ms", Long, "15000", atLeast(0),
		"How long a cleaner waits when no log is cleanable before looking again."),
	newDef("log.cleaner.dedupe.buffer.size", Long, "134217728", atLeast(0),
		"Memory for the cleaners' offset maps (key hash to newest offset), shared out evenly among log.cleaner.threads: 24 bytes a key, filled to at most log.cleaner.io.buffer.load.factor. A log with more dirty keys is cleaned over several passes."),
	newDef("log.cleaner.io.buffer.size", Int, "524288", atLeast(0),
		"Memory for the cleaners' reads and writes, shared out evenly among log.cleaner.threads, half each for reading and writing (a larger batch still fits)."),
	newDef("log.cleaner.io.buffer.load.factor", Double, "0.9", betweenFloat(0.01, 1),
		"How full a cleaner's offset map may get: a higher factor fits more keys in log.cleaner.dedupe.buffer.size but probes longer."),
	newDef("log.cleaner.delete.retention.ms", Long, "86400000", atLeast(0),
		defaultOf("delete.retention.ms", "")).dynamic(),
	newDef("log.cleaner.min.compaction.lag.ms", Long, "0", atLeast(0),
		defaultOf("min.compaction.lag.ms", "")).dynamic(),
	newDef("log.cleaner.max.compaction.lag.ms", Long, maxLong, atLeast(1),
		defaultOf("max.compaction.lag.ms", "")).dynamic(),
	newDef("log.cleaner.min.cleanable.ratio", Double, "0.5", betweenFloat(0, 1),
		defaultOf("min.cleanable.dirty.ratio", "")).dynamic(),

	// --- log: records ---

	newDef("log.message.timestamp.type", String, "CreateTime", oneOf("CreateTime", "LogAppendTime"),
		defaultOf("message.timestamp.type", "")).dynamic(),
	newDef("log.message.timestamp.before.max.ms", Long, maxLong, atLeast(0),
		defaultOf("message.timestamp.before.max.ms", "")).dynamic(),
	newDef("log.message.timestamp.after.max.ms", Long, "3600000", atLeast(0),
		defaultOf("message.timestamp.after.max.ms", "")).dynamic(),
	newDef("compression.type", String, "producer", oneOf(compressionNames...),
		defaultOf("compression.type", "")).dynamic(),
	newDef("compression.gzip.level", Int, "-1", gzipLevel,
		defaultOf("compression.gzip.level", "")).dynamic(),
	newDef("compression.lz4.level", Int, "9", between(1, 17),
		defaultOf("compression.lz4.level", "")).dynamic(),
	newDef("compression.zstd.level", Int, "3", between(-131072, 22),
		defaultOf("compression.zstd.level", "")).dynamic(),

	// --- replication ---

	newDef("min.insync.replicas", Int, "1", atLeast(1),
		defaultOf("min.insync.replicas", "")).dynamic(),
	newDef("unclean.leader.election.enable", Boolean, "false", none,
		defaultOf("unclean.leader.election.enable", "")).dynamic(),
	newDef("replica.fetch.max.bytes", Int, "1048576", atLeast(0),
		"Bytes a follower asks for per partition in one fetch (a larger first batch is still returned whole)."),
	newDef("replica.fetch.wait.max.ms", Int, "500", atLeast(0),
		"How long a follower's fetch may wait at the leader for new data."),
	newDef("replica.lag.time.max.ms", Long, "30000", atLeast(1),
		"A follower that has not caught up with the leader's log end for this long leaves the ISR."),
	newDef("broker.session.timeout.ms", Int, "9000", atLeast(1),
		"The active controller fences a broker that has not heartbeated for this long: it leads no partition and leaves the ISRs."),
	newDef("broker.heartbeat.interval.ms", Int, "2000", atLeast(1),
		"How often a broker heartbeats to the active controller."),
	newDef("auto.leader.rebalance.enable", Boolean, "true", none,
		"The active controller moves leadership back to each partition's preferred replica (the first) when a broker's share of partitions led by others passes leader.imbalance.per.broker.percentage."),
	newDef("leader.imbalance.per.broker.percentage", Int, "10", between(0, 100),
		"The share, in percent, of a broker's preferred partitions led by others above which the controller rebalances leadership."),
	newDef("leader.imbalance.check.interval.seconds", Long, "300", atLeast(1),
		"How often the active controller checks for leader imbalance."),

	// --- group coordinator ---

	newDef("offsets.topic.num.partitions", Int, "50", atLeast(1),
		"Partitions of __consumer_offsets; fixed once the topic exists."),
	// Kafka: 3. Runnel: 1, as in Kafka's shipped server.properties, so a
	// single node works out of the box; set 3 for a production cluster.
	newDef("offsets.topic.replication.factor", Short, "1", atLeast(1),
		"Replication factor of __consumer_offsets."),
	newDef("offsets.topic.segment.bytes", Int, "104857600", atLeast(1),
		"Segment size of __consumer_offsets, kept small so the cleaner compacts it promptly."),
	newDef("offsets.retention.minutes", Int, "10080", atLeast(1),
		"Committed offsets of a group with no members are deleted after this long."),
	newDef("offsets.retention.check.interval.ms", Long, "600000", atLeast(1),
		"How often committed offsets are checked for expiry."),
	newDef("offset.metadata.max.bytes", Int, "4096", atLeast(0),
		"The most bytes of metadata an offset commit may carry."),
	newDef("group.initial.rebalance.delay.ms", Int, "3000", atLeast(0),
		"How long a new (empty) group waits for more members before its first rebalance."),
	newDef("group.min.session.timeout.ms", Int, "6000", atLeast(0),
		"The shortest session timeout a group member may ask for."),
	newDef("group.max.session.timeout.ms", Int, "1800000", atLeast(0),
		"The longest session timeout a group member may ask for."),
	newDef("group.max.size", Int, "2147483647", atLeast(1),
		"The most members one consumer group may have."),

	// --- transactions and idempotence ---

	newDef("transaction.state.log.num.partitions", Int, "50", atLeast(1),
		"Partitions of __transaction_state; fixed once the topic exists."),
	// Kafka: 3 and 2. Runnel: 1 and 1, as in Kafka's shipped
	// server.properties, so transactions work on a single node.
	newDef("transaction.state.log.replication.factor", Short, "1", atLeast(1),
		"Replication factor of __transaction_state."),
	newDef("transaction.state.log.min.isr", Int, "1", atLeast(1),
		"min.insync.replicas of __transaction_state."),
	newDef("transaction.state.log.segment.bytes", Int, "104857600", atLeast(1),
		"segment.bytes of __transaction_state."),
	newDef("transaction.abort.timed.out.transaction.cleanup.interval.ms", Int, "10000", atLeast(1),
		"How often transactions past their timeout are looked for and aborted."),
	newDef("transaction.remove.expired.transaction.cleanup.interval.ms", Int, "3600000", atLeast(1),
		"How often expired transactional ids are looked for and removed."),
	newDef("transaction.max.timeout.ms", Int, "900000", atLeast(1),
		"The longest transaction timeout a producer may ask for."),
	newDef("transactional.id.expiration.ms", Int, "604800000", atLeast(1),
		"A transactional id with no transaction for this long expires."),
	newDef("producer.id.expiration.ms", Int, "86400000", atLeast(1),
		"An idempotent producer id that has not produced for this long is forgotten."),
})

// defaultOf documents a broker key that supplies the default of topic
// config topicKey: the topic config's Doc, then extra.
func defaultOf(topicKey, extra string) string {
	doc := "Broker-wide default of the topic config " + topicKey + ": " + topicTable.byName[topicKey].Doc
	if extra != "" {
		doc += " " + extra
	}
	return doc
}

func validClusterID(v string) error {
	if len(v) < 1 || len(v) > 64 {
		return errors.New("must be 1 to 64 characters")
	}
	for _, c := range v {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return errors.New("may contain only ASCII letters, digits, _ and -")
		}
	}
	return nil
}

func validHTTPListener(v string) error {
	if v == "" {
		return nil
	}
	_, port, err := net.SplitHostPort(v)
	if err != nil {
		return errors.New("must be host:port (host may be empty), or empty to disable")
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return fmt.Errorf("port %q must be between 0 and 65535", port)
	}
	return nil
}

func validDirs(v string) error {
	seen := map[string]bool{}
	items := splitList(v)
	if len(items) == 0 {
		return errors.New("must list at least one directory")
	}
	for _, d := range items {
		if d == "" {
			return errors.New("must not contain an empty directory")
		}
		if seen[d] {
			return fmt.Errorf("lists %s twice", d)
		}
		seen[d] = true
	}
	return nil
}
