package configs

import (
	"errors"
	"testing"
)

func TestResolveTopicPrecedence(t *testing.T) {
	type m = map[string]string
	for _, tc := range []struct {
		name   string
		topic  m
		layers BrokerLayers
		field  func(Topic) int64
		want   int64
	}{
		{"default", nil, BrokerLayers{}, retention, 7 * 24 * 3600000},
		{"static hours", nil, BrokerLayers{Static: m{"log.retention.hours": "24"}}, retention, 24 * 3600000},
		{"minutes beat hours", nil, BrokerLayers{Static: m{"log.retention.hours": "24", "log.retention.minutes": "5"}}, retention, 5 * 60000},
		{"ms beats minutes", nil, BrokerLayers{Static: m{"log.retention.minutes": "5", "log.retention.ms": "1234"}}, retention, 1234},
		{"negative hours mean unlimited", nil, BrokerLayers{Static: m{"log.retention.hours": "-1"}}, retention, -1},
		{"dynamic default beats static", nil, BrokerLayers{
			DynamicDefault: m{"log.retention.ms": "2000"},
			Static:         m{"log.retention.ms": "1000"},
		}, retention, 2000},
		{"dynamic ms beats static minutes", nil, BrokerLayers{
			DynamicDefault: m{"log.retention.ms": "2000"},
			Static:         m{"log.retention.minutes": "1"},
		}, retention, 2000},
		{"per-broker beats cluster default", nil, BrokerLayers{
			Dynamic:        m{"log.retention.ms": "3000"},
			DynamicDefault: m{"log.retention.ms": "2000"},
		}, retention, 3000},
		{"topic beats everything", m{"retention.ms": "10"}, BrokerLayers{
			Dynamic:        m{"log.retention.ms": "3000"},
			DynamicDefault: m{"log.retention.ms": "2000"},
			Static:         m{"log.retention.ms": "1000"},
		}, retention, 10},
		{"non-dynamic key in dynamic layer is ignored", nil, BrokerLayers{
			Dynamic: m{"log.retention.hours": "1"},
		}, retention, 7 * 24 * 3600000},
		{"unknown keys are ignored", m{"some.future.config": "x"}, BrokerLayers{
			Dynamic: m{"some.future.broker.config": "x"},
		}, retention, 7 * 24 * 3600000},
		{"roll hours", nil, BrokerLayers{Static: m{"log.roll.hours": "1"}}, func(t Topic) int64 { return t.SegmentMs }, 3600000},
		{"roll ms beats hours", nil, BrokerLayers{Static: m{"log.roll.hours": "1", "log.roll.ms": "60000"}}, func(t Topic) int64 { return t.SegmentMs }, 60000},
		{"jitter hours", nil, BrokerLayers{Static: m{"log.roll.jitter.hours": "2"}}, func(t Topic) int64 { return t.SegmentJitterMs }, 7200000},
		{"flush.ms from scheduler", nil, BrokerLayers{Static: m{"log.flush.scheduler.interval.ms": "500"}}, func(t Topic) int64 { return t.FlushMs }, 500},
		{"flush.ms interval beats scheduler", nil, BrokerLayers{Static: m{"log.flush.scheduler.interval.ms": "500", "log.flush.interval.ms": "100"}}, func(t Topic) int64 { return t.FlushMs }, 100},
		{"message.max.bytes", nil, BrokerLayers{DynamicDefault: m{"message.max.bytes": "2000000"}}, func(t Topic) int64 { return int64(t.MaxMessageBytes) }, 2000000},
		{"min.insync.replicas", m{"min.insync.replicas": "2"}, BrokerLayers{Static: m{"min.insync.replicas": "3"}}, func(t Topic) int64 { return int64(t.MinInsyncReplicas) }, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ResolveTopic(tc.topic, tc.layers)
			if err != nil {
				t.Fatal(err)
			}
			if v := tc.field(got); v != tc.want {
				t.Errorf("got %d, want %d", v, tc.want)
			}
		})
	}
}

func retention(t Topic) int64 { return t.RetentionMs }

