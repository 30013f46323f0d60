package log

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/runnel-io/runnel/broker/internal/batch"
)

// batchFilter decides, batch by batch, what a cleaning pass keeps. It is a
// plain function of the batch, the offset map, the clock and the producer
// table, and reuses its buffers across batches.
type batchFilter struct {
	m                 *OffsetMap
	end               int64 // records at or after end are beyond the map: kept
	nowMs             int64
	deleteRetentionMs int64
	producerLast      map[int64]int64
	aborted           abortedTxns
	maxDecompressed   int

	// horizon is the earliest delete horizon of a batch written with
	// tombstones; math.MaxInt64 if none.
	horizon int64

	recs, tmp, cmp, out []byte
	readBuf             *[]byte // segment read chunks
}

// filter returns what to write for the batch raw with header h (nil: drop
// it) and how many of its records it read and removed. The returned slice
// is raw itself or a buffer reused by the next call. As Kafka's cleaner:
//
//   - a record is kept if it is at or after the map's end, or its key's
//     newest offset in the map is not after it and it has a value or its
//     batch's delete horizon has not passed (no horizon yet counts as not
//     passed); a record without a key is dropped;
//   - a batch that keeps every record and needs no new delete horizon is
//     written unchanged; otherwise it is rebuilt with the kept records, the
//     same codec, base offset, last offset delta, producer id, epoch, base
//     sequence, leader epoch and attributes, and the max timestamp of the
//     kept records (LogAppendTime batches keep theirs). Unlike Kafka, which
//     restarts the base timestamp at the first kept record, the base
//     timestamp stays (saving a re-encode): record timestamps are the same
//     either way. A batch that keeps tombstones
//     and has no horizon gets now+delete.retention.ms as its horizon (KIP-534:
//     attribute bit 6, the horizon in the base timestamp, record timestamp
//     deltas rebased so record timestamps do not change);
//   - a batch left empty is dropped, unless it is its producer's newest,
//     which stays as an empty batch (header only);
//   - every record of an aborted transaction's batch is removed;
//   - control batches are kept as they are (Kafka removes a marker once
//     its transaction's records are gone and delete.retention.ms passed;
//     Runnel keeps markers, a few bytes each).
func (f *batchFilter) filter(raw []byte, h *batch.Header) (out []byte, read, removed int, err error) {
	if h.IsControl() {
		return raw, 0, 0, nil
	}
	if f.aborted.has(h) {
		return f.dropAll(raw, h, int(max(h.NumRecords, 0)))
	}
	hasHorizon := h.Attributes&batch.AttrDeleteHorizon != 0
	keepTombstones := !hasHorizon || f.nowMs < h.FirstTimestamp
	f.recs = f.recs[:0]
	kept, tombstones, maxTs := 0, false, int64(-1)
	err = batch.ForEachRecord(raw, f.maxDecompressed, func(r *batch.Record) error {
		read++
		off := h.BaseOffset + int64(r.OffsetDelta)
		keep := off >= f.end
		if !keep && r.Key != nil {
			keep = off >= f.m.Get(r.Key) && (r.Value != nil || keepTombstones)
		}
		if !keep {
			return nil
		}
		kept++
		tombstones = tombstones || r.Value == nil
		maxTs = max(maxTs, h.FirstTimestamp+r.TimestampDelta)
		f.recs = batch.AppendRecord(f.recs, r)
		return nil
	})
	if err != nil {
		return nil, read, 0, fmt.Errorf("%w: batch at offset %d: %w", ErrCorrupt, h.BaseOffset, err)
	}
	removed = read - kept
	needHorizon := tombstones && !hasHorizon
	if tombstones {
		horizon := h.FirstTimestamp
		if needHorizon {
			horizon = f.nowMs + f.deleteRetentionMs
		}
		f.horizon = min(f.horizon, horizon)
	}
	switch {
	case kept == read && !needHorizon && read > 0:
		return raw, read, 0, nil
	case kept == 0:
		return f.dropAll(raw, h, read)
	}
	nh := *h
	nh.NumRecords = int32(kept)
	if !h.IsLogAppendTime() {
		nh.MaxTimestamp = maxTs
	}
	recs := f.recs
	if needHorizon {
		nh.Attributes |= batch.AttrDeleteHorizon
		nh.FirstTimestamp = f.nowMs + f.deleteRetentionMs
		if recs, err = f.rebase(h, recs, nh.FirstTimestamp); err != nil {
			return nil, read, 0, err
		}
	}
	if f.cmp, err = batch.Compress(f.cmp[:0], h.Codec(), recs); err != nil {
		return nil, read, 0, fmt.Errorf("log: recompress batch at offset %d: %w", h.BaseOffset, err)
	}
	f.out = batch.AppendBatch(f.out[:0], &nh, f.cmp)
	return f.out, read, removed, nil
}

