// Package server is the broker's network face and node state: it accepts
// Kafka protocol connections, dispatches each request by API key to its
// handler (one file per key, each opening with the versions it handles), and
// keeps the partitions this node hosts in step with the metadata image.
package server

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/runnel-io/runnel/broker/internal/configs"
	"github.com/runnel-io/runnel/broker/internal/metadata"
	"github.com/runnel-io/runnel/broker/internal/partition"
	"github.com/runnel-io/runnel/broker/internal/quorum"
)

// Options configure a Server.
type Options struct {
	Config configs.Broker
	// Static holds the broker settings as given (file and flags), for
	// DescribeConfigs and for resolving topic defaults.
	Static   map[string]string
	FS       vfs.FS
	Logger   *slog.Logger
	Registry *prometheus.Registry
	Now      func() time.Time
	// ControllerListener, when set, is this node's bound controller
	// (voter) listener: tests bind port 0 first to learn the voters'
	// addresses. Otherwise the quorum listens on the voter address.
	ControllerListener net.Listener
}

// Server is one broker node.
type Server struct {
	cfg     configs.Broker
	static  map[string]string
	fs      vfs.FS
	logger  *slog.Logger
	now     func() time.Time
	meta    *quorum.Quorum
	metrics *metrics
	dataDir string

	listener  net.Listener
	advertise metadata.Broker

	pids     producerIDs
	fetchers replicaFetchers
	sessions *fetchSessions
	groups   groupCoordinator
	txns     txnCoordinator
	markers  markerWriters
	// txnMetrics counts transactions as they complete.
	txnMetrics *txnMetrics
	cleaner    *cleaner // nil when log.cleaner.enable is false

	// bg is canceled by Close: long background work (cleaning) stops early.
	bg       context.Context
	bgCancel context.CancelFunc

	// life is this node's registration with the active controller.
	life lifecycle
	// ctrl is the active controller while this node leads the quorum
	// (controller.go); ctrlClosed stops new ones starting after Close.
	ctrlMu     sync.Mutex
	ctrl       *activeController
	ctrlClosed bool

	// reconcileMu serializes reconcile: the watcher's calls and the first
	// one at start.
	reconcileMu sync.Mutex
	mu          struct {
		sync.RWMutex
		parts  map[tp]*partition.Partition
		conns  map[*conn]struct{}
		closed bool
	}
	wg       sync.WaitGroup
	stop     chan struct{}
	stopOnce sync.Once
}

// controlledShutdownTimeout bounds how long Close waits for the controller
// to move leadership away (at most broker.session.timeout.ms too).
const controlledShutdownTimeout = 5 * time.Second

// tp names a partition.
type tp struct {
	topic string
	part  int32
}

