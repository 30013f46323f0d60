package group

import (
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TopicExists reports whether a topic partition exists; commits to others
// fail with UNKNOWN_TOPIC_OR_PARTITION, as in Kafka.
type TopicExists func(topic string, partition int32) bool

// CommitOffsets handles an OffsetCommit. A group unknown to the coordinator
// may commit with generation -1 (a "simple" group that assigns partitions
// itself), as Kafka allows. The offsets are pending until Written reports
// the Output's records durable: FetchOffsets and Offsets go on returning
// the previous ones, and a failed write leaves them in place (the owner
// then answers every partition with the error, as Kafka does). The
// Output is Atomic: one request, one record batch.
func (c *Coordinator) CommitOffsets(now time.Time, req *kmsg.OffsetCommitRequest, exists TopicExists) (*kmsg.OffsetCommitResponse, Output) {
	var out Output
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	code := c.commitCheck(now, req)
	var parts []commitPart
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			epoch := rp.LeaderEpoch
			if req.Version < 6 {
				epoch = -1
			}
			parts = append(parts, commitPart{topic: rt.Topic, partition: rp.Partition, offset: rp.Offset, epoch: epoch, metadata: rp.Metadata})
		}
	}
	var staged []*pendingOffset
	c.commitParts(now, req.Group, parts, exists, false, code, &out, func(g *group, p *commitPart, o committed) {
		staged = append(staged, &pendingOffset{g: g, topic: p.topic, partition: p.partition, o: o})
	})
	i := 0
	for _, rt := range req.Topics {
		st := kmsg.NewOffsetCommitResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetCommitResponseTopicPartition()
			sp.Partition, sp.ErrorCode = rp.Partition, parts[i].code
			st.Partitions = append(st.Partitions, sp)
			i++
		}
		resp.Topics = append(resp.Topics, st)
	}
	if len(staged) > 0 {
		c.stage().offsets = staged
	}
	out.Atomic = len(out.Records) > 0
	c.seal(now, &out)
	for _, po := range staged {
		po.o.pos = c.pos(out.Write)
	}
	return resp, out
}

// commitPart is one partition of an OffsetCommit or a TxnOffsetCommit,
// with the error it gets (code).
type commitPart struct {
	topic     string
	partition int32
	offset    int64
	epoch     int32
	metadata  *string
	code      int16
}

// commitParts checks each partition of a commit to groupID and appends
// the records of the valid ones to out, calling stage with each; the
// others get their code. code is the error every partition gets (the
// group's checks), nil if none. unknownFirst: a partition of an unknown
// topic gets UNKNOWN_TOPIC_OR_PARTITION before any other error (Kafka's
// TxnOffsetCommit filters those out before its coordinator sees them);
// else after them (OffsetCommit). A group the coordinator does not know
// is created (a simple group) with the first valid partition.
func (c *Coordinator) commitParts(now time.Time, groupID string, parts []commitPart, exists TopicExists, unknownFirst bool, code *kerr.Error, out *Output, stage func(*group, *commitPart, committed)) {
	g := c.groups[groupID]
	for i := range parts {
		p := &parts[i]
		unknown := exists != nil && !exists(p.topic, p.partition)
		meta := deref(p.metadata)
		switch {
		case unknown && unknownFirst:
			p.code = kerr.UnknownTopicOrPartition.Code
		case code != nil:
			p.code = code.Code
		case len(meta) > c.cfg.OffsetMetadataMaxBytes:
			p.code = kerr.OffsetMetadataTooLarge.Code
		case unknown:
			p.code = kerr.UnknownTopicOrPartition.Code
		default:
			if g == nil {
				g = newGroup(groupID, now)
				c.groups[groupID] = g
			}
			o := committed{offset: p.offset, leaderEpoch: p.epoch, metadata: meta, commitTime: now}
			stage(g, p, o)
			out.Records = append(out.Records, offsetRecord(g.id, p.topic, p.partition, &o))
		}
	}
}

// commitCheck returns the error every partition of a commit gets, or nil.
func (c *Coordinator) commitCheck(now time.Time, req *kmsg.OffsetCommitRequest) *kerr.Error {
	if req.Group == "" {
		return kerr.InvalidGroupID
	}
	g := c.groups[req.Group]
	if g == nil {
		if req.Generation < 0 {
			return nil
		}
		return kerr.IllegalGeneration
	}
	switch m := g.member(req.MemberID); {
	case g.state == Dead:
		return kerr.CoordinatorNotAvailable
	case g.staticFenced(req.InstanceID, req.MemberID):
		return kerr.FencedInstanceID
	case req.Generation < 0 && g.state == Empty:
		return nil
	case g.state == CompletingRebalance:
		return kerr.RebalanceInProgress
	case m == nil:
		return kerr.UnknownMemberID
	case req.Generation != g.generation:
		return kerr.IllegalGeneration
	default:
		m.deadline = now.Add(m.sessionTimeout)
		return nil
	}
}

