// Idle timer: the processor API with a state store and a wall-clock
// timer. Users' activity events arrive on "activity"; a processor keeps
// each user's last activity time in a key-value store, and a punctuation
// that fires every -check interval of wall-clock time emits an "idle"
// record to "idle-users" for each user silent for longer than -idle, then
// forgets them. Timers fire whether or not records arrive: that is what
// wall-clock punctuation is for (stream-time punctuation would wait for
// the next record).
//
// The program sends one event for each of a few users and keeps one user,
// "alice", active; it prints the idle notices and stops once every other
// user was reported idle.
//
//	go run ./examples/idle-timer [-brokers host:9092] [-idle 2s]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/examples/internal/embedded"
	"github.com/runnel-io/runnel/streams"
)

// idleDetector remembers when each user was last active and reports the
// ones that went quiet.
type idleDetector struct {
	ctx   *streams.ProcessorContext[string, string]
	seen  *streams.KeyValueStore[string, int64]
	after time.Duration
	check time.Duration
}

func (p *idleDetector) Init(ctx *streams.ProcessorContext[string, string]) error {
	p.ctx = ctx
	var err error
	if p.seen, err = streams.GetKeyValueStore[string, int64](ctx, "last-seen"); err != nil {
		return err
	}
	ctx.Schedule(p.check, streams.WallClockTime, p.report)
	return nil
}

// Process notes the user's activity (the record's timestamp, set by the
// producer when it sent the event).
func (p *idleDetector) Process(r streams.Record[string, string]) error {
	return p.seen.Put(r.Key, r.Timestamp)
}

// report runs on the timer: now is the wall clock in milliseconds.
func (p *idleDetector) report(now int64) error {
	var idle []string
	for kv, err := range p.seen.All() {
		if err != nil {
			return err
		}
		if quiet := time.Duration(now-kv.Value) * time.Millisecond; quiet > p.after {
			idle = append(idle, kv.Key)
			msg := fmt.Sprintf("idle for %s", quiet.Round(100*time.Millisecond))
			if err := p.ctx.Forward(streams.Record[string, string]{Key: kv.Key, Value: msg, Timestamp: now}); err != nil {
				return err
			}
		}
	}
	for _, user := range idle { // deleting while iterating is not allowed
		if err := p.seen.Delete(user); err != nil {
			return err
		}
	}
	return nil
}

func (p *idleDetector) Close() error { return nil }

// Topology wires activity -> idleDetector (with its store) -> idle-users.
func Topology(after, check time.Duration) (*streams.Topology, error) {
	b := streams.NewBuilder()
	b.AddStore(streams.NewKeyValueStore[string, int64](b, "last-seen"))
	streams.From[string, string](b, "activity").
		Process(func() streams.Processor[string, string, string, string] {
			return &idleDetector{after: after, check: check}
		}, streams.ConnectStores("last-seen"), streams.Named("idle-detector")).
		To("idle-users")
	return b.Build()
}

var users = []string{"alice", "bob", "carol", "dave"}

func main() {
	brokers := flag.String("brokers", "", "comma-separated seed brokers (default: start an embedded broker)")
	idle := flag.Duration("idle", 2*time.Second, "how long a user may be silent before being reported idle")
	flag.Parse()
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	if err := run(ctx, *brokers, *idle, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "idle-timer:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, brokerList string, idle time.Duration, w io.Writer) error {
	seeds, stop, err := embedded.Brokers(brokerList)
	if err != nil {
		return err
	}
	defer stop()
	if err := embedded.CreateTopics(ctx, seeds, 2, "activity", "idle-users"); err != nil {
		return err
	}
	topo, err := Topology(idle, idle/10)
	if err != nil {
		return err
	}
	app, err := streams.NewApp(topo, streams.Config{ApplicationID: "idle-timer-example", Brokers: seeds, CommitInterval: time.Second})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- app.Run(ctx) }()

	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics("idle-users"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return err
	}
	defer cl.Close()
	for _, u := range users {
		cl.Produce(ctx, &kgo.Record{Topic: "activity", Key: []byte(u), Value: []byte("login")}, nil)
	}
	var wg sync.WaitGroup
	defer func() { // before the client closes
		cancel()
		wg.Wait()
	}()
	wg.Go(func() { keepActive(ctx, cl, "alice", idle/4) })

	reported := map[string]bool{}
	for len(reported) < len(users)-1 {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		select {
		case err := <-done:
			return fmt.Errorf("the app stopped: %v", err)
		default:
		}
		fetches.EachRecord(func(r *kgo.Record) {
			reported[string(r.Key)] = true
			fmt.Fprintf(w, "%s: %s\n", r.Key, r.Value)
		})
	}
	cancel()
	return <-done
}

// keepActive sends an event for user every interval until ctx ends.
func keepActive(ctx context.Context, cl *kgo.Client, user string, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			cl.Produce(ctx, &kgo.Record{Topic: "activity", Key: []byte(user), Value: []byte("click")}, nil)
		}
	}
}