// New opens the node's data (its member of the metadata quorum, which it
// waits for, and every partition, with recovery) and binds its listener.
// Serve starts accepting.
func New(o Options) (*Server, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.FS == nil {
		o.FS = vfs.Default
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Registry == nil {
		o.Registry = prometheus.NewRegistry()
	}
	if len(o.Config.LogDirs) != 1 {
		return nil, fmt.Errorf("server: exactly one log directory is supported, got %d (log.dirs)", len(o.Config.LogDirs))
	}
	if len(o.Config.Listeners) == 0 {
		return nil, errors.New("server: no listener configured (listeners)")
	}
	if len(o.Config.Listeners) > 1 {
		return nil, fmt.Errorf("server: %d listeners configured; only one is supported so far", len(o.Config.Listeners))
	}
	for _, l := range o.Config.Listeners {
		if l.SecurityProtocol != "PLAINTEXT" {
			return nil, fmt.Errorf("server: listener %s uses %s; only PLAINTEXT is supported so far", l, l.SecurityProtocol)
		}
	}
	s := &Server{
		cfg:     o.Config,
		static:  o.Static,
		fs:      o.FS,
		logger:  o.Logger,
		now:     o.Now,
		dataDir: o.Config.LogDirs[0],
		metrics: newMetrics(o.Registry),
		stop:    make(chan struct{}),
	}
	o.Registry.MustRegister(newLogCollector(s))
	o.Registry.MustRegister(newGroupMetrics(s))
	s.txnMetrics = newTxnMetrics(s, o.Registry)
	o.Registry.MustRegister(newDirtyCollector(s))
	o.Registry.MustRegister(newClusterMetrics(s))
	s.bg, s.bgCancel = context.WithCancel(context.Background())
	if o.Config.LogCleanerEnable && o.Config.LogCleanerThreads > 0 {
		s.cleaner = newCleaner(s)
	}
	s.mu.parts = map[tp]*partition.Partition{}
	s.mu.conns = map[*conn]struct{}{}
	if err := o.FS.MkdirAll(s.dataDir, 0o755); err != nil {
		return nil, fmt.Errorf("server: create log.dirs %s: %w", s.dataDir, err)
	}
	meta, err := s.openQuorum(o)
	if err != nil {
		return nil, err
	}
	s.meta = meta
	s.pids.s = s
	s.fetchers.init(s)
	s.groups.s = s
	s.txns.s = s
	s.markers.s = s
	s.sessions = newFetchSessions(int(o.Config.FetchSessionSlots), o.Now)

	l := o.Config.Listeners[0]
	ln, err := net.Listen("tcp", net.JoinHostPort(l.Host, strconv.Itoa(l.Port)))
	if err != nil {
		meta.Close()
		return nil, fmt.Errorf("server: listen on %s:%d: %w (is another broker running? change listeners)", l.Host, l.Port, err)
	}
	s.listener = ln
	s.advertise = s.advertised(ln.Addr().(*net.TCPAddr))

	s.life.incarnation = newClusterID()
	s.meta.OnLeadership(s.onLeadership)
	if err := s.bootstrap(); err != nil {
		s.stopController()
		ln.Close()
		s.closePartitions()
		meta.Close()
		return nil, err
	}
	// Groups load at start when their topic exists; else on first use.
	if s.meta.Image().Topic(offsetsTopic) != nil {
		if _, err := s.groups.shards(context.Background()); err != nil {
			ln.Close()
			s.stopController()
			s.closePartitions()
			meta.Close()
			return nil, fmt.Errorf("server: load groups: %w", err)
		}
	}
	return s, nil
}

// advertised returns this node's broker record: the advertised listener if
// set, else the bound address (with a wildcard host replaced by localhost).
func (s *Server) advertised(bound *net.TCPAddr) metadata.Broker {
	b := metadata.Broker{ID: s.cfg.NodeID, Rack: s.cfg.BrokerRack, Host: bound.IP.String(), Port: int32(bound.Port)}
	if bound.IP.IsUnspecified() {
		b.Host = "localhost"
	}
	if len(s.cfg.AdvertisedListeners) > 0 {
		a := s.cfg.AdvertisedListeners[0]
		if a.Host != "" {
			b.Host = a.Host
		}
		if a.Port != 0 {
			b.Port = int32(a.Port)
		}
	}
	return b
}

// bootstrap names a new cluster, opens the partitions the image already
// holds, starts following metadata changes, and registers this node with
// the active controller.
func (s *Server) bootstrap() error {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if s.meta.Image().ClusterID == "" {
		id := s.cfg.ClusterID
		if id == "" {
			id = newClusterID()
		}
		// Nodes starting together may race: the first id applied wins.
		err := s.meta.Propose(ctx, metadata.Record{SetClusterID: &metadata.SetClusterID{ID: id}})
		if err != nil && !errors.Is(err, metadata.ErrClusterID) {
			return err
		}
	}
	if id := s.meta.Image().ClusterID; s.cfg.ClusterID != "" && s.cfg.ClusterID != id {
		return fmt.Errorf("server: cluster.id %q does not match the cluster's id %q (from the data directory or the other nodes)", s.cfg.ClusterID, id)
	}
	// Open what the image holds (reconcile from an empty image does
	// that), then follow every change after it. reconcileMu is held from
	// before the watch starts, so a change applied meanwhile waits for
	// the first reconcile (the watcher is not registered until Watch
	// holds the quorum's lock, so the order reconcileMu → fsm.mu here
	// cannot meet the watcher's fsm.mu → reconcileMu).
	var err error
	s.reconcileMu.Lock()
	im := s.meta.Watch(s.reconcile)
	s.reconcileErr(metadata.Empty(), im, &err)
	s.reconcileMu.Unlock()
	if err != nil {
		return err
	}
	// Register with the active controller and wait until it unfences
	// this node: then the partitions it can lead have it as leader.
	if err := s.register(ctx); err != nil {
		return err
	}
	return s.awaitUnfenced(ctx)
}

func newClusterID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// Addr is the address the listener is bound to.
func (s *Server) Addr() net.Addr { return s.listener.Addr() }

// Ready reports whether the node serves requests.
func (s *Server) Ready() bool {
	select {
	case <-s.stop:
		return false
	default:
		return true
	}
}

// Serve accepts connections and runs the background work (time-based
// segment rolls, retention, the log cleaner) until ctx ends or Close is called.
func (s *Server) Serve(ctx context.Context) error {
	s.wg.Add(4)
	go func() {
		defer s.wg.Done()
		s.housekeeping()
	}()
	go func() {
		defer s.wg.Done()
		s.isrLoop()
	}()
	go func() {
		defer s.wg.Done()
		s.heartbeatLoop()
	}()
	if s.cleaner != nil {
		s.cleaner.start(s.bg, &s.wg)
	}
	go func() {
		defer s.wg.Done()
		s.groups.tickLoop(s.stop)
	}()
	s.wg.Go(func() { s.txns.tickLoop(s.stop) })
	go func() {
		select {
		case <-ctx.Done():
			s.Close()
		case <-s.stop:
		}
	}()
	for {
		nc, err := s.listener.Accept()
		if err != nil {
			select {
			case <-s.stop:
				return nil
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return fmt.Errorf("server: accept: %w", err)
		}
		c := s.newConn(nc)
		s.mu.Lock()
		if s.mu.closed {
			s.mu.Unlock()
			nc.Close()
			return nil
		}
		s.mu.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			c.serve()
			s.mu.Lock()
			delete(s.mu.conns, c)
			s.mu.Unlock()
		}()
	}
}

// housekeeping rolls segments by time and enforces retention.
func (s *Server) housekeeping() {
	rollTick := time.NewTicker(time.Second)
	defer rollTick.Stop()
	interval := time.Duration(s.cfg.LogRetentionCheckIntervalMs) * time.Millisecond
	if interval <= 0 {
		interval = 5 * time.Minute
	}
	retTick := time.NewTicker(interval)
	defer retTick.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-rollTick.C:
			for _, p := range s.partitions() {
				if err := p.Log().MaybeRoll(); err != nil {
					s.logger.Error("segment roll failed", "topic", p.Topic, "partition", p.Index, "err", err)
				}
			}
		case <-retTick.C:
			s.enforceRetention()
		}
	}
}

