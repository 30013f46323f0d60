package server

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf16"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker/internal/group"
	"github.com/runnel-io/runnel/broker/internal/metadata"
	"github.com/runnel-io/runnel/broker/internal/partition"
)

// offsetsTopic is Kafka's internal topic of group metadata and offsets.
const offsetsTopic = "__consumer_offsets"

// groupReplicationTimeout bounds how long a group write waits for the
// ISR (Kafka's offsets.commit.timeout.ms default).
const groupReplicationTimeout = 5 * time.Second

// groupTickInterval is how often the group ticker fires the coordinators'
// timers (session timeouts, rebalance timeouts, the initial delay).
const groupTickInterval = 50 * time.Millisecond

// groupCoordinator is the thin IO shell around the deterministic
// group.Coordinator cores: one core per __consumer_offsets partition, each
// guarded by its shard's mutex. A request locks its group's shard, steps
// the core, appends the records to the shard's partition as one batch
// (still under the lock, so records land in the order the core made them),
// unlocks, waits for the fsync, reports the outcome to the core
// (Coordinator.Written, under the lock again), and only then delivers the
// replies.
type groupCoordinator struct {
	s          *Server
	nextWaiter atomic.Uint64
	mu         struct {
		sync.Mutex
		shards []*groupShard // nil until __consumer_offsets is open
	}
}

// groupShard is one __consumer_offsets partition and the core that owns
// its groups.
type groupShard struct {
	gc   *groupCoordinator
	part *partition.Partition
	// epoch is the leader epoch of part the shard was loaded in.
	epoch int32
	// dropped closes when the shard stops being this node's (drop).
	dropped  chan struct{}
	dropOnce sync.Once
	mu       struct {
		sync.Mutex
		core    *group.Coordinator
		waiters map[group.Waiter]chan kmsg.Response
	}
}

func (s *Server) groupConfig() group.Config {
	c := s.cfg
	return group.Config{
		MinSessionTimeout:             time.Duration(c.GroupMinSessionTimeoutMs) * time.Millisecond,
		MaxSessionTimeout:             time.Duration(c.GroupMaxSessionTimeoutMs) * time.Millisecond,
		InitialRebalanceDelay:         time.Duration(c.GroupInitialRebalanceDelayMs) * time.Millisecond,
		MaxSize:                       int(c.GroupMaxSize),
		OffsetMetadataMaxBytes:        int(c.OffsetMetadataMaxBytes),
		OffsetsRetention:              time.Duration(c.OffsetsRetentionMinutes) * time.Minute,
		OffsetsRetentionCheckInterval: time.Duration(c.OffsetsRetentionCheckInterval) * time.Millisecond,
		NewMemberID: func(prefix string) string {
			var b [16]byte
			_, _ = rand.Read(b[:])
			b[6] = b[6]&0x0f | 0x40
			b[8] = b[8]&0x3f | 0x80
			return fmt.Sprintf("%s-%x-%x-%x-%x-%x", prefix, b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
		},
	}
}

// javaStringHash is Java's String.hashCode, over UTF-16 code units, as
// Kafka uses it to place a group.
func javaStringHash(s string) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(u)
	}
	return h
}

// groupPartition is the __consumer_offsets partition of a group:
// Utils.abs(groupId.hashCode) % partitions, as Kafka computes it.
func groupPartition(groupID string, partitions int) int {
	h := javaStringHash(groupID)
	if h == -1<<31 {
		h = 0
	} else if h < 0 {
		h = -h
	}
	return int(h) % partitions
}

// The coordinator follows the leadership of __consumer_offsets: a group
// is coordinated by the leader of its partition. A shard is loaded (the
// partition replayed into a fresh core) the first time it is needed after
// this node became that partition's leader, and dropped once it no longer
// leads it or leads a newer epoch (then the next use loads it again from
// the log, which the former leader may have extended).

// shards opens __consumer_offsets, creating it first if needed (as Kafka
// does on the first FindCoordinator), and loads the groups of every
// partition this node leads. The slice has one entry per partition, nil
// where this node does not lead.
func (gc *groupCoordinator) shards(ctx context.Context) ([]*groupShard, error) {
	if _, err := gc.topic(ctx); err != nil {
		return nil, err
	}
	gc.mu.Lock()
	defer gc.mu.Unlock()
	for i := range gc.mu.shards {
		if _, err := gc.currentLocked(i); err != nil && !errors.Is(err, kerr.NotCoordinator) {
			return nil, err
		}
	}
	return gc.mu.shards, nil
}

