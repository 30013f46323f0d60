package cluster

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// admin returns an admin client seeded with the running nodes; it is
// closed when the test ends.
func (c *Cluster) admin(opts ...kgo.Opt) *kadm.Client {
	c.t.Helper()
	cl, err := kgo.NewClient(append(append([]kgo.Opt{kgo.SeedBrokers(c.Seeds()...)}, c.clientOpts()...), opts...)...)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// createTopic creates topic and waits until every partition has a leader
// that is a running node.
func (c *Cluster) createTopic(ctx context.Context, topic string, partitions int32, rf int16, configs map[string]*string) {
	c.t.Helper()
	adm := c.admin()
	resp, err := adm.CreateTopic(ctx, partitions, rf, configs, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		c.t.Fatalf("create topic %s (%d partitions, RF %d): %v", topic, partitions, rf, err)
	}
	if err := c.waitLeaders(ctx, adm, topic, partitions); err != nil {
		c.t.Fatal(err)
	}
}

// leaders returns each partition's leader (-1 for none) as Metadata
// answers now.
func leaders(ctx context.Context, adm *kadm.Client, topic string) (map[int32]int32, error) {
	md, err := adm.Metadata(ctx, topic)
	if err != nil {
		return nil, err
	}
	td, ok := md.Topics[topic]
	if !ok {
		return nil, fmt.Errorf("topic %s: not in metadata", topic)
	}
	if td.Err != nil {
		return nil, fmt.Errorf("topic %s: %w", topic, td.Err)
	}
	out := map[int32]int32{}
	for p, pd := range td.Partitions {
		out[p] = -1
		if pd.Err == nil {
			out[p] = pd.Leader
		}
	}
	return out, nil
}

// leadersTimeout is how long waitLeaders waits.
const leadersTimeout = 60 * time.Second

// waitLeaders polls Metadata until every one of the topic's partitions
// has a running node as its leader, for up to leadersTimeout.
func (c *Cluster) waitLeaders(ctx context.Context, adm *kadm.Client, topic string, partitions int32) error {
	ctx, cancel := context.WithTimeout(ctx, leadersTimeout)
	defer cancel()
	var last string
	for {
		ls, err := leaders(ctx, adm, topic)
		ok := err == nil && len(ls) == int(partitions)
		for _, l := range ls {
			ok = ok && l > 0 && int(l) <= len(c.Nodes) && c.Running(l)
		}
		if ok {
			return nil
		}
		last = fmt.Sprintf("leaders %v, err %v", ls, err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("topic %s: no running leader for every partition: %s", topic, last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// endOffsets returns each partition's high watermark (ListOffsets latest).
func (c *Cluster) endOffsets(ctx context.Context, topic string) map[int32]int64 {
	c.t.Helper()
	ends, err := c.admin().ListEndOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		c.t.Fatalf("end offsets of %s: %v", topic, err)
	}
	out := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
	return out
}
