package quorum

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"

	"github.com/runnel-io/runnel/broker/internal/metadata"
)

// Quorum is one node's member of the metadata quorum: its Raft instance,
// the FSM holding the metadata image, and the controller listener.
type Quorum struct {
	cfg    Config
	logger *slog.Logger
	id     raft.ServerID
	raft   *raft.Raft
	fsm    *fsm
	store  *raftboltdb.BoltStore
	mux    *mux // nil for a standalone node
	// notify receives raft's leadership changes (raft.Config.NotifyCh).
	notify  chan bool
	closing chan struct{}
	calls   calls          // the call RPC's handler (call.go)
	wg      sync.WaitGroup // the notifier and Propose's apply waiters

	mu struct {
		sync.Mutex
		closed bool
	}
	// leading is held while leadership callbacks run, so a callback
	// registered late is told the current state in order with the rest.
	leading struct {
		sync.Mutex
		leader bool
		fns    []func(leader bool)
	}
}

// Open starts this node's member of the quorum. A node with no Raft state
// in cfg.Dir bootstraps the configuration of cfg.Voters (every voter does
// the same, which raft allows: the identical configurations agree); a node
// with state recovers from its log and newest snapshot and ignores the
// voters' list for membership (changing voters is not supported yet).
// Open returns before an election: Image is the newest snapshot's image
// until the log after it is applied, which happens once a leader is known;
// Sync waits for that.
func Open(cfg Config) (*Quorum, error) {
	standalone, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("quorum: %w", err)
	}
	q := &Quorum{
		cfg:     cfg,
		logger:  cfg.Logger,
		id:      serverID(cfg.NodeID),
		fsm:     newFSM(),
		notify:  make(chan bool),
		closing: make(chan struct{}),
	}
	q.calls.init()
	rc := cfg.raftConfig(q.notify)
	ok := false
	defer func() {
		if !ok {
			q.closeStores()
			if q.mux == nil && cfg.Listener != nil {
				cfg.Listener.Close()
			}
		}
	}()
	q.store, err = raftboltdb.New(raftboltdb.Options{Path: filepath.Join(cfg.Dir, "raft.db")})
	if err != nil {
		return nil, fmt.Errorf("quorum: open raft.db: %w", err)
	}
	logs, err := raft.NewLogCache(512, q.store)
	if err != nil {
		return nil, fmt.Errorf("quorum: %w", err)
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(cfg.Dir, 2, rc.Logger)
	if err != nil {
		return nil, fmt.Errorf("quorum: snapshot store: %w", err)
	}

	var trans raft.Transport
	if standalone {
		_, trans = raft.NewInmemTransport(raft.ServerAddress("node-" + string(q.id)))
	} else {
		self := cfg.self()
		ln := cfg.Listener
		if ln == nil {
			if ln, err = net.Listen("tcp", self.Addr()); err != nil {
				return nil, fmt.Errorf("quorum: controller listener: %w", err)
			}
		}
		q.mux = newMux(ln, self.Addr(), q.logger)
		trans = raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
			Stream:  streamLayer{q.mux},
			MaxPool: 3,
			Timeout: 10 * rc.HeartbeatTimeout,
			Logger:  rc.Logger,
		})
	}
	closeTrans := func() {
		if c, ok := trans.(raft.WithClose); ok {
			c.Close()
		}
		if q.mux != nil {
			q.mux.close()
		}
	}

	has, err := raft.HasExistingState(logs, q.store, snaps)
	if err != nil {
		closeTrans()
		return nil, fmt.Errorf("quorum: %w", err)
	}
	if !has {
		if err := raft.BootstrapCluster(rc, logs, q.store, snaps, trans, cfg.configuration(trans.LocalAddr())); err != nil {
			closeTrans()
			return nil, fmt.Errorf("quorum: bootstrap: %w", err)
		}
		q.logger.Info("quorum: bootstrapped", "node", cfg.NodeID, "voters", len(cfg.Voters))
	}
	q.raft, err = raft.NewRaft(rc, q.fsm, logs, q.store, snaps, trans)
	if err != nil {
		closeTrans()
		return nil, fmt.Errorf("quorum: start raft: %w", err)
	}
	ok = true
	if q.mux != nil {
		q.mux.serve(map[byte]func(net.Conn){kindForward: q.serveForward, kindCall: q.serveCall})
	}
	q.wg.Go(q.notifyLoop)
	return q, nil
}

