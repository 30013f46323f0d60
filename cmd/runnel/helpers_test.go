package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// cli runs runnel commands in-process against one broker.
type cli struct {
	t    *testing.T
	addr string
}

func newCLI(t *testing.T) *cli {
	return &cli{t: t, addr: startTestBroker(t)}
}

// run executes one command line with stdin and returns its outputs.
func (c *cli) run(stdin string, args ...string) (stdout, stderr string, err error) {
	c.t.Helper()
	return c.runCtx(c.t.Context(), strings.NewReader(stdin), &bytes.Buffer{}, args...)
}

func (c *cli) runCtx(ctx context.Context, stdin *strings.Reader, out interface {
	Write([]byte) (int, error)
	String() string
}, args ...string) (stdout, stderr string, err error) {
	var errb bytes.Buffer
	root := newRootCmd(stdin, out, &errb)
	root.SetArgs(append([]string{"-b", c.addr}, args...))
	err = root.ExecuteContext(ctx)
	return out.String(), errb.String(), err
}

// ok runs a command that must succeed and returns its stdout.
func (c *cli) ok(stdin string, args ...string) string {
	c.t.Helper()
	out, errOut, err := c.run(stdin, args...)
	if err != nil {
		c.t.Fatalf("runnel %s: %v\nstderr: %s", strings.Join(args, " "), err, errOut)
	}
	return out
}

// fail runs a command that must fail and returns its error message.
func (c *cli) fail(stdin string, args ...string) error {
	c.t.Helper()
	out, _, err := c.run(stdin, args...)
	if err == nil {
		c.t.Fatalf("runnel %s succeeded, want an error; stdout:\n%s", strings.Join(args, " "), out)
	}
	return err
}

// client returns a franz-go client for setting up records the CLI cannot
// make (explicit timestamps, transactions).
func (c *cli) client(opts ...kgo.Opt) *kgo.Client {
	c.t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.addr)}, opts...)...)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(cl.Close)
	return cl
}

// syncBuffer is a bytes.Buffer safe for a command writing and a test
// reading; waitFor wakes on every write instead of polling.
type syncBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	changed chan struct{} // closed and replaced on every write
}

func newSyncBuffer() *syncBuffer { return &syncBuffer{changed: make(chan struct{})} }

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	close(s.changed)
	s.changed = make(chan struct{})
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitFor waits until cond holds for the buffer's content, or fails the
// test after ten seconds.
func (s *syncBuffer) waitFor(t *testing.T, what string, cond func(string) bool) {
	t.Helper()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		content, changed := s.b.String(), s.changed
		s.mu.Unlock()
		if cond(content) {
			return
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s; have:\n%s", what, content)
		}
	}
}

// lines splits output into lines without the final newline.
func lines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// table parses tabular output into rows of fields, header first.
func table(s string) [][]string {
	var rows [][]string
	for _, l := range lines(s) {
		rows = append(rows, strings.Fields(l))
	}
	return rows
}

func writeFile(path, content string) error { return os.WriteFile(path, []byte(content), 0o644) }

// skipIfUnsupported skips a test whose feature (consumer groups,
// transactions) the test broker does not implement yet, and fails it for
// any other error.
func skipIfUnsupported(t *testing.T, err error) {
	t.Helper()
	// Runnel refuses transactional ids until transactions land (issue 5).
	if err != nil && (strings.Contains(err.Error(), "broker is too old") || strings.Contains(err.Error(), "TRANSACTIONAL_ID_AUTHORIZATION_FAILED")) {
		t.Skipf("the test broker lacks a Kafka API this test needs: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
}
