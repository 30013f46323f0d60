package connect_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/broker/brokertest"
	"github.com/runnel-io/runnel/connect"
	"github.com/runnel-io/runnel/connect/connectors"
	"github.com/runnel-io/runnel/connect/connecttest"
)

// produce writes values to topic.
func produce(t *testing.T, seeds []string, topic string, values ...string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i, v := range values {
		r := &kgo.Record{Topic: topic, Value: []byte(v)}
		r.Key = []byte(fmt.Sprint(i))
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

// A poison record (not JSON) with errors.tolerance=all goes to the dead
// letter queue with context headers, and the records around it flow.
func TestSinkDeadLettersAPoisonRecord(t *testing.T) {
	b := brokertest.Start(t)
	seeds := []string{b.Addr()}
	dir := t.TempDir()
	produce(t, seeds, "orders", `{"id":1}`, `{"id":2`, `{"id":3}`)
	out := filepath.Join(dir, "out.jsonl")
	connecttest.StartWorker(t, seeds, dir, nil, nil, connect.Config{
		"name": "orders-out", "connector.class": "FileStreamSink", "file": out, "topics": "orders",
		"errors.tolerance": "all", "errors.log.enable": "true",
		"errors.deadletterqueue.topic.name": "orders-dlq", "errors.deadletterqueue.context.headers.enable": "true",
	})
	connecttest.WaitFor(t, 20*time.Second, "the good records in the file", func() bool { return len(connecttest.ReadLines(t, out)) == 2 })
	if got := connecttest.ReadLines(t, out); got[0] != `{"id":1}` || got[1] != `{"id":3}` {
		t.Fatalf("file: %q", got)
	}
	dlq := connecttest.Consume(t, seeds, "orders-dlq", 1)
	r := dlq[0]
	if string(r.Value) != `{"id":2` || string(r.Key) != "1" {
		t.Fatalf("dead letter: key %q value %q", r.Key, r.Value)
	}
	h := map[string]string{}
	for _, x := range r.Headers {
		h[x.Key] = string(x.Value)
	}
	for k, want := range map[string]string{
		"__connect.errors.topic": "orders", "__connect.errors.partition": "0", "__connect.errors.offset": "1",
		"__connect.errors.connector.name": "orders-out", "__connect.errors.task.id": "0", "__connect.errors.stage": "convert",
	} {
		if h[k] != want {
			t.Errorf("header %s = %q, want %q", k, h[k], want)
		}
	}
	if !strings.Contains(h["__connect.errors.exception.message"], "converting the value") {
		t.Errorf("exception message: %q", h["__connect.errors.exception.message"])
	}
}

// With errors.tolerance=none the poison record fails the task with a
// trace in its status; with auto restart on, the task is restarted after
// a backoff (and fails again on the same record), and nothing after the
// poison record is written.
func TestSinkFailsOnAPoisonRecordAndRestarts(t *testing.T) {
	b := brokertest.Start(t)
	seeds := []string{b.Addr()}
	dir := t.TempDir()
	produce(t, seeds, "orders", `{"id":1}`, `not json`, `{"id":3}`)
	out := filepath.Join(dir, "out.jsonl")
	w := connecttest.StartWorker(t, seeds, dir, nil, nil, connect.Config{
		"name": "orders-out", "connector.class": "FileStreamSink", "file": out, "topics": "orders",
		"auto.restart.enable": "true", "auto.restart.backoff.initial.ms": "50", "auto.restart.backoff.max.ms": "200",
	})
	var st connect.ConnectorStatus
	connecttest.WaitFor(t, 60*time.Second, "the task failed, was restarted twice and failed again", func() bool {
		connecttest.Call(t, "GET", w.URL()+"/connectors/orders-out/status", nil, &st)
		return len(st.Tasks) == 1 && st.Tasks[0].State == connect.StateFailed &&
			strings.Contains(metricsText(t, w.URL()), `runnel_connect_task_restarts_total{connector="orders-out",task="0"} 2`)
	})
	if tr := st.Tasks[0].Trace; !strings.Contains(tr, "orders-0@1") || !strings.Contains(tr, "converting the value") {
		t.Fatalf("trace: %q", tr)
	}
	if got := connecttest.ReadLines(t, out); len(got) > 1 {
		t.Fatalf("records after the poison one were written: %q", got)
	}
}

// Bad config files get messages that name the file, line and key.
func TestBadConfigFilesNameTheKey(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "worker.properties")
	connecttest.WriteFile(t, path, "bootstrap.servers=localhost:9092\noffset.flush.interval.ms=soon\n")
	_, err := connect.LoadWorkerConfig(path)
	if err == nil || !strings.Contains(err.Error(), path+":2: offset.flush.interval.ms: Invalid value soon") {
		t.Fatalf("worker config error: %v", err)
	}
	path = filepath.Join(dir, "c.yaml")
	connecttest.WriteFile(t, path, "connector.class: FileStreamSource\n")
	if _, err := connect.LoadConnectorConfig(path); err == nil || !strings.Contains(err.Error(), "has no name") {
		t.Fatalf("connector config without a name: %v", err)
	}
	// A connector config that does not validate stops the worker's start
	// with the keys named.
	b := brokertest.Start(t)
	_, err = connect.StartStandalone(context.Background(), connect.Config{"bootstrap.servers": b.Addr(), "listeners": "http://127.0.0.1:0",
		"offset.storage.file.filename": filepath.Join(dir, "o.json")},
		[]connect.Config{{"name": "c", "connector.class": "FileStreamSource", "topic": "t", "batch.size": "many"}},
		connect.WorkerOptions{Registry: connectors.NewRegistry(), Logger: connecttest.Logger(t)})
	if err == nil || !strings.Contains(err.Error(), `Missing required configuration "file"`) || !strings.Contains(err.Error(), "batch.size: Invalid value many") {
		t.Fatalf("invalid connector: %v", err)
	}
}
