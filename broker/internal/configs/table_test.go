package configs

import (
	"maps"
	"slices"
	"strconv"
	"testing"
)

// The tables' invariants: what the rest of the package relies on.

func TestTopicSynonymsAreBrokerKeys(t *testing.T) {
	for _, d := range TopicDefs() {
		for _, n := range d.BrokerSynonyms {
			bd, ok := BrokerDef(n)
			if !ok {
				t.Errorf("%s: broker synonym %s is not a broker key", d.Name, n)
				continue
			}
			if bd.Sensitive != d.Sensitive {
				t.Errorf("%s and %s disagree on Sensitive", d.Name, n)
			}
		}
	}
}

// Kafka's rule for dynamic broker configs: the first broker synonym of each
// topic config, and nothing else Runnel has.
func TestDynamicBrokerKeysAreFirstSynonyms(t *testing.T) {
	want := map[string]bool{}
	for _, d := range TopicDefs() {
		if len(d.BrokerSynonyms) > 0 {
			want[d.BrokerSynonyms[0]] = true
		}
	}
	got := map[string]bool{}
	for _, d := range BrokerDefs() {
		if d.Dynamic {
			got[d.Name] = true
		}
		if d.ReadOnly() == d.Dynamic {
			t.Errorf("%s: ReadOnly() = %v with Dynamic = %v", d.Name, d.ReadOnly(), d.Dynamic)
		}
	}
	if !maps.Equal(got, want) {
		t.Errorf("dynamic broker keys\n got %v\nwant %v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
	}
	for _, d := range TopicDefs() {
		if d.ReadOnly() || d.Dynamic {
			t.Errorf("topic config %s: ReadOnly/Dynamic set", d.Name)
		}
	}
}

// A topic config's own Default must equal what its broker synonyms give
// when nothing is set, so DescribeTopic and ResolveTopic agree with the
// table's documentation.
func TestTopicDefaultsMatchBrokerDefaults(t *testing.T) {
	for _, d := range TopicDefs() {
		got, err := topicValue(d, nil, BrokerLayers{})
		if err != nil {
			t.Fatal(err)
		}
		if got != d.Default {
			t.Errorf("%s: default %q, broker synonyms give %q", d.Name, d.Default, got)
		}
	}
}

func TestEveryTopicConfigReachesTopic(t *testing.T) {
	unused := []string{ // accepted and described, but nothing in Runnel reads them
		"follower.replication.throttled.replicas",
		"leader.replication.throttled.replicas",
		"message.downconversion.enable",
	}
	for _, d := range TopicDefs() {
		if _, ok := topicSetters[d.Name]; !ok && !slices.Contains(unused, d.Name) {
			t.Errorf("topic config %s has no Topic field", d.Name)
		}
	}
	if len(topicSetters)+len(unused) != len(TopicDefs()) {
		t.Errorf("topicSetters has keys that are not topic configs")
	}
}

func TestDefsAreDocumentedAndSorted(t *testing.T) {
	for _, defs := range [][]*Def{TopicDefs(), BrokerDefs()} {
		if !slices.IsSortedFunc(defs, func(a, b *Def) int { return compareStrings(a.Name, b.Name) }) {
			t.Error("defs not sorted")
		}
		for _, d := range defs {
			if d.Doc == "" {
				t.Errorf("%s has no Doc", d.Name)
			}
			if d.Type < Boolean || d.Type > Password {
				t.Errorf("%s has type %v", d.Name, d.Type)
			}
		}
	}
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Spot checks against Kafka 4.0's documentation.
func TestKafkaDefaults(t *testing.T) {
	for _, tc := range []struct{ name, def string }{
		{"segment.bytes", "1073741824"},
		{"segment.ms", "604800000"},
		{"retention.ms", "604800000"},
		{"retention.bytes", "-1"},
		{"max.message.bytes", "1048588"},
		{"message.timestamp.after.max.ms", "3600000"}, // KIP-1030, 4.0
		{"message.timestamp.before.max.ms", strconv.FormatInt(1<<63-1, 10)},
		{"min.cleanable.dirty.ratio", "0.5"},
		{"delete.retention.ms", "86400000"},
		{"cleanup.policy", "delete"},
		{"compression.type", "producer"},
	} {
		d, ok := TopicDef(tc.name)
		if !ok || !d.HasDefault || d.Default != tc.def {
			t.Errorf("%s: default %q, want %q", tc.name, d.Default, tc.def)
		}
	}
	for _, tc := range []struct{ name, def string }{
		{"num.partitions", "1"},
		{"message.max.bytes", "1048588"},
		{"socket.request.max.bytes", "104857600"},
		{"log.retention.hours", "168"},
		{"log.retention.check.interval.ms", "300000"},
		{"offsets.topic.num.partitions", "50"},
		{"listeners", "PLAINTEXT://:9092"},
	} {
		d, ok := BrokerDef(tc.name)
		if !ok || !d.HasDefault || d.Default != tc.def {
			t.Errorf("%s: default %q, want %q", tc.name, d.Default, tc.def)
		}
	}
	for _, name := range []string{"log.retention.ms", "log.retention.minutes", "log.roll.ms", "advertised.listeners", "broker.rack", "log.dirs"} {
		if d, _ := BrokerDef(name); d.HasDefault {
			t.Errorf("%s has a default; Kafka's is null", name)
		}
	}
}

func TestLookups(t *testing.T) {
	if _, ok := TopicDef("log.retention.ms"); ok {
		t.Error("TopicDef found a broker key")
	}
	if _, ok := BrokerDef("retention.ms"); ok {
		t.Error("BrokerDef found a topic key")
	}
	// The returned slices are copies.
	a := TopicDefs()
	a[0] = nil
	if TopicDefs()[0] == nil {
		t.Error("TopicDefs returned the table itself")
	}
}
