package configs

import (
	"fmt"
	"strings"
	"testing"
)

// render prints an entry compactly: value, source and synonyms.
func render(e Entry) string {
	s := e.Name + "=" + ptr(e.Value) + " (" + e.Source.String() + ")"
	if e.ReadOnly {
		s += " read-only"
	}
	for _, y := range e.Synonyms {
		s += fmt.Sprintf(" [%s=%s %s]", y.Name, ptr(y.Value), y.Source)
	}
	return s
}

func ptr(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

func find(t *testing.T, entries []Entry, name string) Entry {
	t.Helper()
	for _, e := range entries {
		if e.Name == name {
			return e
		}
	}
	t.Fatalf("no entry %s", name)
	return Entry{}
}

func TestDescribeTopic(t *testing.T) {
	type m = map[string]string
	layers := BrokerLayers{
		Dynamic:        m{"min.insync.replicas": "3", "num.partitions": "7"},
		DynamicDefault: m{"min.insync.replicas": "2", "log.segment.bytes": "2097152"},
		Static:         m{"log.retention.hours": "24", "log.retention.minutes": "90", "min.insync.replicas": "1", "log.cleanup.policy": "compact, delete"},
	}
	topic := m{"segment.bytes": "3145728", "cleanup.policy": "compact"}
	entries := DescribeTopic(topic, layers)
	if len(entries) != len(TopicDefs()) {
		t.Fatalf("%d entries, want one per topic config (%d)", len(entries), len(TopicDefs()))
	}
	for _, tc := range []struct{ name, want string }{
		{"retention.ms", "retention.ms=5400000 (STATIC_BROKER_CONFIG) [log.retention.minutes=90 STATIC_BROKER_CONFIG] [log.retention.hours=24 STATIC_BROKER_CONFIG] [log.retention.hours=168 DEFAULT_CONFIG]"},
		{"min.insync.replicas", "min.insync.replicas=3 (DYNAMIC_BROKER_CONFIG) [min.insync.replicas=3 DYNAMIC_BROKER_CONFIG] [min.insync.replicas=2 DYNAMIC_DEFAULT_BROKER_CONFIG] [min.insync.replicas=1 STATIC_BROKER_CONFIG] [min.insync.replicas=1 DEFAULT_CONFIG]"},
		{"segment.bytes", "segment.bytes=3145728 (DYNAMIC_TOPIC_CONFIG) [segment.bytes=3145728 DYNAMIC_TOPIC_CONFIG] [log.segment.bytes=2097152 DYNAMIC_DEFAULT_BROKER_CONFIG] [log.segment.bytes=1073741824 DEFAULT_CONFIG]"},
		{"cleanup.policy", "cleanup.policy=compact (DYNAMIC_TOPIC_CONFIG) [cleanup.policy=compact DYNAMIC_TOPIC_CONFIG] [log.cleanup.policy=compact,delete STATIC_BROKER_CONFIG] [log.cleanup.policy=delete DEFAULT_CONFIG]"},
		{"segment.ms", "segment.ms=604800000 (DEFAULT_CONFIG) [log.roll.hours=168 DEFAULT_CONFIG]"},
		{"message.downconversion.enable", "message.downconversion.enable=true (DEFAULT_CONFIG)"},
	} {
		if got := render(find(t, entries, tc.name)); got != tc.want {
			t.Errorf("\n got %s\nwant %s", got, tc.want)
		}
	}
	e := find(t, entries, "retention.ms")
	if e.ReadOnly || e.Sensitive || e.Type != Long || e.Doc == "" {
		t.Errorf("retention.ms flags: %+v", e)
	}
	// A stored value this version cannot parse is shown as stored.
	bad := find(t, DescribeTopic(m{"retention.ms": "soon"}, BrokerLayers{}), "retention.ms")
	if ptr(bad.Value) != "soon" || bad.Source != SourceTopic {
		t.Errorf("bad stored value: %s", render(bad))
	}
}

func TestDescribeBroker(t *testing.T) {
	type m = map[string]string
	layers := BrokerLayers{
		Dynamic:        m{"log.retention.ms": "3000", "num.partitions": "9"}, // num.partitions is not dynamic: ignored
		DynamicDefault: m{"message.max.bytes": "2000000"},
		Static:         m{"log.retention.hours": "24", "num.partitions": "3", "auto.create.topics.enable": "FALSE"},
	}
	entries := DescribeBroker(layers)
	if len(entries) != len(BrokerDefs()) {
		t.Fatalf("%d entries, want %d", len(entries), len(BrokerDefs()))
	}
	for _, tc := range []struct{ name, want string }{
		{"log.retention.ms", "log.retention.ms=3000 (DYNAMIC_BROKER_CONFIG) [log.retention.ms=3000 DYNAMIC_BROKER_CONFIG] [log.retention.hours=24 STATIC_BROKER_CONFIG] [log.retention.hours=168 DEFAULT_CONFIG]"},
		// As in Kafka: synonyms listed before the key's own name are dropped.
		{"log.retention.hours", "log.retention.hours=24 (STATIC_BROKER_CONFIG) read-only [log.retention.hours=24 STATIC_BROKER_CONFIG] [log.retention.hours=168 DEFAULT_CONFIG]"},
		{"log.retention.minutes", "log.retention.minutes=<nil> (DEFAULT_CONFIG) read-only"},
		{"num.partitions", "num.partitions=3 (STATIC_BROKER_CONFIG) read-only [num.partitions=3 STATIC_BROKER_CONFIG] [num.partitions=1 DEFAULT_CONFIG]"},
		{"message.max.bytes", "message.max.bytes=2000000 (DYNAMIC_DEFAULT_BROKER_CONFIG) [message.max.bytes=2000000 DYNAMIC_DEFAULT_BROKER_CONFIG] [message.max.bytes=1048588 DEFAULT_CONFIG]"},
		{"auto.create.topics.enable", "auto.create.topics.enable=false (STATIC_BROKER_CONFIG) read-only [auto.create.topics.enable=false STATIC_BROKER_CONFIG] [auto.create.topics.enable=true DEFAULT_CONFIG]"},
		{"broker.rack", "broker.rack=<nil> (DEFAULT_CONFIG) read-only"},
	} {
		if got := render(find(t, entries, tc.name)); got != tc.want {
			t.Errorf("\n got %s\nwant %s", got, tc.want)
		}
	}

	defaults := DescribeBrokerDefaults(BrokerLayers{
		Dynamic:        m{"message.max.bytes": "3000000"},
		DynamicDefault: m{"message.max.bytes": "2000000", "num.partitions": "4"},
	})
	var got []string
	for _, e := range defaults {
		got = append(got, render(e))
	}
	want := "message.max.bytes=2000000 (DYNAMIC_DEFAULT_BROKER_CONFIG) [message.max.bytes=2000000 DYNAMIC_DEFAULT_BROKER_CONFIG] [message.max.bytes=1048588 DEFAULT_CONFIG]"
	if strings.Join(got, "\n") != want {
		t.Errorf("cluster defaults:\n got %s\nwant %s", strings.Join(got, "\n"), want)
	}
}
