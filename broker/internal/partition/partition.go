// Package partition keeps one partition replica's state above its log: the
// high watermark, the leader epoch, the idempotent-producer table, the
// transactions (open ones, markers, the last stable offset and
// read_committed reads; see txn.go), the fetch requests waiting for new
// data, and Kafka's replication state (role, ISR, what each follower has;
// see replica.go and follower.go).
//
// Appends happen in two steps so that one connection's pipelined produce
// requests keep their order while many share one fsync: Append validates,
// deduplicates and writes in request order; Commit then waits for the fsync
// (group commit in the log) and advances the high watermark, waking fetches.
// With followers in the ISR the high watermark also waits for their fetches
// (UpdateFollower), and an acks=all producer waits with WaitReplicated.
//
// A partition opened and given no role is a lone leader: no followers, an
// empty ISR and min.insync.replicas 0, so the high watermark is the durable
// end of the log (the log end at append with log.flush=never).
//
// The type is a deterministic core: it starts no goroutines and reads no
// clock for replication (callers pass now). Lock order: appendMu, then mu,
// then the log's locks; nothing waits while holding either.
package partition

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/runnel-io/runnel/broker/internal/batch"
	plog "github.com/runnel-io/runnel/broker/internal/log"
)

// Errors that reject a produced batch, besides the batch and producer ones.
var (
	ErrRecordTooLarge   = errors.New("partition: batch larger than max.message.bytes")
	ErrInvalidTimestamp = errors.New("partition: timestamp outside the allowed range")
	ErrClosed           = errors.New("partition: closed")
)

// Config is the topic configuration a partition enforces.
type Config struct {
	Log             plog.Config
	MaxMessageBytes int32
	LogAppendTime   bool
	Compacted       bool
	// TimestampBeforeMaxMs and TimestampAfterMaxMs bound how far a CreateTime
	// batch's timestamps may lie before or after the broker's clock.
	TimestampBeforeMaxMs int64
	TimestampAfterMaxMs  int64
}

// Options open a partition.
type Options struct {
	FS          vfs.FS
	Dir         string
	Topic       string
	Index       int32
	Config      Config
	LeaderEpoch int32
	Now         func() time.Time
	Logger      *slog.Logger
}

// maxDecompressed bounds decompression when a compacted topic's batch must
// be opened to check its keys.
const maxDecompressed = 64 << 20

// Partition is one partition replica on this node. It is safe for
// concurrent use.
type Partition struct {
	Topic string
	Index int32

	fs     vfs.FS
	dir    string
	log    *plog.Log
	now    func() time.Time
	logger *slog.Logger

	// appendMu serializes everything that changes the log: Append (the
	// producer check and the log append must be one step), AppendReplica,
	// TruncateTo and the role changes. Lock order: appendMu, then mu.
	appendMu  sync.Mutex
	producers producers
	verify    verifications

	mu struct {
		sync.Mutex
		config      Config
		leaderEpoch int32
		hw          int64
		closed      bool
		waiters     map[chan struct{}]struct{} // woken when the high watermark moves
		repl        replication
		txn         txnState // what the last stable offset depends on (txn.go)
	}
}

// Open opens the partition's log (recovering it if needed) and rebuilds its
// producer state from the last snapshot plus the log after it.
func Open(o Options) (*Partition, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	l, err := plog.Open(plog.Options{FS: o.FS, Dir: o.Dir, Config: o.Config.Log, Now: o.Now, Logger: o.Logger})
	if err != nil {
		return nil, err
	}
	p := &Partition{
		Topic: o.Topic, Index: o.Index,
		fs: o.FS, dir: o.Dir, log: l, now: o.Now,
		logger: o.Logger.With("topic", o.Topic, "partition", o.Index),
	}
	p.mu.config = o.Config
	p.mu.leaderEpoch = o.LeaderEpoch
	p.mu.waiters = map[chan struct{}]struct{}{}
	// Everything recovered from disk was synced (or survived in the page
	// cache), so it is visible: a single replica's high watermark is its
	// log end offset.
	p.mu.hw = l.LogEndOffset()
	p.mu.repl = newReplication(l.LogEndOffset())
	p.mu.txn = txnState{open: map[int64]int64{}}
	if err := p.loadProducers(); err != nil {
		l.Close()
		return nil, err
	}
	// As Kafka's makeLeader: the leader's epoch starts at its log end, so
	// OffsetForLeaderEpoch answers even before the first append.
	if e, _ := l.Epochs().Latest(); e < o.LeaderEpoch {
		if err := l.Epochs().Assign(o.LeaderEpoch, l.LogEndOffset()); err != nil {
			l.Close()
			return nil, err
		}
	}
	return p, nil
}

