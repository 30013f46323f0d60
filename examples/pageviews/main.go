// Windowed page views: how many pages each user viewed per minute, on
// event time. Page views (key: user, value: page) go to "page-views" with
// the time they happened as their timestamp; a Runnel Streams app counts
// them per user in one-minute tumbling windows that accept records up to
// ten seconds late (grace), and suppresses the running counts so that each
// window's final count is written once, when the window closes, to
// "page-views-per-minute".
//
// The program writes a few minutes of views — one arriving out of order
// within the grace period (counted) and one too late (dropped) — and
// prints each final count as it arrives.
//
//	go run ./examples/pageviews [-brokers host:9092]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/examples/internal/embedded"
	"github.com/runnel-io/runnel/streams"
	"github.com/runnel-io/runnel/streams/serde"
)

// Window and grace of the count.
const (
	window = time.Minute
	grace  = 10 * time.Second
)

// Topology counts page views per user and minute and writes each
// window's final count.
func Topology() (*streams.Topology, error) {
	b := streams.NewBuilder()
	views := streams.From[string, string](b, "page-views")
	streams.WindowedBy(views.GroupByKey(), streams.TumblingWindows(window).Grace(grace)).
		Count(streams.Materialized("views-per-minute")).
		Suppress(streams.UntilWindowCloses()).
		ToStream().
		To("page-views-per-minute", streams.KeySerde(streams.WindowedSerdeOfSize(serde.String, window)))
	return b.Build()
}

// view is one page view, at a time after the start of the input.
type view struct {
	user, page string
	at         time.Duration
}

// views are the input, in the order they are sent.
var views = []view{
	{"alice", "/", 5 * time.Second},
	{"alice", "/shoes", 20 * time.Second},
	{"bob", "/", 30 * time.Second},
	{"alice", "/shoes/red", 50 * time.Second},
	{"bob", "/hats", 65 * time.Second},
	{"alice", "/cart", 68 * time.Second},
	{"alice", "/checkout", 55 * time.Second}, // out of order, within grace: counts in 12:00
	{"bob", "/", 100 * time.Second},
	{"alice", "/", 130 * time.Second},
	{"bob", "/sale", 45 * time.Second}, // 85 s late for 12:00, which closed at 12:01:10: dropped
	{"carol", "/", 200 * time.Second},  // moves stream time on, closing 12:01 and 12:02
}

func main() {
	brokers := flag.String("brokers", "", "comma-separated seed brokers (default: start an embedded broker)")
	flag.Parse()
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	// The input starts at the last full hour: brokers refuse timestamps
	// far in the future, and retention deletes those far in the past.
	start := time.Now().UTC().Truncate(time.Hour)
	if err := run(ctx, *brokers, start, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "pageviews:", err)
		os.Exit(1)
	}
}

// expectedWindows is how many final counts the input closes: alice and bob
// in 12:00 and 12:01, alice in 12:02.
const expectedWindows = 5

func run(ctx context.Context, brokerList string, start time.Time, w io.Writer) error {
	seeds, stop, err := embedded.Brokers(brokerList)
	if err != nil {
		return err
	}
	defer stop()
	// One partition: stream time, which closes windows, is per partition.
	if err := embedded.CreateTopics(ctx, seeds, 1, "page-views", "page-views-per-minute"); err != nil {
		return err
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics("page-views-per-minute"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return err
	}
	defer cl.Close()
	for _, v := range views {
		r := &kgo.Record{Topic: "page-views", Key: []byte(v.user), Value: []byte(v.page), Timestamp: start.Add(v.at)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			return fmt.Errorf("write page views: %w", err)
		}
	}

	topo, err := Topology()
	if err != nil {
		return err
	}
	app, err := streams.NewApp(topo, streams.Config{ApplicationID: "pageviews-example", Brokers: seeds, CommitInterval: 200 * time.Millisecond})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- app.Run(ctx) }()

	keys := streams.WindowedSerdeOfSize(serde.String, window)
	for printed := 0; printed < expectedWindows; {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		select {
		case err := <-done:
			return fmt.Errorf("the app stopped: %v", err)
		default:
		}
		var derr error
		fetches.EachRecord(func(r *kgo.Record) {
			k, err := keys.Decode(r.Key)
			if err != nil {
				derr = err
				return
			}
			n, err := serde.Int64.Decode(r.Value)
			if err != nil {
				derr = err
				return
			}
			from, to := time.UnixMilli(k.Start).UTC(), time.UnixMilli(k.End).UTC()
			fmt.Fprintf(w, "%-6s %s-%s %d views\n", k.Key, from.Format("15:04:05"), to.Format("15:04:05"), n)
			printed++
		})
		if derr != nil {
			return derr
		}
	}
	cancel()
	return <-done
}
