package datagen_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/broker/brokertest"
	"github.com/runnel-io/runnel/connect"
	"github.com/runnel-io/runnel/connect/connectors/datagen"
	"github.com/runnel-io/runnel/connect/connecttest"
)

const salesTasks = 2

func salesConnector(maxRecords int) connect.Config {
	return connect.Config{
		"name": "sales-gen", "connector.class": "Datagen", "tasks.max": strconv.Itoa(salesTasks),
		"kafka.topic": "sales", "schema": datagen.RetailSales, "seed": "9",
		"rate": "100", "max.records": strconv.Itoa(maxRecords), "key.converter": "string",
	}
}

// A restarted datagen connector continues each task's sequence at its
// stored offset: the topic holds records 0..max-1 of each task once
// each, in order, exactly as a Generator makes them.
func TestDatagenResumesAtTheStoredOffset(t *testing.T) {
	b := brokertest.Start(t)
	seeds := []string{b.Addr()}
	createTopic(t, seeds, "sales")
	dir := t.TempDir()

	// The first run ends its sequences at 150 and stores that.
	w := connecttest.StartWorker(t, seeds, dir, nil, nil, salesConnector(150))
	connecttest.WaitFor(t, 30*time.Second, "both tasks at seq 150", func() bool {
		seqs := storedSeqs(t, w.URL(), "sales-gen")
		return seqs[0] == 150 && seqs[1] == 150
	})
	w.Close()

	// The second goes on to 300.
	w = connecttest.StartWorker(t, seeds, dir, nil, nil, salesConnector(300))
	connecttest.WaitFor(t, 30*time.Second, "both tasks at seq 300", func() bool {
		seqs := storedSeqs(t, w.URL(), "sales-gen")
		return seqs[0] == 300 && seqs[1] == 300
	})
	if n := connecttest.EndOffset(t, seeds, "sales"); n != 300*salesTasks {
		t.Fatalf("the topic holds %d records, want %d", n, 300*salesTasks)
	}
	for task, recs := range salesByTask(t, seeds, 300*salesTasks) {
		g := salesGenerator(t, task)
		if len(recs) != 300 {
			t.Fatalf("task %d wrote %d records, want 300", task, len(recs))
		}
		for i, r := range recs {
			sameRecord(t, r, g.Next(), fmt.Sprintf("task %d record %d", task, i))
		}
	}
}

// A worker stopped while the tasks produce: the second worker resumes
// each task at its stored offset. The runtime is at least once: what was
// produced after the last stored offset is produced again (the stop
// stores no offsets when a record in flight failed), so a task's records
// in the topic are 0..a then b..max-1 with b ≤ a+1: a replayed stretch,
// never a gap, and each record is the Generator's.
func TestDatagenResumesAfterAStopMidStream(t *testing.T) {
	b := brokertest.Start(t)
	seeds := []string{b.Addr()}
	createTopic(t, seeds, "sales")
	dir := t.TempDir()
	const perTask = 300

	w := connecttest.StartWorker(t, seeds, dir, nil, nil, salesConnector(perTask))
	connecttest.WaitFor(t, 20*time.Second, "60 records in the topic", func() bool { return connecttest.EndOffset(t, seeds, "sales") >= 60 })
	w.Close()
	stopped := connecttest.EndOffset(t, seeds, "sales")
	if stopped >= perTask*salesTasks {
		t.Fatalf("the tasks finished (%d records) before the worker stopped: nothing to resume", stopped)
	}

	w = connecttest.StartWorker(t, seeds, dir, nil, nil, salesConnector(perTask))
	connecttest.WaitFor(t, 30*time.Second, "both tasks at seq 300", func() bool {
		seqs := storedSeqs(t, w.URL(), "sales-gen")
		return seqs[0] == perTask && seqs[1] == perTask
	})
	total := connecttest.EndOffset(t, seeds, "sales")
	t.Logf("stopped after %d records; %d replayed after the restart", stopped, total-perTask*salesTasks)
	for task, recs := range salesByTask(t, seeds, int(total)) {
		g := salesGenerator(t, task)
		next, restarts := int64(0), 0
		for i, r := range recs {
			seq := saleSeq(t, r)
			if seq != next {
				if seq > next || restarts > 0 {
					t.Fatalf("task %d: record %d has seq %d after seq %d", task, i, seq, next-1)
				}
				restarts++ // the second worker replays from its stored offset
			}
			sameRecord(t, r, g.At(seq), fmt.Sprintf("task %d record %d", task, i))
			next = seq + 1
		}
		if next != perTask {
			t.Fatalf("task %d ends at seq %d, want %d", task, next-1, perTask-1)
		}
	}
}

