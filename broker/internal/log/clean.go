package log

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/runnel-io/runnel/broker/internal/batch"
)

// Log compaction (cleanup.policy=compact), after Kafka's LogCleaner. See
// doc.go ("Compaction") for the semantics; this file decides when a log is
// cleanable and runs one cleaning pass, cleanbatch.go filters one batch,
// cleanswap.go swaps cleaned segments in and recovers half-done swaps.

// CleanOptions tune one Clean call.
type CleanOptions struct {
	// MaxOffset: only segments wholly below it are cleaned. The caller
	// passes the last stable offset (Kafka's first uncleanable offset:
	// open transactions and markers not yet replicated stay dirty); math.MaxInt64 means no bound beyond the
	// active segment, which is never cleaned.
	MaxOffset int64
	// ProducerLast maps each idempotent producer id to the last offset of
	// its newest batch. A batch that is its producer's newest is kept even
	// when cleaning removes all its records (as an empty batch), so the
	// producer's sequence numbers still check after a restart.
	ProducerLast map[int64]int64
	// MaxDecompressed bounds one batch's decompressed records; <= 0 means
	// batch.DefaultMaxDecompressed.
	MaxDecompressed int
	// ReadBufferSize is how much of a segment the pass reads at a time
	// (a larger batch is still read whole); <= 0 means 1 MiB.
	ReadBufferSize int
}

// Cleanability says how dirty a compacted log is and whether Clean would
// do something now.
type Cleanability struct {
	FirstDirty       int64 // offsets below were cleaned
	FirstUncleanable int64 // offsets from here on are not cleaned yet (active segment, min.compaction.lag.ms, MaxOffset)
	CleanBytes       int64 // bytes of segments wholly below FirstDirty
	DirtyBytes       int64 // bytes of cleanable segments from FirstDirty on
	Ratio            float64
	// Due: the ratio exceeds min.cleanable.dirty.ratio, max.compaction.lag.ms
	// has passed for dirty data, or a kept tombstone's delete horizon passed.
	Due    bool
	Reason string
}

// CleanStats reports one Clean call.
type CleanStats struct {
	Segments       int // segments replaced
	BytesRead      int64
	BytesWritten   int64
	RecordsRead    int64
	RecordsRemoved int64
	MapKeys        int   // keys in the offset map
	FirstDirty     int64 // the cleaner checkpoint after the pass
}

// defaultReadBufferSize is CleanOptions.ReadBufferSize's default.
const defaultReadBufferSize = 1 << 20

// ErrOffsetMapTooSmall: not even one batch's keys fit in the offset map
// (log.cleaner.dedupe.buffer.size is too small for this log).
var ErrOffsetMapTooSmall = errors.New("log: cleaner offset map too small for one batch")

// errCleanAborted: the log changed under the pass (retention, truncation,
// Close); its work is dropped and the next pass starts over.
var errCleanAborted = errors.New("log: cleaning aborted: the segments changed")

// IsCleanAborted reports whether err only says that a pass was abandoned
// because the log changed meanwhile (not a failure).
func IsCleanAborted(err error) bool { return errors.Is(err, errCleanAborted) }

// cleanSeg is a non-active segment as a cleaning pass saw it. The pass
// holds a reference on the file; the swap checks that s still has this
// size and range.
type cleanSeg struct {
	s          *segment
	file       *segFile
	base, next int64
	size       int64
	startPos   int64 // where the map build starts in the first dirty segment
}

// cleanPlan is the state a pass or a Cleanable call works from.
type cleanPlan struct {
	segs                         []cleanSeg // segments wholly below firstUncleanable
	lso, firstDirty, uncleanable int64
	clean, dirty                 int64
}

