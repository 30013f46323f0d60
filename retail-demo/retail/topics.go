package retail

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/streams"
)

// TopicConfigs are the demo topics' settings. Simulated time may lie far
// in the past, so no topic deletes by time (retention.ms -1); the inputs
// and outputs keep at most retentionBytes a partition, and the stock
// table is compacted.
func (t Topics) TopicConfigs() map[string]map[string]*string {
	str := func(s string) *string { return &s }
	byTime := map[string]*string{"retention.ms": str("-1"), "retention.bytes": str(retentionBytes)}
	return map[string]map[string]*string{
		t.Sales:     byTime,
		t.Shipments: byTime,
		t.Reorders:  byTime,
		t.Prices:    byTime,
		t.Stock:     {"cleanup.policy": str("compact")},
	}
}

// retentionBytes bounds every partition of the demo's deleting topics to
// 256 MiB: at the default rate the inputs grow by some 3 GB a day.
const retentionBytes = "268435456"

// EnsureTopics creates the demo's topics with Topics.Partitions each
// (the broker's default replication), leaving those that exist alone. A
// sales and a shipments topic with different partition counts are an
// error: the app needs a store's product in the same partition of both.
func EnsureTopics(ctx context.Context, adm *kadm.Client, cfg Config) error {
	for topic, configs := range cfg.Topics.TopicConfigs() {
		_, err := adm.CreateTopic(ctx, cfg.Topics.Partitions, -1, configs, topic)
		if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("retail: create topic %s: %w", topic, err)
		}
	}
	details, err := adm.ListTopics(ctx, cfg.Topics.Sales, cfg.Topics.Shipments)
	if err != nil {
		return fmt.Errorf("retail: list topics: %w", err)
	}
	sales, ships := len(details[cfg.Topics.Sales].Partitions), len(details[cfg.Topics.Shipments].Partitions)
	if sales != ships {
		return fmt.Errorf("retail: %s has %d partitions and %s %d: they need the same number (delete both, or use other names in topics:)",
			cfg.Topics.Sales, sales, cfg.Topics.Shipments, ships)
	}
	return nil
}

// StreamsConfig is the Streams configuration of the app's instances:
// app: in cfg, the brokers given, and the logger and client options.
func (c Config) StreamsConfig(brokers []string, log *slog.Logger, opts ...kgo.Opt) streams.Config {
	g := streams.AtLeastOnce
	if c.App.ExactlyOnce {
		g = streams.ExactlyOnce
	}
	return streams.Config{
		ApplicationID:  c.App.ApplicationID,
		Brokers:        brokers,
		StateDir:       c.App.StateDir,
		Guarantee:      g,
		CommitInterval: c.App.CommitInterval,
		Logger:         log,
		ClientOptions:  opts,
	}
}
