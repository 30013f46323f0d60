package state

// StreamTime returns the store's stream time: the largest time put (window
// start, session end) or passed to Expire, or math.MinInt64 if none. It is
// kept in memory only; Restore rebuilds it as the largest time restored, so
// after a restart it is a lower bound of the stream time the store had
// seen, which aggregations use to keep dropping records for windows that
// closed before the restart.
func (s *segmented) StreamTime() int64 { return s.streamTime }
