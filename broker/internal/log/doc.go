// Package log is one partition's durable segmented log: append, read,
// sparse offset and time indexes, crash recovery, segment roll, retention,
// the log start offset, fsync with group commit, the leader-epoch cache, and
// compaction (cleanup.policy=compact).
//
// Produced record batches (magic 2) are stored byte-for-byte; the log writes
// only baseOffset and partitionLeaderEpoch, which are outside the CRC. It
// parses batch headers with package batch and validates nothing else on the
// leader path: the caller validates batches before Append.
//
// All file access goes through a pebble vfs.FS, so tests run on an in-memory
// FS, inject IO errors (vfs/errorfs) and simulate crashes that keep only
// synced bytes (MemFS.CrashClone).
//
// # Files
//
// A partition directory holds:
//
//	00000000000000000000.log        segment: batches back to back, named by base offset (%020d)
//	00000000000000000000.index      sparse offset index: int32 relative offset, int32 position (big endian)
//	00000000000000000000.timeindex  time index: int64 max timestamp so far, int32 relative offset
//	00000000000000000000.txnindex   aborted transactions whose markers the segment holds (Kafka's
//	                                TransactionIndex; only for segments that have some)
//	leader-epoch-checkpoint         Kafka's text format: "0", entry count, "epoch startOffset" lines
//	log-start-offset                "0" and the log start offset (written by DeleteRecords/retention)
//	cleaner-offset-checkpoint       "0", the first dirty offset, the earliest kept tombstone's delete horizon
//	<base>.<next>.cleaned / .swap   a cleaned group of segments [base, next) while it is swapped in
//	.clean-shutdown                 present only between a clean Close and the next Open
//
// Segments are contiguous: each starts where the previous one ends. Batches
// are contiguous too, except where compaction removed whole batches: a
// cleaned segment keeps its offset range, so it may hold gaps and end before
// the next segment's base. Only the last (active) segment is written. Indexes are kept in memory and written (atomically: temp file,
// fsync, rename) when a segment rolls and at Close; they are derived data, so
// an index that is missing, short or inconsistent is rebuilt by scanning its
// segment. Checkpoint files are replaced atomically the same way and the
// directory fsynced. Creating or removing a file fsyncs the directory.
//
// # Recovery
//
// Open removes leftover temp files and index files without a segment, then
// loads segments oldest first. A segment whose index files pass the checks
// (well-formed entries, and a walk from the last index entry to the end of
// the file that finds whole batches with increasing offsets within the
// segment's range — compaction may leave gaps between batches of a
// non-active segment) is loaded without reading its batches. The active
// segment after an unclean shutdown (no .clean-shutdown marker), and any
// segment whose indexes fail the checks, is scanned: every batch's length
// bounds, magic, CRC32C and offset are checked, the file is truncated at the
// first invalid or partial batch (logged at Warn with what was cut), any later
// segments are deleted, and the indexes are rebuilt. The epoch cache is then
// repaired: epochs seen in scanned batches are assigned, entries at or beyond
// the log end offset dropped, the first entry moved to the log start offset;
// a missing or unreadable checkpoint is rebuilt from the epochs in the
// batches. Finally the marker is removed, so a crash before the next Close
// forces a scan.
//
// Old segments are fsynced when they roll, so after a crash only the active
// segment can hold a torn tail.
//
// # Durability and group commit
//
// Append writes the batch to the active segment (one WriteAt, into the page
// cache) and returns; it does not fsync. A producer with acks=1/all calls Sync
// before answering. Sync records the log end offset under a short read lock
// and fsyncs outside every lock that appends or reads take, serialized on its
// own mutex: callers that pile up behind a running fsync find their bytes
// covered when it completes, or share the next one, so N concurrent
// producers cost about two fsyncs, not N. Config.FlushNever (log.flush=never)
// makes Sync a no-op; rolls and Close still fsync.
//
// A write or fsync error puts the log in a failed state: every later Append,
// AppendFollower, Sync, roll, truncation or retention returns an error
// wrapping ErrFailed, because after a failed fsync the kernel may have
// dropped dirty pages and retrying would lie. Reads keep working. Reopen the
// log (running recovery) to continue.
//
// # Compaction
//
// Clean runs one pass of Kafka's log cleaner (see broker/DESIGN.md, "Cleaning
// path", for the steps); Cleanable says whether one is due. The caller (the
// broker's cleaner goroutines) owns the OffsetMap and the schedule; the log
// starts no goroutines for it. Cleaning never touches the active segment,
// never changes an offset, and swaps each rewritten group of segments in
// atomically (.cleaned, .swap, rename), so a crash at any step leaves either
// the old or the new group; Open completes or discards a half-done swap.
//
// # Concurrency and lock order
//
// Log is safe for concurrent use. Locks, always taken in this order:
//
//	cleanMu   serializes Clean. A pass reads segments holding only file
//	          references; it takes appendMu just to swap a group in.
//	appendMu  serializes mutations: Append, AppendFollower, MaybeRoll, Truncate,
//	          DeleteRecords, EnforceRetention, SetConfig, Close, a cleaning swap. Held across
//	          the roll's fsyncs (appends wait for a roll; reads and Sync do not).
//	syncMu    serializes Sync's fsyncs; Truncate and Close take it to wait for
//	          a running fsync.
//	readMu    RWMutex held shared for the whole of Read, FirstBatchAtOrAfterTime,
//	          MaxTimestampBatch and Scan; exclusive, briefly and never across
//	          an fsync, by whoever removes segments or shrinks the published
//	          size (retention, DeleteRecords, Truncate, Close, a cleaning swap). A read therefore
//	          never sees a segment vanish or a file shrink under it.
//	mu        RWMutex guarding the segment list and the state readers look at
//	          (sizes, next offsets, in-memory indexes); never held across IO.
//	EpochCache.writeMu, then EpochCache.mu: the epoch cache's own locks, taken
//	          with at most appendMu and syncMu held.
//
// Readers snapshot a segment's file and published size under mu and then read
// with ReadAt outside it, so they see only whole batches and never wait for an
// fsync or an append's write. Sync takes a reference on each file it fsyncs,
// so a segment deleted meanwhile is closed only after the fsync returns.
//
// The log starts no goroutines. The broker drives time-based work: MaybeRoll
// (segment.ms) and EnforceRetention from tickers.
//
// # Files of this package
//
//	log.go        the Log type, accessors, SetConfig, Close, Delete, failed state
//	config.go     Config, Options, defaults
//	append.go     Append, AppendFollower, roll (size, segment.ms), MaybeRoll
//	sync.go       Sync: group commit
//	read.go       Read, FirstBatchAtOrAfterTime, MaxTimestampBatch
//	scan.go       Scan, ScanControl (batch headers and markers, for rebuilding producer state)
//	txnindex.go   the aborted-transaction index: AddAbortedTxn, AbortedTxns, its file format
//	retention.go  DeleteRecords, EnforceRetention, segment deletion
//	truncate.go   Truncate and emptying the log at an offset
//	recover.go    Open: directory load, index checks, segment scan and repair
//	segment.go    a segment's in-memory state; ref-counted segment files
//	index.go      the sparse offset and time indexes
//	walker.go     chunked batch-by-batch reading of a segment file
//	clean.go      Clean, Cleanable: planning a pass, the offset map build, grouping, the checkpoint
//	cleanbatch.go what a pass keeps of one batch; writing a cleaned group
//	cleanswap.go  the .cleaned -> .swap -> .log swap and its recovery at Open
//	offsetmap.go  OffsetMap: key hash -> newest offset within a memory budget
//	epoch.go      EpochCache and the leader-epoch-checkpoint format
//	checkpoint.go atomic small-file writes, directory fsync, log-start-offset
//	names.go      file names
//	errors.go     sentinel errors
package log
