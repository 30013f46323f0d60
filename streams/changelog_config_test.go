package streams

import (
	"testing"
	"time"
)

func TestInternalTopicConfigsByStoreKind(t *testing.T) {
	b := NewBuilder()
	g := From[string, string](b, "events").GroupByKey()
	g.Count(Materialized("totals"))
	WindowedBy(g, TumblingWindows(time.Minute).Grace(time.Minute)).Count(Materialized("per-minute"))
	SessionWindowedBy(g, SessionWindows(time.Minute)).Count(Materialized("visits"), Retention(time.Hour))
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	str := func(m map[string]*string) map[string]string {
		out := map[string]string{}
		for k, v := range m {
			out[k] = *v
		}
		return out
	}
	for topic, want := range map[string]map[string]string{
		"app-totals-changelog":     {"cleanup.policy": "compact"},
		"app-per-minute-changelog": {"cleanup.policy": "compact,delete", "retention.ms": "86520000"}, // 2 min + 1 day
		"app-visits-changelog":     {"cleanup.policy": "compact,delete", "retention.ms": "90000000"}, // 1 h + 1 day
		"app-x-repartition":        {},
	} {
		got := str(internalTopicConfigs(topo, "app", topic))
		if len(got) != len(want) {
			t.Errorf("%s: %v, want %v", topic, got, want)
			continue
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: %v, want %v", topic, got, want)
			}
		}
	}
}
