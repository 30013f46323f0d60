package log

import (
	"fmt"
	"strconv"
	"strings"
)

// Swapping cleaned segments in, after Kafka's replaceSegments: the cleaned
// group is written to <base>.<next>.cleaned and fsynced; then, with appendMu
// held and the group checked unchanged, it is renamed to <base>.<next>.swap
// and the directory fsynced (the commit point), the segment list updated,
// the group's old files deleted, the .swap renamed to <base>.log and the
// directory fsynced again, and the new indexes written. Open deletes
// .cleaned files and completes a .swap: it deletes every segment file
// whose base lies in [base, next) and renames the .swap to <base>.log.

const (
	cleanedSuffix = ".cleaned"
	swapSuffix    = ".swap"
)

// cleanedFileName names a cleaned group's file by the offset range it
// replaces.
func cleanedFileName(base, next int64, suffix string) string {
	return fmt.Sprintf("%020d.%020d%s", base, next, suffix)
}

// parseCleanedFileName is the inverse of cleanedFileName.
func parseCleanedFileName(name, suffix string) (base, next int64, ok bool) {
	digits, found := strings.CutSuffix(name, suffix)
	if !found || len(digits) != 2*baseOffsetDigits+1 || digits[baseOffsetDigits] != '.' {
		return 0, 0, false
	}
	b, err1 := strconv.ParseInt(digits[:baseOffsetDigits], 10, 64)
	n, err2 := strconv.ParseInt(digits[baseOffsetDigits+1:], 10, 64)
	if err1 != nil || err2 != nil || b < 0 || n < b {
		return 0, 0, false
	}
	return b, n, true
}

// hook calls the test hook at a step of cleaning, if one is set.
func (l *Log) hook(step string) {
	if l.cleanHook != nil {
		l.cleanHook(step)
	}
}

// swapIn replaces the segments of g with ns (see above). If the segment
// list changed since the pass saw g, or the log is closed or failed, ns is
// discarded and errCleanAborted (or the log's error) returned. An IO error
// from the commit point on fails the log: reopening completes the swap.
func (l *Log) swapIn(g []cleanSeg, ns *segment) error {
	base, next := g[0].base, g[len(g)-1].next
	cleaned := l.path(cleanedFileName(base, next, cleanedSuffix))
	discard := func(err error) error {
		ns.file.release()
		_ = l.fs.Remove(cleaned)
		return err
	}
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.writableLocked(); err != nil {
		return discard(err)
	}
	segs := l.mu.segments // appendMu held: the list cannot change
	i := 0
	for i < len(segs) && segs[i] != g[0].s {
		i++
	}
	if i+len(g) >= len(segs) { // missing, or would include the active segment
		return discard(errCleanAborted)
	}
	for j, cs := range g {
		s := segs[i+j]
		if s != cs.s || s.size != cs.size || s.next != cs.next {
			return discard(errCleanAborted)
		}
	}
	failed := func(err error) error {
		l.fail(err)
		return fmt.Errorf("%w: %w", ErrFailed, err)
	}
	swap := l.path(cleanedFileName(base, next, swapSuffix))
	if err := l.fs.Rename(cleaned, swap); err != nil {
		return failed(discard(fmt.Errorf("log: rename %s: %w", cleaned, err)))
	}
	if err := syncDir(l.fs, l.dir); err != nil {
		return failed(err)
	}
	l.hook("swap")

	// The group's aborted-transaction entries move to the cleaned
	// segment: markers are kept, so their offsets stay in its range.
	for _, cs := range g {
		ns.txns = append(ns.txns, cs.s.txns...)
	}
	l.readMu.Lock()
	l.mu.Lock()
	nsegs := make([]*segment, 0, len(segs)-len(g)+1)
	nsegs = append(append(append(nsegs, segs[:i]...), ns), segs[i+len(g):]...)
	l.mu.segments = nsegs
	l.mu.Unlock()
	l.readMu.Unlock()
	bases := make([]int64, len(g))
	for j, cs := range g {
		bases[j] = cs.base
		cs.s.file.release() // the list's reference; the pass holds its own
	}
	l.hook("installed")
	if err := l.removeSegmentFiles(bases); err != nil {
		return failed(err)
	}
	l.hook("deleted")
	if err := l.fs.Rename(swap, l.path(segmentFileName(base, logSuffix))); err != nil {
		return failed(fmt.Errorf("log: rename %s: %w", swap, err))
	}
	if err := syncDir(l.fs, l.dir); err != nil {
		return failed(err)
	}
	l.hook("renamed")
	if err := l.writeIndexesLocked(ns); err != nil {
		return failed(err)
	}
	l.hook("indexed")
	return nil
}

// recoverSwaps handles what an interrupted cleaning pass left in the
// directory: .cleaned files are deleted; a .swap file replaces the segment
// files in its range. It runs at Open before the segments are listed.
func (l *Log) recoverSwaps(names []string) (changed bool, err error) {
	for _, name := range names {
		if _, _, ok := parseCleanedFileName(name, cleanedSuffix); ok {
			if err := l.fs.Remove(l.path(name)); err != nil && !isNotExist(err) {
				return changed, err
			}
			changed = true
		}
	}
	for _, name := range names {
		base, next, ok := parseCleanedFileName(name, swapSuffix)
		if !ok {
			continue
		}
		var bases []int64
		for _, other := range names {
			if b, suffix, ok := parseSegmentFileName(other); ok && suffix == logSuffix && b >= base && b < next {
				bases = append(bases, b)
			}
		}
		if !contains(bases, base) {
			bases = append(bases, base) // its index files may remain
		}
		l.logger.Warn("log: recovery completes an interrupted cleaning swap",
			"dir", l.dir, "swap", name, "replacedSegments", len(bases))
		if err := l.removeSegmentFiles(bases); err != nil {
			return changed, err
		}
		if err := l.fs.Rename(l.path(name), l.path(segmentFileName(base, logSuffix))); err != nil {
			return changed, err
		}
		changed = true
	}
	if changed {
		err = syncDir(l.fs, l.dir)
	}
	return changed, err
}

func contains(xs []int64, x int64) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
