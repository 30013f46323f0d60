package connecttest

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runnel-io/runnel/connect"
	"github.com/runnel-io/runnel/connect/connectors"
)

// StartWorker starts a standalone worker on the brokers at seeds with the
// connectors conns. Its REST API listens on a free loopback port, its
// offsets are in dir/offsets.json (flushed every 100 ms), keys and values
// go through the json converter without schemas, and a stopping task has
// 10 s to finish. extra overrides or adds worker keys (an empty
// offset.storage.file.filename keeps offsets in a topic). A nil reg is
// connectors.NewRegistry(): every built-in plugin. The worker is closed
// when the test ends, if not before.
func StartWorker(t testing.TB, seeds []string, dir string, reg *connect.Registry, extra connect.Config, conns ...connect.Config) *connect.Worker {
	t.Helper()
	cfg := connect.Config{
		"bootstrap.servers":                 strings.Join(seeds, ","),
		"listeners":                         "http://127.0.0.1:0",
		"offset.storage.file.filename":      filepath.Join(dir, "offsets.json"),
		"offset.flush.interval.ms":          "100",
		"key.converter":                     "json",
		"key.converter.schemas.enable":      "false",
		"value.converter":                   "json",
		"value.converter.schemas.enable":    "false",
		"task.shutdown.graceful.timeout.ms": "10000",
	}
	for k, v := range extra {
		cfg[k] = v
	}
	if reg == nil {
		reg = connectors.NewRegistry()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w, err := connect.StartStandalone(ctx, cfg, conns, connect.WorkerOptions{Registry: reg, Logger: Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	return w
}

// TaskStatus returns the status of the first task of connector name on w;
// the zero TaskStatus while it has no task.
func TaskStatus(t testing.TB, w *connect.Worker, name string) connect.TaskStatus {
	t.Helper()
	st, err := w.Herder().ConnectorStatus(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Tasks) == 0 {
		return connect.TaskStatus{}
	}
	return st.Tasks[0]
}

// Logger returns a logger that writes into the test's output when the
// tests run with -v, and discards otherwise.
func Logger(t testing.TB) *slog.Logger {
	if !testing.Verbose() {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return slog.New(slog.NewTextHandler(logWriter{t}, nil))
}

// logWriter writes each log line with t.Log.
type logWriter struct{ t testing.TB }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}