// topic returns __consumer_offsets, creating it if it does not exist, and
// sizes the shard table to its partitions.
func (gc *groupCoordinator) topic(ctx context.Context) (*metadata.Topic, error) {
	s := gc.s
	t, err := s.internalTopic(ctx, topicSpec{
		name: offsetsTopic, partitions: s.cfg.OffsetsTopicNumPartitions,
		replicas: s.cfg.OffsetsTopicReplicationFactor,
		configs: map[string]string{
			"cleanup.policy":   "compact",
			"compression.type": "producer",
			"segment.bytes":    strconv.Itoa(int(s.cfg.OffsetsTopicSegmentBytes)),
		},
	})
	if err != nil {
		return nil, err
	}
	gc.mu.Lock()
	if gc.mu.shards == nil {
		gc.mu.shards = make([]*groupShard, len(t.Partitions))
	}
	gc.mu.Unlock()
	return t, nil
}

// currentLocked returns the shard of partition i if this node leads it,
// loading it first if it is not loaded for the current leader epoch. A
// partition this node does not lead gives NOT_COORDINATOR. gc.mu held.
func (gc *groupCoordinator) currentLocked(i int) (*groupShard, error) {
	s := gc.s
	p := s.partition(offsetsTopic, int32(i))
	leader, epoch := false, int32(0)
	if p != nil {
		leader, epoch = p.Role()
	}
	if !leader {
		if old := gc.mu.shards[i]; old != nil {
			old.drop()
			gc.mu.shards[i] = nil
		}
		return nil, kafkaErr(kerr.NotCoordinator, "this node does not lead %s-%d", offsetsTopic, i)
	}
	if sh := gc.mu.shards[i]; sh != nil && sh.part == p && sh.epoch == epoch {
		return sh, nil
	}
	if old := gc.mu.shards[i]; old != nil {
		old.drop()
	}
	sh := &groupShard{gc: gc, part: p, epoch: epoch, dropped: make(chan struct{})}
	sh.mu.core = group.New(s.groupConfig())
	sh.mu.waiters = map[group.Waiter]chan kmsg.Response{}
	if err := sh.load(s.now()); err != nil {
		return nil, fmt.Errorf("load %s-%d: %w", offsetsTopic, i, err)
	}
	// The clock is read again after the load, which may have been slow:
	// Loaded starts the loaded members' sessions from here.
	now := s.now()
	ld, _ := sh.step(0, func(c *group.Coordinator) group.Output { return c.Loaded(now) })
	ld.finish()
	gc.mu.shards[i] = sh
	return sh, nil
}

// loaded returns the shards loaded for partitions this node still leads
// in the epoch they were loaded in (dropping the others).
func (gc *groupCoordinator) loaded() []*groupShard {
	gc.mu.Lock()
	defer gc.mu.Unlock()
	var out []*groupShard
	for i, sh := range gc.mu.shards {
		if sh == nil {
			continue
		}
		if leader, epoch := sh.part.Role(); !leader || epoch != sh.epoch || gc.s.partition(offsetsTopic, int32(i)) != sh.part {
			sh.drop()
			gc.mu.shards[i] = nil
			continue
		}
		out = append(out, sh)
	}
	return out
}

// shard returns the shard that coordinates groupID, opening (and if need
// be creating) __consumer_offsets first. Only the requests that start a
// group (FindCoordinator, JoinGroup, OffsetCommit) create the topic, as in
// Kafka where FindCoordinator does; the others use peek. A group whose
// partition this node does not lead gives NOT_COORDINATOR.
func (gc *groupCoordinator) shard(groupID string) (*groupShard, error) {
	t, err := gc.topic(context.Background())
	if err != nil {
		return nil, err
	}
	gc.mu.Lock()
	defer gc.mu.Unlock()
	return gc.currentLocked(groupPartition(groupID, len(t.Partitions)))
}

// shardErrorCode is the code a group request gets when its shard cannot be
// had: NOT_COORDINATOR when another node leads its partition, else
// COORDINATOR_NOT_AVAILABLE.
func shardErrorCode(err error) int16 {
	if errors.Is(err, kerr.NotCoordinator) {
		return kerr.NotCoordinator.Code
	}
	return kerr.CoordinatorNotAvailable.Code
}

