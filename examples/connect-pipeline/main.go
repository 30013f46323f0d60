// A connector pipeline from config files: file -> topic -> file, run by a
// standalone Connect worker inside this program. worker.yaml,
// file-source.yaml and file-sink.yaml, beside this file, are what
//
//	runnel connect standalone worker.yaml file-source.yaml file-sink.yaml
//
// runs; the program loads them with the connect package (as that command
// does), points the worker at its broker, a free REST port and a
// temporary directory, and starts it with connect.StartStandalone. The
// source reads orders, one JSON object per line, from orders.jsonl into
// the topic pipeline-orders, masking the card number on the way (the
// MaskField transform); the sink writes the topic to orders-out.jsonl,
// adding where each record was stored (InsertField). The program writes
// some orders before the worker starts and appends more while it runs,
// waits until the output file has them all, and prints both files.
//
//	go run ./examples/connect-pipeline [-brokers host:9092] [-config DIR]
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/runnel-io/runnel/connect"
	"github.com/runnel-io/runnel/connect/connectors"
	"github.com/runnel-io/runnel/examples/internal/embedded"
)

// orders are the input lines: the first half is in the file before the
// worker starts, the rest is appended while it runs.
var orders = []string{
	`{"id":1,"customer":"alice","item":"plums","qty":40,"card":"4111 1111 1111 1111"}`,
	`{"id":2,"customer":"bob","item":"pears","qty":12,"card":"5500 0000 0000 0004"}`,
	`{"id":3,"customer":"carol","item":"figs","qty":7,"card":"3400 0000 0000 009"}`,
	`{"id":4,"customer":"alice","item":"dates","qty":3,"card":"4111 1111 1111 1111"}`,
	`{"id":5,"customer":"dave","item":"limes","qty":25,"card":"6011 0000 0000 0004"}`,
}

func main() {
	brokers := flag.String("brokers", "", "comma-separated seed brokers (default: start an embedded broker)")
	config := flag.String("config", "", "the directory of worker.yaml, file-source.yaml and file-sink.yaml (default: . if it has them, else examples/connect-pipeline)")
	flag.Parse()
	dir := *config
	if dir == "" {
		dir = "examples/connect-pipeline"
		if _, err := os.Stat("worker.yaml"); err == nil {
			dir = "."
		}
	}
	work, err := os.MkdirTemp("", "connect-pipeline-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "connect-pipeline:", err)
		os.Exit(1)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	err = run(ctx, *brokers, dir, work, orders, os.Stdout)
	cancel()
	os.RemoveAll(work)
	if err != nil {
		fmt.Fprintln(os.Stderr, "connect-pipeline:", err)
		os.Exit(1)
	}
}

// run loads the config files of configDir, keeps the worker's files in
// workDir, copies lines through the pipeline and prints the input and
// output files to w.
func run(ctx context.Context, brokerList, configDir, workDir string, lines []string, w io.Writer) error {
	seeds, stop, err := embedded.Brokers(brokerList)
	if err != nil {
		return err
	}
	defer stop()

	// The files, as `runnel connect standalone` loads them.
	wcfg, err := connect.LoadWorkerConfig(filepath.Join(configDir, "worker.yaml"))
	if err != nil {
		return err
	}
	source, err := connect.LoadConnectorConfig(filepath.Join(configDir, "file-source.yaml"))
	if err != nil {
		return err
	}
	sink, err := connect.LoadConnectorConfig(filepath.Join(configDir, "file-sink.yaml"))
	if err != nil {
		return err
	}
	// What differs from the command line: the brokers, a free port for
	// the REST API, and the files in workDir.
	wcfg[connect.WorkerBootstrapServers] = strings.Join(seeds, ",")
	wcfg[connect.WorkerListeners] = "http://127.0.0.1:0"
	wcfg[connect.WorkerOffsetsFile] = inDir(workDir, wcfg[connect.WorkerOffsetsFile])
	in, out := inDir(workDir, source["file"]), inDir(workDir, sink["file"])
	source["file"], sink["file"] = in, out
	fmt.Fprintf(w, "worker.yaml, file-source.yaml and file-sink.yaml from %s; the files in %s\n", configDir, workDir)

	// One partition: the output keeps the input's order, and the offsets
	// the sink adds count from 0.
	topic := source["topic"]
	if err := embedded.CreateTopics(ctx, seeds, 1, topic); err != nil {
		return err
	}

	half := len(lines) / 2
	if err := appendLines(in, lines[:half]); err != nil {
		return err
	}
	worker, err := connect.StartStandalone(ctx, wcfg, []connect.Config{source, sink}, connect.WorkerOptions{
		Registry: connectors.NewRegistry(), // the built-in connectors and transforms
		Logger:   slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		return err
	}
	defer worker.Close()
	fmt.Fprintf(w, "worker started (REST API on %s) with connectors %s -> topic %s -> %s\n",
		worker.URL(), source[connect.KeyName], topic, sink[connect.KeyName])
	// The source follows the file: what is appended now arrives too.
	if err := appendLines(in, lines[half:]); err != nil {
		return err
	}
	fmt.Fprintf(w, "wrote %d orders to %s before the worker started, appended %d while it ran\n",
		half, filepath.Base(in), len(lines)-half)

	got, err := awaitLines(ctx, worker, out, len(lines), source[connect.KeyName], sink[connect.KeyName])
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\ninput (%s):\n", filepath.Base(in))
	for _, l := range lines {
		fmt.Fprintf(w, "  %s\n", l)
	}
	fmt.Fprintf(w, "\noutput (%s): card masked by the source, topic/partition/offset added by the sink:\n", filepath.Base(out))
	for _, l := range got {
		fmt.Fprintf(w, "  %s\n", l)
	}
	return nil
}

// inDir resolves a relative path of the config files against dir.
func inDir(dir, path string) string {
	if path == "" || filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(dir, path)
}

// appendLines appends lines to the file at path, in one write.
func appendLines(path string, lines []string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteString(strings.Join(lines, "\n") + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// awaitLines polls the file at path until it has n complete lines, and
// returns them. A connector task that failed ends the wait with its
// error.
func awaitLines(ctx context.Context, worker *connect.Worker, path string, n int, connectors ...string) ([]string, error) {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		data, err := os.ReadFile(path)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		// Only whole lines: the sink may be writing the last one.
		if complete := data[:bytes.LastIndexByte(data, '\n')+1]; bytes.Count(complete, []byte("\n")) >= n {
			return strings.Split(strings.TrimSuffix(string(complete), "\n"), "\n"), nil
		}
		for _, name := range connectors {
			st, err := worker.Herder().ConnectorStatus(ctx, name)
			if err != nil {
				return nil, err
			}
			for _, t := range st.Tasks {
				if t.State == connect.StateFailed {
					return nil, fmt.Errorf("connector %s, task %d failed: %s", name, t.ID, t.Trace)
				}
			}
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for %d lines in %s: %w", n, path, ctx.Err())
		}
	}
}
