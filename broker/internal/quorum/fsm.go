package quorum

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"

	"github.com/runnel-io/runnel/broker/internal/metadata"
)

// fsm is the Raft state machine: the metadata image. Raft's FSM goroutine
// calls Apply, Snapshot and Restore one at a time; everything else reads
// the image through the atomic pointer or waits for an index with
// waitApplied.
type fsm struct {
	image   atomic.Pointer[metadata.Image]
	applied atomic.Uint64 // Raft index of the last entry applied or restored

	mu struct {
		sync.Mutex
		watchers []func(old, new *metadata.Image)
		// progress is closed (and replaced) whenever applied moves.
		progress chan struct{}
	}
}

func newFSM() *fsm {
	f := &fsm{}
	f.image.Store(metadata.Empty())
	f.mu.progress = make(chan struct{})
	return f
}

// encode is a proposal's Raft command: the records' JSON, as the journal
// stores them.
func encode(recs []metadata.Record) ([]byte, error) {
	b, err := json.Marshal(recs)
	if err != nil {
		return nil, fmt.Errorf("quorum: encode records: %w", err)
	}
	return b, nil
}

// Apply applies one proposal, all records or none, and returns nil or the
// error that refused it (e.g. metadata.ErrTopicExists). Every voter
// computes the same outcome from the same log, so a refused proposal is
// refused everywhere and only its index is used up.
func (f *fsm) Apply(l *raft.Log) any {
	var recs []metadata.Record
	var err error
	f.mu.Lock()
	defer f.mu.Unlock()
	old := f.image.Load()
	im := old
	if err = json.Unmarshal(l.Data, &recs); err != nil {
		err = fmt.Errorf("%w: log entry %d: %v", metadata.ErrBadRecord, l.Index, err)
	}
	for _, r := range recs {
		if err != nil {
			break
		}
		var next *metadata.Image
		if next, err = im.Apply(r); err == nil {
			im = next
		}
	}
	if err != nil {
		im = old
	}
	f.publishLocked(old, im, l.Index)
	return err
}

// publishLocked makes im current at index and tells the watchers, in
// order, under f.mu (so a watcher registered by Watch sees every change
// after the image Watch returned).
func (f *fsm) publishLocked(old, im *metadata.Image, index uint64) {
	f.image.Store(im)
	f.applied.Store(index)
	if im != old {
		for _, w := range f.mu.watchers {
			w(old, im)
		}
	}
	close(f.mu.progress)
	f.mu.progress = make(chan struct{})
}

// watch registers fn and returns the image it starts from.
func (f *fsm) watch(fn func(old, new *metadata.Image)) *metadata.Image {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mu.watchers = append(f.mu.watchers, fn)
	return f.image.Load()
}

// waitApplied returns once index is applied here, or with ctx's error or
// ErrClosed when closing closes first.
func (f *fsm) waitApplied(ctx context.Context, index uint64, closing <-chan struct{}) error {
	for {
		f.mu.Lock()
		ch := f.mu.progress
		f.mu.Unlock()
		if f.applied.Load() >= index {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("%w: index %d not yet applied here: %w", ErrNotCommitted, index, ctx.Err())
		case <-closing:
			return ErrClosed
		}
	}
}

// Snapshot captures the current image and its index; the image is
// immutable, so Persist may write it on raft's snapshot goroutine while
// Apply goes on.
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return imageSnapshot{f.image.Load(), f.applied.Load()}, nil
}

// snapshotHeader precedes the image in a snapshot: raft does not tell
// Restore the snapshot's index, and waitApplied needs it.
type snapshotHeader struct {
	Applied uint64 `json:"applied"`
}

// Restore replaces the image with a snapshot's: at start (the newest local
// snapshot) or when the leader sends one to a follower that is too far
// behind. Watchers see it as one change.
func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	dec := json.NewDecoder(rc)
	var h snapshotHeader
	if err := dec.Decode(&h); err != nil {
		return fmt.Errorf("quorum: read snapshot header: %w", err)
	}
	im, err := metadata.ReadSnapshot(io.MultiReader(dec.Buffered(), rc))
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.publishLocked(f.image.Load(), im, h.Applied)
	return nil
}

type imageSnapshot struct {
	im      *metadata.Image
	applied uint64
}

func (s imageSnapshot) Persist(sink raft.SnapshotSink) error {
	err := json.NewEncoder(sink).Encode(snapshotHeader{Applied: s.applied})
	if err == nil {
		err = s.im.WriteSnapshot(sink)
	}
	if err != nil {
		sink.Cancel()
		return fmt.Errorf("quorum: write snapshot: %w", err)
	}
	return sink.Close()
}

func (imageSnapshot) Release() {}