// planLocked computes the plan. mu held (read); acquire takes file refs.
func (l *Log) planLocked(cfg *Config, nowMs, maxOffset int64, acquire bool) cleanPlan {
	segs := l.mu.segments
	act := len(segs) - 1
	p := cleanPlan{lso: l.lso.Load()}
	p.firstDirty = max(l.firstDirty.Load(), p.lso)
	limit := min(segs[act].base, maxOffset)
	k := 0
	for k < act && segs[k].next <= limit {
		if cfg.MinCompactionLagMs > 0 && segs[k].next > p.firstDirty && segs[k].maxTs > nowMs-cfg.MinCompactionLagMs {
			break // Kafka: the first dirty segment younger than the lag stops cleaning
		}
		k++
	}
	p.uncleanable = segs[k].base
	for _, s := range segs[:k] {
		if s.next <= p.firstDirty {
			p.clean += s.size
		} else {
			p.dirty += s.size
		}
		cs := cleanSeg{s: s, file: s.file, base: s.base, next: s.next, size: s.size}
		if s.contains(p.firstDirty) {
			cs.startPos = s.offIdx.floor(p.firstDirty - s.base)
		}
		if acquire {
			s.file.acquire()
		}
		p.segs = append(p.segs, cs)
	}
	return p
}

// Cleanable reports how dirty the log is. It reads at most one batch header.
func (l *Log) Cleanable(maxOffset int64) Cleanability {
	cfg := l.cleanCfg.Load()
	nowMs := l.nowMs()
	l.readMu.RLock()
	defer l.readMu.RUnlock()
	l.mu.RLock()
	if l.mu.closed || !cfg.Compact {
		l.mu.RUnlock()
		return Cleanability{}
	}
	p := l.planLocked(cfg, nowMs, maxOffset, false)
	l.mu.RUnlock()
	c := Cleanability{FirstDirty: p.firstDirty, FirstUncleanable: p.uncleanable, CleanBytes: p.clean, DirtyBytes: p.dirty}
	if p.clean+p.dirty > 0 {
		c.Ratio = float64(p.dirty) / float64(p.clean+p.dirty)
	}
	switch {
	case p.dirty > 0 && c.Ratio > cfg.MinCleanableDirtyRatio:
		c.Due, c.Reason = true, "min.cleanable.dirty.ratio"
	case p.dirty > 0 && cfg.MaxCompactionLagMs > 0 && l.firstDirtyTimestamp(&p) < nowMs-cfg.MaxCompactionLagMs:
		c.Due, c.Reason = true, "max.compaction.lag.ms"
	case p.clean > 0 && l.tombHorizon.Load() > 0 && l.tombHorizon.Load() <= nowMs:
		c.Due, c.Reason = true, "delete.retention.ms"
	}
	return c
}

// firstDirtyTimestamp returns the max timestamp of the first batch of the
// first dirty segment (Kafka's first batch timestamp), or MaxInt64. readMu
// held.
func (l *Log) firstDirtyTimestamp(p *cleanPlan) int64 {
	for _, cs := range p.segs {
		if cs.next <= p.firstDirty || cs.size == 0 {
			continue
		}
		w := newWalker(cs.file.f, 0, cs.size)
		h, _, _, err := w.next(false)
		w.release()
		if err != nil {
			return math.MaxInt64
		}
		return h.MaxTimestamp
	}
	return math.MaxInt64
}

