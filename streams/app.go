package streams

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/streams/state"
)

// Guarantee is an app's processing guarantee.
type Guarantee int

const (
	// AtLeastOnce (the default): after a crash, records processed since
	// the last commit are processed again; nothing is lost.
	AtLeastOnce Guarantee = iota
	// ExactlyOnce: outputs, store changes and input offsets of one commit
	// interval are one Kafka transaction; a crash aborts it, and local
	// state is committed only after the transaction is, so it is never
	// ahead of or behind its changelog.
	ExactlyOnce
)

func (g Guarantee) String() string {
	if g == ExactlyOnce {
		return "exactly_once_v2"
	}
	return "at_least_once"
}

// Config configures an App. ApplicationID and Brokers are required.
type Config struct {
	// ApplicationID is the consumer group id of the app's instances and
	// the prefix of its internal topics.
	ApplicationID string
	// Brokers are seed brokers ("host:port"), any Kafka-compatible ones.
	Brokers []string
	// StateDir holds the instance's local state ("<StateDir>/<app id>").
	// Empty: state is kept in memory and restored from the changelogs at
	// every start.
	StateDir string
	// Guarantee: AtLeastOnce (default) or ExactlyOnce.
	Guarantee Guarantee
	// CommitInterval: how often progress is committed; default 30 s at
	// least once, 100 ms exactly once (Kafka Streams' defaults).
	CommitInterval time.Duration
	// MaxPollRecords bounds the records processed between two checks of
	// the commit interval; default 1000 (Kafka Streams' max.poll.records).
	MaxPollRecords int
	// StoreCacheEntries is how many decoded entries each key-value store
	// partition caches in front of the state DB (written back at commit);
	// default 16384, negative: no cache.
	StoreCacheEntries int
	// MaxUncommittedBytes commits early when uncommitted store changes
	// reach it, bounding the memory they use; default 64 MiB.
	MaxUncommittedBytes int
	// ReplicationFactor of the internal topics; 0: the broker's default.
	ReplicationFactor int16
	// Standbys is the number of standby replicas per stateful task: other
	// instances that follow the task's changelogs into their local state,
	// so that when the task moves to one of them it restores only the
	// tail. At most instances-1 are placed.
	Standbys int
	// Endpoint is "host:port" this instance answers interactive queries
	// and metrics on: Run serves Handler there, and the other instances
	// learn it through the group to redirect queries for keys hosted here.
	Endpoint string
	// Metrics is where the app's Prometheus collectors are registered;
	// nil: a registry of the app's own, served by Handler at /metrics.
	Metrics prometheus.Registerer
	// OnBadRecord handles records a serde cannot decode; default fail.
	OnBadRecord BadRecordHandler
	// Logger: default slog.Default().
	Logger *slog.Logger
	// ClientOptions are added to every franz-go client (TLS, SASL...).
	ClientOptions []kgo.Opt
}

// App runs a topology as one instance of an application: it joins the
// app's consumer group, restores and runs the tasks the group gives it,
// and commits. Start as many instances as there are machines or cores to
// use; each gets a share of the tasks.
type App struct {
	topo    *Topology
	cfg     Config
	log     *slog.Logger
	metrics *metrics

	mu struct {
		sync.Mutex
		running bool
		run     *run // while running: what queries read
	}
}