// completeTxn applies a transaction marker of producerID, once it is
// durable in __consumer_offsets partition part, to that partition's groups
// (group.Coordinator.CompleteTxn): a commit makes the producer's
// transactional offsets visible, an abort drops them. The WriteTxnMarkers
// handler calls it, after the marker's append and fsync and before it
// answers, so that the transaction coordinator does not start the
// producer's next transaction (whose TxnOffsetCommits would follow the
// marker) first. A partition this node does not lead gives an error that
// maps to NOT_COORDINATOR; one that does not exist, to
// UNKNOWN_TOPIC_OR_PARTITION.
func (gc *groupCoordinator) completeTxn(part int32, producerID int64, commit bool) error {
	t := gc.s.meta.Image().Topic(offsetsTopic)
	if t == nil || part < 0 || int(part) >= len(t.Partitions) {
		return kafkaErr(kerr.UnknownTopicOrPartition, "%s-%d does not exist", offsetsTopic, part)
	}
	if _, err := gc.topic(context.Background()); err != nil { // sizes the shard table
		return err
	}
	gc.mu.Lock()
	sh, err := gc.currentLocked(int(part))
	gc.mu.Unlock()
	if err != nil {
		return err
	}
	now := gc.s.now()
	p, _ := sh.step(0, func(c *group.Coordinator) group.Output { return c.CompleteTxn(now, producerID, commit) })
	return p.finish()
}

// peek returns the shard that coordinates groupID if __consumer_offsets
// exists (NOT_COORDINATOR when another node leads its partition), else a
// throwaway shard with an empty core, which answers as Kafka does for a
// group it does not know and never writes.
func (gc *groupCoordinator) peek(groupID string) (*groupShard, error) {
	if t := gc.s.meta.Image().Topic(offsetsTopic); t != nil {
		return gc.shard(groupID)
	}
	sh := &groupShard{gc: gc, dropped: make(chan struct{})}
	sh.mu.core = group.New(gc.s.groupConfig())
	sh.mu.waiters = map[group.Waiter]chan kmsg.Response{}
	return sh, nil
}

// coordinator returns the node that coordinates groupID: the leader of
// its __consumer_offsets partition (which it creates if need be), or
// COORDINATOR_NOT_AVAILABLE while that partition has no leader.
func (gc *groupCoordinator) coordinator(ctx context.Context, groupID string) (metadata.Broker, error) {
	t, err := gc.topic(ctx)
	if err != nil {
		return metadata.Broker{}, err
	}
	pm := t.Partitions[groupPartition(groupID, len(t.Partitions))]
	b, ok := gc.s.meta.Image().Brokers[pm.Leader]
	if !ok || b.Fenced {
		return metadata.Broker{}, kafkaErr(kerr.CoordinatorNotAvailable, "%s-%d has no leader", offsetsTopic, groupPartition(groupID, len(t.Partitions)))
	}
	if pm.Leader == gc.s.cfg.NodeID {
		if _, err := gc.shard(groupID); err != nil {
			return metadata.Broker{}, err
		}
	}
	return b, nil
}

// step runs fn on the core under the shard's lock and appends the records
// it made. waitFor, if non-zero, is registered first so its answer is not
// missed. A failed append is reported to the core at once, under the same
// lock. The caller then calls finish (off the reader goroutine when it may
// block on an fsync).
func (sh *groupShard) step(w group.Waiter, fn func(c *group.Coordinator) group.Output) (pending, chan kmsg.Response) {
	var ch chan kmsg.Response
	sh.mu.Lock()
	if w != 0 {
		ch = make(chan kmsg.Response, 1)
		sh.mu.waiters[w] = ch
	}
	out := fn(sh.mu.core)
	var err error
	var end int64
	if len(out.Records) > 0 {
		err = sh.appendLocked(out)
		end = sh.part.Offsets().LogEnd // appends to the partition hold this lock
		if err != nil {
			now, code := sh.gc.s.now(), groupWriteError(err, false)
			for w := out.Write; w != 0; {
				more := sh.mu.core.Written(now, w, code)
				out.Replies = append(out.Replies, more.Replies...)
				if w = more.Write; w != 0 {
					// Records the failure itself made (none today): the
					// log just refused a write, so they count as failed
					// too rather than being tried.
					sh.gc.s.logger.Error("dropping group records after a failed write", "partition", sh.part.Index, "records", len(more.Records))
				}
			}
		}
	}
	sh.mu.Unlock()
	return pending{sh: sh, out: out, err: err, end: end}, ch
}

