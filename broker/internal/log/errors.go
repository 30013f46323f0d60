package log

import "errors"

// Sentinel errors. Callers test them with errors.Is; the returned errors wrap
// them with context (offsets, file names, the underlying IO error).
var (
	// ErrOffsetOutOfRange: a read or DeleteRecords offset outside
	// [LogStartOffset, LogEndOffset].
	ErrOffsetOutOfRange = errors.New("log: offset out of range")
	// ErrClosed: the log was closed.
	ErrClosed = errors.New("log: closed")
	// ErrFailed: an earlier write or fsync failed. The log refuses further
	// writes and syncs; reopen it (which runs recovery) to continue.
	ErrFailed = errors.New("log: failed after an IO error; reopen to recover")
	// ErrInvalidBatch: the bytes given to Append or AppendFollower are not
	// whole v2 record batches.
	ErrInvalidBatch = errors.New("log: invalid record batch")
	// ErrNonContiguous: AppendFollower got a batch whose base offset is not the
	// log end offset (or the end of the previous batch).
	ErrNonContiguous = errors.New("log: batch offset does not follow the log end offset")
	// ErrCorrupt: a segment file holds bytes that are not a valid batch where
	// one is expected. Recovery truncates such tails; a read that meets one
	// after Open returns this error.
	ErrCorrupt = errors.New("log: corrupt segment")
	// ErrInvalidEpoch: a negative leader epoch or start offset given to the
	// epoch cache.
	ErrInvalidEpoch = errors.New("log: invalid leader epoch entry")
)
