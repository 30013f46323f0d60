package streams

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/runnel-io/runnel/broker/brokertest"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/streams"
)

// childEnv carries a child instance's appConfig, as JSON.
const childEnv = "RUNNEL_STREAMS_TEST_APP"

// appConfig is one instance of the count-per-key app.
type appConfig struct {
	Brokers   []string
	AppID     string
	StateDir  string
	Exactly   bool
	Input     string
	Output    string
	CommitMS  int
	Replicate int16
}

// countTopology counts records per key: input (string keys) -> counts.
func countTopology(cfg appConfig) (*streams.Topology, error) {
	b := streams.NewBuilder()
	streams.From[string, string](b, cfg.Input).
		GroupByKey().
		Count(streams.Materialized("counts")).
		ToStream().
		To(cfg.Output)
	return b.Build()
}

// mainIfChild runs an app instance and exits when this process was started
// by startInstance; it returns at once otherwise. The instance stops
// gracefully when its stdin closes.
func mainIfChild() {
	raw, ok := os.LookupEnv(childEnv)
	if !ok {
		return
	}
	var cfg appConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "streams child:", err)
		os.Exit(2)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	topo, err := countTopology(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "streams child:", err)
		os.Exit(2)
	}
	g := streams.AtLeastOnce
	if cfg.Exactly {
		g = streams.ExactlyOnce
	}
	app, err := streams.NewApp(topo, streams.Config{
		ApplicationID:     cfg.AppID,
		Brokers:           cfg.Brokers,
		StateDir:          cfg.StateDir,
		Guarantee:         g,
		CommitInterval:    time.Duration(cfg.CommitMS) * time.Millisecond,
		ReplicationFactor: cfg.Replicate,
		Logger:            slog.New(slog.NewTextHandler(os.Stderr, nil)),
		ClientOptions:     clientLog(),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "streams child:", err)
		os.Exit(2)
	}
	if err := app.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "streams child: run:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// clientLog logs the app's franz-go clients at info level to stderr (the
// instances' log) when RUNNEL_STREAMS_CLIENT_LOG is set: transactions
// begun and ended, rebalances, producer ids.
func clientLog() []kgo.Opt {
	if os.Getenv("RUNNEL_STREAMS_CLIENT_LOG") == "" {
		return nil
	}
	return []kgo.Opt{kgo.WithLogger(kgo.BasicLogger(os.Stderr, kgo.LogLevelInfo, nil))}
}

// instance is a child process running one app instance.
type instance struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan error
}

// startInstance starts an instance; its output goes to the test log file
// logPath.
func startInstance(t *testing.T, cfg appConfig, logPath string) *instance {
	t.Helper()
	raw, err := json.Marshal(cfg)
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
	cmd.Env = append(os.Environ(), childEnv+"="+string(raw))
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // a dying test leaves no instance behind
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	in := &instance{cmd: cmd, stdin: stdin, done: make(chan error, 1)}
	go func() {
		in.done <- cmd.Wait()
		log.Close()
	}()
	t.Cleanup(func() { in.kill() })
	return in
}

// kill SIGKILLs the instance and waits for it.
func (in *instance) kill() {
	if in.cmd.ProcessState == nil {
		in.cmd.Process.Signal(syscall.SIGKILL)
	}
	<-in.done
	in.done <- nil // later waits return at once
}

// stop closes stdin (a graceful shutdown) and waits for the exit status.
func (in *instance) stop(t *testing.T) {
	in.stdin.Close()
	if err := <-in.done; err != nil {
		t.Errorf("instance exited: %v", err)
	}
	in.done <- nil
}

func TestMain(m *testing.M) {
	mainIfChild()
	brokertest.Main(m)
}