// SetConfig applies a changed topic configuration.
func (p *Partition) SetConfig(c Config) {
	p.mu.Lock()
	p.mu.config = c
	p.mu.Unlock()
	p.log.SetConfig(c.Log)
}

// Config returns the partition's current configuration.
func (p *Partition) Config() Config {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.config
}

// Log returns the partition's log.
func (p *Partition) Log() *plog.Log { return p.log }

// AppendResult says where a produced batch landed.
type AppendResult struct {
	BaseOffset int64
	LastOffset int64
	// LogAppendTime is the broker time stamped into the batch, or -1 for
	// CreateTime topics.
	LogAppendTime int64
	// Duplicate is set when the batch repeated one already appended; the
	// offsets are the original's.
	Duplicate bool
}

// Append validates one produced batch and appends it. It does not wait for
// the fsync: call Commit for that, and with acks=-1 then WaitReplicated with
// LastOffset+1. b is modified in place (base offset, leader epoch, and for
// LogAppendTime topics the timestamps). It fails with ErrNotLeader on a
// follower and, for acks=-1, with ErrNotEnoughReplicas while the ISR is
// smaller than min.insync.replicas; both are checked before anything is
// written.
func (p *Partition) Append(b []byte, acks int16) (AppendResult, error) {
	return p.append(b, acks, false, nil)
}

// AppendCoordinator appends a batch the broker's own coordinators built
// (Kafka's AppendOrigin.COORDINATOR): like Append with acks=-1, but without
// sequence checks or dedupe, since such a batch has a producer id and no
// sequence (a transactional offset commit of the group coordinator). A
// producer epoch older than the producer's here is still refused
// (ErrInvalidEpoch), and a transactional batch opens the producer's
// transaction as any other.
func (p *Partition) AppendCoordinator(b []byte) (AppendResult, error) {
	return p.append(b, -1, true, nil)
}

// append appends b; guard, when set, is the batch's verification guard
// (AppendVerified).
func (p *Partition) append(b []byte, acks int16, coordinator bool, guard *VerificationGuard) (AppendResult, error) {
	p.mu.Lock()
	cfg := p.mu.config
	_, err := p.leaderCheckLocked(acks)
	p.mu.Unlock()
	if err != nil {
		return AppendResult{}, err
	}
	if cfg.MaxMessageBytes > 0 && len(b) > int(cfg.MaxMessageBytes) {
		return AppendResult{}, fmt.Errorf("%w: %d bytes > %d", ErrRecordTooLarge, len(b), cfg.MaxMessageBytes)
	}
	h, err := batch.Validate(b, batch.ValidateOptions{RequireKeys: cfg.Compacted, MaxDecompressed: maxDecompressed, Coordinator: coordinator})
	if err != nil {
		return AppendResult{}, err
	}
	now := p.now().UnixMilli()
	lat := int64(-1)
	if cfg.LogAppendTime {
		lat = now
	} else if err := checkTimestamps(&h, now, cfg); err != nil {
		return AppendResult{}, err
	}

	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	// Again under appendMu: a role change (which takes appendMu) may have
	// come since the check above, and the epoch must be the current one.
	p.mu.Lock()
	epoch, err := p.leaderCheckLocked(acks)
	p.mu.Unlock()
	if err != nil {
		return AppendResult{}, err
	}
	if guard != nil {
		if err := p.checkGuardLocked(&h, *guard); err != nil {
			return AppendResult{}, err
		}
	}
	var dup *batchMeta
	if coordinator {
		err = p.producers.checkEpoch(&h)
	} else {
		dup, err = p.producers.check(&h)
	}
	if err != nil {
		return AppendResult{}, err
	}
	if dup != nil {
		return AppendResult{BaseOffset: dup.BaseOffset, LastOffset: dup.LastOffset, LogAppendTime: lat, Duplicate: true}, nil
	}
	if cfg.LogAppendTime {
		batch.SetLogAppendTime(b, now)
		h.MaxTimestamp = now
	}
	res, err := p.log.Append(b, epoch)
	if err != nil {
		return AppendResult{}, err
	}
	h.BaseOffset = res.BaseOffset
	if err := p.appendedLocked(&h, nil, cfg); err != nil {
		return AppendResult{}, err
	}
	if guard != nil && h.IsTransactional() {
		p.endVerificationLocked(h.ProducerID) // its transaction is open now
	}
	return AppendResult{BaseOffset: res.BaseOffset, LastOffset: res.LastOffset, LogAppendTime: lat}, nil
}