// pending is a step whose records may still need their fsync.
type pending struct {
	sh  *groupShard
	out group.Output
	err error // of the append
	end int64 // the log end after the append
}

// finish makes the step's records durable, reports the outcome to the core
// (which makes a commit's offsets or a SyncGroup's assignment visible, or
// drops them), and then delivers the replies of both. It returns the error
// of the append or the fsync.
func (p pending) finish() error {
	if len(p.out.Records) == 0 {
		p.sh.deliver(p.out.Replies)
		return nil
	}
	err := p.err
	if err == nil {
		// Durable here, then on the ISR (acks=all, as Kafka writes
		// group records).
		if err = p.sh.part.Commit(); err == nil {
			ctx, cancel := context.WithTimeout(p.sh.gc.s.bg, groupReplicationTimeout)
			err = p.sh.part.WaitReplicated(ctx, p.end)
			cancel()
		}
		if err != nil {
			p.sh.gc.s.logger.Error("writing group records failed", "partition", p.sh.part.Index, "err", err)
		}
		now := p.sh.gc.s.now()
		next, _ := p.sh.step(0, func(c *group.Coordinator) group.Output {
			return c.Written(now, p.out.Write, groupWriteError(err, false))
		})
		next.finish()
	}
	p.sh.deliver(p.out.Replies)
	return err
}

// answerWritten answers r with ok() once p's records are durable (at once
// when it made none), or with fail(err) if their append or fsync failed.
func answerWritten(r *request, p pending, ok func() kmsg.Response, fail func(error) kmsg.Response) kmsg.Response {
	if len(p.out.Records) == 0 {
		p.finish() // no fsync to wait for: delivers the core's replies
		return ok()
	}
	r.later = func() kmsg.Response {
		if err := p.finish(); err != nil {
			return fail(err)
		}
		return ok()
	}
	return nil
}

func (sh *groupShard) deliver(replies []group.Reply) {
	if len(replies) == 0 {
		return
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	for _, r := range replies {
		ch, ok := sh.mu.waiters[r.To]
		if !ok {
			continue // its connection has gone
		}
		delete(sh.mu.waiters, r.To)
		ch <- r.Resp
	}
}

// forget drops a waiter whose connection closed before its answer.
func (sh *groupShard) forget(w group.Waiter) {
	sh.mu.Lock()
	delete(sh.mu.waiters, w)
	sh.mu.Unlock()
}

// await answers r later: after the step's fsync, with the reply addressed to
// w, or nothing if the connection closes first.
func (gc *groupCoordinator) await(c *conn, r *request, p pending, w group.Waiter, ch chan kmsg.Response) {
	r.later = func() kmsg.Response {
		p.finish()
		select {
		case resp := <-ch:
			return resp
		case <-c.closing():
			p.sh.forget(w)
			return nil
		case <-p.sh.dropped:
			// This node no longer coordinates the group: the client
			// finds the new coordinator and joins again there.
			select {
			case resp := <-ch:
				return resp
			default:
			}
			p.sh.forget(w)
			return notCoordinator(r.kreq)
		}
	}
}

// notCoordinator answers a waiting JoinGroup or SyncGroup whose shard was
// dropped with NOT_COORDINATOR.
func notCoordinator(req kmsg.Request) kmsg.Response {
	switch req := req.(type) {
	case *kmsg.JoinGroupRequest:
		resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
		resp.ErrorCode, resp.Generation, resp.MemberID = kerr.NotCoordinator.Code, -1, req.MemberID
		return resp
	case *kmsg.SyncGroupRequest:
		resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
		resp.ErrorCode = kerr.NotCoordinator.Code
		return resp
	}
	return nil
}

// drop marks the shard as no longer this node's (its partition's
// leadership moved or changed epoch): requests waiting in it are answered
// NOT_COORDINATOR. Idempotent.
func (sh *groupShard) drop() {
	sh.dropOnce.Do(func() { close(sh.dropped) })
}

func (gc *groupCoordinator) newWaiter() group.Waiter { return group.Waiter(gc.nextWaiter.Add(1)) }

// tickLoop fires the cores' timers until the server stops.
func (gc *groupCoordinator) tickLoop(stop <-chan struct{}) {
	t := time.NewTicker(groupTickInterval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		for _, sh := range gc.loaded() {
			now := gc.s.now()
			p, _ := sh.step(0, func(c *group.Coordinator) group.Output { return c.Tick(now) })
			p.finish()
		}
	}
}