// Clean runs one cleaning pass if the log is compacted: it builds the offset
// map from the dirty segments (as many whole batches as m holds), then
// rewrites every segment below the map's end, in groups that fit
// segment.bytes, keeping the newest record per key, and swaps each group in
// atomically. It does not check Cleanable; the caller does. Reads and
// appends continue meanwhile: appends wait only for the swap's renames,
// readers for the moment the segment list changes. One Clean runs at a time
// per log.
func (l *Log) Clean(ctx context.Context, m *OffsetMap, o CleanOptions) (CleanStats, error) {
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	cfg := l.cleanCfg.Load()
	var st CleanStats
	if !cfg.Compact {
		return st, nil
	}
	if o.MaxOffset <= 0 {
		o.MaxOffset = math.MaxInt64
	}
	nowMs := l.nowMs()
	l.readMu.RLock()
	l.mu.RLock()
	if l.mu.closed {
		l.mu.RUnlock()
		l.readMu.RUnlock()
		return st, ErrClosed
	}
	p := l.planLocked(cfg, nowMs, o.MaxOffset, true)
	l.mu.RUnlock()
	l.readMu.RUnlock()
	defer func() {
		for _, cs := range p.segs {
			cs.file.release()
		}
	}()
	st.FirstDirty = p.firstDirty
	hz := l.tombHorizon.Load()
	if len(p.segs) == 0 || (p.dirty == 0 && (hz == 0 || hz > nowMs)) {
		return st, nil // nothing dirty, no tombstone due
	}

	// Records of aborted transactions are removed and never enter the
	// map (so an aborted write never shadows a committed one). The caller
	// bounds the pass by the last stable offset, so every transaction with
	// data below it is decided; the index knows the aborted ones.
	aborted := abortedSet(l.AbortedTxns(p.segs[0].base, p.uncleanable))
	m.Reset()
	if o.ReadBufferSize <= 0 {
		o.ReadBufferSize = defaultReadBufferSize
	}
	readBuf := make([]byte, max(o.ReadBufferSize, batch.HeaderSize))
	end, n, err := buildOffsetMap(ctx, m, &p, aborted, o.MaxDecompressed, &readBuf)
	st.BytesRead += n
	st.MapKeys = m.Len()
	if err != nil {
		return st, err
	}
	f := &batchFilter{
		m: m, end: end, nowMs: nowMs, deleteRetentionMs: cfg.DeleteRetentionMs,
		producerLast: o.ProducerLast, aborted: aborted, maxDecompressed: o.MaxDecompressed, horizon: math.MaxInt64,
		readBuf: &readBuf,
	}
	var todo []cleanSeg
	for _, cs := range p.segs {
		if cs.base < end {
			todo = append(todo, cs)
		}
	}
	for _, g := range groupSegments(todo, cfg.SegmentBytes) {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		if err := l.cleanGroup(ctx, g, f, cfg.IndexIntervalBytes, &st); err != nil {
			l.tombHorizon.Store(minHorizon(l.tombHorizon.Load(), f.horizon))
			return st, err
		}
	}
	st.FirstDirty = max(end, p.firstDirty)
	horizon := f.horizon
	if horizon == math.MaxInt64 {
		horizon = 0
	}
	if err := l.writeCleanerCheckpoint(st.FirstDirty, horizon); err != nil {
		return st, err
	}
	l.firstDirty.Store(st.FirstDirty)
	l.tombHorizon.Store(horizon)
	return st, nil
}

func minHorizon(a, b int64) int64 {
	switch {
	case b == math.MaxInt64:
		return a
	case a == 0:
		return b
	}
	return min(a, b)
}

// buildOffsetMap puts the keys of the dirty part of p into m, batch by
// batch, until the next batch's records would not fit. It returns the
// offset where the map ends (records from there on are kept by this pass)
// and the bytes read.
func buildOffsetMap(ctx context.Context, m *OffsetMap, p *cleanPlan, aborted abortedTxns, maxDec int, readBuf *[]byte) (end, read int64, err error) {
	end = p.firstDirty
	for _, cs := range p.segs {
		if cs.next <= p.firstDirty {
			continue
		}
		start := int64(0)
		if cs.base <= p.firstDirty {
			start = cs.startPos
		}
		w := newBulkWalker(cs.file.f, start, cs.size, readBuf)
		for {
			h, _, raw, err := w.next(true)
			if err == io.EOF {
				break
			}
			if err == nil {
				err = ctx.Err()
			}
			if err != nil {
				w.release()
				return end, read, readErr(h.BaseOffset, err)
			}
			if h.LastOffset() < p.firstDirty {
				continue
			}
			read += int64(len(raw))
			if !h.IsControl() && !aborted.has(&h) {
				if m.Len()+int(max(h.NumRecords, 0)) > m.MaxEntries() {
					w.release()
					if m.Len() == 0 {
						return end, read, fmt.Errorf("%w: batch at offset %d holds %d records, the map %d",
							ErrOffsetMapTooSmall, h.BaseOffset, h.NumRecords, m.MaxEntries())
					}
					return end, read, nil
				}
				base := h.BaseOffset
				err := batch.ForEachRecord(raw, maxDec, func(r *batch.Record) error {
					if r.Key != nil {
						m.Put(r.Key, base+int64(r.OffsetDelta))
					}
					return nil
				})
				if err != nil {
					w.release()
					return end, read, fmt.Errorf("%w: batch at offset %d: %w", ErrCorrupt, h.BaseOffset, err)
				}
			}
			end = h.LastOffset() + 1
		}
		w.release()
		end = cs.next
	}
	return end, read, nil
}

