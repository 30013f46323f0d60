package log

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/runnel-io/runnel/broker/internal/batch"
)

// Open opens the log in opts.Dir, creating the directory if it is missing,
// and recovers it (see doc.go): after an unclean shutdown the active segment
// is scanned and truncated at the first invalid batch; any segment whose
// index files are missing or inconsistent is rebuilt by scanning it.
func Open(opts Options) (*Log, error) {
	if opts.Dir == "" {
		return nil, errors.New("log: Options.Dir is empty")
	}
	l := &Log{fs: opts.FS, dir: opts.Dir, now: opts.Now, logger: opts.Logger}
	if l.fs == nil {
		l.fs = vfs.Default
	}
	if l.now == nil {
		l.now = time.Now
	}
	if l.logger == nil {
		l.logger = slog.Default()
	}
	l.cfg = opts.Config.withDefaults()
	cfg := l.cfg
	l.cleanCfg.Store(&cfg)
	l.flushNever.Store(l.cfg.FlushNever)
	l.indexInterval.Store(l.cfg.IndexIntervalBytes)
	l.epochs = newEpochCache(l.fs, l.dir, l.leo.Load, l.fail, l.logger)
	if err := l.createDir(); err != nil {
		return nil, err
	}
	if err := l.load(); err != nil {
		for _, s := range l.mu.segments {
			s.file.release()
		}
		return nil, fmt.Errorf("log: open %s: %w", l.dir, err)
	}
	return l, nil
}

// createDir creates the directory and fsyncs the parent of every directory
// it created, so that the directory survives a crash.
func (l *Log) createDir() error {
	var missing []string
	for d := l.dir; ; {
		_, err := l.fs.Stat(d)
		if err == nil {
			break
		}
		if !isNotExist(err) {
			return fmt.Errorf("log: stat %s: %w", d, err)
		}
		missing = append(missing, d)
		parent := l.fs.PathDir(d)
		if parent == d {
			break
		}
		d = parent
	}
	if len(missing) == 0 {
		return nil
	}
	if err := l.fs.MkdirAll(l.dir, 0o755); err != nil {
		return fmt.Errorf("log: create %s: %w", l.dir, err)
	}
	for _, d := range missing {
		if err := syncDir(l.fs, l.fs.PathDir(d)); err != nil {
			return err
		}
	}
	return nil
}

