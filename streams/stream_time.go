package streams

import "math"

// onStreamTime has the task call fn with its stream time each time a
// record moves stream time forward, after that record is processed (and
// once at the task's first record). Window and session stores use it to
// expire old segments (Expire is cheap until stream time crosses a
// segment), Suppress to emit the windows that closed. It is a stream-time
// punctuation of 1 ms: the same deterministic point as the processor API's.
func (t *task) onStreamTime(fn func(streamTime int64) error) {
	t.streamPunc = append(t.streamPunc, &punctuation{interval: 1, next: math.MinInt64, fn: fn})
}
