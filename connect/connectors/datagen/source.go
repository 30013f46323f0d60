package datagen

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"time"

	"github.com/runnel-io/runnel/connect"
)

const (
	keyTopic      = "kafka.topic"
	keySchema     = "schema"
	keyRate       = "rate"
	keyMaxRecords = "max.records"
	keySeed       = "seed"
	keyStores     = "stores"
	keyProducts   = "products"
	keyStartTime  = "start.time"

	// Set by TaskConfigs: which task of how many this is.
	keyTask  = "datagen.task"
	keyTasks = "datagen.tasks"
)

// maxBatch is the most records one Poll returns.
const maxBatch = 1000

func sourcePlugin() connect.Plugin {
	return connect.Plugin{
		Class:   "io.runnel.connect.datagen.DatagenConnector",
		Aliases: []string{"Datagen", "datagen", "DatagenConnector"},
		Type:    connect.SourcePlugin,
		Version: connect.Version,
		Doc:     "Generates repeatable test data: retail sales and shipments, users, page views.",
		Config: connect.NewConfigDef(
			connect.ConfigKey{Name: keyTopic, Type: connect.TypeString, Required: true, Importance: connect.High, Group: "Datagen",
				Doc: "The topic to write to.", Check: connect.NonEmpty},
			connect.ConfigKey{Name: keySchema, Type: connect.TypeString, Default: RetailSales, Importance: connect.High, Group: "Datagen",
				Doc:   "What to generate: retail.sales, retail.shipments, users or pageviews.",
				Check: connect.OneOf(Schemas...), Recommended: Schemas},
			connect.ConfigKey{Name: keyRate, Type: connect.TypeDouble, Default: "100", Importance: connect.Medium, Group: "Datagen",
				Doc: "Records per second per task (wall clock); 0 is as fast as possible.", Check: connect.AtLeast(0)},
			connect.ConfigKey{Name: keyMaxRecords, Type: connect.TypeLong, Default: "0", Importance: connect.Medium, Group: "Datagen",
				Doc: "The length of each task's sequence: a task stops once it produced records 0 to max.records-1 (counting those before a restart); 0 is unbounded.", Check: connect.AtLeast(0)},
			connect.ConfigKey{Name: keySeed, Type: connect.TypeLong, Default: "42", Importance: connect.Medium, Group: "Datagen",
				Doc: "The seed: the same seed, schema, sizes, start time and task give the same records in the same order."},
			connect.ConfigKey{Name: keyStores, Type: connect.TypeInt, Default: strconv.Itoa(DefaultStores), Importance: connect.Medium, Group: "Retail",
				Doc: "How many stores the retail schemas have (1 to 10000); tasks split them.", Check: between(1, 10_000)},
			connect.ConfigKey{Name: keyProducts, Type: connect.TypeInt, Default: strconv.Itoa(DefaultProducts), Importance: connect.Medium, Group: "Retail",
				Doc: "How many products the retail schemas have (1 to 100000).", Check: between(1, 100_000)},
			connect.ConfigKey{Name: keyStartTime, Type: connect.TypeString, Default: DefaultStart.Format(time.RFC3339), Importance: connect.Low, Group: "Datagen",
				Doc: "The earliest event time, ISO-8601 (RFC 3339), like 2024-01-01T00:00:00Z. Event times advance from it at a simulated pace, whatever the wall clock; they are the records' timestamps.",
				Check: func(v string) error {
					_, err := time.Parse(time.RFC3339, v)
					return err
				}},
		),
		Validate: func(cfg connect.Config) []connect.KeyError {
			if cfg.String(keySchema) == RetailShipments && cfg.Int(keyStores)*cfg.Int(keyProducts) > 5_000_000 {
				return []connect.KeyError{{Key: keyProducts, Message: "retail.shipments supports at most 5000000 store × product pairs"}}
			}
			return nil
		},
		TaskConfigs: func(cfg connect.Config, maxTasks int) ([]connect.Config, error) {
			n := maxTasks
			if s := cfg.String(keySchema); s == RetailSales || s == RetailShipments {
				n = min(n, cfg.Int(keyStores))
			}
			out := make([]connect.Config, n)
			for i := range out {
				out[i] = cfg.Clone()
				out[i][keyTask], out[i][keyTasks] = strconv.Itoa(i), strconv.Itoa(n)
			}
			return out, nil
		},
		NewSourceTask: func() connect.SourceTask { return &sourceTask{} },
	}
}

