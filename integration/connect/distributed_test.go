package connect

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/runnel-io/runnel/broker/brokertest"
	"github.com/runnel-io/runnel/connect/connecttest"
)

type taskState struct {
	ID       int    `json:"id"`
	State    string `json:"state"`
	WorkerID string `json:"worker_id"`
}

type connectorStatus struct {
	Connector struct {
		State string `json:"state"`
	} `json:"connector"`
	Tasks []taskState `json:"tasks"`
}

// taskOn returns where a connector's one task runs, if it runs.
func taskOn(t *testing.T, url, name string) (string, bool) {
	var st connectorStatus
	if connecttest.TryCall(t, "GET", url+"/connectors/"+name+"/status", nil, &st) != 200 || len(st.Tasks) != 1 || st.Tasks[0].State != "RUNNING" {
		return "", false
	}
	return st.Tasks[0].WorkerID, true
}

// Three `runnel connect distributed` processes run four connectors; one
// worker is SIGKILLed: its tasks run on the others within the session
// timeout and a rebalance (the time is logged), and no line is lost.
func TestDistributedWorkerKilled(t *testing.T) {
	b := brokertest.Start(t, map[string]string{"group.min.session.timeout.ms": "500", "group.initial.rebalance.delay.ms": "0"})
	bin := brokertest.BuildRunnel(t)
	dir := t.TempDir()
	cfg := distributedConfig(t, dir, b.Addr())
	workers := []*worker{startWorker(t, bin, "distributed", cfg), startWorker(t, bin, "distributed", cfg), startWorker(t, bin, "distributed", cfg)}

	out := filepath.Join(dir, "out.txt")
	var want []string
	for i := range 3 {
		in := filepath.Join(dir, fmt.Sprintf("in-%d.txt", i))
		line := fmt.Sprintf("src-%d line 0", i)
		connecttest.AppendLines(t, in, line)
		want = append(want, line)
		cfg := map[string]string{"connector.class": "FileStreamSource", "file": in, "topic": "lines", "poll.interval.ms": "10"}
		if code := connecttest.TryCall(t, "POST", workers[i].url+"/connectors", map[string]any{"name": fmt.Sprintf("src-%d", i), "config": cfg}, nil); code != 201 {
			t.Fatalf("create src-%d: %d", i, code)
		}
	}
	if code := connecttest.TryCall(t, "PUT", workers[0].url+"/connectors/out/config", map[string]string{"connector.class": "FileStreamSink", "file": out, "topics": "lines"}, nil); code != 201 {
		t.Fatalf("create out: %d", code)
	}
	names := []string{"src-0", "src-1", "src-2", "out"}
	connecttest.WaitFor(t, 60*time.Second, "every connector running", func() bool {
		for _, n := range names {
			if _, ok := taskOn(t, workers[0].url, n); !ok {
				return false
			}
		}
		return true
	})
	connecttest.WaitFor(t, 30*time.Second, "the first lines copied", func() bool { return len(connecttest.ReadLines(t, out)) >= 3 })

	// Kill the worker that runs src-0's task.
	host, _ := taskOn(t, workers[0].url, "src-0")
	victim := -1
	for i, w := range workers {
		if w.url == "http://"+host {
			victim = i
		}
	}
	if victim < 0 {
		t.Fatalf("no worker at %s", host)
	}
	var moved []string
	for _, n := range names {
		if h, _ := taskOn(t, workers[0].url, n); h == host {
			moved = append(moved, n)
		}
	}
	start := time.Now()
	workers[victim].kill()
	alive := slices.Delete(slices.Clone(workers), victim, victim+1)
	connecttest.WaitFor(t, 60*time.Second, "the killed worker's tasks running elsewhere", func() bool {
		for _, n := range moved {
			h, ok := taskOn(t, alive[0].url, n)
			if !ok || h == host {
				return false
			}
		}
		return true
	})
	t.Logf("SIGKILLed worker %s: its tasks %v ran on the other workers %v later (session.timeout.ms=2000)", host, moved, time.Since(start).Round(time.Millisecond))

	// Lines appended after the kill arrive; none is lost.
	for i := range 3 {
		line := fmt.Sprintf("src-%d line 1", i)
		connecttest.AppendLines(t, filepath.Join(dir, fmt.Sprintf("in-%d.txt", i)), line)
		want = append(want, line)
	}
	connecttest.WaitFor(t, 30*time.Second, "every line in the output", func() bool {
		got := connecttest.ReadLines(t, out)
		for _, l := range want {
			if !slices.Contains(got, l) {
				return false
			}
		}
		return true
	})
}
