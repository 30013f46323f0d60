package log

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// epochEntry says that leader epoch Epoch started at offset StartOffset.
type epochEntry struct {
	Epoch       int32
	StartOffset int64
}

// EpochCache is a partition's leader-epoch cache (Kafka's
// LeaderEpochFileCache): the offset at which each leader epoch started, used
// to answer OffsetForLeaderEpoch and to find a divergent tail (KIP-101/279).
//
// Every change is persisted before the method returns, atomically, to the
// leader-epoch-checkpoint file (temp file, fsync, rename, directory fsync).
// The Log keeps the cache in step with the data: Append and AppendFollower
// assign new epochs, Truncate truncates from the end, DeleteRecords and
// retention truncate from the start. EpochCache is safe for concurrent use.
type EpochCache struct {
	fs     vfs.FS
	dir    string
	leo    func() int64 // the log end offset, for EndOffsetFor
	onFail func(error)  // called when persisting fails (the Log enters its failed state)
	logger *slog.Logger

	writeMu sync.Mutex // serializes checkpoint writes; taken before mu
	mu      struct {
		sync.RWMutex
		entries []epochEntry // epochs and start offsets strictly increasing
	}
}

func newEpochCache(fs vfs.FS, dir string, leo func() int64, onFail func(error), logger *slog.Logger) *EpochCache {
	return &EpochCache{fs: fs, dir: dir, leo: leo, onFail: onFail, logger: logger}
}

// Assign records that epoch starts at startOffset. It is ignored when epoch
// is not greater than the latest epoch. Entries that start at or after
// startOffset are dropped first (they cannot be right if a newer epoch starts
// before them), as Kafka does.
func (c *EpochCache) Assign(epoch int32, startOffset int64) error {
	if epoch < 0 || startOffset < 0 {
		return fmt.Errorf("%w: epoch %d at offset %d", ErrInvalidEpoch, epoch, startOffset)
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	c.mu.Lock()
	changed := c.assignLocked(epoch, startOffset)
	data := c.encodeIf(changed)
	c.mu.Unlock()
	return c.persist(data)
}

func (c *EpochCache) assignLocked(epoch int32, startOffset int64) bool {
	es := c.mu.entries
	if n := len(es); n > 0 && epoch <= es[n-1].Epoch {
		return false
	}
	n := len(es)
	for n > 0 && es[n-1].StartOffset >= startOffset {
		n--
	}
	if removed := es[n:]; len(removed) > 1 || (len(removed) == 1 && removed[0].StartOffset != startOffset) {
		c.logger.Warn("log: new leader epoch truncates conflicting epoch entries",
			"dir", c.dir, "epoch", epoch, "startOffset", startOffset, "removed", fmt.Sprint(removed))
	}
	c.mu.entries = append(es[:n], epochEntry{Epoch: epoch, StartOffset: startOffset})
	return true
}

// Latest returns the latest epoch and its start offset, or (-1, -1) when the
// cache is empty.
func (c *EpochCache) Latest() (epoch int32, startOffset int64) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if n := len(c.mu.entries); n > 0 {
		e := c.mu.entries[n-1]
		return e.Epoch, e.StartOffset
	}
	return -1, -1
}

// EndOffsetFor answers OffsetForLeaderEpoch with Kafka's semantics
// (LeaderEpochFileCache.endOffsetFor): foundEpoch is the largest cached epoch
// <= epoch and endOffset the start offset of the next higher cached epoch, or
// the log end offset when epoch is the latest. An epoch below every cached
// epoch returns (epoch, start offset of the first epoch); an undefined (-1)
// epoch, an epoch above the latest, or an empty cache return (-1, -1).
func (c *EpochCache) EndOffsetFor(epoch int32) (foundEpoch int32, endOffset int64) {
	const undefined = -1
	if epoch == undefined {
		return undefined, undefined
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	es := c.mu.entries
	if n := len(es); n > 0 && es[n-1].Epoch == epoch {
		return epoch, c.leo()
	}
	// higher: first entry with Epoch > epoch.
	higher := 0
	for higher < len(es) && es[higher].Epoch <= epoch {
		higher++
	}
	switch {
	case higher == len(es):
		return undefined, undefined
	case higher == 0:
		return epoch, es[0].StartOffset
	default:
		return es[higher-1].Epoch, es[higher].StartOffset
	}
}

// TruncateFromEnd drops every entry that starts at or after offset (the log
// was truncated to offset).
func (c *EpochCache) TruncateFromEnd(offset int64) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	c.mu.Lock()
	changed := c.truncateFromEndLocked(offset)
	data := c.encodeIf(changed)
	c.mu.Unlock()
	return c.persist(data)
}

