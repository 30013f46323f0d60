package groupmember

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"
)

// Board collects the reports of a set of members and wakes waiters when
// any of them changes.
type Board struct {
	mu struct {
		sync.Mutex
		changed chan struct{}
	}
}

// NewBoard returns an empty board.
func NewBoard() *Board {
	b := &Board{}
	b.mu.changed = make(chan struct{})
	return b
}

func (b *Board) notify() {
	b.mu.Lock()
	close(b.mu.changed)
	b.mu.changed = make(chan struct{})
	b.mu.Unlock()
}

func (b *Board) changed() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.mu.changed
}

// Wait returns nil once cond holds, checking it after every change a
// member reports (and at least every 100ms, for conditions on things
// outside the board); it returns an error naming what when ctx ends first.
func (b *Board) Wait(ctx context.Context, what string, cond func() bool) error {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		ch := b.changed()
		if cond() {
			return nil
		}
		select {
		case <-ch:
		case <-t.C:
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, context.Cause(ctx))
		}
	}
}

// Record is a record a member polled.
type Record struct {
	Partition int32
	Offset    int64
	Value     string
}

// Member is the parent's view of one running member.
type Member struct {
	Name  string
	board *Board
	stop  func()        // asks the member to leave
	kill  func()        // SIGKILLs a child process; nil in-process
	done  chan struct{} // closed when the member has stopped
	mu    struct {
		sync.Mutex
		owned     map[int32]bool
		records   []Record
		high      map[int32]int64 // partition → highest polled offset + 1
		committed map[int32]int64 // partition → last acknowledged commit
		failures  []string
		txns      Transactions
		err       error // how the member ended
		killed    bool
	}
}

// Transactions counts what a pipeline stage (Config.Output) reported of
// its transactions.
type Transactions struct {
	Committed, Aborted int   // transactions
	Copied, Abandoned  int64 // records in them
}

func newMember(name string, board *Board) *Member {
	m := &Member{Name: name, board: board, done: make(chan struct{})}
	m.mu.owned = map[int32]bool{}
	m.mu.high = map[int32]int64{}
	m.mu.committed = map[int32]int64{}
	return m
}

// apply records evs and wakes the board's waiters.
func (m *Member) apply(evs []Event) {
	m.mu.Lock()
	for _, ev := range evs {
		switch ev.Kind {
		case Assigned:
			for _, p := range ev.Partitions {
				m.mu.owned[p] = true
			}
		case Revoked, Lost:
			for _, p := range ev.Partitions {
				delete(m.mu.owned, p)
			}
		case Polled:
			m.mu.records = append(m.mu.records, Record{ev.Partition, ev.Offset, ev.Value})
			m.mu.high[ev.Partition] = max(m.mu.high[ev.Partition], ev.Offset+1)
		case Committed:
			maps.Copy(m.mu.committed, ev.Offsets)
			if ev.Err != "" {
				m.mu.failures = append(m.mu.failures, ev.Err)
			}
			if ev.N > 0 {
				m.mu.txns.Committed++
				m.mu.txns.Copied += int64(ev.N)
			}
		case Aborted:
			m.mu.txns.Aborted++
			m.mu.txns.Abandoned += int64(ev.N)
		case Failed:
			m.mu.failures = append(m.mu.failures, ev.Err)
		}
	}
	m.mu.Unlock()
	m.board.notify()
}

func (m *Member) finish(err error) {
	m.mu.Lock()
	m.mu.err = err
	m.mu.Unlock()
	close(m.done)
	m.board.notify()
}

// Owned returns the partitions the member owns now, sorted.
func (m *Member) Owned() []int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Sorted(maps.Keys(m.mu.owned))
}

// Records returns a copy of every record the member polled, in order.
func (m *Member) Records() []Record {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.mu.records)
}

// High returns, per partition, the highest offset the member polled plus one.
func (m *Member) High() map[int32]int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.mu.high)
}

// Committed returns, per partition, the last offset whose commit the
// broker acknowledged to the member.
func (m *Member) Committed() map[int32]int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.mu.committed)
}

// Failures returns the errors the member reported (fetch errors, failed
// commits).
func (m *Member) Failures() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.mu.failures)
}

// Transactions returns what a pipeline stage reported of its
// transactions so far.
func (m *Member) Transactions() Transactions {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mu.txns
}

// Killed reports whether Kill was called.
func (m *Member) Killed() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mu.killed
}

// Running reports whether the member has not stopped yet.
func (m *Member) Running() bool {
	select {
	case <-m.done:
		return false
	default:
		return true
	}
}

// Stop asks the member to leave the group and waits until it has; it
// returns how the member ended (nil for a clean leave). Stopping a killed
// member returns nil.
func (m *Member) Stop(ctx context.Context) error {
	m.stop()
	select {
	case <-m.done:
	case <-ctx.Done():
		return fmt.Errorf("member %s did not stop: %w", m.Name, ctx.Err())
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mu.killed {
		return nil
	}
	return m.mu.err
}

// Kill ends a member that runs in a child process with SIGKILL, so it
// neither leaves the group nor commits again, and waits until the process
// is gone and its last reports are read. It panics for an in-process
// member.
func (m *Member) Kill() {
	if m.kill == nil {
		panic("groupmember: Kill of an in-process member " + m.Name)
	}
	m.mu.Lock()
	m.mu.killed = true
	m.mu.Unlock()
	m.kill()
	<-m.done
}

// Start runs a member in this process until Stop.
func Start(cfg Config, board *Board) *Member {
	m := newMember(cfg.Name, board)
	ctx, cancel := context.WithCancel(context.Background())
	m.stop = cancel
	go func() {
		m.finish(Run(ctx, cfg, m.apply))
	}()
	return m
}