func (s *Server) enforceRetention() {
	for _, p := range s.partitions() {
		n, err := p.Log().EnforceRetention()
		if err != nil {
			s.logger.Error("retention failed", "topic", p.Topic, "partition", p.Index, "err", err)
			continue
		}
		if n > 0 {
			s.logger.Info("retention deleted segments", "topic", p.Topic, "partition", p.Index, "segments", n)
		}
	}
}

func (s *Server) partitions() []*partition.Partition {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]*partition.Partition, 0, len(s.mu.parts))
	for _, p := range s.mu.parts {
		out = append(out, p)
	}
	return out
}

// partition returns the named partition if this node hosts it.
func (s *Server) partition(topic string, part int32) *partition.Partition {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.mu.parts[tp{topic, part}]
}

// Close asks the controller to move leadership away (a controlled
// shutdown, bounded by controlledShutdownTimeout), stops accepting, closes
// every connection, waits for every goroutine, and closes the partitions
// (saving producer state) and the node's member of the quorum. It is
// idempotent.
func (s *Server) Close() error {
	var err error
	s.stopOnce.Do(func() {
		// Leadership moves away first, while clients can still reach
		// this node and learn where to go.
		// Without a quorum leader there is no controller to ask; and past
		// the session timeout the controller fences this node anyway.
		if _, _, ok := s.meta.Leader(); ok {
			wait := min(controlledShutdownTimeout, time.Duration(s.cfg.BrokerSessionTimeoutMs)*time.Millisecond)
			ctx, cancel := context.WithTimeout(s.bg, wait)
			if err := s.controlledShutdown(ctx); err != nil {
				s.logger.Warn("stopping without a controlled shutdown", "err", err)
			}
			cancel()
		} else {
			s.logger.Warn("stopping without a controlled shutdown: no controller (the metadata quorum has no leader)")
		}
		close(s.stop)
		s.bgCancel()
		s.stopController()
		if err := s.meta.HandOver(); err != nil {
			s.logger.Info("could not hand the quorum's leadership over before stopping", "err", err)
		}
		s.fetchers.close()
		s.listener.Close()
		s.mu.Lock()
		s.mu.closed = true
		for c := range s.mu.conns {
			c.close()
		}
		s.mu.Unlock()
		s.wg.Wait()
		s.markers.wait()
		err = errors.Join(s.closePartitions(), s.meta.Close())
	})
	return err
}

// closePartitions closes every hosted partition.
func (s *Server) closePartitions() error {
	var err error
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, p := range s.mu.parts {
		err = errors.Join(err, p.Close())
		delete(s.mu.parts, k)
	}
	return err
}
