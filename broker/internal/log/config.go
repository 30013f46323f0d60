package log

import (
	"log/slog"
	"math"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// Defaults used when a Config field is zero (see Config).
const (
	DefaultSegmentBytes       = 1 << 30 // segment.bytes
	DefaultIndexIntervalBytes = 4096    // index.interval.bytes
)

// Config is the per-topic configuration the log obeys. It can be changed
// while the log is open with SetConfig.
type Config struct {
	// SegmentBytes (segment.bytes): roll when appending would take the active
	// segment over this size. 0 means DefaultSegmentBytes; values above
	// math.MaxInt32 are capped (index positions are int32).
	SegmentBytes int64
	// SegmentMs (segment.ms): roll when the active segment's first batch is
	// older than this. 0 means never.
	SegmentMs int64
	// IndexIntervalBytes (index.interval.bytes): bytes of batches between two
	// sparse index entries. 0 means DefaultIndexIntervalBytes.
	IndexIntervalBytes int32
	// RetentionMs (retention.ms): EnforceRetention deletes a non-active
	// segment whose largest timestamp is older than now-RetentionMs. -1 means
	// unlimited. Taken literally: 0 deletes every non-active segment.
	RetentionMs int64
	// RetentionBytes (retention.bytes): EnforceRetention deletes the oldest
	// non-active segments while the log stays at or above this size without
	// them. -1 means unlimited.
	RetentionBytes int64
	// FlushNever (log.flush=never) makes Sync a no-op: acknowledged data lives
	// in the page cache until a roll or Close fsyncs it.
	FlushNever bool

	// Compact (cleanup.policy contains compact) lets Clean rewrite the log
	// keeping the newest record per key. The fields below only matter then.
	Compact bool
	// DeleteRetentionMs (delete.retention.ms): a tombstone stays this long
	// after the cleaner first reached it (its batch's delete horizon).
	DeleteRetentionMs int64
	// MinCompactionLagMs (min.compaction.lag.ms): a segment whose largest
	// timestamp is younger than this is not cleaned yet.
	MinCompactionLagMs int64
	// MaxCompactionLagMs (max.compaction.lag.ms): a log whose oldest dirty
	// segment's first batch is older than this is cleaned whatever its dirty
	// ratio. 0 means never.
	MaxCompactionLagMs int64
	// MinCleanableDirtyRatio (min.cleanable.dirty.ratio): a log is cleaned
	// when dirty bytes / (clean + dirty bytes) exceeds this.
	MinCleanableDirtyRatio float64
}

// DefaultConfig returns Kafka's topic defaults: 1 GiB segments, 7 days
// segment.ms and retention.ms, unlimited retention.bytes, fsync on Sync.
func DefaultConfig() Config {
	week := int64(7 * 24 * time.Hour / time.Millisecond)
	return Config{
		SegmentBytes:       DefaultSegmentBytes,
		SegmentMs:          week,
		IndexIntervalBytes: DefaultIndexIntervalBytes,
		RetentionMs:        week,
		RetentionBytes:     -1,
	}
}

func (c Config) withDefaults() Config {
	if c.SegmentBytes <= 0 {
		c.SegmentBytes = DefaultSegmentBytes
	}
	if c.SegmentBytes > math.MaxInt32 {
		c.SegmentBytes = math.MaxInt32
	}
	if c.IndexIntervalBytes <= 0 {
		c.IndexIntervalBytes = DefaultIndexIntervalBytes
	}
	return c
}

// Options configure Open.
type Options struct {
	// FS is the file system the log lives on; nil means vfs.Default. It must
	// allow a file's Sync to run concurrently with WriteAt on the same file
	// (true of vfs.Default, MemFS and errorfs; not of vfs.WithDiskHealthChecks).
	FS vfs.FS
	// Dir is the partition directory. Open creates it if missing.
	Dir string
	// Config is the topic configuration.
	Config Config
	// Now is the clock (append time, segment.ms, retention.ms); nil means
	// time.Now.
	Now func() time.Time
	// Logger receives recovery warnings and roll/retention events; nil means
	// slog.Default().
	Logger *slog.Logger
}
