package connect

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

// writeConfigFile writes a config file: .properties as key=value lines,
// .yaml as key: "value" lines.
func writeConfigFile(t *testing.T, path string, cfg map[string]string) {
	t.Helper()
	keys := make([]string, 0, len(cfg))
	for k := range cfg {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		if strings.HasSuffix(path, ".yaml") {
			fmt.Fprintf(&b, "%s: %q\n", k, cfg[k])
		} else {
			fmt.Fprintf(&b, "%s=%s\n", k, cfg[k])
		}
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// standalone is a `runnel connect standalone` child process.
type standalone struct {
	cmd  *exec.Cmd
	done chan error
}

// startStandalone starts `runnel connect standalone` with the config files
// args; its output is appended to logPath.
func startStandalone(t *testing.T, bin, logPath string, args ...string) *standalone {
	t.Helper()
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, append([]string{"connect", "standalone"}, args...)...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // a dying test leaves no worker behind
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w := &standalone{cmd: cmd, done: make(chan error, 1)}
	go func() {
		w.done <- cmd.Wait()
		log.Close()
	}()
	t.Cleanup(w.kill)
	return w
}

// kill SIGKILLs the worker and waits until it is gone.
func (w *standalone) kill() {
	if w.done == nil {
		return
	}
	w.cmd.Process.Signal(syscall.SIGKILL)
	<-w.done
	w.done = nil
}

// stop asks the worker to stop (SIGTERM) and returns how it exited.
func (w *standalone) stop(t *testing.T) error {
	t.Helper()
	w.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-w.done:
		w.done = nil
		return err
	case <-time.After(60 * time.Second):
		w.kill()
		return fmt.Errorf("the worker did not stop within a minute of SIGTERM")
	}
}

// exited says whether the worker exited by itself, and how.
func (w *standalone) exited() (bool, error) {
	select {
	case err := <-w.done:
		w.done = nil
		return true, err
	default:
		return false, nil
	}
}

// logTail returns the last n lines of a file.
func logTail(path string, n int) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// pipelineConfigs writes the worker's and the two connectors' config files into
// dir and returns their paths.
func pipelineConfigs(t *testing.T, dir string, seeds []string, inputPath, dsn string) []string {
	t.Helper()
	paths := []string{filepath.Join(dir, "worker.properties"), filepath.Join(dir, "source.yaml"), filepath.Join(dir, "sink.yaml")}
	writeConfigFile(t, paths[0], map[string]string{
		"bootstrap.servers":              strings.Join(seeds, ","),
		"listeners":                      "http://127.0.0.1:0",
		"offset.storage.file.filename":   filepath.Join(dir, "connect.offsets"),
		"offset.flush.interval.ms":       "1000",
		"key.converter":                  "org.apache.kafka.connect.json.JsonConverter",
		"key.converter.schemas.enable":   "false",
		"value.converter":                "org.apache.kafka.connect.json.JsonConverter",
		"value.converter.schemas.enable": "false",
	})
	writeConfigFile(t, paths[1], map[string]string{
		"name":                  "items-file",
		"connector.class":       "FileStreamSource",
		"file":                  inputPath,
		"format":                "json",
		"topic":                 itemsTopic,
		"poll.interval.ms":      "50",
		"transforms":            "key",
		"transforms.key.type":   "org.apache.kafka.connect.transforms.ValueToKey",
		"transforms.key.fields": "id",
	})
	writeConfigFile(t, paths[2], map[string]string{
		"name":            "items-db",
		"connector.class": "PostgresSink",
		"topics":          itemsTopic,
		"tasks.max":       "2",
		"connection.url":  dsn,
		"insert.mode":     "upsert",
		"pk.mode":         "record_value",
		"pk.fields":       "id",
		"auto.create":     "true",
	})
	return paths
}
