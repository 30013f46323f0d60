package retail

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/connect/connectors/datagen"
)

// Event is one generated sale or shipment.
type Event struct {
	Topic string
	Key   string
	Time  int64 // event time, epoch ms
	Value []byte
}

// Events calls yield with the generator's sales and shipments in event
// time order (a shipment first at equal times), until yield returns
// false or, when Generator.Sales is set, after that many sales. It is
// datagen's retail universe: the same seed, stores and products give the
// same records as the Datagen connector's retail.sales and
// retail.shipments.
func Events(cfg Config, start time.Time, yield func(Event) bool) error {
	g := cfg.Generator
	gen := func(schema string) (*datagen.Generator, error) {
		return datagen.NewGenerator(datagen.GeneratorConfig{Schema: schema, Seed: g.Seed, Stores: g.Stores, Products: g.Products, Start: start})
	}
	sales, err := gen(datagen.RetailSales)
	if err != nil {
		return err
	}
	ships, err := gen(datagen.RetailShipments)
	if err != nil {
		return err
	}
	s, sh := sales.Next(), ships.Next()
	for n := int64(0); g.Sales == 0 || n < g.Sales; {
		var r datagen.Record
		var topic string
		if sh.Time.After(s.Time) {
			r, topic, s = s, cfg.Topics.Sales, sales.Next()
			n++
		} else {
			r, topic, sh = sh, cfg.Topics.Shipments, ships.Next()
		}
		v, err := json.Marshal(r.Value)
		if err != nil {
			return err
		}
		if !yield(Event{Topic: topic, Key: r.Key, Time: r.Time.UnixMilli(), Value: v}) {
			return nil
		}
	}
	return nil
}

// GenStats counts what the generator wrote.
type GenStats struct {
	Sales, Shipments atomic.Int64
	SimTime          atomic.Int64 // the event time of the last record
	// Sent, when set, is called with each sale and shipment just before
	// it is handed to the producer, on the generator's goroutine (the
	// benchmark times the way from there to the stock table).
	Sent func(Event)
}

// Generate writes Events to the sales and shipments topics at
// Generator.Rate sales a second, with a watermark on every partition of
// both whenever Generator.Watermark of event time has passed, and the
// EndOfInput watermark after the last sale of a finite run. It returns
// when the run ends (every record acknowledged) or ctx does.
func Generate(ctx context.Context, cl *kgo.Client, cfg Config, stats *GenStats) error {
	start, err := cfg.Generator.StartTime(time.Now())
	if err != nil {
		return err
	}
	if stats == nil {
		stats = &GenStats{}
	}
	var failed atomic.Pointer[error]
	done := func(_ *kgo.Record, err error) {
		if err != nil {
			failed.CompareAndSwap(nil, &err)
		}
	}
	parts, wmEvery := cfg.Topics.Partitions, cfg.Generator.Watermark.Milliseconds()
	watermark := func(ts, wm int64) {
		for _, topic := range []string{cfg.Topics.Sales, cfg.Topics.Shipments} {
			for p := range parts {
				cl.Produce(ctx, &kgo.Record{Topic: topic, Partition: p, Timestamp: time.UnixMilli(ts),
					Headers: []kgo.RecordHeader{{Key: WatermarkHeader, Value: []byte(itoa(wm))}}}, done)
			}
		}
	}
	began, rate := time.Now(), cfg.Generator.Rate
	var nextWM, last int64
	err = Events(cfg, start, func(e Event) bool {
		if failed.Load() != nil || ctx.Err() != nil {
			return false
		}
		if e.Time >= nextWM {
			// Every record from here on is at e.Time or later.
			watermark(e.Time, e.Time)
			nextWM = e.Time + wmEvery
		}
		if stats.Sent != nil {
			stats.Sent(e)
		}
		cl.Produce(ctx, &kgo.Record{Topic: e.Topic, Key: []byte(e.Key), Value: e.Value, Timestamp: time.UnixMilli(e.Time)}, done)
		last = e.Time
		stats.SimTime.Store(e.Time)
		if e.Topic == cfg.Topics.Shipments {
			stats.Shipments.Add(1)
			return true
		}
		n := stats.Sales.Add(1)
		if rate > 0 {
			due := began.Add(time.Duration(float64(n) / rate * float64(time.Second)))
			if wait := time.Until(due); wait > 0 {
				select {
				case <-ctx.Done():
					return false
				case <-time.After(wait):
				}
			}
		}
		return true
	})
	if err != nil {
		return err
	}
	if ctx.Err() == nil && failed.Load() == nil {
		watermark(last, EndOfInput)
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	if p := failed.Load(); p != nil {
		return fmt.Errorf("retail generator: producing: %w", *p)
	}
	return ctx.Err()
}

// Partitioner sends watermark records to the partition they name and
// hashes the keys of the others as Kafka's clients do (murmur2), so that
// a store's product lands in the same partition of both input topics.
func Partitioner() kgo.Partitioner {
	return manualWatermarks{kgo.StickyKeyPartitioner(nil)}
}

type manualWatermarks struct{ keyed kgo.Partitioner }

func (m manualWatermarks) ForTopic(topic string) kgo.TopicPartitioner {
	return manualTopic{m.keyed.ForTopic(topic)}
}

type manualTopic struct{ keyed kgo.TopicPartitioner }

func (t manualTopic) RequiresConsistency(r *kgo.Record) bool { return true }

func (t manualTopic) Partition(r *kgo.Record, n int) int {
	if len(r.Headers) > 0 && r.Headers[0].Key == WatermarkHeader {
		return int(r.Partition)
	}
	return t.keyed.Partition(r, n)
}
