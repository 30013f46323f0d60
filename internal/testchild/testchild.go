// Package testchild runs a test binary again as a child process, for
// tests that SIGKILL what they test: the child gets its parameters as
// JSON in an environment variable, writes its output to a log file, stops
// gracefully when its stdin closes and dies with the test (Pdeathsig).
//
// In the test package:
//
//	func TestMain(m *testing.M) {
//		if cfg, ok := testchild.Params[appConfig]("MY_TEST_CHILD"); ok {
//			os.Exit(runChild(testchild.StdinContext(), cfg))
//		}
//		brokertest.Main(m)
//	}
//
// and in a test, testchild.Start(t, "MY_TEST_CHILD", cfg, logPath).
package testchild

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// Child is a running child process.
type Child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan error
}

// Start starts this test binary again with params as JSON in the
// environment variable env, its stdout and stderr appended to logPath.
// The child is SIGKILLed when the test ends, if it still runs.
func Start(t testing.TB, env string, params any, logPath string) *Child {
	t.Helper()
	raw, err := json.Marshal(params)
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), env+"="+string(raw))
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // a dying test leaves no child behind
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &Child{cmd: cmd, stdin: stdin, done: make(chan error, 1)}
	go func() {
		c.done <- cmd.Wait()
		log.Close()
	}()
	t.Cleanup(c.Kill)
	return c
}

// Kill SIGKILLs the child and waits for it; later calls return at once.
func (c *Child) Kill() {
	if c.cmd.ProcessState == nil {
		c.cmd.Process.Signal(syscall.SIGKILL)
	}
	<-c.done
	c.done <- nil
}

// Stop closes the child's stdin (a graceful shutdown) and waits for it to
// exit, failing the test unless it exits 0.
func (c *Child) Stop(t testing.TB) {
	t.Helper()
	c.stdin.Close()
	if err := <-c.done; err != nil {
		t.Errorf("child exited: %v", err)
	}
	c.done <- nil
}

// Params returns the parameters Start gave this process in env, and
// whether it is such a child. A child whose parameters do not decode
// exits with status 2.
func Params[T any](env string) (T, bool) {
	var v T
	raw, ok := os.LookupEnv(env)
	if !ok {
		return v, false
	}
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		fmt.Fprintf(os.Stderr, "testchild: %s: %v\n", env, err)
		os.Exit(2)
	}
	return v, true
}

// StdinContext is a context that ends when stdin closes: Child.Stop.
func StdinContext() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	return ctx
}
