package connect_test

import (
	"fmt"
	"time"

	"github.com/runnel-io/runnel/connect"
	"github.com/runnel-io/runnel/connect/transforms"
)

// A connector config routes records to daily topics, adds the source
// topic to each value, and drops tombstones.
func ExampleNewTransformChain() {
	reg := connect.NewRegistry()
	if err := transforms.Register(reg); err != nil {
		panic(err)
	}
	chain, errs := connect.NewTransformChain(reg, connect.Config{
		"transforms":                          "dropTombstones,addTopic,daily",
		"transforms.dropTombstones.type":      "org.apache.kafka.connect.transforms.Filter",
		"transforms.dropTombstones.predicate": "isTombstone",
		"transforms.addTopic.type":            "org.apache.kafka.connect.transforms.InsertField$Value",
		"transforms.addTopic.topic.field":     "source_topic",
		"transforms.daily.type":               "org.apache.kafka.connect.transforms.TimestampRouter",
		"transforms.daily.timestamp.format":   "yyyy-MM-dd",
		"predicates":                          "isTombstone",
		"predicates.isTombstone.type":         "org.apache.kafka.connect.transforms.predicates.RecordIsTombstone",
	})
	if len(errs) > 0 {
		panic(fmt.Sprint(errs))
	}

	ts := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	for _, r := range []*connect.Record{
		{Topic: "orders", Timestamp: ts, Value: map[string]any{"id": int64(1)}},
		{Topic: "orders", Timestamp: ts, Key: "2"}, // a tombstone
	} {
		keep, err := chain.Apply(r)
		fmt.Println(keep, err, r.Topic, r.Value)
	}

	// A config error names its key.
	_, errs = connect.NewTransformChain(reg, connect.Config{
		"transforms": "route", "transforms.route.type": "RegexRouter", "transforms.route.regex": "orders-(.*)",
	})
	fmt.Println(errs[0].Key)
	// Output:
	// true <nil> orders-2024-05-01 map[id:1 source_topic:orders]
	// false <nil> orders <nil>
	// transforms.route.replacement
}
