package connect

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// worker is a `runnel connect` process.
type worker struct {
	cmd  *exec.Cmd
	url  string
	done chan struct{}
	log  *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var restURL = regexp.MustCompile(`REST API on (http://[^\s;]+)`)

// startWorker runs `runnel connect <args...>` and waits until its REST API
// answers. The process is SIGKILLed when the test ends, if still running;
// its log is printed if the test failed.
func startWorker(t *testing.T, bin string, args ...string) *worker {
	t.Helper()
	w := &worker{done: make(chan struct{}), log: &syncBuffer{}}
	w.cmd = exec.Command(bin, append([]string{"connect"}, args...)...)
	stderr, err := w.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	w.cmd.Stdout = w.log
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(w.log, line)
			if m := restURL.FindStringSubmatch(line); m != nil {
				select {
				case urls <- m[1]:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	go func() { _ = w.cmd.Wait(); close(w.done) }()
	t.Cleanup(func() {
		w.kill()
		if t.Failed() {
			t.Logf("worker %s log:\n%s", w.url, w.log.String())
		}
	})
	select {
	case w.url = <-urls:
	case <-w.done:
		t.Fatalf("runnel connect %v exited:\n%s", args, w.log.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("runnel connect %v did not start:\n%s", args, w.log.String())
	}
	return w
}

// kill SIGKILLs the worker and waits for it.
func (w *worker) kill() {
	select {
	case <-w.done:
		return
	default:
	}
	_ = w.cmd.Process.Signal(syscall.SIGKILL)
	<-w.done
}

// call makes a REST request; out receives the JSON answer.
func call(t *testing.T, method, url string, body, out any) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0 // a worker being killed: the caller retries or fails on its own terms
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if out != nil && len(data) > 0 {
		_ = json.Unmarshal(data, out)
	}
	return resp.StatusCode
}

// waitFor polls cond until it holds or d has passed.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func appendLines(t *testing.T, path string, lines ...string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(strings.Join(lines, "\n") + "\n"); err != nil {
		t.Fatal(err)
	}
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	s := strings.TrimSuffix(string(b), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// distributedConfig writes a worker config file for group "it".
func distributedConfig(t *testing.T, dir, seeds string) string {
	path := filepath.Join(dir, "worker.properties")
	writeFile(t, path, fmt.Sprintf(`bootstrap.servers=%s
group.id=it
listeners=http://127.0.0.1:0
session.timeout.ms=2000
heartbeat.interval.ms=200
offset.flush.interval.ms=100
key.converter=json
key.converter.schemas.enable=false
value.converter=string
`, seeds))
	return path
}
