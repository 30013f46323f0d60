package connect_test

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runnel-io/runnel/broker/brokertest"
	"github.com/runnel-io/runnel/connect/connecttest"
)

// TestRESTPathsAndShapes walks every path of the REST API and checks its
// status codes and JSON shapes against Kafka Connect's.
func TestRESTPathsAndShapes(t *testing.T) {
	b := brokertest.Start(t)
	dir := t.TempDir()
	w := connecttest.StartWorker(t, []string{b.Addr()}, dir, nil, nil)
	u := w.URL()
	in := filepath.Join(dir, "in.txt")
	connecttest.AppendLines(t, in, "a", "b", "c")

	var root map[string]string
	if code := connecttest.Call(t, "GET", u+"/", nil, &root); code != 200 || root["version"] == "" || root["kafka_cluster_id"] == "" || root["commit"] == "" {
		t.Fatalf("GET /: %d %v", code, root)
	}
	var health map[string]string
	if code := connecttest.Call(t, "GET", u+"/health", nil, &health); code != 200 || health["status"] != "healthy" {
		t.Fatalf("GET /health: %d %v", code, health)
	}

	// Plugins: connectors only by default, all with connectorsOnly=false.
	var plugins []map[string]string
	if code := connecttest.Call(t, "GET", u+"/connector-plugins", nil, &plugins); code != 200 {
		t.Fatalf("GET /connector-plugins: %d", code)
	}
	classes := map[string]string{}
	for _, p := range plugins {
		classes[p["class"]] = p["type"]
	}
	if classes["org.apache.kafka.connect.file.FileStreamSourceConnector"] != "source" || classes["org.apache.kafka.connect.file.FileStreamSinkConnector"] != "sink" {
		t.Fatalf("plugins: %v", plugins)
	}
	for _, p := range plugins {
		if p["type"] != "source" && p["type"] != "sink" {
			t.Fatalf("connectorsOnly lists %v", p)
		}
	}
	connecttest.Call(t, "GET", u+"/connector-plugins?connectorsOnly=false", nil, &plugins)
	types := map[string]bool{}
	for _, p := range plugins {
		types[p["type"]] = true
	}
	if !types["transformation"] || !types["predicate"] || !types["converter"] {
		t.Fatalf("connectorsOnly=false lists types %v", types)
	}
	var keys []map[string]any
	if code := connecttest.Call(t, "GET", u+"/connector-plugins/FileStreamSource/config", nil, &keys); code != 200 || len(keys) == 0 || keys[0]["name"] != "file" {
		t.Fatalf("GET plugin config: %d %v", code, keys)
	}

	// Validate: Kafka's shape, an error naming the missing key.
	var infos struct {
		Name       string   `json:"name"`
		ErrorCount int      `json:"error_count"`
		Groups     []string `json:"groups"`
		Configs    []struct {
			Definition map[string]any `json:"definition"`
			Value      struct {
				Name   string   `json:"name"`
				Value  *string  `json:"value"`
				Errors []string `json:"errors"`
			} `json:"value"`
		} `json:"configs"`
	}
	code := connecttest.Call(t, "PUT", u+"/connector-plugins/FileStreamSource/config/validate", map[string]string{"name": "x", "topic": "t"}, &infos)
	if code != 200 || infos.Name != "org.apache.kafka.connect.file.FileStreamSourceConnector" || infos.ErrorCount != 1 || len(infos.Groups) == 0 {
		t.Fatalf("validate: %d %+v", code, infos)
	}
	for _, c := range infos.Configs {
		for _, f := range []string{"name", "type", "required", "default_value", "importance", "documentation", "group", "display_name", "dependents", "order"} {
			if _, ok := c.Definition[f]; !ok {
				t.Fatalf("definition of %s lacks %s", c.Value.Name, f)
			}
		}
		if c.Value.Name == "file" && (len(c.Value.Errors) != 1 || !strings.Contains(c.Value.Errors[0], `"file"`)) {
			t.Fatalf("errors of file: %v", c.Value.Errors)
		}
	}
	code = connecttest.Call(t, "PUT", u+"/connector-plugins/FileStreamSink/config/validate", map[string]string{"connector.class": "FileStreamSource"}, nil)
	if code != 400 {
		t.Fatalf("validate with another class: %d", code)
	}

	// Create.
	cfg := map[string]string{"connector.class": "FileStreamSource", "file": in, "topic": "rest-lines", "poll.interval.ms": "10"}
	var info struct {
		Name   string            `json:"name"`
		Config map[string]string `json:"config"`
		Tasks  []struct {
			Connector string `json:"connector"`
			Task      int    `json:"task"`
		} `json:"tasks"`
		Type string `json:"type"`
	}
	if code := connecttest.Call(t, "POST", u+"/connectors", map[string]any{"name": "src", "config": cfg}, &info); code != 201 || info.Name != "src" || info.Type != "source" || info.Config["name"] != "src" {
		t.Fatalf("POST /connectors: %d %+v", code, info)
	}
	var rerr struct {
		ErrorCode int    `json:"error_code"`
		Message   string `json:"message"`
	}
	if code := connecttest.Call(t, "POST", u+"/connectors", map[string]any{"name": "src", "config": cfg}, &rerr); code != 409 || rerr.ErrorCode != 409 || !strings.Contains(rerr.Message, "already exists") {
		t.Fatalf("POST twice: %d %+v", code, rerr)
	}
	if code := connecttest.Call(t, "POST", u+"/connectors", map[string]any{"name": "bad", "config": map[string]string{"connector.class": "FileStreamSource"}}, &rerr); code != 400 || !strings.Contains(rerr.Message, "file") || !strings.Contains(rerr.Message, "topic") {
		t.Fatalf("POST invalid: %d %+v", code, rerr)
	}
	if code := connecttest.Call(t, "GET", u+"/connectors/nope", nil, &rerr); code != 404 || rerr.ErrorCode != 404 || rerr.Message != "Connector nope not found" {
		t.Fatalf("GET unknown: %d %+v", code, rerr)
	}
	if code := connecttest.Call(t, "GET", u+"/nowhere", nil, &rerr); code != 404 || rerr.ErrorCode != 404 {
		t.Fatalf("GET unknown path: %d %+v", code, rerr)
	}

	type status struct {
		Name      string `json:"name"`
		Connector struct {
			State    string `json:"state"`
			WorkerID string `json:"worker_id"`
		} `json:"connector"`
		Tasks []struct {
			ID       int    `json:"id"`
			State    string `json:"state"`
			WorkerID string `json:"worker_id"`
			Trace    string `json:"trace"`
		} `json:"tasks"`
		Type string `json:"type"`
	}
	stateIs := func(conn, task string) func() bool {
		return func() bool {
			var st status
			connecttest.Call(t, "GET", u+"/connectors/src/status", nil, &st)
			return st.Connector.State == conn && (task == "" && len(st.Tasks) == 0 || len(st.Tasks) == 1 && st.Tasks[0].State == task)
		}
	}
	connecttest.WaitFor(t, 10*time.Second, "src RUNNING", stateIs("RUNNING", "RUNNING"))
	var st status
	connecttest.Call(t, "GET", u+"/connectors/src/status", nil, &st)
	if st.Name != "src" || st.Type != "source" || st.Connector.WorkerID == "" || st.Tasks[0].WorkerID != st.Connector.WorkerID {
		t.Fatalf("status: %+v", st)
	}

	// Lists.
	var names []string
	if code := connecttest.Call(t, "GET", u+"/connectors", nil, &names); code != 200 || len(names) != 1 || names[0] != "src" {
		t.Fatalf("GET /connectors: %d %v", code, names)
	}
	var expanded map[string]map[string]map[string]any
	connecttest.Call(t, "GET", u+"/connectors?expand=status&expand=info", nil, &expanded)
	if expanded["src"]["status"]["name"] != "src" || expanded["src"]["info"]["type"] != "source" {
		t.Fatalf("expand: %v", expanded)
	}
	var conf map[string]string
	if code := connecttest.Call(t, "GET", u+"/connectors/src/config", nil, &conf); code != 200 || conf["topic"] != "rest-lines" {
		t.Fatalf("GET config: %d %v", code, conf)
	}
	var tasks []struct {
		ID struct {
			Connector string `json:"connector"`
			Task      int    `json:"task"`
		} `json:"id"`
		Config map[string]string `json:"config"`
	}
	if code := connecttest.Call(t, "GET", u+"/connectors/src/tasks", nil, &tasks); code != 200 || len(tasks) != 1 || tasks[0].ID.Connector != "src" || tasks[0].Config["file"] != in {
		t.Fatalf("GET tasks: %d %+v", code, tasks)
	}
	var ts map[string]any
	if code := connecttest.Call(t, "GET", u+"/connectors/src/tasks/0/status", nil, &ts); code != 200 || ts["state"] != "RUNNING" || ts["id"] != float64(0) {
		t.Fatalf("GET task status: %d %v", code, ts)
	}
	if code := connecttest.Call(t, "GET", u+"/connectors/src/tasks/7/status", nil, &rerr); code != 404 {
		t.Fatalf("GET unknown task: %d", code)
	}

	// Update: PUT (200 for an existing one, 201 for a new one) and PATCH.
	cfg["batch.size"] = "100"
	if code := connecttest.Call(t, "PUT", u+"/connectors/src/config", cfg, &info); code != 200 || info.Config["batch.size"] != "100" {
		t.Fatalf("PUT config: %d %+v", code, info)
	}
	info.Config = nil // json.Unmarshal merges into a map it is given
	if code := connecttest.Call(t, "PATCH", u+"/connectors/src/config", map[string]any{"batch.size": nil, "poll.interval.ms": 20}, &info); code != 200 || info.Config["batch.size"] != "" || info.Config["poll.interval.ms"] != "20" {
		t.Fatalf("PATCH config: %d %+v", code, info)
	}
	sinkCfg := map[string]string{"connector.class": "FileStreamSink", "file": filepath.Join(dir, "out.txt"), "topics": "rest-lines"}
	if code := connecttest.Call(t, "PUT", u+"/connectors/snk/config", sinkCfg, &info); code != 201 || info.Type != "sink" {
		t.Fatalf("PUT new: %d %+v", code, info)
	}
	connecttest.WaitFor(t, 20*time.Second, "lines copied", func() bool { return len(connecttest.ReadLines(t, filepath.Join(dir, "out.txt"))) == 3 })

	// Restart: 204 for the connector alone, 202 with a status otherwise.
	if code := connecttest.Call(t, "POST", u+"/connectors/src/restart", nil, nil); code != http.StatusNoContent {
		t.Fatalf("restart: %d", code)
	}
	if code := connecttest.Call(t, "POST", u+"/connectors/src/restart?includeTasks=true", nil, &st); code != http.StatusAccepted || st.Tasks[0].State != "RESTARTING" {
		t.Fatalf("restart with tasks: %d %+v", code, st)
	}
	if code := connecttest.Call(t, "POST", u+"/connectors/src/tasks/0/restart", nil, nil); code != http.StatusNoContent {
		t.Fatalf("task restart: %d", code)
	}
	connecttest.WaitFor(t, 10*time.Second, "src RUNNING again", stateIs("RUNNING", "RUNNING"))

	// Pause and resume: 202.
	if code := connecttest.Call(t, "PUT", u+"/connectors/src/pause", nil, nil); code != http.StatusAccepted {
		t.Fatalf("pause: %d", code)
	}
	connecttest.WaitFor(t, 10*time.Second, "src PAUSED", stateIs("PAUSED", "PAUSED"))
	if code := connecttest.Call(t, "PUT", u+"/connectors/src/resume", nil, nil); code != http.StatusAccepted {
		t.Fatalf("resume: %d", code)
	}
	connecttest.WaitFor(t, 10*time.Second, "src RUNNING after resume", stateIs("RUNNING", "RUNNING"))

	// Offsets: readable while running, changeable only when stopped.
	var offs struct {
		Offsets []struct {
			Partition map[string]any `json:"partition"`
			Offset    map[string]any `json:"offset"`
		} `json:"offsets"`
	}
	connecttest.WaitFor(t, 10*time.Second, "the source offset stored", func() bool {
		connecttest.Call(t, "GET", u+"/connectors/src/offsets", nil, &offs)
		return len(offs.Offsets) == 1 && offs.Offsets[0].Offset["position"] == float64(6)
	})
	if offs.Offsets[0].Partition["filename"] != in {
		t.Fatalf("source offsets: %+v", offs)
	}
	alter := map[string]any{"offsets": []any{map[string]any{"partition": map[string]any{"filename": in}, "offset": map[string]any{"position": 2}}}}
	if code := connecttest.Call(t, "PATCH", u+"/connectors/src/offsets", alter, &rerr); code != 400 || !strings.Contains(rerr.Message, "STOPPED") {
		t.Fatalf("alter while running: %d %+v", code, rerr)
	}
	if code := connecttest.Call(t, "PUT", u+"/connectors/src/stop", nil, nil); code != http.StatusNoContent {
		t.Fatalf("stop: %d", code)
	}
	connecttest.WaitFor(t, 10*time.Second, "src STOPPED", stateIs("STOPPED", ""))
	var msg map[string]string
	if code := connecttest.Call(t, "PATCH", u+"/connectors/src/offsets", alter, &msg); code != 200 || !strings.Contains(msg["message"], "altered successfully") {
		t.Fatalf("alter: %d %v", code, msg)
	}
	connecttest.Call(t, "GET", u+"/connectors/src/offsets", nil, &offs)
	if len(offs.Offsets) != 1 || offs.Offsets[0].Offset["position"] != float64(2) {
		t.Fatalf("offsets after alter: %+v", offs)
	}
	// Resuming a stopped connector starts its tasks at the altered
	// offset: "b" and "c" are read again.
	connecttest.Call(t, "PUT", u+"/connectors/src/resume", nil, nil)
	connecttest.WaitFor(t, 20*time.Second, "b and c copied again", func() bool { return len(connecttest.ReadLines(t, filepath.Join(dir, "out.txt"))) == 5 })
	connecttest.Call(t, "PUT", u+"/connectors/src/stop", nil, nil)
	connecttest.WaitFor(t, 10*time.Second, "src STOPPED again", stateIs("STOPPED", ""))
	if code := connecttest.Call(t, "DELETE", u+"/connectors/src/offsets", nil, &msg); code != 200 || !strings.Contains(msg["message"], "reset successfully") {
		t.Fatalf("reset: %d %v", code, msg)
	}
	connecttest.Call(t, "GET", u+"/connectors/src/offsets", nil, &offs)
	if len(offs.Offsets) != 0 {
		t.Fatalf("offsets after reset: %+v", offs)
	}

	// Sink offsets are the group's.
	connecttest.WaitFor(t, 10*time.Second, "the sink's offsets committed", func() bool {
		connecttest.Call(t, "GET", u+"/connectors/snk/offsets", nil, &offs)
		return len(offs.Offsets) == 1 && offs.Offsets[0].Offset["kafka_offset"] == float64(5)
	})
	if p := offs.Offsets[0].Partition; p["kafka_topic"] != "rest-lines" || p["kafka_partition"] != float64(0) {
		t.Fatalf("sink offsets: %+v", offs)
	}

	// Metrics.
	if m := metricsText(t, u); !strings.Contains(m, `runnel_connect_sink_records_put_total{connector="snk",task="0"} 5`) {
		t.Fatalf("metrics lack the sink's records:\n%s", m)
	}

	// Delete: 204, then 404.
	if code := connecttest.Call(t, "DELETE", u+"/connectors/src", nil, nil); code != http.StatusNoContent {
		t.Fatalf("delete: %d", code)
	}
	if code := connecttest.Call(t, "DELETE", u+"/connectors/src", nil, &rerr); code != 404 {
		t.Fatalf("delete twice: %d", code)
	}
}
