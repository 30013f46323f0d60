package configs

import (
	"slices"
	"strconv"
	"strings"
)

// Topic is a topic's effective settings, typed, as the log and partition
// use them. Durations are milliseconds as in Kafka (int64, where Kafka's
// Long.MAX_VALUE means "never"); sizes are bytes; -1 means "no limit" for
// RetentionMs and RetentionBytes.
type Topic struct {
	CleanupPolicy               CleanupPolicy
	CompressionType             Compression
	CompressionGzipLevel        int32 // -1: the codec's default
	CompressionLZ4Level         int32
	CompressionZstdLevel        int32
	DeleteRetentionMs           int64
	FileDeleteDelayMs           int64
	FlushMessages               int64 // used only with log.flush=never
	FlushMs                     int64 // used only with log.flush=never
	IndexIntervalBytes          int32
	MaxCompactionLagMs          int64
	MaxMessageBytes             int32
	MessageTimestampType        TimestampType
	MessageTimestampBeforeMaxMs int64
	MessageTimestampAfterMaxMs  int64
	MinCleanableDirtyRatio      float64
	MinCompactionLagMs          int64
	MinInsyncReplicas           int32
	Preallocate                 bool
	RetentionBytes              int64
	RetentionMs                 int64
	SegmentBytes                int32
	SegmentIndexBytes           int32
	SegmentJitterMs             int64
	SegmentMs                   int64
	UncleanLeaderElection       bool
}

// MaxSegmentMs is how long the active segment may stay open: segment.ms,
// or max.compaction.lag.ms if that is shorter on a compacted topic (so
// compaction can reach every record in time), as Kafka rolls.
func (t Topic) MaxSegmentMs() int64 {
	if t.CleanupPolicy.Compact() && t.MaxCompactionLagMs > 0 {
		return min(t.MaxCompactionLagMs, t.SegmentMs)
	}
	return t.SegmentMs
}

// CleanupPolicy is cleanup.policy: a set of CleanupDelete and
// CleanupCompact. Zero (the empty list) means segments are never removed.
type CleanupPolicy uint8

const (
	CleanupDelete  CleanupPolicy = 1 << iota // delete by retention.ms / retention.bytes
	CleanupCompact                           // keep the latest record per key
)

func (p CleanupPolicy) Delete() bool  { return p&CleanupDelete != 0 }
func (p CleanupPolicy) Compact() bool { return p&CleanupCompact != 0 }

// String returns the config value: "delete", "compact", "compact,delete"
// or "".
func (p CleanupPolicy) String() string {
	var s []string
	if p.Compact() {
		s = append(s, "compact")
	}
	if p.Delete() {
		s = append(s, "delete")
	}
	return strings.Join(s, ",")
}

// Compression is compression.type. Its values other than
// CompressionProducer equal the codec bits of a record batch's attributes.
type Compression int8

const (
	CompressionProducer Compression = -1 // keep the producer's codec
	CompressionNone     Compression = 0  // "uncompressed"
	CompressionGzip     Compression = 1
	CompressionSnappy   Compression = 2
	CompressionLZ4      Compression = 3
	CompressionZstd     Compression = 4
)

// String returns the config value, e.g. "uncompressed" or "zstd".
func (c Compression) String() string {
	switch c {
	case CompressionProducer:
		return "producer"
	case CompressionNone:
		return "uncompressed"
	case CompressionGzip:
		return "gzip"
	case CompressionSnappy:
		return "snappy"
	case CompressionLZ4:
		return "lz4"
	case CompressionZstd:
		return "zstd"
	}
	return "Compression(" + strconv.Itoa(int(c)) + ")"
}

// TimestampType is message.timestamp.type. Its values equal the timestamp
// type bit of a record batch's attributes.
type TimestampType int8

const (
	CreateTime    TimestampType = 0 // keep the producer's timestamps
	LogAppendTime TimestampType = 1 // the broker stamps batches on append
)

func (t TimestampType) String() string {
	if t == LogAppendTime {
		return "LogAppendTime"
	}
	return "CreateTime"
}