// FetchOffsets returns a group's committed offsets: of the topics named, or
// of every topic when topics is nil. A partition without an offset (or a
// group the coordinator does not know) reads -1, as in Kafka. With
// requireStable (OffsetFetch v7+), a partition with transactional offsets
// still open (see TxnCommitOffsets) answers UNSTABLE_OFFSET_COMMIT with
// offset -1 instead, as Kafka's; without it, the committed offset.
func (c *Coordinator) FetchOffsets(groupID string, topics []kmsg.OffsetFetchRequestTopic, requireStable bool) []kmsg.OffsetFetchResponseTopic {
	g := c.groups[groupID]
	if topics == nil {
		if g == nil {
			return nil
		}
		for _, t := range sortedKeys(g.offsets) {
			rt := kmsg.NewOffsetFetchRequestTopic()
			rt.Topic = t
			rt.Partitions = sortedKeys(g.offsets[t])
			topics = append(topics, rt)
		}
	}
	unstable := func(string, int32) bool { return false }
	if requireStable && g != nil {
		unstable = c.openTxnSet(g)
	}
	var out []kmsg.OffsetFetchResponseTopic
	for _, rt := range topics {
		st := kmsg.NewOffsetFetchResponseTopic()
		st.Topic = rt.Topic
		for _, p := range rt.Partitions {
			sp := kmsg.NewOffsetFetchResponseTopicPartition()
			sp.Partition = p
			sp.Offset, sp.LeaderEpoch = -1, -1
			switch o, ok := g.offset(rt.Topic, p); {
			case unstable(rt.Topic, p):
				sp.ErrorCode = kerr.UnstableOffsetCommit.Code
			case ok:
				sp.Offset, sp.LeaderEpoch = o.offset, o.leaderEpoch
				m := o.metadata
				sp.Metadata = &m
			}
			st.Partitions = append(st.Partitions, sp)
		}
		out = append(out, st)
	}
	return out
}

// offset returns the committed offset of a partition; g may be nil.
func (g *group) offset(topic string, part int32) (committed, bool) {
	if g == nil {
		return committed{}, false
	}
	o, ok := g.offsets[topic][part]
	return o, ok
}