// notifyLoop passes raft's leadership changes to the OnLeadership
// callbacks, in order. raft's leader loop waits for each send, so a
// callback that blocks holds up the leader.
func (q *Quorum) notifyLoop() {
	for {
		select {
		case leader := <-q.notify:
			q.logger.Info("quorum: leadership changed", "node", q.cfg.NodeID, "leader", leader)
			q.leading.Lock()
			q.leading.leader = leader
			for _, fn := range q.leading.fns {
				fn(leader)
			}
			q.leading.Unlock()
		case <-q.closing:
			return
		}
	}
}

// OnLeadership registers fn to be told when this node becomes the leader
// (true) and stops being it (false): the active controller's start and
// end. If this node leads already, fn(true) is called before OnLeadership
// returns. Calls happen one at a time, in order; fn must return quickly
// (raft's leader loop waits for it: start work elsewhere) and must not
// call OnLeadership. No final false is delivered on Close.
func (q *Quorum) OnLeadership(fn func(leader bool)) {
	q.leading.Lock()
	defer q.leading.Unlock()
	q.leading.fns = append(q.leading.fns, fn)
	if q.leading.leader {
		fn(true)
	}
}

// Image returns the current metadata image. It never changes once
// returned.
func (q *Quorum) Image() *metadata.Image { return q.fsm.image.Load() }

// Watch registers fn to be called after every change, with the images
// before and after, and returns the image the changes start from (so the
// caller can act on it first without missing one). Calls happen in apply
// order, one at a time, on raft's FSM goroutine: fn must not call Propose,
// Sync or Watch.
func (q *Quorum) Watch(fn func(old, new *metadata.Image)) *metadata.Image {
	return q.fsm.watch(fn)
}

// MetadataOffset is the Raft index of the last metadata entry applied
// here (the "metadata offset" of Kafka's metrics).
func (q *Quorum) MetadataOffset() uint64 { return q.fsm.applied.Load() }

// Leader returns the leader's node id and controller address as this node
// last heard them; ok is false while no leader is known.
func (q *Quorum) Leader() (id int32, addr string, ok bool) {
	a, sid := q.raft.LeaderWithID()
	if sid == "" {
		return -1, "", false
	}
	return parseServerID(sid), string(a), true
}

// HandOver transfers the leadership to another voter if this node leads
// (raft's leadership transfer, bounded by its election timeout), so that
// a node about to stop cleanly does not leave the quorum waiting out
// controller.quorum.fetch.timeout.ms. It is a no-op on a follower or a
// quorum of one.
func (q *Quorum) HandOver() error {
	if q.mux == nil || !q.IsLeader() {
		return nil
	}
	return q.raft.LeadershipTransfer().Error()
}

// IsLeader reports whether this node is the leader (the active
// controller).
func (q *Quorum) IsLeader() bool { return q.raft.State() == raft.Leader }

// Close stops this node: raft shuts down (a leader just stops; the others
// elect a new one, unless HandOver ran first), the controller listener and
// its connections close, and Close waits for every goroutine it started. Pending proposals return
// ErrClosed. Idempotent.
func (q *Quorum) Close() error {
	q.mu.Lock()
	if q.mu.closed {
		q.mu.Unlock()
		return nil
	}
	q.mu.closed = true
	close(q.closing)
	q.mu.Unlock()
	q.calls.cancel()
	err := q.raft.Shutdown().Error()
	if q.mux != nil {
		q.mux.close() // raft closed it already; this waits for its goroutines
	}
	q.wg.Wait()
	return errors.Join(err, q.closeStores())
}

func (q *Quorum) closeStores() error {
	if q.store == nil {
		return nil
	}
	if err := q.store.Close(); err != nil {
		return fmt.Errorf("quorum: close raft.db: %w", err)
	}
	return nil
}
