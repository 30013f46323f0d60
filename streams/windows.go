package streams

import (
	"fmt"
	"time"
)

// Windowed is a key together with the time window it was aggregated in:
// the key type of a windowed table (Kafka Streams' Windowed<K>). Start and
// End are in milliseconds since the Unix epoch. A time window holds the
// records with Start <= timestamp < End; a session window holds its first
// record's time (Start) to its last one's (End), both included.
type Windowed[K any] struct {
	Key        K
	Start, End int64
}

// String formats w as Kafka's Windowed.toString does: "[key@start/end]".
func (w Windowed[K]) String() string {
	return fmt.Sprintf("[%v@%d/%d]", w.Key, w.Start, w.End)
}

// WindowSpec describes time windows of a fixed size, for WindowedBy:
// tumbling (back to back, each record in one window) or hopping
// (overlapping, each record in size/advance windows). Windows are aligned to
// the Unix epoch: their starts are multiples of the advance.
type WindowSpec struct {
	size, advance, grace time.Duration
}

// TumblingWindows returns windows of the given size that do not overlap,
// with no grace period (Kafka's TimeWindows.ofSizeWithNoGrace): a record
// whose window has ended, by stream time, is dropped. Add one with Grace.
func TumblingWindows(size time.Duration) WindowSpec {
	return WindowSpec{size: size, advance: size}
}

// HoppingWindows returns windows of the given size that start every
// advance (0 < advance <= size), with no grace period. A record belongs to
// every window whose [start, start+size) holds its timestamp.
func HoppingWindows(size, advance time.Duration) WindowSpec {
	return WindowSpec{size: size, advance: advance}
}

// Grace sets how long after its end a window still takes out-of-order
// records, measured in stream time (the largest record timestamp the task
// has seen). A record for a window with end + grace <= stream time is
// dropped and counted as an "expired-window" drop. The default is 0.
func (w WindowSpec) Grace(d time.Duration) WindowSpec {
	w.grace = d
	return w
}

func (w WindowSpec) check() error {
	switch {
	case w.size.Milliseconds() < 1:
		return fmt.Errorf("%w: window size %v: want at least 1ms", ErrTopology, w.size)
	case w.advance.Milliseconds() < 1 || w.advance > w.size:
		return fmt.Errorf("%w: window advance %v: want 1ms to the window size %v", ErrTopology, w.advance, w.size)
	case w.grace < 0:
		return fmt.Errorf("%w: window grace %v is negative", ErrTopology, w.grace)
	}
	return nil
}

// windowTimes is a WindowSpec in milliseconds, the unit of record times.
type windowTimes struct{ size, advance, grace int64 }

func (w WindowSpec) ms() windowTimes {
	return windowTimes{w.size.Milliseconds(), w.advance.Milliseconds(), w.grace.Milliseconds()}
}

// firstStart is the start of the earliest window that holds ts; the others
// follow every advance up to ts. Starts are never negative, as in Kafka.
func (w windowTimes) firstStart(ts int64) int64 {
	return max(0, ts-w.size+w.advance) / w.advance * w.advance
}

// SessionWindowSpec describes session windows, for SessionWindowedBy: a
// key's records less than the inactivity gap apart form one session, and a
// record that bridges two sessions merges them.
type SessionWindowSpec struct {
	gap, grace time.Duration
}

// SessionWindows returns session windows with the given inactivity gap and
// no grace period (Kafka's SessionWindows.ofInactivityGapWithNoGrace).
func SessionWindows(inactivityGap time.Duration) SessionWindowSpec {
	return SessionWindowSpec{gap: inactivityGap}
}

// Grace sets how long, in stream time, a session stays open to
// out-of-order records after it can no longer grow on time: a session
// closes once stream time reaches its end + gap + grace. The default is 0,
// with which no out-of-order record can bridge two sessions.
func (s SessionWindowSpec) Grace(d time.Duration) SessionWindowSpec {
	s.grace = d
	return s
}

func (s SessionWindowSpec) check() error {
	switch {
	case s.gap.Milliseconds() < 1:
		return fmt.Errorf("%w: session inactivity gap %v: want at least 1ms", ErrTopology, s.gap)
	case s.grace < 0:
		return fmt.Errorf("%w: session grace %v is negative", ErrTopology, s.grace)
	}
	return nil
}

// windowRetention is a window or session store's retention: the Retention
// option, or by default the shortest that keeps every window still open
// (size + grace; for sessions gap + grace). Kafka Streams' DSL has the same
// default; shorter fails Build.
func windowRetention(b *Builder, set time.Duration, least time.Duration, what string) time.Duration {
	if set == 0 {
		return least
	}
	if set < least {
		b.fail(fmt.Errorf("%w: retention %v of %s is shorter than its windows stay open (%v)", ErrTopology, set, what, least))
	}
	return set
}