func (c *EpochCache) truncateFromEndLocked(offset int64) bool {
	es := c.mu.entries
	n := len(es)
	for n > 0 && es[n-1].StartOffset >= offset {
		n--
	}
	c.mu.entries = es[:n]
	return n != len(es)
}

// TruncateFromStart drops the entries wholly before offset (the log start
// offset moved to offset): the last entry starting at or before offset is
// kept, moved to start at offset.
func (c *EpochCache) TruncateFromStart(offset int64) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	c.mu.Lock()
	changed := c.truncateFromStartLocked(offset)
	data := c.encodeIf(changed)
	c.mu.Unlock()
	return c.persist(data)
}

func (c *EpochCache) truncateFromStartLocked(offset int64) bool {
	es := c.mu.entries
	i := 0
	for i < len(es) && es[i].StartOffset <= offset {
		i++
	}
	if i == 0 || (i == 1 && es[0].StartOffset == offset) {
		return false
	}
	keep := es[i-1]
	keep.StartOffset = offset
	n := copy(es, es[i-1:])
	es[0] = keep
	c.mu.entries = es[:n]
	return true
}

// clear drops every entry (the log was emptied and restarted at a new offset).
func (c *EpochCache) clear() error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	c.mu.Lock()
	changed := len(c.mu.entries) > 0
	c.mu.entries = c.mu.entries[:0]
	data := c.encodeIf(changed)
	c.mu.Unlock()
	return c.persist(data)
}

// entries returns a copy of the cached entries, oldest first.
func (c *EpochCache) entries() []epochEntry {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return append([]epochEntry(nil), c.mu.entries...)
}

// encodeIf returns the checkpoint file contents if changed, else nil.
// Kafka's format: version line "0", the entry count, then "epoch offset" lines.
func (c *EpochCache) encodeIf(changed bool) []byte {
	if !changed {
		return nil
	}
	b := fmt.Appendf(nil, "0\n%d\n", len(c.mu.entries))
	for _, e := range c.mu.entries {
		b = fmt.Appendf(b, "%d %d\n", e.Epoch, e.StartOffset)
	}
	return b
}

// persist writes data (if any) to the checkpoint file. Called with writeMu
// held so that snapshots reach the file in order.
func (c *EpochCache) persist(data []byte) error {
	if data == nil {
		return nil
	}
	err := writeFileAtomic(c.fs, c.dir, epochCheckpointFile, data)
	if err == nil {
		err = syncDir(c.fs, c.dir)
	}
	if err != nil {
		err = fmt.Errorf("log: write %s: %w", epochCheckpointFile, err)
		c.onFail(err)
	}
	return err
}

// parseEpochCheckpoint parses the leader-epoch-checkpoint file.
func parseEpochCheckpoint(b []byte) ([]epochEntry, error) {
	bad := func(why string) ([]epochEntry, error) {
		return nil, fmt.Errorf("%w: %s: %s", ErrCorrupt, epochCheckpointFile, why)
	}
	s := string(b)
	if !strings.HasSuffix(s, "\n") {
		return bad("missing final newline")
	}
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	if len(lines) < 2 || lines[0] != "0" {
		return bad("missing version 0 header")
	}
	n, err := strconv.Atoi(lines[1])
	if err != nil || n < 0 || n != len(lines)-2 {
		return bad("entry count does not match")
	}
	es := make([]epochEntry, 0, n)
	for _, line := range lines[2:] {
		f := strings.Fields(line)
		if len(f) != 2 {
			return bad("malformed entry " + strconv.Quote(line))
		}
		epoch, err1 := strconv.ParseInt(f[0], 10, 32)
		off, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil || epoch < 0 || off < 0 {
			return bad("malformed entry " + strconv.Quote(line))
		}
		if k := len(es); k > 0 && (int32(epoch) <= es[k-1].Epoch || off < es[k-1].StartOffset) {
			return bad("entries out of order")
		}
		es = append(es, epochEntry{Epoch: int32(epoch), StartOffset: off})
	}
	return es, nil
}
