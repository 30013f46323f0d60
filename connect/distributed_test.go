package connect_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runnel-io/runnel/broker/brokertest"
	"github.com/runnel-io/runnel/connect"
	"github.com/runnel-io/runnel/connect/connectors"
	"github.com/runnel-io/runnel/connect/connecttest"
)

// startDistributed starts a worker of the Connect cluster "cluster".
func startDistributed(t *testing.T, seeds []string) *connect.Worker {
	t.Helper()
	cfg := connect.Config{
		"bootstrap.servers":                 strings.Join(seeds, ","),
		"group.id":                          "cluster",
		"listeners":                         "http://127.0.0.1:0",
		"offset.flush.interval.ms":          "100",
		"session.timeout.ms":                "2000",
		"heartbeat.interval.ms":             "200",
		"rebalance.timeout.ms":              "5000",
		"value.converter":                   "json",
		"value.converter.schemas.enable":    "false",
		"key.converter":                     "json",
		"key.converter.schemas.enable":      "false",
		"task.shutdown.graceful.timeout.ms": "10000",
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w, err := connect.StartDistributed(ctx, cfg, connect.WorkerOptions{Registry: connectors.NewRegistry(), Logger: connecttest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	return w
}

type statusBody struct {
	Name      string `json:"name"`
	Connector struct {
		State    string `json:"state"`
		WorkerID string `json:"worker_id"`
	} `json:"connector"`
	Tasks []struct {
		ID       int    `json:"id"`
		State    string `json:"state"`
		WorkerID string `json:"worker_id"`
	} `json:"tasks"`
}

func statusOf(t *testing.T, url, name string) statusBody {
	var st statusBody
	connecttest.Call(t, "GET", url+"/connectors/"+name+"/status", nil, &st)
	return st
}

// running reports whether a connector and its n tasks run.
func running(t *testing.T, url, name string, n int) bool {
	st := statusOf(t, url, name)
	if st.Connector.State != "RUNNING" || len(st.Tasks) != n {
		return false
	}
	for _, ts := range st.Tasks {
		if ts.State != "RUNNING" {
			return false
		}
	}
	return true
}

// Three workers share connectors; every REST operation works through any
// of them; a worker that leaves hands its tasks over; configs and offsets
// survive a restart of every worker.
func TestDistributedWorkers(t *testing.T) {
	b := brokertest.Start(t, map[string]string{"group.min.session.timeout.ms": "500", "group.initial.rebalance.delay.ms": "0"})
	seeds := []string{b.Addr()}
	dir := t.TempDir()
	workers := []*connect.Worker{startDistributed(t, seeds), startDistributed(t, seeds), startDistributed(t, seeds)}
	url := func(i int) string { return workers[i%len(workers)].URL() }

	out := filepath.Join(dir, "out.txt")
	// copied reports whether the sink wrote n lines; more is a line
	// copied twice, which fails the test at once.
	copied := func(n int) func() bool {
		return func() bool {
			got := connecttest.ReadLines(t, out)
			if len(got) > n {
				t.Fatalf("the output has %d lines, want %d (a line copied twice):\n%s", len(got), n, strings.Join(got, "\n"))
			}
			return len(got) == n
		}
	}
	for i := range 3 {
		in := filepath.Join(dir, fmt.Sprintf("in-%d.txt", i))
		connecttest.AppendLines(t, in, fmt.Sprintf("src-%d line 1", i))
		cfg := map[string]string{"connector.class": "FileStreamSource", "file": in, "topic": "lines", "poll.interval.ms": "10"}
		if code := connecttest.Call(t, "POST", url(i)+"/connectors", map[string]any{"name": fmt.Sprintf("src-%d", i), "config": cfg}, nil); code != 201 {
			t.Fatalf("create src-%d: %d", i, code)
		}
	}
	if code := connecttest.Call(t, "PUT", url(1)+"/connectors/out/config", map[string]string{"connector.class": "FileStreamSink", "file": out, "topics": "lines"}, nil); code != 201 {
		t.Fatalf("create out: %d", code)
	}
	if code := connecttest.Call(t, "POST", url(2)+"/connectors", map[string]any{"name": "src-0", "config": map[string]string{"connector.class": "FileStreamSource", "file": "x", "topic": "y"}}, nil); code != 409 {
		t.Fatalf("create twice through another worker: %d", code)
	}
	connecttest.WaitFor(t, 30*time.Second, "every connector running", func() bool {
		return running(t, url(0), "src-0", 1) && running(t, url(1), "src-1", 1) && running(t, url(2), "src-2", 1) && running(t, url(0), "out", 1)
	})
	connecttest.WaitFor(t, 20*time.Second, "three lines copied", copied(3))
	// The workers join one by one: the first may run everything until
	// the last rebalance spreads the tasks.
	connecttest.WaitFor(t, 20*time.Second, "the four tasks spread over all three workers", func() bool {
		hosts := map[string]bool{}
		for _, n := range []string{"src-0", "src-1", "src-2", "out"} {
			st := statusOf(t, url(0), n)
			if len(st.Tasks) == 0 || st.Tasks[0].State != "RUNNING" {
				return false
			}
			hosts[st.Tasks[0].WorkerID] = true
		}
		return len(hosts) == 3
	})

	// Pause, resume, restart.
	if code := connecttest.Call(t, "PUT", url(1)+"/connectors/src-0/pause", nil, nil); code != 202 {
		t.Fatalf("pause: %d", code)
	}
	connecttest.WaitFor(t, 10*time.Second, "src-0 paused", func() bool {
		st := statusOf(t, url(2), "src-0")
		return st.Connector.State == "PAUSED" && len(st.Tasks) == 1 && st.Tasks[0].State == "PAUSED"
	})
	if code := connecttest.Call(t, "PUT", url(2)+"/connectors/src-0/resume", nil, nil); code != 202 {
		t.Fatalf("resume: %d", code)
	}
	connecttest.WaitFor(t, 10*time.Second, "src-0 running again", func() bool { return running(t, url(0), "src-0", 1) })
	if code := connecttest.Call(t, "POST", url(0)+"/connectors/src-0/restart?includeTasks=true", nil, nil); code != 202 {
		t.Fatalf("restart: %d", code)
	}
	if code := connecttest.Call(t, "POST", url(1)+"/connectors/src-0/tasks/0/restart", nil, nil); code != 204 {
		t.Fatalf("task restart: %d", code)
	}
	connecttest.WaitFor(t, 10*time.Second, "src-0 running after restarts", func() bool { return running(t, url(0), "src-0", 1) })

	// Stop, alter offsets, resume: the source reads its file again from
	// the altered position (the start).
	if code := connecttest.Call(t, "PUT", url(0)+"/connectors/src-1/stop", nil, nil); code != 204 {
		t.Fatalf("stop: %d", code)
	}
	connecttest.WaitFor(t, 10*time.Second, "src-1 stopped with no tasks", func() bool {
		st := statusOf(t, url(1), "src-1")
		return st.Connector.State == "STOPPED" && len(st.Tasks) == 0
	})
	in1 := filepath.Join(dir, "in-1.txt")
	alter := map[string]any{"offsets": []any{map[string]any{"partition": map[string]any{"filename": in1}, "offset": map[string]any{"position": 0}}}}
	if code := connecttest.Call(t, "PATCH", url(2)+"/connectors/src-1/offsets", alter, nil); code != 200 {
		t.Fatalf("alter offsets: %d", code)
	}
	connecttest.Call(t, "PUT", url(1)+"/connectors/src-1/resume", nil, nil)
	connecttest.WaitFor(t, 20*time.Second, "src-1's line copied again", copied(4))

	// Delete.
	if code := connecttest.Call(t, "DELETE", url(2)+"/connectors/src-2", nil, nil); code != 204 {
		t.Fatalf("delete: %d", code)
	}
	var names []string
	connecttest.WaitFor(t, 10*time.Second, "src-2 gone", func() bool {
		names = nil
		connecttest.Call(t, "GET", url(0)+"/connectors", nil, &names)
		return len(names) == 3
	})

	// A worker leaves: its tasks run on the others.
	host := statusOf(t, url(0), "src-0").Tasks[0].WorkerID
	var gone int
	for i, w := range workers {
		if strings.Contains(w.URL(), host) {
			gone = i
		}
	}
	start := time.Now()
	workers[gone].Close()
	workers = append(workers[:gone], workers[gone+1:]...)
	connecttest.WaitFor(t, 30*time.Second, "src-0 running on another worker", func() bool {
		st := statusOf(t, url(0), "src-0")
		return running(t, url(0), "src-0", 1) && st.Tasks[0].WorkerID != host
	})
	t.Logf("src-0's task moved from %s to another worker in %v", host, time.Since(start).Round(time.Millisecond))
	connecttest.AppendLines(t, filepath.Join(dir, "in-0.txt"), "src-0 line 2")
	connecttest.WaitFor(t, 20*time.Second, "a line appended after the move copied", copied(5))

	// Every worker restarts: configs, target states and offsets survive.
	for _, w := range workers {
		w.Close()
	}
	workers = []*connect.Worker{startDistributed(t, seeds), startDistributed(t, seeds), startDistributed(t, seeds)}
	connecttest.WaitFor(t, 30*time.Second, "connectors running after a restart of all workers", func() bool {
		return running(t, url(0), "src-0", 1) && running(t, url(1), "src-1", 1) && running(t, url(2), "out", 1)
	})
	connecttest.AppendLines(t, filepath.Join(dir, "in-0.txt"), "src-0 line 3")
	connecttest.WaitFor(t, 20*time.Second, "only the new line copied (nothing read twice)", copied(6))
}