// load reads the directory and rebuilds the in-memory state. It runs before
// the Log is shared, so it takes no locks.
func (l *Log) load() error {
	names, err := l.fs.List(l.dir)
	if err != nil {
		return err
	}
	if changed, err := l.recoverSwaps(names); err != nil {
		return err
	} else if changed {
		if names, err = l.fs.List(l.dir); err != nil {
			return err
		}
	}
	clean := false
	var bases []int64
	indexes := map[int64][]string{}
	for _, name := range names {
		switch {
		case name == cleanShutdownFile:
			clean = true
		case strings.HasSuffix(name, tmpSuffix):
			// Left by an interrupted atomic write or truncation copy; the
			// file it was meant to replace is intact.
			if err := l.fs.Remove(l.path(name)); err != nil && !isNotExist(err) {
				return err
			}
		default:
			base, suffix, ok := parseSegmentFileName(name)
			switch {
			case !ok:
			case suffix == logSuffix:
				bases = append(bases, base)
			default:
				indexes[base] = append(indexes[base], name)
			}
		}
	}
	if clean {
		// From now on a crash must force a scan. The directory is fsynced
		// before Open returns, so before anything is appended.
		if err := l.fs.Remove(l.path(cleanShutdownFile)); err != nil && !isNotExist(err) {
			return err
		}
	}
	slices.Sort(bases)
	for base, files := range indexes { // index files without a segment
		if _, found := slices.BinarySearch(bases, base); !found {
			for _, name := range files {
				if err := l.fs.Remove(l.path(name)); err != nil && !isNotExist(err) {
					return err
				}
			}
		}
	}
	lsoCheckpoint, err := l.readLogStartOffset()
	if err != nil {
		return err
	}

	cleanedTo, _ := l.readCleanerCheckpoint()
	var scannedEpochs []epochEntry // epochs seen in scanned batches, for repairing the cache
	var rebuilt []*segment         // segments whose indexes were rebuilt
	for i, base := range bases {
		last := i == len(bases)-1
		if n := len(l.mu.segments); n > 0 && l.mu.segments[n-1].next < base {
			// Compaction removed the batches at the end of the previous
			// segment: its range reaches this one.
			l.mu.segments[n-1].next = base
		}
		if n := len(l.mu.segments); n > 0 && l.mu.segments[n-1].next != base {
			prev := l.mu.segments[n-1]
			l.logger.Warn("log: recovery deletes segments that do not follow the previous one",
				"dir", l.dir, "expectedBase", prev.next, "firstDeleted", base, "count", len(bases)-i)
			if err := l.removeSegmentFiles(bases[i:]); err != nil {
				return err
			}
			break
		}
		f, err := l.fs.OpenReadWrite(l.path(segmentFileName(base, logSuffix)), vfs.WriteCategoryUnspecified)
		if err != nil {
			return err
		}
		s := newSegment(base, f)
		l.mu.segments = append(l.mu.segments, s)
		if err := l.loadTxnIndex(s); err != nil {
			return err
		}
		expectNext := int64(-1)
		if !last {
			expectNext = bases[i+1]
		}
		ok := false
		if clean || !last {
			if ok, err = l.loadIndexes(s, expectNext); err != nil {
				return err
			}
		}
		if ok {
			continue
		}
		// Only cleaned segments may have offset gaps; the active one is
		// never cleaned unless a truncation made a cleaned one active.
		allowGaps := !last || base < cleanedTo
		truncated, err := l.recoverSegment(s, allowGaps, func(e epochEntry) { scannedEpochs = append(scannedEpochs, e) })
		if err != nil {
			return err
		}
		rebuilt = append(rebuilt, s)
		if truncated && !last {
			l.logger.Warn("log: recovery deletes the segments after a truncated one",
				"dir", l.dir, "firstDeleted", bases[i+1], "count", len(bases)-i-1)
			if err := l.removeSegmentFiles(bases[i+1:]); err != nil {
				return err
			}
			break
		}
	}
	if len(l.mu.segments) == 0 {
		s, err := l.createSegment(max(lsoCheckpoint, 0))
		if err != nil {
			return err
		}
		l.mu.segments = append(l.mu.segments, s)
	}
	act := l.activeLocked()
	for _, s := range rebuilt {
		// The scanned bytes may have been in the page cache only.
		if err := s.file.f.Sync(); err != nil {
			return fmt.Errorf("log: fsync %s: %w", segmentFileName(s.base, logSuffix), err)
		}
		if s != act {
			if err := l.writeIndexesLocked(s); err != nil {
				return err
			}
		}
	}
	for _, s := range l.mu.segments {
		s.syncedSize.Store(s.size)
		// Entries whose markers recovery cut (or that a crash left
		// behind a truncation) must not outlive a rewrite of those offsets.
		if s.truncateTxns(s.next) {
			if err := l.writeTxnIndexLocked(s); err != nil {
				return err
			}
		}
	}
	leo := act.next
	l.leo.Store(leo)
	lso := max(lsoCheckpoint, l.mu.segments[0].base)
	if lso > leo {
		l.logger.Warn("log: log start offset is beyond the recovered log end offset; deleting every segment",
			"dir", l.dir, "logStartOffset", lso, "logEndOffset", leo)
		if err := l.restartAtLocked(lso); err != nil {
			return err
		}
		leo, scannedEpochs = lso, nil
		act = l.activeLocked()
	}
	l.lso.Store(lso)
	l.syncedTo.Store(leo)
	if err := l.loadEpochs(scannedEpochs, lso, leo); err != nil {
		return err
	}
	if err := l.setRollBase(act); err != nil {
		return err
	}
	l.loadCleanerCheckpoint()
	return syncDir(l.fs, l.dir)
}