// topicSetters copy a canonical (already validated) value into Topic.
// Topic configs missing here are accepted and described but unused.
var topicSetters = map[string]func(t *Topic, v string){
	"cleanup.policy": func(t *Topic, v string) {
		t.CleanupPolicy = 0
		for _, p := range splitList(v) {
			if p == "delete" {
				t.CleanupPolicy |= CleanupDelete
			} else {
				t.CleanupPolicy |= CleanupCompact
			}
		}
	},
	"compression.type": func(t *Topic, v string) {
		t.CompressionType = map[string]Compression{
			"producer": CompressionProducer, "uncompressed": CompressionNone, "gzip": CompressionGzip,
			"snappy": CompressionSnappy, "lz4": CompressionLZ4, "zstd": CompressionZstd,
		}[v]
	},
	"compression.gzip.level":          func(t *Topic, v string) { t.CompressionGzipLevel = i32(v) },
	"compression.lz4.level":           func(t *Topic, v string) { t.CompressionLZ4Level = i32(v) },
	"compression.zstd.level":          func(t *Topic, v string) { t.CompressionZstdLevel = i32(v) },
	"delete.retention.ms":             func(t *Topic, v string) { t.DeleteRetentionMs = i64(v) },
	"file.delete.delay.ms":            func(t *Topic, v string) { t.FileDeleteDelayMs = i64(v) },
	"flush.messages":                  func(t *Topic, v string) { t.FlushMessages = i64(v) },
	"flush.ms":                        func(t *Topic, v string) { t.FlushMs = i64(v) },
	"index.interval.bytes":            func(t *Topic, v string) { t.IndexIntervalBytes = i32(v) },
	"max.compaction.lag.ms":           func(t *Topic, v string) { t.MaxCompactionLagMs = i64(v) },
	"max.message.bytes":               func(t *Topic, v string) { t.MaxMessageBytes = i32(v) },
	"message.timestamp.after.max.ms":  func(t *Topic, v string) { t.MessageTimestampAfterMaxMs = i64(v) },
	"message.timestamp.before.max.ms": func(t *Topic, v string) { t.MessageTimestampBeforeMaxMs = i64(v) },
	"message.timestamp.type": func(t *Topic, v string) {
		t.MessageTimestampType = CreateTime
		if v == "LogAppendTime" {
			t.MessageTimestampType = LogAppendTime
		}
	},
	"min.cleanable.dirty.ratio":      func(t *Topic, v string) { t.MinCleanableDirtyRatio, _ = strconv.ParseFloat(v, 64) },
	"min.compaction.lag.ms":          func(t *Topic, v string) { t.MinCompactionLagMs = i64(v) },
	"min.insync.replicas":            func(t *Topic, v string) { t.MinInsyncReplicas = i32(v) },
	"preallocate":                    func(t *Topic, v string) { t.Preallocate = v == "true" },
	"retention.bytes":                func(t *Topic, v string) { t.RetentionBytes = i64(v) },
	"retention.ms":                   func(t *Topic, v string) { t.RetentionMs = i64(v) },
	"segment.bytes":                  func(t *Topic, v string) { t.SegmentBytes = i32(v) },
	"segment.index.bytes":            func(t *Topic, v string) { t.SegmentIndexBytes = i32(v) },
	"segment.jitter.ms":              func(t *Topic, v string) { t.SegmentJitterMs = i64(v) },
	"segment.ms":                     func(t *Topic, v string) { t.SegmentMs = i64(v) },
	"unclean.leader.election.enable": func(t *Topic, v string) { t.UncleanLeaderElection = v == "true" },
}

func i64(v string) int64 { i, _ := strconv.ParseInt(v, 10, 64); return i }
func i32(v string) int32 { return int32(i64(v)) }

// ResolveTopic returns a topic's effective settings. Precedence, highest
// first: the topic's own configs (topic), this broker's dynamic configs,
// the cluster-wide dynamic defaults, the static config (file and flags),
// the default. At each broker level a topic config's BrokerSynonyms are
// tried in order, so log.retention.ms beats log.retention.minutes beats
// log.retention.hours.
//
// Keys of topic that this version does not know are ignored (they were
// validated when written, perhaps by a newer version); so are broker keys
// that are not Dynamic in the dynamic layers, as Kafka does. An invalid
// value that would be used is an error (ErrInvalidConfig) naming its
// source, as is min.compaction.lag.ms > max.compaction.lag.ms.
func ResolveTopic(topic map[string]string, b BrokerLayers) (Topic, error) {
	var t Topic
	for _, d := range topicTable.sorted {
		v, err := topicValue(d, topic, b)
		if err != nil {
			return Topic{}, err
		}
		if set := topicSetters[d.Name]; set != nil {
			set(&t, v)
		}
	}
	if t.MinCompactionLagMs > t.MaxCompactionLagMs {
		return Topic{}, newError(ErrInvalidConfig,
			"conflicting topic configs: min.compaction.lag.ms (%d) > max.compaction.lag.ms (%d)",
			t.MinCompactionLagMs, t.MaxCompactionLagMs)
	}
	return t, nil
}

