package streams

import (
	"fmt"
	"time"
)

// JoinWindows says which records of two streams a windowed join pairs: a
// record of this stream at time t meets the records of the other stream
// with the same key and a timestamp in [t - before, t + after]. Records
// may arrive out of order for up to the grace period after a window ends;
// later ones are dropped. It is Kafka Streams' JoinWindows; make one with
// JoinTimeDifference.
type JoinWindows struct {
	before, after, grace time.Duration
}

// JoinTimeDifference pairs records at most d apart, either way, with no
// grace period (Kafka's JoinWindows.ofTimeDifferenceWithNoGrace).
func JoinTimeDifference(d time.Duration) JoinWindows {
	return JoinWindows{before: d, after: d}
}

// Grace sets how long after a window ends its late records are still
// joined (and an outer join still waits before it emits a record that met
// nothing).
func (w JoinWindows) Grace(d time.Duration) JoinWindows {
	w.grace = d
	return w
}

// Before sets how much earlier than a record of this stream a record of the
// other stream may be.
func (w JoinWindows) Before(d time.Duration) JoinWindows {
	w.before = d
	return w
}

// After sets how much later than a record of this stream a record of the
// other stream may be.
func (w JoinWindows) After(d time.Duration) JoinWindows {
	w.after = d
	return w
}

// String describes the windows, e.g. "JoinWindows{before=5s, after=5s, grace=0s}".
func (w JoinWindows) String() string {
	return fmt.Sprintf("JoinWindows{before=%v, after=%v, grace=%v}", w.before, w.after, w.grace)
}

// check reports windows no record could join in.
func (w JoinWindows) check() error {
	if w.grace < 0 {
		return fmt.Errorf("%w: %v: negative grace", ErrTopology, w)
	}
	if w.before+w.after < 0 {
		return fmt.Errorf("%w: %v: the window is empty (before + after < 0)", ErrTopology, w)
	}
	if w.before%time.Millisecond != 0 || w.after%time.Millisecond != 0 || w.grace%time.Millisecond != 0 {
		return fmt.Errorf("%w: %v: use whole milliseconds (record timestamps are in ms)", ErrTopology, w)
	}
	return nil
}

// retention is how long the join's window stores keep a record: the
// window's size plus grace, as Kafka Streams.
func (w JoinWindows) retention() time.Duration { return w.before + w.after + w.grace }