// NewApp checks cfg and returns an App ready to Run.
func NewApp(topo *Topology, cfg Config) (*App, error) {
	if topo == nil {
		return nil, fmt.Errorf("streams: NewApp: nil topology")
	}
	if cfg.ApplicationID == "" {
		return nil, fmt.Errorf("streams: Config.ApplicationID is required (it names the consumer group and internal topics)")
	}
	if strings.ContainsAny(cfg.ApplicationID, " /\\") {
		return nil, fmt.Errorf("streams: Config.ApplicationID %q: use letters, digits, '.', '_' and '-'", cfg.ApplicationID)
	}
	if len(cfg.Brokers) == 0 {
		return nil, fmt.Errorf("streams: Config.Brokers is required")
	}
	if cfg.CommitInterval == 0 {
		cfg.CommitInterval = 30 * time.Second
		if cfg.Guarantee == ExactlyOnce {
			cfg.CommitInterval = 100 * time.Millisecond
		}
	}
	if cfg.StoreCacheEntries == 0 {
		cfg.StoreCacheEntries = 16384
	}
	if cfg.MaxPollRecords <= 0 {
		cfg.MaxPollRecords = 1000
	}
	if cfg.MaxUncommittedBytes == 0 {
		cfg.MaxUncommittedBytes = 64 << 20
	}
	if cfg.ReplicationFactor == 0 {
		cfg.ReplicationFactor = -1
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.OnBadRecord == nil {
		cfg.OnBadRecord = FailOnBadRecord()
	}
	if cfg.Metrics == nil {
		cfg.Metrics = prometheus.NewRegistry()
	}
	return &App{topo: topo, cfg: cfg, log: cfg.Logger.With("app", cfg.ApplicationID),
		metrics: newMetrics(cfg.Metrics, topo, cfg.ApplicationID)}, nil
}

// Run runs the instance until ctx ends (nil error) or a task fails. On the
// way out it stops taking records, commits what it processed (at least
// once) or aborts the open transaction (exactly once), leaves the group and
// closes its state.
func (a *App) Run(ctx context.Context) error {
	a.mu.Lock()
	if a.mu.running {
		a.mu.Unlock()
		return fmt.Errorf("streams: App.Run called twice")
	}
	a.mu.running = true
	a.mu.Unlock()

	db, instanceID, err := a.openState()
	if err != nil {
		return err
	}
	defer db.Close()

	if a.cfg.Endpoint != "" {
		stop, err := a.serve()
		if err != nil {
			return err
		}
		defer stop()
	}
	r := &run{app: a, db: db, instanceID: instanceID}
	defer r.close()
	if err := r.start(ctx); err != nil {
		if ctx.Err() != nil { // stopped while starting: as asked
			return nil
		}
		return err
	}
	a.mu.Lock()
	a.mu.run = r
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		a.mu.run = nil
		a.mu.Unlock()
	}()
	return r.loop(ctx)
}

// serve listens on Config.Endpoint and serves Handler until stop.
func (a *App) serve() (stop func(), err error) {
	ln, err := net.Listen("tcp", a.cfg.Endpoint)
	if err != nil {
		return nil, fmt.Errorf("streams: listen on Config.Endpoint %s for queries: %w (choose a free port)", a.cfg.Endpoint, err)
	}
	srv := &http.Server{Handler: a.Handler(), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	return func() {
		_ = srv.Close()
		<-done
	}, nil
}

// openState opens the instance's state DB and its instance id, which
// survives restarts with the state directory (so that a restarted instance
// keeps its transactional id and fences its previous incarnation).
func (a *App) openState() (*state.DB, string, error) {
	if a.cfg.StateDir == "" {
		db, err := state.OpenInMemory()
		return db, newInstanceID(), err
	}
	dir := filepath.Join(a.cfg.StateDir, a.cfg.ApplicationID)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, "", fmt.Errorf("streams: state directory: %w", err)
	}
	idFile := filepath.Join(dir, "instance-id")
	id := ""
	if b, err := os.ReadFile(idFile); err == nil {
		id = strings.TrimSpace(string(b))
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, "", fmt.Errorf("streams: read %s: %w", idFile, err)
	}
	if id == "" {
		id = newInstanceID()
		if err := os.WriteFile(idFile, []byte(id+"\n"), 0o644); err != nil {
			return nil, "", fmt.Errorf("streams: write %s: %w", idFile, err)
		}
	}
	db, err := state.Open(filepath.Join(dir, "db"), state.Options{Logger: a.log})
	if err != nil {
		return nil, "", fmt.Errorf("streams: open state in %s: %w (another instance of %s may be using this state directory)", dir, err, a.cfg.ApplicationID)
	}
	return db, id, nil
}

func newInstanceID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// admin returns an admin client on the app's brokers.
func (a *App) admin() (*kadm.Client, *kgo.Client, error) {
	// A short metadata age: the admin client creates topics and then asks
	// for them, and kgo caches what metadata said (unknown) for MinAge.
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(a.cfg.Brokers...), kgo.MetadataMinAge(50 * time.Millisecond)}, a.cfg.ClientOptions...)...)
	if err != nil {
		return nil, nil, fmt.Errorf("streams: client: %w", err)
	}
	return kadm.NewClient(cl), cl, nil
}
