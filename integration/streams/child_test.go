package streams

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/broker/brokertest"
	"github.com/runnel-io/runnel/internal/testchild"
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

// runChild runs an app instance until ctx ends (its stdin closes, a
// graceful shutdown) and exits.
func runChild(ctx context.Context, cfg appConfig) {
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

// startInstance starts an instance; its output goes to the test log file
// logPath.
func startInstance(t *testing.T, cfg appConfig, logPath string) *testchild.Child {
	return testchild.Start(t, childEnv, cfg, logPath)
}

func TestMain(m *testing.M) {
	if cfg, ok := testchild.Params[appConfig](childEnv); ok {
		runChild(testchild.StdinContext(), cfg)
	}
	brokertest.Main(m)
}