// dropAll is filter's answer for a batch that keeps none of its read
// records: nothing, or, for its producer's newest batch, the batch emptied.
func (f *batchFilter) dropAll(raw []byte, h *batch.Header, read int) ([]byte, int, int, error) {
	if last, ok := f.producerLast[h.ProducerID]; !h.HasProducerID() || !ok || last != h.LastOffset() {
		return nil, read, read, nil
	}
	if read == 0 {
		return raw, 0, 0, nil // already empty
	}
	eh := *h
	eh.Attributes &^= batch.AttrCompressionMask | batch.AttrDeleteHorizon
	eh.FirstTimestamp = h.MaxTimestamp
	eh.NumRecords = 0
	f.out = batch.AppendBatch(f.out[:0], &eh, nil)
	return f.out, read, read, nil
}

// rebase re-encodes recs (records of h, timestamp deltas relative to
// h.FirstTimestamp) with deltas relative to base.
func (f *batchFilter) rebase(h *batch.Header, recs []byte, base int64) ([]byte, error) {
	tmp := *h
	tmp.Attributes &^= batch.AttrCompressionMask
	tmp.NumRecords = int32(0)
	// Count the records: AppendBatch wants NumRecords, ForEachRecord checks it.
	for p := recs; len(p) > 0; tmp.NumRecords++ {
		n, k := binary.Varint(p)
		if k <= 0 || n < 0 || int64(len(p)-k) < n {
			return nil, fmt.Errorf("log: rebase: bad record encoding")
		}
		p = p[k+int(n):]
	}
	f.tmp = batch.AppendBatch(f.tmp[:0], &tmp, recs)
	shift := h.FirstTimestamp - base
	out := make([]byte, 0, len(recs)+int(tmp.NumRecords)*4)
	err := batch.ForEachRecord(f.tmp, len(recs)+1, func(r *batch.Record) error {
		r.TimestampDelta += shift
		out = batch.AppendRecord(out, r)
		return nil
	})
	return out, err
}

// cleanGroup writes the cleaned form of the segments g into one new file
// named for g's range, then swaps it in for them.
func (l *Log) cleanGroup(ctx context.Context, g []cleanSeg, f *batchFilter, interval int32, st *CleanStats) error {
	base, next := g[0].base, g[len(g)-1].next
	name := l.path(cleanedFileName(base, next, cleanedSuffix))
	file, err := l.fs.Create(name, vfs.WriteCategoryUnspecified)
	if err != nil {
		return fmt.Errorf("log: create %s: %w", name, err)
	}
	ns := newSegment(base, file)
	discard := func(err error) error {
		ns.file.release()
		_ = l.fs.Remove(name)
		return err
	}
	var (
		buf      []byte
		flushed  int64
		nowMs    = l.nowMs()
		read     int64
		written  int64
		recsRead int64
		removed  int64
	)
	flush := func() error {
		if len(buf) == 0 {
			return nil
		}
		if _, err := file.WriteAt(buf, flushed); err != nil {
			return fmt.Errorf("log: write %s: %w", name, err)
		}
		flushed += int64(len(buf))
		buf = buf[:0]
		return nil
	}
	for _, cs := range g {
		w := newBulkWalker(cs.file.f, 0, cs.size, f.readBuf)
		for {
			h, _, raw, err := w.next(true)
			if err == io.EOF {
				break
			}
			if err == nil {
				err = ctx.Err() // the server closes: stop at the next batch
			}
			if err == nil && l.isClosed() {
				err = errCleanAborted // the log was closed or deleted under the pass
			}
			if err != nil {
				w.release()
				return discard(readErr(h.BaseOffset, err))
			}
			read += int64(len(raw))
			out, n, rm, err := f.filter(raw, &h)
			if err != nil {
				w.release()
				return discard(err)
			}
			recsRead += int64(n)
			removed += int64(rm)
			if out == nil {
				continue
			}
			oh, _ := batch.ParseHeader(out)
			ns.addBatch(&oh, flushed+int64(len(buf)), int64(len(out)), interval, nowMs)
			buf = append(buf, out...)
			written += int64(len(out))
			if len(buf) >= 1<<20 {
				if err := flush(); err != nil {
					w.release()
					return discard(err)
				}
			}
		}
		w.release()
	}
	if err := flush(); err != nil {
		return discard(err)
	}
	if err := file.Sync(); err != nil {
		return discard(fmt.Errorf("log: fsync %s: %w", name, err))
	}
	ns.next = next
	ns.addTimeEntry()
	ns.syncedSize.Store(ns.size)
	l.hook("cleaned")
	if err := l.swapIn(g, ns); err != nil {
		return err
	}
	st.Segments += len(g)
	st.BytesRead += read
	st.BytesWritten += written
	st.RecordsRead += recsRead
	st.RecordsRemoved += removed
	return nil
}
