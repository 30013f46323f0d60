package broker_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker"
	"github.com/runnel-io/runnel/broker/brokertest"
)

// TestOffsetsTopicStaysSmall commits two million offsets and checks that the
// cleaner keeps __consumer_offsets near its live size (one record per group
// and partition), not the size of everything written, and that the newest
// offset of every partition survives cleaning and a restart.
func TestOffsetsTopicStaysSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("writes ~150 MB of offset commits; -short leaves it out")
	}
	const (
		partitions = 100
		groups     = 8
		rounds     = 2500 // commits per group and partition: 8 × 100 × 2500 = 2M
		segBytes   = 1 << 20
	)
	settings := map[string]string{
		"group.initial.rebalance.delay.ms": "0",
		"offsets.topic.num.partitions":     "1",
		"offsets.topic.segment.bytes":      fmt.Sprint(segBytes),
		"log.cleaner.backoff.ms":           "10",
	}
	b := brokertest.Start(t, settings)
	rc := dialRaw(t, b.Addr())
	rc.createTopic("events", partitions, nil)

	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// Two million commits take a while on a small machine: more than
	// testCtx's I/O timeout.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	// commit sends one OffsetCommit of every partition for a simple group
	// (no members: generation -1, as Kafka allows).
	commit := func(group string, round int) error {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Group, req.Generation = group, -1
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = "events"
		for p := range partitions {
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch = int32(p), int64(round), -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
					return fmt.Errorf("%s/%d: %w", t.Topic, p.Partition, err)
				}
			}
		}
		return nil
	}

	dir := filepath.Join(b.Dir, "__consumer_offsets-0")
	var (
		wg     sync.WaitGroup
		errs   = make(chan error, groups)
		peakMu sync.Mutex
		peak   int64
	)
	start := time.Now()
	for g := range groups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 1; r <= rounds; r++ {
				if err := commit(fmt.Sprintf("g%d", g), r); err != nil {
					errs <- err
					return
				}
				if r%100 == 0 {
					size := dirSize(t, dir)
					peakMu.Lock()
					peak = max(peak, size)
					peakMu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("committed in %v", time.Since(start))
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	records := rc.highWatermark("__consumer_offsets", 0)
	if records < groups*partitions*rounds {
		t.Fatalf("__consumer_offsets holds %d records, want every one of the %d commits", records, groups*partitions*rounds)
	}

	// The live set is groups × partitions records of ~60 bytes (~50 KB);
	// the dirty ratio threshold (0.5) and the active segment allow a few
	// segments on top of it. The two million records written take ~120 MB.
	const bound = 6 * segBytes
	deadline := time.Now().Add(60 * time.Second)
	size := dirSize(t, dir)
	for size > bound && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond) // polling the cleaner's result with a deadline
		size = dirSize(t, dir)
	}
	t.Logf("__consumer_offsets: %d records written; %d bytes on disk while committing (peak sample), %d after cleaning", records, peak, size)
	if size > bound {
		t.Fatalf("__consumer_offsets is %d bytes after cleaning %d records, want at most %d", size, records, bound)
	}

	check := func(b *brokertest.Broker) {
		adm := kadm.NewClient(newClient(t, b))
		for g := range groups {
			os, err := adm.FetchOffsets(ctx, fmt.Sprintf("g%d", g))
			if err != nil {
				t.Fatal(err)
			}
			for p := range partitions {
				if o, ok := os.Lookup("events", int32(p)); !ok || o.At != rounds || o.Err != nil {
					t.Fatalf("g%d events/%d: %+v (found %v), want offset %d", g, p, o, ok, rounds)
				}
			}
		}
	}
	check(b)
	b.Stop(t)
	check(brokertest.StartWith(t, broker.Config{Settings: b.Settings}))
}

// dirSize sums the sizes of the files in dir.
func dirSize(t testing.TB, dir string) int64 {
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, e := range ents {
		if fi, err := e.Info(); err == nil && !e.IsDir() && filepath.Ext(e.Name()) == ".log" {
			n += fi.Size()
		}
	}
	return n
}
