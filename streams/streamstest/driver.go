// Package streamstest runs a Runnel Streams topology in-process, without a
// broker: the test pipes records into input topics, reads what the
// topology wrote to output topics, looks into its state stores and moves
// the wall clock by hand. It is Kafka Streams' TopologyTestDriver.
//
// Each piped record is processed at once, together with every record it
// causes in repartition topics, and then committed (store changes go to
// their changelog topics, which the test can read too). Stream time moves
// with record timestamps; the wall clock only when the test moves it.
package streamstest

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/streams"
	"github.com/runnel-io/runnel/streams/internal/hook"
)

// Config sets up a Driver. The zero value works.
type Config struct {
	// ApplicationID prefixes internal topic names; default "test-app".
	ApplicationID string
	// Partitions gives topics' partition counts; unlisted topics have one.
	// Records go to partitions by key, with Kafka's default partitioner.
	Partitions map[string]int32
	// WallClock is the wall clock's start; default the Unix epoch.
	WallClock time.Time
	// OnBadRecord is the app's bad record handler; default fail.
	OnBadRecord streams.BadRecordHandler
}

// Driver runs one topology.
type Driver struct {
	tb      testing.TB
	cfg     Config
	eng     hook.Engine
	now     int64
	logs    map[string][]*kgo.Record // every record written, by topic, in order
	pending []*kgo.Record            // written to topics the topology reads, not yet processed
	inputs  map[string]bool
	dropped map[string]int // records dropped, by reason
}

// New starts a driver for topo; Close it at the end of the test (New
// registers that with tb.Cleanup too).
func New(tb testing.TB, topo *streams.Topology, cfg Config) *Driver {
	tb.Helper()
	if cfg.ApplicationID == "" {
		cfg.ApplicationID = "test-app"
	}
	if cfg.WallClock.IsZero() {
		cfg.WallClock = time.UnixMilli(0)
	}
	d := &Driver{tb: tb, cfg: cfg, now: cfg.WallClock.UnixMilli(), logs: map[string][]*kgo.Record{}, inputs: map[string]bool{}, dropped: map[string]int{}}
	var bad any
	if cfg.OnBadRecord != nil {
		bad = cfg.OnBadRecord
	}
	eng, err := hook.Open(topo, hook.Config{
		AppID:       cfg.ApplicationID,
		Partitions:  d.partitions,
		Now:         func() int64 { return d.now },
		Send:        d.send,
		OnBadRecord: bad,
		Dropped:     func(reason string) { d.dropped[reason]++ },
	})
	if err != nil {
		tb.Fatalf("streamstest: %v", err)
	}
	d.eng = eng
	for _, topic := range eng.InputTopics() {
		d.inputs[topic] = true
	}
	tb.Cleanup(d.Close)
	return d
}

// Close closes the topology's tasks. It is idempotent.
func (d *Driver) Close() {
	if d.eng == nil {
		return
	}
	if err := d.eng.Close(); err != nil {
		d.tb.Errorf("streamstest: close: %v", err)
	}
	d.eng = nil
}

func (d *Driver) partitions(topic string) (int32, error) {
	if d.eng != nil {
		if n, ok := d.eng.Partitions(topic); ok {
			return n, nil
		}
	}
	if n, ok := d.cfg.Partitions[topic]; ok {
		if n < 1 {
			return 0, fmt.Errorf("streamstest: topic %q has %d partitions", topic, n)
		}
		return n, nil
	}
	return 1, nil
}

func (d *Driver) send(r *kgo.Record) error {
	n, err := d.partitions(r.Topic)
	if err != nil {
		return err
	}
	if r.Partition < 0 || r.Partition >= n {
		return fmt.Errorf("streamstest: record for partition %d of %q, which has %d", r.Partition, r.Topic, n)
	}
	r.Offset = int64(len(d.logs[r.Topic]))
	d.logs[r.Topic] = append(d.logs[r.Topic], r)
	if d.inputs[r.Topic] {
		d.pending = append(d.pending, r)
	}
	return nil
}

// pipe processes one record written to an input topic, then everything it
// caused in topics the topology reads, then commits.
func (d *Driver) pipe(r *kgo.Record) error {
	if d.eng == nil {
		return fmt.Errorf("streamstest: driver closed")
	}
	if !d.inputs[r.Topic] {
		return fmt.Errorf("streamstest: the topology does not read topic %q", r.Topic)
	}
	if err := d.send(r); err != nil {
		return err
	}
	for len(d.pending) > 0 {
		next := d.pending[0]
		d.pending = d.pending[1:]
		if err := d.eng.Process(next); err != nil {
			d.pending = nil
			return err
		}
	}
	return d.eng.Commit()
}

// AdvanceWallClock moves the wall clock and runs the wall-clock
// punctuations that become due, with what they cause.
func (d *Driver) AdvanceWallClock(by time.Duration) {
	d.tb.Helper()
	d.now += by.Milliseconds()
	if err := d.eng.PunctuateWall(); err != nil {
		d.tb.Fatalf("streamstest: punctuation: %v", err)
	}
	for len(d.pending) > 0 {
		next := d.pending[0]
		d.pending = d.pending[1:]
		if err := d.eng.Process(next); err != nil {
			d.tb.Fatalf("streamstest: %v", err)
		}
	}
	if err := d.eng.Commit(); err != nil {
		d.tb.Fatalf("streamstest: commit: %v", err)
	}
}

// WallClock is the driver's wall clock.
func (d *Driver) WallClock() time.Time { return time.UnixMilli(d.now) }

// Records returns every record written to topic so far (any topic:
// outputs, repartition and changelog topics — internal ones are named
// "<application id>-..."), in the order written.
func (d *Driver) Records(topic string) []*kgo.Record { return d.logs[topic] }

// DroppedRecords returns how many records the topology dropped so far, by
// reason (Kafka Streams' dropped-records metric): "expired-window" for a
// record that came after its window closed (once per window it missed),
// "negative-timestamp", "bad-record" and "dead-letter" for records a
// BadRecordHandler skipped.
func (d *Driver) DroppedRecords() map[string]int {
	out := make(map[string]int, len(d.dropped))
	for reason, n := range d.dropped {
		out[reason] = n
	}
	return out
}
