package cluster

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// commitPollEvery is how often a commitWatcher asks for the offsets.
const commitPollEvery = 50 * time.Millisecond

// commitWatcher polls a group's committed offsets of one topic with
// OffsetFetch and flags every offset that went backwards between polls:
// an acknowledged commit must survive kills and leader changes. Polls that
// fail (a node down) are counted and skipped.
type commitWatcher struct {
	cancel context.CancelFunc
	done   chan struct{}
	mu     struct {
		sync.Mutex
		polls, failed int
		highest       map[int32]int64
		backwards     []string
	}
}

// watchCommits starts polling group's committed offsets of topic until
// Stop or until ctx ends.
func watchCommits(ctx context.Context, seeds []string, group, topic string) (*commitWatcher, error) {
	newAdmin := func() (*kadm.Client, error) {
		cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ClientID("commit-watcher"),
			kgo.MetadataMinAge(250*time.Millisecond))
		if err != nil {
			return nil, err
		}
		return kadm.NewClient(cl), nil
	}
	adm, err := newAdmin()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	w := &commitWatcher{cancel: cancel, done: make(chan struct{})}
	w.mu.highest = map[int32]int64{}
	go func() {
		defer close(w.done)
		defer func() { adm.Close() }()
		for {
			if !w.poll(ctx, adm, group, topic) {
				// franz-go v1.22's sharded OffsetFetch keeps a cached
				// coordinator whose connection is refused (it drops one
				// only on a coordinator error code): a fresh client
				// finds the group's coordinator again.
				if fresh, err := newAdmin(); err == nil {
					adm.Close()
					adm = fresh
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(commitPollEvery):
			}
		}
	}()
	return w, nil
}

// poll reads the group's committed offsets once and reports whether it
// was answered.
func (w *commitWatcher) poll(ctx context.Context, adm *kadm.Client, group, topic string) bool {
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	resp, err := adm.FetchOffsets(pctx, group)
	if err == nil {
		err = resp.Error()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		w.mu.failed++
		return false
	}
	w.mu.polls++
	resp.Each(func(o kadm.OffsetResponse) {
		if o.Topic != topic || o.At < 0 {
			return
		}
		if h, ok := w.mu.highest[o.Partition]; ok && o.At < h {
			w.mu.backwards = append(w.mu.backwards,
				fmt.Sprintf("group %s partition %d: committed offset %d after %d", group, o.Partition, o.At, h))
			return
		}
		w.mu.highest[o.Partition] = o.At
	})
	return true
}

// Stop ends the polling and waits for it.
func (w *commitWatcher) Stop() {
	w.cancel()
	<-w.done
}

// Polls returns how many polls answered and how many failed.
func (w *commitWatcher) Polls() (answered, failed int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.mu.polls, w.mu.failed
}

// Highest returns the highest committed offset seen per partition.
func (w *commitWatcher) Highest() map[int32]int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.mu.highest)
}

// Backwards returns the committed offsets seen going backwards.
func (w *commitWatcher) Backwards() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.mu.backwards)
}