// abortedTxns maps a producer id to its aborted transactions, for a pass.
type abortedTxns map[int64][]AbortedTxn

func abortedSet(es []AbortedTxn) abortedTxns {
	out := abortedTxns{}
	for _, e := range es {
		out[e.ProducerID] = append(out[e.ProducerID], e)
	}
	return out
}

// has reports whether h is a data batch of an aborted transaction: a
// transactional batch within one of its producer's aborted ranges.
func (a abortedTxns) has(h *batch.Header) bool {
	if !h.IsTransactional() || h.IsControl() {
		return false
	}
	for _, e := range a[h.ProducerID] {
		if h.BaseOffset >= e.FirstOffset && h.BaseOffset <= e.LastOffset {
			return true
		}
	}
	return false
}

// groupSegments splits segs into runs of consecutive segments whose total
// size fits maxBytes and whose offsets fit an int32 relative to the first,
// as Kafka groups segments for cleaning.
func groupSegments(segs []cleanSeg, maxBytes int64) [][]cleanSeg {
	var groups [][]cleanSeg
	for len(segs) > 0 {
		n, size := 1, segs[0].size
		for n < len(segs) && size+segs[n].size <= maxBytes && segs[n].next-1-segs[0].base <= math.MaxInt32 {
			size += segs[n].size
			n++
		}
		groups = append(groups, segs[:n])
		segs = segs[n:]
	}
	return groups
}

// The cleaner checkpoint: a version line "0", the first dirty offset, and
// the earliest delete horizon of a kept tombstone (0: none). Kafka keeps the
// offsets of a whole log directory in one file; one file per partition
// directory keeps a partition self-contained here.

func (l *Log) writeCleanerCheckpoint(firstDirty, horizon int64) error {
	data := fmt.Appendf(nil, "0\n%d\n%d\n", firstDirty, horizon)
	if err := writeFileAtomic(l.fs, l.dir, cleanerCheckpointFile, data); err != nil {
		return err
	}
	return syncDir(l.fs, l.dir)
}

// loadCleanerCheckpoint loads the checkpoint; a missing or unreadable one
// means nothing was cleaned. Open calls it after recovery.
func (l *Log) loadCleanerCheckpoint() {
	fd, hz := l.readCleanerCheckpoint()
	l.firstDirty.Store(min(fd, l.leo.Load()))
	l.tombHorizon.Store(hz)
}

func (l *Log) readCleanerCheckpoint() (firstDirty, horizon int64) {
	b, err := readWholeFile(l.fs, l.path(cleanerCheckpointFile))
	if err != nil {
		if !isNotExist(err) {
			l.logger.Warn("log: ignoring unreadable cleaner checkpoint", "dir", l.dir, "err", err)
		}
		return 0, 0
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) == 3 && lines[0] == "0" {
		fd, err1 := strconv.ParseInt(lines[1], 10, 64)
		hz, err2 := strconv.ParseInt(lines[2], 10, 64)
		if err1 == nil && err2 == nil && fd >= 0 && hz >= 0 {
			return fd, hz
		}
	}
	l.logger.Warn("log: ignoring malformed cleaner checkpoint", "dir", l.dir)
	return 0, 0
}