func between(lo, hi int) func(string) error {
	return func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < lo || n > hi {
			return fmt.Errorf("Value must be between %d and %d", lo, hi)
		}
		return nil
	}
}

// sourceTask writes its generator's sequence to the topic. Its source
// partition is {"task": n}; a record's offset is {"seq": k+1} for
// sequence number k: the sequence number of the record after it.
type sourceTask struct {
	topic     string
	gen       *Generator
	schema    *connect.Schema
	max       int64
	pace      pacer
	partition map[string]any
	log       *slog.Logger
	finished  bool
}

func (t *sourceTask) Start(_ context.Context, cfg connect.Config, tc connect.SourceTaskContext) error {
	start, err := time.Parse(time.RFC3339, cfg.String(keyStartTime))
	if err != nil {
		return fmt.Errorf("%s: %w", keyStartTime, err)
	}
	gc := GeneratorConfig{
		Schema: cfg.String(keySchema), Seed: cfg.Long(keySeed),
		Task: cfg.Int(keyTask), Tasks: max(cfg.Int(keyTasks), 1),
		Stores: cfg.Int(keyStores), Products: cfg.Int(keyProducts), Start: start,
	}
	if t.gen, err = NewGenerator(gc); err != nil {
		return err
	}
	t.topic, t.schema, t.max = cfg.String(keyTopic), t.gen.ValueSchema(), cfg.Long(keyMaxRecords)
	t.pace = pacer{rate: cfg.Double(keyRate)}
	t.log = tc.Logger()
	t.partition = map[string]any{"task": int64(gc.Task)}
	off, err := tc.Offset(t.partition)
	if err != nil {
		return err
	}
	if off != nil {
		seq, ok := asInt64(off["seq"])
		if !ok || seq < 0 {
			return fmt.Errorf("the stored offset %v has no valid seq", off)
		}
		t.gen.SeekTo(seq)
		t.log.Info("resuming the sequence", "seq", seq)
	}
	return nil
}

func asInt64(v any) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case float64:
		return int64(n), n == math.Trunc(n)
	case int:
		return int64(n), true
	}
	return 0, false
}

// Poll returns the records that are due by rate, up to maxBatch; once
// max.records are out it waits for ctx.
func (t *sourceTask) Poll(ctx context.Context) ([]connect.Record, error) {
	want := int64(maxBatch)
	if t.max > 0 {
		want = min(want, t.max-t.gen.Seq())
		if want <= 0 {
			if !t.finished {
				t.finished = true
				t.log.Info("generated max.records; idle until stopped", "max.records", t.max)
			}
			<-ctx.Done()
			return nil, nil
		}
	}
	var n int
	for {
		var wait time.Duration
		if n, wait = t.pace.take(time.Now(), int(want)); n > 0 {
			break
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, nil
		case <-timer.C:
		}
	}
	out := make([]connect.Record, n)
	for i := range out {
		r := t.gen.Next()
		out[i] = connect.Record{
			Topic: t.topic, Key: r.Key, KeySchema: stringSchema, Value: r.Value, ValueSchema: t.schema, Timestamp: r.Time,
			SourcePartition: t.partition, SourceOffset: map[string]any{"seq": r.Seq + 1},
		}
	}
	return out, nil
}

func (t *sourceTask) Stop() error { return nil }

// pacer spaces records rate a second: record k is due k/rate seconds
// after the first. A task that fell behind by more than a second (it was
// paused, or the brokers were slow) does not rush to catch up: it goes
// on at rate from where it is.
type pacer struct {
	rate  float64 // ≤ 0: no limit
	start time.Time
	sent  int64
}

// take returns how many of want records may go at now (and counts them
// as sent), or 0 and how long until the next is due.
func (p *pacer) take(now time.Time, want int) (int, time.Duration) {
	if p.rate <= 0 || want <= 0 {
		return max(want, 0), 0
	}
	if p.start.IsZero() {
		p.start = now
	}
	due := int64(p.rate*now.Sub(p.start).Seconds()) + 1 - p.sent
	if burst := int64(math.Ceil(p.rate)); due > burst {
		// Behind by more than a second: start over so that a second's
		// worth is due now.
		p.start = now.Add(-time.Duration(float64(p.sent+burst-1) / p.rate * float64(time.Second)))
		due = burst
	}
	if due <= 0 {
		next := p.start.Add(time.Duration(float64(p.sent) / p.rate * float64(time.Second)))
		return 0, max(next.Sub(now), time.Millisecond)
	}
	n := int(min(due, int64(want)))
	p.sent += int64(n)
	return n, 0
}