func TestResolveTopicTypes(t *testing.T) {
	got, err := ResolveTopic(map[string]string{
		"cleanup.policy":                 "compact,delete",
		"compression.type":               "zstd",
		"message.timestamp.type":         "LogAppendTime",
		"min.cleanable.dirty.ratio":      "0.25",
		"unclean.leader.election.enable": "true",
		"preallocate":                    "true",
		"segment.bytes":                  "1048576",
		"max.compaction.lag.ms":          "1000",
		"segment.ms":                     "5000",
	}, BrokerLayers{})
	if err != nil {
		t.Fatal(err)
	}
	if !got.CleanupPolicy.Compact() || !got.CleanupPolicy.Delete() || got.CleanupPolicy.String() != "compact,delete" {
		t.Errorf("CleanupPolicy %v", got.CleanupPolicy)
	}
	if got.CompressionType != CompressionZstd || got.CompressionType.String() != "zstd" {
		t.Errorf("CompressionType %v", got.CompressionType)
	}
	if got.MessageTimestampType != LogAppendTime {
		t.Errorf("MessageTimestampType %v", got.MessageTimestampType)
	}
	if got.MinCleanableDirtyRatio != 0.25 || !got.UncleanLeaderElection || !got.Preallocate || got.SegmentBytes != 1<<20 {
		t.Errorf("got %+v", got)
	}
	if got.MaxSegmentMs() != 1000 {
		t.Errorf("MaxSegmentMs %d, want max.compaction.lag.ms 1000 on a compacted topic", got.MaxSegmentMs())
	}

	d := DefaultTopic()
	if d.CleanupPolicy != CleanupDelete || d.CompressionType != CompressionProducer || d.MessageTimestampType != CreateTime {
		t.Errorf("defaults %+v", d)
	}
	if d.MaxSegmentMs() != d.SegmentMs {
		t.Error("MaxSegmentMs of a delete topic is not segment.ms")
	}
	none, err := ResolveTopic(map[string]string{"cleanup.policy": ""}, BrokerLayers{})
	if err != nil || none.CleanupPolicy != 0 || none.CleanupPolicy.Delete() || none.CleanupPolicy.Compact() {
		t.Errorf("empty cleanup.policy: %v %v", none.CleanupPolicy, err)
	}
}

func TestResolveTopicErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		topic  map[string]string
		layers BrokerLayers
		want   string
	}{
		{"bad topic value", map[string]string{"retention.ms": "soon"}, BrokerLayers{},
			`invalid value "soon" for config retention.ms (topic config, used for topic config retention.ms): must be a 64-bit integer`},
		{"bad dynamic value", nil, BrokerLayers{DynamicDefault: map[string]string{"log.segment.bytes": "10"}},
			`invalid value "10" for config log.segment.bytes (dynamic cluster-wide default, used for topic config segment.bytes): must be at least 1048576`},
		{"scaled value out of the topic's range", nil, BrokerLayers{Static: map[string]string{"log.flush.scheduler.interval.ms": "-5"}},
			`invalid value "-5" for config log.flush.scheduler.interval.ms (static broker config, used for topic config flush.ms): must be at least 0`},
		{"compaction lags conflict", map[string]string{"min.compaction.lag.ms": "10"}, BrokerLayers{Static: map[string]string{"log.cleaner.max.compaction.lag.ms": "5"}},
			`conflicting topic configs: min.compaction.lag.ms (10) > max.compaction.lag.ms (5)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ResolveTopic(tc.topic, tc.layers)
			if err == nil || err.Error() != tc.want {
				t.Errorf("\n got %v\nwant %s", err, tc.want)
			}
			if !errors.Is(err, ErrInvalidConfig) {
				t.Error("error does not wrap ErrInvalidConfig")
			}
		})
	}
	// An invalid value that is not used does not matter.
	if _, err := ResolveTopic(map[string]string{"retention.ms": "1"}, BrokerLayers{DynamicDefault: map[string]string{"log.retention.ms": "x"}}); err != nil {
		t.Errorf("shadowed bad value: %v", err)
	}
}

func TestEnumStrings(t *testing.T) {
	for c, want := range map[Compression]string{
		CompressionProducer: "producer", CompressionNone: "uncompressed", CompressionGzip: "gzip",
		CompressionSnappy: "snappy", CompressionLZ4: "lz4", CompressionZstd: "zstd", 9: "Compression(9)",
	} {
		if c.String() != want {
			t.Errorf("%d: %s, want %s", c, c, want)
		}
		if c >= CompressionProducer && c <= CompressionZstd {
			// Every name round-trips through the config.
			got, err := ResolveTopic(map[string]string{"compression.type": want}, BrokerLayers{})
			if err != nil || got.CompressionType != c {
				t.Errorf("%s: %v %v", want, got.CompressionType, err)
			}
		}
	}
	if CreateTime.String() != "CreateTime" || LogAppendTime.String() != "LogAppendTime" {
		t.Error("TimestampType strings")
	}
	if CleanupPolicy(0).String() != "" || CleanupCompact.String() != "compact" {
		t.Error("CleanupPolicy strings")
	}
}
