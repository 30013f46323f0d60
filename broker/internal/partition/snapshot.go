package partition

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// The producer snapshot: the producer table (with each producer's open
// transaction and coordinator epoch) as JSON at a log offset, written by a
// clean Close and removed once Open has read it, so that a crash always
// rescans the log.

const producerSnapshot = "producer-state.json"

// snapshot is the producer table at a log offset.
type snapshot struct {
	Offset    int64     `json:"offset"`
	Producers producers `json:"producers"`
}

// loadProducers rebuilds the producer table and the transaction state: the
// snapshot a clean Close wrote, then the log after it. Without a snapshot
// (a crash), or when the log found its aborted-transaction index damaged,
// the whole log is scanned, which also restores the index entries a crash
// lost.
func (p *Partition) loadProducers() error {
	p.producers = producers{}
	from := p.log.LogStartOffset()
	path := p.fs.PathJoin(p.dir, producerSnapshot)
	if f, err := p.fs.Open(path); err == nil {
		var s snapshot
		err := json.NewDecoder(f).Decode(&s)
		f.Close()
		switch {
		case err != nil:
			p.logger.Warn("producer snapshot unreadable; rebuilding from the log", "err", err)
		case s.Offset > p.log.LogEndOffset():
			p.logger.Warn("producer snapshot is ahead of the log; rebuilding from the log", "snapshot", s.Offset, "leo", p.log.LogEndOffset())
		case p.log.TxnIndexDamaged():
			p.logger.Warn("aborted-transaction index damaged; rebuilding the producer state and the index from the log")
		default:
			p.producers = s.Producers
			if p.producers == nil {
				p.producers = producers{}
			}
			from = max(s.Offset, from)
		}
		// The snapshot is only good until the log changes again.
		if err := p.fs.Remove(path); err != nil {
			return fmt.Errorf("partition: remove producer snapshot: %w", err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("partition: open producer snapshot: %w", err)
	}
	p.mu.Lock()
	p.resetTxnsLocked()
	p.mu.Unlock()
	return p.scanLog(p.producers, from)
}

// saveProducers writes the producer table as of the log end offset, so the
// next Open does not rescan the log.
func (p *Partition) saveProducers() error {
	data, err := json.Marshal(snapshot{Offset: p.log.LogEndOffset(), Producers: p.producers})
	if err != nil {
		return err
	}
	tmp := p.fs.PathJoin(p.dir, producerSnapshot+".tmp")
	f, err := p.fs.Create(tmp, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return p.fs.Rename(tmp, p.fs.PathJoin(p.dir, producerSnapshot))
}
