package configs

import (
	"errors"
	"strconv"
	"strings"
)

// topicTable lists every topic config, with Kafka 4.0's types, defaults and
// ranges. A topic config's broker-wide default comes from its
// BrokerSynonyms (see the broker table); Default here is what applies when
// none of them is set, and always equals the broker default.
var topicTable = newTable(false, []*Def{
	newDef("cleanup.policy", List, "delete", listOf("delete", "compact"),
		"How old segments are cleaned: delete removes segments past retention.ms / retention.bytes; compact keeps the latest record per key; both do both. An empty list keeps everything.").
		synonyms("log.cleanup.policy"),
	newDef("compression.type", String, "producer", oneOf(compressionNames...),
		"The codec batches are stored with: producer keeps the producer's codec; uncompressed, gzip, snappy, lz4 or zstd make the broker recompress batches that arrive with another codec.").
		synonyms("compression.type"),
	newDef("compression.gzip.level", Int, "-1", gzipLevel,
		"The gzip level used when compression.type is gzip; -1 is the codec's default.").
		synonyms("compression.gzip.level"),
	newDef("compression.lz4.level", Int, "9", between(1, 17),
		"The lz4 level used when compression.type is lz4.").
		synonyms("compression.lz4.level"),
	newDef("compression.zstd.level", Int, "3", between(-131072, 22),
		"The zstd level used when compression.type is zstd.").
		synonyms("compression.zstd.level"),
	newDef("delete.retention.ms", Long, "86400000", atLeast(0),
		"How long tombstones (null-value records) of a compacted topic are kept after compaction reaches them, so consumers can see the delete.").
		synonyms("log.cleaner.delete.retention.ms"),
	newDef("file.delete.delay.ms", Long, "60000", atLeast(0),
		"How long a removed segment's files stay on disk before they are deleted.").
		synonyms("log.segment.delete.delay.ms"),
	newDef("flush.messages", Long, maxLong, atLeast(1),
		"With log.flush=never, fsync a partition after this many messages. Runnel fsyncs every acknowledged write unless log.flush=never.").
		synonyms("log.flush.interval.messages"),
	newDef("flush.ms", Long, maxLong, atLeast(0),
		"With log.flush=never, fsync a partition when its oldest unflushed message is this old.").
		synonyms("log.flush.interval.ms", "log.flush.scheduler.interval.ms"),
	newDef("follower.replication.throttled.replicas", List, "", throttledReplicas,
		"Replicas whose follower-side replication is throttled: partition:broker pairs or *. Accepted and stored for kafka-reassign-partitions; Runnel does not throttle yet."),
	newDef("index.interval.bytes", Int, "4096", atLeast(0),
		"Bytes of log between two offset-index entries; smaller means a denser index and shorter scans.").
		synonyms("log.index.interval.bytes"),
	newDef("leader.replication.throttled.replicas", List, "", throttledReplicas,
		"Replicas whose leader-side replication is throttled: partition:broker pairs or *. Accepted and stored for kafka-reassign-partitions; Runnel does not throttle yet."),
	newDef("max.compaction.lag.ms", Long, maxLong, atLeast(1),
		"The longest a record may stay uncompacted in a compacted topic.").
		synonyms("log.cleaner.max.compaction.lag.ms"),
	newDef("max.message.bytes", Int, "1048588", atLeast(0),
		"The largest record batch the topic accepts, in bytes (after compression).").
		synonyms("message.max.bytes"),
	newDef("message.downconversion.enable", Boolean, "true", none,
		"No effect: Kafka 4.0 keeps this key for compatibility but never down-converts, and neither does Runnel."),
	newDef("message.timestamp.after.max.ms", Long, "3600000", atLeast(0),
		"With CreateTime, reject a batch whose timestamp is more than this far ahead of the broker's clock.").
		synonyms("log.message.timestamp.after.max.ms"),
	newDef("message.timestamp.before.max.ms", Long, maxLong, atLeast(0),
		"With CreateTime, reject a batch whose timestamp is more than this far behind the broker's clock.").
		synonyms("log.message.timestamp.before.max.ms"),
	newDef("message.timestamp.type", String, "CreateTime", oneOf("CreateTime", "LogAppendTime"),
		"CreateTime keeps the producer's timestamps; LogAppendTime makes the broker stamp each batch with its clock on append.").
		synonyms("log.message.timestamp.type"),
	newDef("min.cleanable.dirty.ratio", Double, "0.5", betweenFloat(0, 1),
		"Compaction of a log starts when the uncompacted share of it reaches this ratio.").
		synonyms("log.cleaner.min.cleanable.ratio"),
	newDef("min.compaction.lag.ms", Long, "0", atLeast(0),
		"The shortest time a record stays uncompacted in a compacted topic.").
		synonyms("log.cleaner.min.compaction.lag.ms"),
	newDef("min.insync.replicas", Int, "1", atLeast(1),
		"With acks=all, the number of in-sync replicas that must have a write before it is acknowledged; fewer in sync makes produce fail with NOT_ENOUGH_REPLICAS.").
		synonyms("min.insync.replicas"),
	newDef("preallocate", Boolean, "false", none,
		"Preallocate a new segment's file on disk. Accepted; Runnel does not preallocate.").
		synonyms("log.preallocate"),
	newDef("retention.bytes", Long, "-1", none,
		"With the delete policy, the size a partition may grow to before its oldest segments are deleted; -1 is no limit.").
		synonyms("log.retention.bytes"),
	newDef("retention.ms", Long, "604800000", atLeast(-1),
		"With the delete policy, how long a segment is kept after its newest record's timestamp; -1 is no limit.").
		synonyms("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
	newDef("segment.bytes", Int, "1073741824", atLeast(1<<20),
		"The size a segment file may reach before a new one is started.").
		synonyms("log.segment.bytes"),
	newDef("segment.index.bytes", Int, "10485760", atLeast(4),
		"The size of a segment's offset index file; a full index also rolls the segment.").
		synonyms("log.index.size.max.bytes"),
	newDef("segment.jitter.ms", Long, "0", atLeast(0),
		"A random amount, up to this, subtracted from segment.ms per segment so partitions do not all roll at once.").
		synonyms("log.roll.jitter.ms", "log.roll.jitter.hours"),
	newDef("segment.ms", Long, "604800000", atLeast(1),
		"Roll to a new segment after this long even if the current one is not full, so retention and compaction can act on it.").
		synonyms("log.roll.ms", "log.roll.hours"),
	newDef("unclean.leader.election.enable", Boolean, "false", none,
		"Allow a replica outside the ISR to become leader when no in-sync replica is alive, at the price of losing acknowledged writes.").
		synonyms("unclean.leader.election.enable"),
})

// compressionNames are compression.type's values, in Kafka's order.
var compressionNames = []string{"uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"}

var gzipLevel = custom("[1,...,9] or -1", func(v string) error {
	if i, _ := strconv.Atoi(v); i != -1 && (i < 1 || i > 9) {
		return errors.New("must be between 1 and 9, or -1")
	}
	return nil
})

// throttledReplicas allows "*" or partition:broker pairs (Kafka's
// ThrottledReplicaListValidator).
var throttledReplicas = custom("[partitionId]:[brokerId],[partitionId]:[brokerId],... or *", func(v string) error {
	const msg = "must be * or a list of partition:broker pairs"
	items := splitList(v)
	if len(items) == 1 && items[0] == "*" {
		return nil
	}
	for _, it := range items {
		p, b, ok := strings.Cut(it, ":")
		if !ok || !isDigits(p) || !isDigits(b) {
			return errors.New(msg)
		}
	}
	return nil
})

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