func sortedKeys[K string | int32, V any](m map[K]V) []K {
	ks := make([]K, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// DeleteOffsets handles an OffsetDelete: the group must be empty, or a
// consumer group not subscribed to the topic (GROUP_SUBSCRIBED_TO_TOPIC).
func (c *Coordinator) DeleteOffsets(now time.Time, req *kmsg.OffsetDeleteRequest) (*kmsg.OffsetDeleteResponse, Output) {
	resp, out := c.deleteOffsets(req)
	c.seal(now, &out)
	return resp, out
}

func (c *Coordinator) deleteOffsets(req *kmsg.OffsetDeleteRequest) (*kmsg.OffsetDeleteResponse, Output) {
	var out Output
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	g := c.groups[req.Group]
	switch {
	case req.Group == "":
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return resp, out
	case g == nil || g.state == Dead:
		resp.ErrorCode = kerr.GroupIDNotFound.Code
		return resp, out
	case g.protocolType != "consumer" && g.state != Empty:
		resp.ErrorCode = kerr.NonEmptyGroup.Code
		return resp, out
	}
	subscribed := g.subscribed()
	for _, rt := range req.Topics {
		st := kmsg.NewOffsetDeleteResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetDeleteResponseTopicPartition()
			sp.Partition = rp.Partition
			_, ok := g.offsets[rt.Topic][rp.Partition]
			switch {
			case subscribed(rt.Topic):
				sp.ErrorCode = kerr.GroupSubscribedToTopic.Code
			case ok || c.hasPending(g, rt.Topic, rp.Partition) || c.txnOpen(g, rt.Topic, rp.Partition):
				// A commit in flight is deleted too (its record comes
				// before the tombstone), as Kafka's removeOffsets drops
				// pending commits, and so are open transactional ones,
				// as Kafka 4.0's replay of the tombstone drops them.
				g.deleteOffset(rt.Topic, rp.Partition)
				c.cancelPending(g, rt.Topic, rp.Partition)
				c.cancelTxn(g, rt.Topic, rp.Partition)
				out.Records = append(out.Records, offsetRecord(g.id, rt.Topic, rp.Partition, nil))
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, out
}

func (g *group) deleteOffset(topic string, part int32) {
	delete(g.offsets[topic], part)
	if len(g.offsets[topic]) == 0 {
		delete(g.offsets, topic)
	}
}

// subscribed returns whether the group's members subscribe to a topic, read
// from their consumer-protocol metadata. An empty group subscribes to
// nothing; metadata that does not parse counts as subscribed to everything,
// so nothing is deleted by mistake.
func (g *group) subscribed() func(string) bool {
	if g.state == Empty || g.protocolType != "consumer" {
		return func(string) bool { return false }
	}
	topics := map[string]bool{}
	for _, m := range g.members {
		var md kmsg.ConsumerMemberMetadata
		meta := m.metadataFor(g.protocol)
		if g.protocol == "" && len(m.protocols) > 0 {
			meta = m.protocols[0].Metadata
		}
		if err := md.ReadFrom(meta); err != nil {
			return func(string) bool { return true }
		}
		for _, t := range md.Topics {
			topics[t] = true
		}
	}
	return func(t string) bool { return topics[t] }
}

// DeleteGroup handles one group of a DeleteGroups: only an empty group may
// be deleted; its offsets and metadata get tombstones.
func (c *Coordinator) DeleteGroup(now time.Time, groupID string) (*kerr.Error, Output) {
	var out Output
	g := c.groups[groupID]
	switch {
	case groupID == "":
		return kerr.InvalidGroupID, out
	case g == nil || g.state == Dead:
		return kerr.GroupIDNotFound, out
	case g.state != Empty:
		return kerr.NonEmptyGroup, out
	}
	c.dropGroup(g, &out)
	c.seal(now, &out)
	return nil, out
}

// dropGroup writes tombstones for an empty group's offsets (commits in
// flight and open transactional offsets included: their records come
// first, and Kafka 4.0's deleteAllOffsets tombstones them too) and the
// group, and forgets it.
func (c *Coordinator) dropGroup(g *group, out *Output) {
	keep := func(topic string, part int32, o committed) {
		if _, ok := g.offsets[topic][part]; !ok {
			if g.offsets[topic] == nil {
				g.offsets[topic] = map[int32]committed{}
			}
			g.offsets[topic][part] = o // only to be tombstoned below
		}
	}
	for _, po := range c.pendingOffsets(g) {
		po.cancelled = true
		keep(po.topic, po.partition, po.o)
	}
	for _, t := range c.openTxnOffsets(g) {
		c.closeTxnOffset(t)
		keep(t.topic, t.partition, t.o)
	}
	for _, t := range sortedKeys(g.offsets) {
		for _, p := range sortedKeys(g.offsets[t]) {
			out.Records = append(out.Records, offsetRecord(g.id, t, p, nil))
		}
	}
	out.Records = append(out.Records, Record{Key: groupKey(g.id)})
	g.state = Dead
	delete(c.groups, g.id)
}

// expireOffsets removes offsets past offsets.retention.minutes, as Kafka
// (KIP-211): for an empty group counted from when it became empty, for a
// simple group from each commit, for a stable consumer group only of topics
// it no longer subscribes to. A partition with a commit in flight or an
// open transactional offset keeps its offset (Kafka 4.0's
// cleanupExpiredOffsets), and an empty group left without offsets
// (applied, in flight or in an open transaction) is deleted, as in Kafka.
func (c *Coordinator) expireOffsets(now time.Time, out *Output) {
	for _, g := range c.sortedGroups() {
		inflight := c.pendingOffsets(g)
		open := c.openTxnSet(g)
		busy := func(t string, p int32) bool {
			for _, po := range inflight {
				if po.topic == t && po.partition == p {
					return true
				}
			}
			return open(t, p)
		}
		var base func(o committed) (time.Time, bool)
		switch {
		case g.state == Empty && g.protocolType != "":
			base = func(committed) (time.Time, bool) { return g.stateTime, true }
		case g.state == Empty:
			base = func(o committed) (time.Time, bool) { return o.commitTime, true }
		case g.state == Stable && g.protocolType == "consumer":
			sub := g.subscribed()
			base = func(committed) (time.Time, bool) { return time.Time{}, false }
			for _, t := range sortedKeys(g.offsets) {
				if !sub(t) {
					for _, p := range sortedKeys(g.offsets[t]) {
						if o := g.offsets[t][p]; now.Sub(o.commitTime) >= c.cfg.OffsetsRetention && !busy(t, p) {
							g.deleteOffset(t, p)
							out.Records = append(out.Records, offsetRecord(g.id, t, p, nil))
						}
					}
				}
			}
		default:
			continue
		}
		for _, t := range sortedKeys(g.offsets) {
			for _, p := range sortedKeys(g.offsets[t]) {
				if b, ok := base(g.offsets[t][p]); ok && now.Sub(b) >= c.cfg.OffsetsRetention && !busy(t, p) {
					g.deleteOffset(t, p)
					out.Records = append(out.Records, offsetRecord(g.id, t, p, nil))
				}
			}
		}
		if g.state == Empty && len(g.offsets) == 0 && len(g.pending) == 0 && len(inflight) == 0 && len(c.openTxnOffsets(g)) == 0 {
			c.dropGroup(g, out)
		}
	}
}