func (l *Log) readLogStartOffset() (int64, error) {
	b, err := readWholeFile(l.fs, l.path(logStartOffsetFile))
	if isNotExist(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	off, err := parseLogStartOffset(b)
	if err != nil {
		l.logger.Warn("log: ignoring unreadable log start offset checkpoint", "dir", l.dir, "err", err)
		return 0, nil
	}
	return off, nil
}

// loadIndexes loads s's index files and checks them against the segment:
// well-formed entries, and a walk from the last offset-index entry to the end
// of the file that finds whole batches with contiguous offsets ending at
// expectNext (if >= 0). It returns false, leaving s for a rebuild, when a file
// is missing or anything does not match; an error only for IO errors.
func (l *Log) loadIndexes(s *segment, expectNext int64) (bool, error) {
	st, err := s.file.f.Stat()
	if err != nil {
		return false, err
	}
	fileSize := st.Size()
	oi, err := readWholeFile(l.fs, l.path(segmentFileName(s.base, indexSuffix)))
	if isNotExist(err) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	ti, err := readWholeFile(l.fs, l.path(segmentFileName(s.base, timeIndexSuffix)))
	if isNotExist(err) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	reject := func(why string, err error) (bool, error) {
		l.logger.Warn("log: rebuilding index files", "dir", l.dir, "segment", s.base, "reason", why, "err", err)
		s.reset()
		return false, nil
	}
	if err := offsetIndex(oi).check(fileSize); err != nil {
		return reject("bad offset index", err)
	}
	if err := timeIndex(ti).check(); err != nil {
		return reject("bad time index", err)
	}
	s.offIdx, s.timeIdx = oi, ti
	startPos, next := int64(0), s.base
	if rel, pos, ok := s.offIdx.last(); ok {
		startPos, next = int64(pos), s.base+int64(rel)
	}
	tailMax := int64(-1)
	w := newWalker(s.file.f, startPos, fileSize)
	defer w.release()
	for {
		h, pos, _, err := w.next(false)
		if err == io.EOF {
			break
		}
		if errors.Is(err, errBadBatch) {
			return reject("segment tail does not match the offset index", err)
		}
		if err != nil {
			return false, err
		}
		if h.BaseOffset < next { // compaction leaves gaps, never overlaps
			return reject("segment tail does not match the offset index",
				fmt.Errorf("batch at position %d has offset %d, expected %d", pos, h.BaseOffset, next))
		}
		tailMax = max(tailMax, h.MaxTimestamp)
		next = h.LastOffset() + 1
	}
	if expectNext >= 0 && next > expectNext {
		return reject("segment does not end where the next one starts",
			fmt.Errorf("ends at offset %d, next segment starts at %d", next, expectNext))
	}
	lastTs, lastRel, haveTs := s.timeIdx.last()
	if haveTs && s.base+int64(lastRel) >= next {
		return reject("time index points past the segment", nil)
	}
	// The last time-index entry is written at roll/Close with the segment's
	// largest timestamp, so no batch in the tail can exceed it.
	if !haveTs {
		lastTs = -1
	}
	if tailMax > lastTs {
		return reject("time index does not hold the segment's largest timestamp", nil)
	}
	if expectNext >= 0 {
		next = expectNext // a cleaned segment's range outlives its last batches
	}
	s.size, s.next = fileSize, next
	s.bytesSinceIdx = fileSize - startPos
	if ts, rel, ok := s.timeIdx.last(); ok {
		s.maxTs, s.maxTsOffset, s.idxTs = ts, s.base+int64(rel), ts
	}
	return true, nil
}

// recoverSegment rebuilds s from its bytes: it walks every batch checking
// length bounds, magic 2, CRC32C and contiguous offsets from s.base, rebuilds
// the indexes, and truncates the file at the first invalid or partial batch.
// onEpoch is called with each batch whose leader epoch differs from the
// previous batch's. It reports whether it truncated.
func (l *Log) recoverSegment(s *segment, allowGaps bool, onEpoch func(epochEntry)) (truncated bool, err error) {
	st, err := s.file.f.Stat()
	if err != nil {
		return false, err
	}
	fileSize := st.Size()
	s.reset()
	w := newWalker(s.file.f, 0, fileSize)
	defer w.release()
	nowMs, lastEpoch := l.nowMs(), int32(-1)
	var bad error
	for bad == nil {
		h, pos, raw, err := w.next(true)
		switch {
		case err == io.EOF:
			return false, nil
		case errors.Is(err, errBadBatch):
			bad = err
		case err != nil:
			return false, err
		case h.BaseOffset < s.next || (h.BaseOffset != s.next && !allowGaps):
			bad = fmt.Errorf("%w: batch at position %d has offset %d, expected at least %d", errBadBatch, pos, h.BaseOffset, s.next)
		case batch.ComputeCRC(raw) != h.CRC:
			bad = fmt.Errorf("%w: batch at position %d (offset %d): %w", errBadBatch, pos, h.BaseOffset, batch.ErrCRC)
		default:
			s.addBatch(&h, pos, int64(len(raw)), l.cfg.IndexIntervalBytes, nowMs)
			if h.PartitionLeaderEpoch != lastEpoch && h.PartitionLeaderEpoch >= 0 {
				lastEpoch = h.PartitionLeaderEpoch
				onEpoch(epochEntry{Epoch: h.PartitionLeaderEpoch, StartOffset: h.BaseOffset})
			}
		}
	}
	l.logger.Warn("log: recovery truncated a segment at the first invalid batch",
		"dir", l.dir, "segment", segmentFileName(s.base, logSuffix), "position", s.size,
		"bytesCut", fileSize-s.size, "nextOffset", s.next, "reason", bad)
	nf, err := l.truncateFile(s, s.size)
	if err != nil {
		return true, err
	}
	if nf != s.file {
		old := s.file
		s.file = nf
		old.release()
	}
	return true, nil
}

// loadEpochs loads the leader-epoch checkpoint and repairs it against the
// recovered log: epochs seen in scanned batches are assigned, entries at or
// beyond the log end offset dropped, the first entry moved up to the log
// start offset. A missing or unreadable checkpoint is rebuilt from the
// epochs stamped in every batch.
func (l *Log) loadEpochs(scanned []epochEntry, lso, leo int64) error {
	c := l.epochs
	b, err := readWholeFile(l.fs, l.path(epochCheckpointFile))
	var entries []epochEntry
	rebuild := false
	switch {
	case isNotExist(err):
		rebuild = true
	case err != nil:
		return err
	default:
		if entries, err = parseEpochCheckpoint(b); err != nil {
			l.logger.Warn("log: rebuilding the leader epoch cache from the segments", "dir", l.dir, "err", err)
			rebuild = true
		}
	}
	if rebuild {
		if scanned, err = l.collectEpochs(); err != nil {
			return err
		}
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	c.mu.Lock()
	c.mu.entries = entries
	changed := rebuild
	for _, e := range scanned {
		changed = c.assignLocked(e.Epoch, e.StartOffset) || changed
	}
	changed = c.truncateFromEndLocked(leo) || changed
	changed = c.truncateFromStartLocked(lso) || changed
	data := c.encodeIf(changed)
	c.mu.Unlock()
	return c.persist(data)
}

// collectEpochs walks every batch header and returns an entry for each change
// of leader epoch.
func (l *Log) collectEpochs() ([]epochEntry, error) {
	var es []epochEntry
	lastEpoch := int32(-1)
	for _, s := range l.mu.segments {
		w := newWalker(s.file.f, 0, s.size)
		for {
			h, _, _, err := w.next(false)
			if err == io.EOF {
				break
			}
			if err != nil {
				w.release()
				return nil, err
			}
			if h.PartitionLeaderEpoch >= 0 && h.PartitionLeaderEpoch != lastEpoch {
				lastEpoch = h.PartitionLeaderEpoch
				es = append(es, epochEntry{Epoch: h.PartitionLeaderEpoch, StartOffset: h.BaseOffset})
			}
		}
		w.release()
	}
	return es, nil
}

// setRollBase sets when the active segment's segment.ms clock started: the
// first batch's MaxTimestamp (as Kafka), but never later than now.
func (l *Log) setRollBase(s *segment) error {
	if s.size == 0 {
		return nil
	}
	w := newWalker(s.file.f, 0, s.size)
	defer w.release()
	h, _, _, err := w.next(false)
	if err != nil {
		return err
	}
	now := l.nowMs()
	s.rollBaseMs = now
	if h.MaxTimestamp >= 0 && h.MaxTimestamp < now {
		s.rollBaseMs = h.MaxTimestamp
	}
	return nil
}
