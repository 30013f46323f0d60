package partition

import (
	"github.com/runnel-io/runnel/broker/internal/batch"
)

// ListOffsets' special timestamps.
const (
	Latest        = -1
	Earliest      = -2
	MaxTimestamp  = -3
	EarliestLocal = -4
)

// OffsetForTime answers ListOffsets for one partition: the special
// timestamps above, or the first record whose timestamp is at or after ts.
// It returns the offset and that record's timestamp; (-1, -1) when no record
// qualifies. Offsets at or above the high watermark are never returned, nor,
// with readCommitted (isolation_level=1), at or above the last stable
// offset, which Latest then answers (as Kafka's fetchOffsetForTimestamp).
func (p *Partition) OffsetForTime(ts int64, readCommitted bool, buf []byte) (offset, timestamp int64, err error) {
	o := p.Offsets()
	if readCommitted {
		o.HighWatermark = o.LastStable // the bound for every lookup below
	}
	switch ts {
	case Latest:
		return o.HighWatermark, -1, nil
	case Earliest, EarliestLocal:
		return o.LogStart, -1, nil
	case MaxTimestamp:
		b, ok, err := p.log.MaxTimestampBatch(buf[:0])
		if err != nil || !ok {
			return -1, -1, err
		}
		return p.findRecord(b, o, func(r *batch.Record, base, first int64) bool { return false }, true)
	}
	b, ok, err := p.log.FirstBatchAtOrAfterTime(buf[:0], ts)
	if err != nil || !ok {
		return -1, -1, err
	}
	return p.findRecord(b, o, func(r *batch.Record, base, first int64) bool {
		return first+r.TimestampDelta >= ts
	}, false)
}

// findRecord walks the records of batch b. With wantMax it returns the
// record holding the batch's max timestamp; otherwise the first record that
// match accepts.
func (p *Partition) findRecord(b []byte, o Offsets, match func(r *batch.Record, base, first int64) bool, wantMax bool) (int64, int64, error) {
	h, err := batch.ParseHeader(b)
	if err != nil {
		return -1, -1, err
	}
	if h.BaseOffset >= o.HighWatermark {
		return -1, -1, nil
	}
	if h.IsLogAppendTime() {
		// Every record of the batch carries the batch's max timestamp.
		return max(h.BaseOffset, o.LogStart), h.MaxTimestamp, nil
	}
	off, ts := int64(-1), int64(-1)
	err = batch.ForEachRecord(b, maxDecompressed, func(r *batch.Record) error {
		rts := h.FirstTimestamp + r.TimestampDelta
		roff := h.BaseOffset + int64(r.OffsetDelta)
		if roff < o.LogStart || roff >= o.HighWatermark {
			return nil
		}
		if wantMax {
			if rts > ts {
				off, ts = roff, rts
			}
			return nil
		}
		if off < 0 && match(r, h.BaseOffset, h.FirstTimestamp) {
			off, ts = roff, rts
			return errStop
		}
		return nil
	})
	if err != nil && err != errStop {
		return -1, -1, err
	}
	return off, ts, nil
}

type stopErr struct{}

func (stopErr) Error() string { return "stop" }

var errStop error = stopErr{}
