// Package brokertest starts Runnel brokers for tests: on a free loopback
// port, with a temporary data directory, closed when the test ends.
package brokertest

import (
	"context"
	"log/slog"
	"maps"
	"testing"

	"github.com/runnel-io/runnel/broker"
)

// Broker is a broker started for a test.
type Broker struct {
	*broker.Broker
	// Dir is the broker's data directory.
	Dir string
	// Settings are the settings it was started with.
	Settings map[string]string
	done     chan error
}

// Start starts a single-node broker on 127.0.0.1 with a fresh data
// directory. settings override the defaults (later maps win). The broker is
// closed when the test ends.
func Start(t testing.TB, settings ...map[string]string) *Broker {
	t.Helper()
	s := map[string]string{
		"log.dirs":             t.TempDir(),
		"listeners":            "PLAINTEXT://127.0.0.1:0",
		"runnel.http.listener": "127.0.0.1:0",
	}
	for _, m := range settings {
		maps.Copy(s, m)
	}
	return StartWith(t, broker.Config{Settings: s})
}

// StartWith starts a broker with cfg as given (cfg.Settings must name
// log.dirs and listeners). It is closed when the test ends.
func StartWith(t testing.TB, cfg broker.Config) *Broker {
	t.Helper()
	if cfg.Logger == nil && testing.Verbose() {
		cfg.Logger = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	b, err := broker.New(cfg)
	if err != nil {
		t.Fatalf("brokertest: start broker: %v", err)
	}
	tb := &Broker{Broker: b, Dir: cfg.Settings["log.dirs"], Settings: cfg.Settings, done: make(chan error, 1)}
	go func() { tb.done <- b.Run(context.Background()) }()
	t.Cleanup(func() { tb.Stop(t) })
	return tb
}

// Stop closes the broker and waits for Run to return; calling it again is
// harmless. Use it to restart a broker on the same directory.
func (b *Broker) Stop(t testing.TB) {
	t.Helper()
	if err := b.Close(); err != nil {
		t.Errorf("brokertest: close broker: %v", err)
	}
	if b.done != nil {
		if err := <-b.done; err != nil {
			t.Errorf("brokertest: broker run: %v", err)
		}
		b.done = nil
	}
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}