// appendedLocked follows a leader's append of the batch h (control: the
// whole batch, for a marker): the producer and transaction state, the
// aborted-transaction index, the high watermark in page-cache mode, and the
// follower fetches waiting for appends. appendMu held.
func (p *Partition) appendedLocked(h *batch.Header, control []byte, cfg Config) error {
	aborted, err := p.track(p.producers, h, control)
	if err != nil {
		return err
	}
	if aborted != nil {
		if err := p.log.AddAbortedTxn(*aborted); err != nil {
			return err
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if cfg.Log.FlushNever {
		// Page-cache mode: the leader's copy counts as soon as it is written.
		p.mu.repl.durableEnd = max(p.mu.repl.durableEnd, h.LastOffset()+1)
		p.updateHWLocked()
	}
	p.wakeAppendLocked()
	return nil
}

func checkTimestamps(h *batch.Header, now int64, cfg Config) error {
	if cfg.TimestampBeforeMaxMs > 0 && h.FirstTimestamp >= 0 && now-h.FirstTimestamp > cfg.TimestampBeforeMaxMs {
		return fmt.Errorf("%w: timestamp %d is more than message.timestamp.before.max.ms=%d before the broker's time %d",
			ErrInvalidTimestamp, h.FirstTimestamp, cfg.TimestampBeforeMaxMs, now)
	}
	if cfg.TimestampAfterMaxMs > 0 && h.MaxTimestamp-now > cfg.TimestampAfterMaxMs {
		return fmt.Errorf("%w: timestamp %d is more than message.timestamp.after.max.ms=%d after the broker's time %d",
			ErrInvalidTimestamp, h.MaxTimestamp, cfg.TimestampAfterMaxMs, now)
	}
	return nil
}

// Commit makes every batch appended so far durable (one fsync shared with
// concurrent callers), records that as the leader's durable end, and
// recomputes the high watermark: with no follower in the ISR it moves to the
// durable end, otherwise to the least of that and every in-sync follower's
// log end offset (see UpdateFollower). With log.flush=never it only
// recomputes the high watermark.
func (p *Partition) Commit() error {
	end := p.log.LogEndOffset()
	if err := p.log.Sync(); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mu.repl.durableEnd = max(p.mu.repl.durableEnd, end)
	p.updateHWLocked()
	return nil
}

// wakeLocked signals every waiting fetch.
func (p *Partition) wakeLocked() {
	for ch := range p.mu.waiters {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// Offsets is a snapshot of the partition's offsets.
type Offsets struct {
	LogStart      int64
	HighWatermark int64
	// LastStable is the last stable offset: the high watermark, or the
	// first offset of an open transaction (or of a decided one whose
	// marker is not yet below the high watermark) if lower; never below
	// the log start (see txn.go).
	LastStable int64
	LogEnd     int64
	Epoch      int32
}

// Offsets returns the partition's offsets.
func (p *Partition) Offsets() Offsets {
	p.mu.Lock()
	defer p.mu.Unlock()
	start := p.log.LogStartOffset()
	return Offsets{LogStart: start, HighWatermark: p.mu.hw, LastStable: p.lastStableLocked(start), LogEnd: p.log.LogEndOffset(), Epoch: p.mu.leaderEpoch}
}

// Read appends to dst whole batches from offset up to the high watermark,
// bounded by maxBytes (the first batch is returned whole if minOne).
func (p *Partition) Read(dst []byte, offset int64, maxBytes int, minOne bool) ([]byte, Offsets, error) {
	p.mu.Lock()
	closed := p.mu.closed
	p.mu.Unlock()
	o := p.Offsets()
	if closed {
		return dst, o, ErrClosed
	}
	return p.readTo(dst, offset, o.HighWatermark, maxBytes, minOne, o)
}

// readTo appends whole batches from offset up to limit (exclusive), after
// checking offset against o.
func (p *Partition) readTo(dst []byte, offset, limit int64, maxBytes int, minOne bool, o Offsets) ([]byte, Offsets, error) {
	if offset < o.LogStart || offset > o.LogEnd {
		return dst, o, fmt.Errorf("%w: offset %d is outside [%d, %d]", plog.ErrOffsetOutOfRange, offset, o.LogStart, o.LogEnd)
	}
	start := len(dst)
	// The log reads within one segment at a time; continue into the next
	// until maxBytes is used or the limit reached.
	for offset < limit {
		before := len(dst)
		var err error
		dst, err = p.log.Read(dst, offset, limit, maxBytes-(before-start), minOne && before == start)
		if err != nil {
			return dst, o, err
		}
		if len(dst) == before {
			break
		}
		next, ok := nextOffset(dst[before:])
		if !ok {
			break
		}
		offset = next
	}
	return dst, o, nil
}

// nextOffset returns the offset after the last whole batch in b.
func nextOffset(b []byte) (int64, bool) {
	next, ok := int64(0), false
	for len(b) >= batch.HeaderSize {
		h, err := batch.ParseHeader(b)
		if err != nil || h.Size() > len(b) {
			break
		}
		next, ok = h.LastOffset()+1, true
		b = b[h.Size():]
	}
	return next, ok
}

// Wait registers ch to receive a value (without blocking) whenever the high
// watermark advances. Call Unwait when done.
func (p *Partition) Wait(ch chan struct{}) {
	p.mu.Lock()
	p.mu.waiters[ch] = struct{}{}
	p.mu.Unlock()
}

// Unwait removes a channel registered with Wait.
func (p *Partition) Unwait(ch chan struct{}) {
	p.mu.Lock()
	delete(p.mu.waiters, ch)
	p.mu.Unlock()
}

// DeleteRecords moves the log start offset to before (-1: the high
// watermark) and returns the new log start offset.
func (p *Partition) DeleteRecords(before int64) (int64, error) {
	o := p.Offsets()
	if before == -1 {
		before = o.HighWatermark
	}
	if before < 0 || before > o.HighWatermark {
		return 0, fmt.Errorf("%w: %d is outside [0, high watermark %d]", plog.ErrOffsetOutOfRange, before, o.HighWatermark)
	}
	if before > o.LogStart {
		if err := p.log.DeleteRecords(before); err != nil {
			return 0, err
		}
		// The last stable offset never lies below the log start: it may
		// have moved (as Kafka's maybeIncrementFirstUnstableOffset).
		p.mu.Lock()
		p.wakeLocked()
		p.mu.Unlock()
	}
	return p.log.LogStartOffset(), nil
}

// Cleanable reports how dirty the partition's log is, for compaction up to
// the last stable offset.
func (p *Partition) Cleanable() plog.Cleanability {
	return p.log.Cleanable(p.Offsets().LastStable)
}

// Clean runs one compaction pass over the log below the last stable offset
// (Kafka's first uncleanable offset: open transactions, and decided ones
// whose markers are not yet replicated, stay dirty) with offset map m,
// keeping each idempotent producer's newest batch so its sequence numbers
// still check after a restart; the log removes aborted transactions'
// records. It sets o's MaxOffset, ProducerLast and MaxDecompressed; the
// caller may set the rest.
func (p *Partition) Clean(ctx context.Context, m *plog.OffsetMap, o plog.CleanOptions) (plog.CleanStats, error) {
	p.appendMu.Lock()
	o.ProducerLast = p.producers.lastOffsets()
	p.appendMu.Unlock()
	o.MaxOffset = p.Offsets().LastStable
	o.MaxDecompressed = maxDecompressed
	return p.log.Clean(ctx, m, o)
}

// Close saves the producer table and closes the log. It is idempotent.
func (p *Partition) Close() error {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	p.mu.Lock()
	if p.mu.closed {
		p.mu.Unlock()
		return nil
	}
	p.mu.closed = true
	p.wakeAllLocked()
	p.mu.Unlock()
	if err := p.log.Sync(); err != nil {
		p.log.Close()
		return err
	}
	err := p.saveProducers()
	return errors.Join(err, p.log.Close())
}

// Delete closes the partition and removes its data.
func (p *Partition) Delete() error {
	p.mu.Lock()
	p.mu.closed = true
	p.wakeAllLocked()
	p.mu.Unlock()
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	return p.log.Delete()
}
