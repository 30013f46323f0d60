package retail_test

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/runnel-io/runnel/retail-demo/retail"
	"github.com/runnel-io/runnel/retail-demo/retail/retailtest"
	"github.com/runnel-io/runnel/streams"
	"github.com/runnel-io/runnel/streams/serde"
	"github.com/runnel-io/runnel/streams/streamstest"
)

// The app's outputs equal the reference's whatever order the two inputs
// arrive in: as generated, every shipment first, every sale first.
func TestAppMatchesReferenceInAnyArrivalOrder(t *testing.T) {
	cfg := retailtest.Config(20_000)
	events := retailtest.Events(t, cfg)
	wantR, wantP := retailtest.Reference(cfg, events)
	if len(wantR) < 50 || len(wantP) < 20 {
		t.Fatalf("the data set makes %d reorders and %d price changes: too few to test anything", len(wantR), len(wantP))
	}
	t.Logf("%d events: %d reorders, %d price changes", len(events), len(wantR), len(wantP))
	var sales, ships []retail.Event
	for _, e := range events {
		if e.Topic == cfg.Topics.Sales {
			sales = append(sales, e)
		} else {
			ships = append(ships, e)
		}
	}
	for _, order := range []struct {
		name  string
		input []retail.Event
	}{
		{"as generated", events},
		{"shipments first", append(append([]retail.Event{}, ships...), sales...)},
		{"sales first", append(append([]retail.Event{}, sales...), ships...)},
	} {
		t.Run(order.name, func(t *testing.T) {
			gotR, gotP := runDriver(t, cfg, order.input)
			retailtest.Diff(t, gotR, wantR, gotP, wantP)
		})
	}
}

// runDriver pipes events through the topology on the test driver, then
// the end-of-input watermark on both inputs.
func runDriver(t *testing.T, cfg retail.Config, events []retail.Event) ([]retail.Reorder, []retail.PriceChange) {
	topo, err := retail.Topology(cfg)
	if err != nil {
		t.Fatal(err)
	}
	d := streamstest.New(t, topo, streamstest.Config{})
	defer d.Close()
	in := map[string]*streamstest.InputTopic[string, []byte]{}
	for _, topic := range []string{cfg.Topics.Sales, cfg.Topics.Shipments} {
		in[topic] = streamstest.Input(d, topic, serde.String, serde.Bytes)
	}
	for _, e := range events {
		if err := in[e.Topic].PipeRaw([]byte(e.Key), e.Value, time.UnixMilli(e.Time)); err != nil {
			t.Fatal(err)
		}
	}
	end := streams.Header{Key: retail.WatermarkHeader, Value: []byte(strconv.FormatInt(retail.EndOfInput, 10))}
	for _, topic := range []string{cfg.Topics.Sales, cfg.Topics.Shipments} {
		if err := in[topic].PipeRaw(nil, nil, time.UnixMilli(events[len(events)-1].Time), end); err != nil {
			t.Fatal(err)
		}
	}
	var rs []retail.Reorder
	for _, r := range d.Records(cfg.Topics.Reorders) {
		var v retail.Reorder
		if err := json.Unmarshal(r.Value, &v); err != nil {
			t.Fatal(err)
		}
		rs = append(rs, v)
	}
	var ps []retail.PriceChange
	for _, r := range d.Records(cfg.Topics.Prices) {
		var v retail.PriceChange
		if err := json.Unmarshal(r.Value, &v); err != nil {
			t.Fatal(err)
		}
		ps = append(ps, v)
	}
	if n, want := len(d.Records(cfg.Topics.Stock)), len(events); n != want {
		t.Fatalf("%d stock updates for %d events", n, want)
	}
	return rs, ps
}
