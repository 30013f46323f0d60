package brokertest

import (
	"context"
	"log/slog"
	"maps"
	"net"
	"strconv"
	"sync"
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

// QuickFailover returns the settings StartCluster starts from, for
// StartProcesses too: short quorum and session timeouts keep failover
// tests quick. The map is the caller's to change.
func QuickFailover() map[string]string {
	return map[string]string{
		"controller.quorum.election.timeout.ms": "300",
		"controller.quorum.fetch.timeout.ms":    "300",
		"broker.session.timeout.ms":             "2000",
		"broker.heartbeat.interval.ms":          "200",
		"replica.lag.time.max.ms":               "2000",
		"replica.fetch.wait.max.ms":             "100",
	}
}

// Cluster is an in-process cluster of brokers started for a test, every
// node a voter of the metadata quorum (combined mode, Kafka's default).
type Cluster struct {
	// Brokers are the nodes; Brokers[i] has node.id i+1.
	Brokers []*Broker
	// Settings are the settings every node shares, and Voters the
	// controller.quorum.voters value.
	Settings map[string]string
	Voters   string
	ctrlAddr []string
	t        testing.TB
}

// StartCluster starts n brokers on 127.0.0.1 that form one cluster, each
// with a fresh data directory, and returns once every node has joined
// (registered and unfenced). Short quorum and session timeouts keep
// failover tests quick; settings override them and every other default
// (later maps win). The nodes are closed when the test ends.
func StartCluster(t testing.TB, n int, settings ...map[string]string) *Cluster {
	t.Helper()
	lns := make([]net.Listener, n)
	c := &Cluster{t: t, Brokers: make([]*Broker, n)}
	for i := range lns {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("brokertest: controller listener: %v", err)
		}
		lns[i] = ln
		c.ctrlAddr = append(c.ctrlAddr, ln.Addr().String())
	}
	c.Voters = VotersOf(c.ctrlAddr)
	c.Settings = QuickFailover()
	for _, m := range settings {
		maps.Copy(c.Settings, m)
	}
	// Each node waits in New for a quorum: start them together.
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			c.Brokers[i], errs[i] = c.start(i, t.TempDir(), lns[i])
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("brokertest: start node %d: %v", i+1, err)
		}
	}
	return c
}

func (c *Cluster) start(i int, dir string, ln net.Listener) (*Broker, error) {
	s := map[string]string{
		"listeners":                "PLAINTEXT://127.0.0.1:0",
		"runnel.http.listener":     "127.0.0.1:0",
		"log.dirs":                 dir,
		"node.id":                  strconv.Itoa(i + 1),
		"controller.quorum.voters": c.Voters,
	}
	maps.Copy(s, c.Settings)
	s["log.dirs"], s["node.id"], s["controller.quorum.voters"] = dir, strconv.Itoa(i+1), c.Voters
	cfg := broker.Config{Settings: s, ControllerListener: ln}
	if testing.Verbose() {
		cfg.Logger = slog.New(slog.NewTextHandler(testWriter{c.t}, &slog.HandlerOptions{Level: slog.LevelInfo})).With("node", i+1)
	}
	b, err := broker.New(cfg)
	if err != nil {
		return nil, err
	}
	tb := &Broker{Broker: b, Dir: dir, Settings: s, done: make(chan error, 1)}
	go func() { tb.done <- b.Run(context.Background()) }()
	c.t.Cleanup(func() { tb.Stop(c.t) })
	return tb, nil
}

// Node returns the broker with node.id id.
func (c *Cluster) Node(id int32) *Broker { return c.Brokers[id-1] }

// Running returns the nodes that have not been stopped.
func (c *Cluster) Running() []*Broker {
	var out []*Broker
	for _, b := range c.Brokers {
		if b.done != nil {
			out = append(out, b)
		}
	}
	return out
}

// Seeds returns the Kafka addresses of the running nodes.
func (c *Cluster) Seeds() []string {
	var out []string
	for _, b := range c.Running() {
		out = append(out, b.Addr())
	}
	return out
}

// Restart starts node id again on its data directory and controller
// address (after Stop). Its Kafka port is a new one. It returns once the
// node has joined.
func (c *Cluster) Restart(id int32) {
	c.t.Helper()
	old := c.Brokers[id-1]
	ln, err := net.Listen("tcp", c.ctrlAddr[id-1])
	if err != nil {
		c.t.Fatalf("brokertest: restart node %d: controller listener: %v", id, err)
	}
	b, err := c.start(int(id-1), old.Dir, ln)
	if err != nil {
		c.t.Fatalf("brokertest: restart node %d: %v", id, err)
	}
	c.Brokers[id-1] = b
}
