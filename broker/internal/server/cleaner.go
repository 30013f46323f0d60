package server

import (
	"context"
	"errors"
	"sync"
	"time"

	plog "github.com/runnel-io/runnel/broker/internal/log"
	"github.com/runnel-io/runnel/broker/internal/partition"
)

// cleaner compacts the partitions of topics with cleanup.policy=compact:
// log.cleaner.threads goroutines, each with its own offset map of
// log.cleaner.dedupe.buffer.size / threads bytes, repeatedly pick the
// dirtiest partition that is due (plog.Log.Cleanable) and that no other
// goroutine is cleaning, run one pass on it, and when none is due wait
// log.cleaner.backoff.ms. A partition whose pass fails (other than being
// abandoned because its log changed) is marked uncleanable until the
// broker restarts, as Kafka does.
type cleaner struct {
	s        *Server
	backoff  time.Duration
	memory   int64 // offset map bytes per goroutine
	readSize int   // segment read chunk per goroutine

	mu struct {
		sync.Mutex
		busy        map[*partition.Partition]bool
		uncleanable map[*partition.Partition]bool
	}
}

func newCleaner(s *Server) *cleaner {
	c := &cleaner{s: s, backoff: time.Duration(s.cfg.LogCleanerBackoffMs) * time.Millisecond}
	threads := max(s.cfg.LogCleanerThreads, 1)
	c.memory = s.cfg.LogCleanerDedupeBufferSize / int64(threads)
	// As Kafka: log.cleaner.io.buffer.size is split among the threads and,
	// in each, between reading and writing.
	c.readSize = max(int(s.cfg.LogCleanerIOBufferSize/threads/2), 4096)
	c.mu.busy = map[*partition.Partition]bool{}
	c.mu.uncleanable = map[*partition.Partition]bool{}
	return c
}

// start starts the cleaner goroutines; they stop when ctx ends.
func (c *cleaner) start(ctx context.Context, wg *sync.WaitGroup) {
	for range c.s.cfg.LogCleanerThreads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.run(ctx)
		}()
	}
}

func (c *cleaner) run(ctx context.Context) {
	m := plog.NewOffsetMap(c.memory, c.s.cfg.LogCleanerLoadFactor)
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		p := c.pick()
		if p == nil {
			t.Reset(c.backoff)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			continue
		}
		c.clean(ctx, p, m)
		c.mu.Lock()
		delete(c.mu.busy, p)
		c.mu.Unlock()
		if ctx.Err() != nil {
			return
		}
	}
}

// pick returns the due partition with the highest dirty ratio that no
// goroutine is cleaning, marked busy; nil if there is none.
func (c *cleaner) pick() *partition.Partition {
	for {
		p, raced := c.pickOnce()
		if !raced {
			return p
		}
	}
}

// pickOnce is one look over the partitions; raced says that another
// goroutine took the best one meanwhile (so look again).
func (c *cleaner) pickOnce() (p *partition.Partition, raced bool) {
	var best *partition.Partition
	bestRatio := -1.0
	parts := c.s.partitions()
	c.forgetDropped(parts)
	for _, p := range parts {
		if !p.Config().Log.Compact {
			continue
		}
		c.mu.Lock()
		skip := c.mu.busy[p] || c.mu.uncleanable[p]
		c.mu.Unlock()
		if skip {
			continue
		}
		if cl := p.Cleanable(); cl.Due && cl.Ratio > bestRatio {
			best, bestRatio = p, cl.Ratio
		}
	}
	if best == nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.busy[best] {
		return nil, true
	}
	c.mu.busy[best] = true
	return best, false
}

func (c *cleaner) clean(ctx context.Context, p *partition.Partition, m *plog.OffsetMap) {
	start := time.Now()
	st, err := p.Clean(ctx, m, plog.CleanOptions{ReadBufferSize: c.readSize})
	c.s.metrics.cleaner.observe(p.Topic, st, time.Since(start), err != nil && !abandoned(ctx, err))
	switch {
	case err == nil:
		c.s.logger.Debug("log cleaner: cleaned", "topic", p.Topic, "partition", p.Index,
			"segments", st.Segments, "bytesRead", st.BytesRead, "bytesWritten", st.BytesWritten,
			"recordsRemoved", st.RecordsRemoved, "firstDirtyOffset", st.FirstDirty, "took", time.Since(start))
	case abandoned(ctx, err):
		c.s.logger.Debug("log cleaner: pass abandoned", "topic", p.Topic, "partition", p.Index, "err", err)
	default:
		c.s.logger.Error("log cleaner: marking the partition uncleanable until restart",
			"topic", p.Topic, "partition", p.Index, "err", err)
		c.mu.Lock()
		c.mu.uncleanable[p] = true
		c.mu.Unlock()
	}
}

// abandoned reports whether a pass's error only says the pass was given up
// (the log changed or closed, or the server stops): not a cleaning failure.
func abandoned(ctx context.Context, err error) bool {
	return plog.IsCleanAborted(err) || ctx.Err() != nil || errors.Is(err, plog.ErrClosed)
}

// forgetDropped forgets uncleanable partitions the node no longer hosts
// (deleted topics), so they neither leak nor count in the metric.
func (c *cleaner) forgetDropped(parts []*partition.Partition) {
	hosted := make(map[*partition.Partition]bool, len(parts))
	for _, p := range parts {
		hosted[p] = true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for p := range c.mu.uncleanable {
		if !hosted[p] {
			delete(c.mu.uncleanable, p)
		}
	}
}

// uncleanable counts partitions marked uncleanable.
func (c *cleaner) uncleanable() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.mu.uncleanable)
}