// DefaultTopic returns the settings of a topic when nothing is configured:
// Kafka's defaults.
func DefaultTopic() Topic {
	t, err := ResolveTopic(nil, BrokerLayers{})
	if err != nil {
		panic(err) // the table's defaults are checked when it is built
	}
	return t
}

// topicValue returns the canonical effective value of topic config d.
func topicValue(d *Def, topic map[string]string, b BrokerLayers) (string, error) {
	c, ok := topicSource(d, topic, b)
	if !ok {
		return "", nil // unreachable: every topic config has a default
	}
	src := c.def
	v, reason := src.normalize(c.raw)
	if reason == "" && src != d {
		// A broker synonym: scale to the topic's unit, then check it is a
		// valid topic value too (log.flush.scheduler.interval.ms, say, has
		// no range of its own).
		v, reason = d.normalize(scaleToMs(src, v))
	}
	if reason != "" {
		return "", newError(ErrInvalidConfig, "invalid value %q for config %s (%s, used for topic config %s): %s",
			c.raw, src.Name, sourceName(c.source), d.Name, reason)
	}
	return v, nil
}

// candidate is one place a value may come from.
type candidate struct {
	def    *Def // the row of the key it is set under
	raw    string
	source Source
}

// topicSource returns where topic config d gets its value from.
func topicSource(d *Def, topic map[string]string, b BrokerLayers) (candidate, bool) {
	if v, ok := topic[d.Name]; ok {
		return candidate{d, v, SourceTopic}, true
	}
	if len(d.BrokerSynonyms) > 0 {
		if cs := brokerCandidates(d.BrokerSynonyms, b, true, true); len(cs) > 0 {
			return cs[0], true
		}
	}
	return candidate{d, d.Default, SourceDefault}, d.HasDefault
}

// brokerCandidates lists the values set for the broker keys of chain, in
// Kafka's order: every name's per-broker dynamic value, then every name's
// cluster-wide dynamic value, then static, then default. Dynamic layers
// count only for Dynamic keys. With first, it stops at the first one.
func brokerCandidates(chain []string, b BrokerLayers, perBroker, first bool) []candidate {
	var out []candidate
	layers := []struct {
		m           map[string]string
		src         Source
		dynamicOnly bool
	}{
		{b.Dynamic, SourceDynamicBroker, true},
		{b.DynamicDefault, SourceDynamicDefaultBroker, true},
		{b.Static, SourceStaticBroker, false},
	}
	if !perBroker {
		layers = layers[1:]
	}
	for _, l := range layers {
		for _, n := range chain {
			d := brokerTable.byName[n]
			if l.dynamicOnly && !d.Dynamic {
				continue
			}
			if v, ok := l.m[n]; ok {
				out = append(out, candidate{d, v, l.src})
				if first {
					return out
				}
			}
		}
	}
	for _, n := range chain {
		if d := brokerTable.byName[n]; d.HasDefault {
			out = append(out, candidate{d, d.Default, SourceDefault})
			if first {
				return out
			}
		}
	}
	return out
}

// NormalizeTopicConfigs checks topic configs as given to CreateTopics,
// AlterConfigs or IncrementalAlterConfigs and returns them in canonical
// form (see Def.Normalize), which is what metadata should store. The
// error is for the first bad key in sorted order: an unknown key
// (ErrUnknownConfig) or a bad value (ErrInvalidConfig). Conflicts between
// keys (min.compaction.lag.ms > max.compaction.lag.ms) depend on the broker
// defaults too: check them with ResolveTopic on the would-be configs.
func NormalizeTopicConfigs(m map[string]string) (map[string]string, error) {
	out := make(map[string]string, len(m))
	for _, k := range sortedKeys(m) {
		d, ok := topicTable.byName[k]
		if !ok {
			return nil, unknownTopicConfig(k)
		}
		v, err := d.Normalize(m[k])
		if err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, nil
}

// ValidateTopicConfigs is NormalizeTopicConfigs without the result.
func ValidateTopicConfigs(m map[string]string) error {
	_, err := NormalizeTopicConfigs(m)
	return err
}

func unknownTopicConfig(k string) error {
	hint := topicTable.suggest(k)
	if bd, ok := brokerTable.byName[k]; ok {
		hint = ""
		for _, td := range topicTable.sorted {
			if slices.Contains(td.BrokerSynonyms, k) {
				hint = " (" + k + " is the broker-wide default; the topic config is " + td.Name + ")"
			}
		}
		if hint == "" {
			hint = " (" + bd.Name + " is a broker config)"
		}
	}
	return newError(ErrUnknownConfig, "unknown topic config %q%s", k, hint)
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
