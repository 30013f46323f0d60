// Word count: the "hello world" of stream processing. Lines of text go to
// the topic "sentences"; a Runnel Streams app splits them into words,
// counts each word in a state store (through a repartition topic, so that
// every word is counted in one place) and writes every new count to
// "word-counts". The program writes some lines, runs the app and prints
// the counts as they arrive, until every word of its input is counted.
//
//	go run ./examples/wordcount                      # embedded broker
//	go run ./examples/wordcount -brokers host:9092   # any Kafka-compatible cluster
//	echo "to be or not to be" | go run ./examples/wordcount -stdin
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/examples/internal/embedded"
	"github.com/runnel-io/runnel/streams"
	"github.com/runnel-io/runnel/streams/serde"
)

// text is the input unless -stdin is given.
var text = []string{
	"the quick brown fox jumps over the lazy dog",
	"the dog barks and the fox runs",
	"a stream is a table in motion and a table is a stream at rest",
}

// Topology builds the word count: sentences -> words -> counts.
func Topology() (*streams.Topology, error) {
	b := streams.NewBuilder()
	streams.From[string, string](b, "sentences").
		FlatMapValues(func(line string) []string { return strings.Fields(strings.ToLower(line)) }).
		GroupBy(func(_, word string) string { return word }, streams.Named("words")).
		Count(streams.Materialized("word-counts-store")).
		ToStream().
		To("word-counts")
	return b.Build()
}

func main() {
	brokers := flag.String("brokers", "", "comma-separated seed brokers (default: start an embedded broker)")
	stdin := flag.Bool("stdin", false, "count the lines of standard input instead of the built-in text")
	flag.Parse()
	lines := text
	if *stdin {
		lines = nil
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			lines = append(lines, sc.Text())
		}
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	if err := run(ctx, *brokers, lines, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "wordcount:", err)
		os.Exit(1)
	}
}

// run writes lines, runs the app until every word is counted and prints
// the final counts to w.
func run(ctx context.Context, brokerList string, lines []string, w io.Writer) error {
	seeds, stop, err := embedded.Brokers(brokerList)
	if err != nil {
		return err
	}
	defer stop()
	if err := embedded.CreateTopics(ctx, seeds, 4, "sentences", "word-counts"); err != nil {
		return err
	}
	want := map[string]int64{}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return err
	}
	defer cl.Close()
	for i, line := range lines {
		for _, word := range strings.Fields(strings.ToLower(line)) {
			want[word]++
		}
		r := &kgo.Record{Topic: "sentences", Key: fmt.Appendf(nil, "line-%d", i), Value: []byte(line)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			return fmt.Errorf("write sentences: %w", err)
		}
	}

	topo, err := Topology()
	if err != nil {
		return err
	}
	app, err := streams.NewApp(topo, streams.Config{
		ApplicationID:  "wordcount-example",
		Brokers:        seeds,
		CommitInterval: 200 * time.Millisecond,
	})
	if err != nil {
		return err
	}
	appCtx, stopApp := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- app.Run(appCtx) }()

	got, err := readCounts(ctx, seeds, want, done)
	stopApp()
	if appErr := <-done; err == nil {
		err = appErr
	}
	if err != nil {
		return err
	}
	words := make([]string, 0, len(got))
	for word := range got {
		words = append(words, word)
	}
	sort.Slice(words, func(i, j int) bool {
		if got[words[i]] != got[words[j]] {
			return got[words[i]] > got[words[j]]
		}
		return words[i] < words[j]
	})
	for _, word := range words {
		fmt.Fprintf(w, "%-8s %d\n", word, got[word])
	}
	return nil
}

// readCounts reads word-counts until each word's latest count is want's.
func readCounts(ctx context.Context, seeds []string, want map[string]int64, done <-chan error) (map[string]int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics("word-counts"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	got := map[string]int64{}
	for !same(got, want) {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		select {
		case err := <-done:
			return nil, fmt.Errorf("the app stopped: %v", err)
		default:
		}
		var derr error
		fetches.EachRecord(func(r *kgo.Record) {
			n, err := serde.Int64.Decode(r.Value)
			if err != nil {
				derr = err
			}
			got[string(r.Key)] = n
		})
		if derr != nil {
			return nil, derr
		}
	}
	return got, nil
}

func same(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range b {
		if a[k] != v {
			return false
		}
	}
	return true
}