func salesGenerator(t *testing.T, task int) *datagen.Generator {
	t.Helper()
	g, err := datagen.NewGenerator(datagen.GeneratorConfig{Schema: datagen.RetailSales, Seed: 9, Task: task, Tasks: salesTasks})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// salesByTask reads n sales and groups them by task, in topic order.
func salesByTask(t *testing.T, seeds []string, n int) map[int][]*kgo.Record {
	t.Helper()
	out := map[int][]*kgo.Record{}
	for _, r := range connecttest.Consume(t, seeds, "sales", n) {
		var task, seq int
		id := decode(t, r.Value)["sale_id"].(string)
		if _, err := fmt.Sscanf(id, "sale-%d-%d", &task, &seq); err != nil {
			t.Fatalf("sale_id %q: %v", id, err)
		}
		out[task] = append(out[task], r)
	}
	return out
}

func saleSeq(t *testing.T, r *kgo.Record) int64 {
	var task, seq int64
	if _, err := fmt.Sscanf(decode(t, r.Value)["sale_id"].(string), "sale-%d-%d", &task, &seq); err != nil {
		t.Fatal(err)
	}
	return seq
}

// rate paces the records, and max.records ends the sequence.
func TestDatagenRateAndMaxRecords(t *testing.T) {
	b := brokertest.Start(t)
	seeds := []string{b.Addr()}
	createTopic(t, seeds, "views")
	conn := connect.Config{
		"name": "views-gen", "connector.class": "datagen", "kafka.topic": "views",
		"schema": datagen.Pageviews, "seed": "3", "rate": "200", "max.records": "50", "key.converter": "string",
	}
	began := time.Now()
	w := connecttest.StartWorker(t, seeds, t.TempDir(), nil, nil, conn)
	connecttest.WaitFor(t, 20*time.Second, "seq 50", func() bool { return storedSeqs(t, w.URL(), "views-gen")[0] == 50 })
	// Record k goes no sooner than k/rate after the first.
	if took := time.Since(began); took < 49*time.Second/200 {
		t.Errorf("50 records at 200 a second took only %v", took)
	}
	if n := connecttest.EndOffset(t, seeds, "views"); n != 50 {
		t.Fatalf("the topic holds %d records, want 50", n)
	}
	g, err := datagen.NewGenerator(datagen.GeneratorConfig{Schema: datagen.Pageviews, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range connecttest.Consume(t, seeds, "views", 50) {
		sameRecord(t, r, g.Next(), fmt.Sprintf("record %d", i))
	}
}

func sameRecord(t *testing.T, got *kgo.Record, want datagen.Record, what string) {
	t.Helper()
	wantValue, err := json.Marshal(want.Value)
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Key) != want.Key || !got.Timestamp.Equal(want.Time) || !reflect.DeepEqual(decode(t, got.Value), decode(t, wantValue)) {
		t.Fatalf("%s: got key %s, time %v, value %s;\nwant key %s, time %v, value %s",
			what, got.Key, got.Timestamp, got.Value, want.Key, want.Time, wantValue)
	}
}

func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		t.Fatalf("decoding %s: %v", b, err)
	}
	return m
}

// storedSeqs returns the stored seq of each task.
func storedSeqs(t *testing.T, url, name string) map[int]int64 {
	t.Helper()
	var offs struct {
		Offsets []struct {
			Partition struct{ Task int }
			Offset    struct{ Seq int64 }
		}
	}
	connecttest.Call(t, "GET", url+"/connectors/"+name+"/offsets", nil, &offs)
	out := map[int]int64{}
	for _, o := range offs.Offsets {
		out[o.Partition.Task] = o.Offset.Seq
	}
	return out
}

// createTopic creates topic with one partition, which keeps each task's
// records in order, and no time-based retention, which keeps data
// stamped in 2024.
func createTopic(t *testing.T, seeds []string, topic string) {
	t.Helper()
	connecttest.CreateTopic(t, seeds, topic, 1, map[string]*string{"retention.ms": kadm.StringPtr("-1")})
}
