package connect

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/runnel-io/runnel/connect/connecttest"
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

// distributedConfig writes a worker config file for group "it".
func distributedConfig(t *testing.T, dir, seeds string) string {
	path := filepath.Join(dir, "worker.properties")
	connecttest.WriteFile(t, path, fmt.Sprintf(`bootstrap.servers=%s
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
