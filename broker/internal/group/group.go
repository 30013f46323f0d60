package group

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// State is a classic group's state, named as Kafka names it.
type State int8

// The states of a classic group.
const (
	Empty State = iota
	PreparingRebalance
	CompletingRebalance
	Stable
	Dead
)

var stateNames = [...]string{"Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"}

func (s State) String() string { return stateNames[s] }

// ParseState returns the state named s (case-insensitive, as Kafka's
// ListGroups filter), and false for an unknown name.
func ParseState(s string) (State, bool) {
	for i, n := range stateNames {
		if strings.EqualFold(n, s) {
			return State(i), true
		}
	}
	return 0, false
}

// Config holds the broker settings the coordinator enforces.
type Config struct {
	MinSessionTimeout     time.Duration // group.min.session.timeout.ms
	MaxSessionTimeout     time.Duration // group.max.session.timeout.ms
	InitialRebalanceDelay time.Duration // group.initial.rebalance.delay.ms
	MaxSize               int           // group.max.size
	// OffsetMetadataMaxBytes is offset.metadata.max.bytes.
	OffsetMetadataMaxBytes int
	// OffsetsRetention is offsets.retention.minutes; expiry is checked
	// every OffsetsRetentionCheckInterval
	// (offsets.retention.check.interval.ms).
	OffsetsRetention              time.Duration
	OffsetsRetentionCheckInterval time.Duration
	// NewMemberID returns a fresh member id for a client id or group
	// instance id. nil: prefix + "-" + a counter, which keeps tests
	// deterministic; the broker passes prefix + "-" + a random UUID.
	NewMemberID func(prefix string) string
}

// Waiter names a request whose answer may arrive in a later Output.
type Waiter uint64

// Reply is an answer to a waiting JoinGroup or SyncGroup.
type Reply struct {
	To   Waiter
	Resp kmsg.Response
}

// Record is a record for the group's `__consumer_offsets` partition. A nil
// Value is a tombstone.
type Record struct {
	Key, Value []byte
}

// Output is what a call asks its owner to do: append Records to the
// partition, make them durable, deliver Replies, and report the outcome
// with [Coordinator.Written](Write).
type Output struct {
	Replies []Reply
	Records []Record
	// Write names Records; zero when there are none. The state the
	// records carry (an OffsetCommit's offsets, a SyncGroup's assignment)
	// stays pending, invisible, until Written reports them durable.
	Write WriteID
	// Atomic is set when Records are one request's (an OffsetCommit): they
	// must be appended as one record batch, so that a crash keeps all or
	// none of them. Other Outputs (tombstones of expiry and deletions, a
	// group record) may be split over several batches when one would be
	// too large.
	Atomic bool
	// Producer is set for a TxnOffsetCommit's records: the owner writes
	// them as one transactional batch of that producer (nil: a plain
	// batch). See TxnCommitOffsets.
	Producer *Producer
}

// Producer names the transactional producer whose batch an Output's
// records must be written as.
type Producer struct {
	ID    int64
	Epoch int16
}

func (o *Output) reply(w Waiter, r kmsg.Response) { o.Replies = append(o.Replies, Reply{w, r}) }

// member is one member of a group.
type member struct {
	id, instanceID       string // instanceID "": dynamic member
	clientID, clientHost string
	sessionTimeout       time.Duration
	rebalanceTimeout     time.Duration
	protocols            []kmsg.JoinGroupRequestProtocol
	assignment           []byte
	// joinWaiters are the JoinGroups waiting for the rebalance to
	// complete: a member is "awaiting join" while it has any. Several
	// when a client resends; all get the answer.
	joinWaiters []Waiter
	syncWaiters []Waiter
	// deadline is when the member's session expires without a heartbeat.
	deadline time.Time
}

func (m *member) instance() *string {
	if m.instanceID == "" {
		return nil
	}
	s := m.instanceID
	return &s
}

func (m *member) metadataFor(protocol string) []byte {
	for _, p := range m.protocols {
		if p.Name == protocol {
			return p.Metadata
		}
	}
	return nil
}

func (m *member) supports(protocol string) bool {
	return slices.ContainsFunc(m.protocols, func(p kmsg.JoinGroupRequestProtocol) bool { return p.Name == protocol })
}

// matches reports whether protocols are the member's protocols, in order,
// with the same metadata.
func (m *member) matches(protocols []kmsg.JoinGroupRequestProtocol) bool {
	return slices.EqualFunc(m.protocols, protocols, func(a, b kmsg.JoinGroupRequestProtocol) bool {
		return a.Name == b.Name && string(a.Metadata) == string(b.Metadata)
	})
}

// committed is one committed offset.
type committed struct {
	offset      int64
	leaderEpoch int32
	metadata    string
	commitTime  time.Time
	// pos is the record's place in the log (see Coordinator.pos), so that
	// of two commits of a partition the later record wins whichever
	// completes first, transactional or not, as Kafka compares record
	// offsets.
	pos uint64
}

// group is one consumer group.
type group struct {
	id           string
	state        State
	stateTime    time.Time // when state last changed (Kafka's currentStateTimestamp)
	protocolType string    // "": none (a simple group that only commits)
	protocol     string    // chosen at each generation; "" when Empty
	generation   int32
	leader       string
	members      []*member // in join order
	// pending are member ids handed out with MEMBER_ID_REQUIRED
	// (KIP-394), with when they expire if the member does not rejoin.
	pending map[string]time.Time
	statics map[string]string // group.instance.id -> member id

	// PreparingRebalance: when the join phase ends at the latest, and the
	// initial-delay state (KIP-134).
	joinDeadline     time.Time
	initialDelay     bool
	initialRemaining time.Duration
	newMemberAdded   bool
	// CompletingRebalance: members that have not sent SyncGroup by then
	// are removed.
	syncDeadline time.Time

	offsets map[string]map[int32]committed
}

func newGroup(id string, now time.Time) *group {
	return &group{id: id, stateTime: now, pending: map[string]time.Time{}, statics: map[string]string{}, offsets: map[string]map[int32]committed{}}
}

func (g *group) member(id string) *member {
	for _, m := range g.members {
		if m.id == id {
			return m
		}
	}
	return nil
}

func (g *group) setState(s State, now time.Time) {
	g.state = s
	g.stateTime = now
}

// staticFenced reports whether instance belongs to a member other than id.
func (g *group) staticFenced(instance *string, id string) bool {
	if instance == nil {
		return false
	}
	cur, ok := g.statics[*instance]
	return ok && cur != id
}

// full reports whether another member would exceed group.max.size.
func (g *group) full(max int) bool { return max > 0 && len(g.members)+len(g.pending) >= max }

// supports reports whether a member with these protocols may join: any
// protocol type and protocols do for a group without members; otherwise
// the type must match and one protocol must be supported by every member.
func (g *group) supports(protocolType string, protocols []kmsg.JoinGroupRequestProtocol) bool {
	if len(g.members) == 0 {
		return protocolType != "" && len(protocols) > 0
	}
	if protocolType != g.protocolType {
		return false
	}
	for _, p := range protocols {
		if g.allSupport(p.Name) {
			return true
		}
	}
	return false
}

func (g *group) allSupport(protocol string) bool {
	for _, m := range g.members {
		if !m.supports(protocol) {
			return false
		}
	}
	return true
}

// selectProtocol chooses the next generation's protocol as Kafka does:
// among the protocols every member supports, each member votes for the
// first of its own list; most votes wins. Kafka breaks ties arbitrarily;
// here the earliest in the leader's list wins, so the choice is
// deterministic.
func (g *group) selectProtocol() string {
	first := g.members[0]
	if l := g.member(g.leader); l != nil {
		first = l
	}
	var candidates []string
	for _, p := range first.protocols {
		if g.allSupport(p.Name) && !slices.Contains(candidates, p.Name) {
			candidates = append(candidates, p.Name)
		}
	}
	votes := make([]int, len(candidates))
	for _, m := range g.members {
		for _, p := range m.protocols {
			if i := slices.Index(candidates, p.Name); i >= 0 {
				votes[i]++
				break
			}
		}
	}
	best := 0
	for i := range votes {
		if votes[i] > votes[best] {
			best = i
		}
	}
	return candidates[best]
}

// maxRebalanceTimeout is the longest rebalance timeout among the members.
func (g *group) maxRebalanceTimeout() time.Duration {
	var d time.Duration
	for _, m := range g.members {
		d = max(d, m.rebalanceTimeout)
	}
	return d
}

// numAwaiting is how many members are awaiting join.
func (g *group) numAwaiting() int {
	n := 0
	for _, m := range g.members {
		if len(m.joinWaiters) > 0 {
			n++
		}
	}
	return n
}

// allJoined reports whether every member has rejoined and no KIP-394
// member id is outstanding.
func (g *group) allJoined() bool {
	if len(g.pending) > 0 {
		return false
	}
	for _, m := range g.members {
		if len(m.joinWaiters) == 0 {
			return false
		}
	}
	return true
}

// Coordinator holds the groups of one offsets partition. See the package
// documentation.
type Coordinator struct {
	cfg        Config
	groups     map[string]*group
	nextID     uint64
	nextExpiry time.Time
	rebalances uint64
	// Writes not yet reported by Written, and what the call in progress
	// stages for its Output.
	nextWrite WriteID
	pending   map[WriteID]*pendingWrite
	staged    *pendingWrite
	// txns are the open transactional offsets by producer id (Kafka's
	// pendingTransactionalOffsets), in the order of their records.
	txns map[int64][]*txnOffset
	// loadedRecords counts the records Load and LoadTxn replayed: a
	// loaded record's pos is its number, a written one's comes after
	// them all (pos).
	loadedRecords uint64
}

// Rebalances is how many join phases have completed, for metrics.
func (c *Coordinator) Rebalances() uint64 { return c.rebalances }

// New returns an empty coordinator.
func New(cfg Config) *Coordinator {
	return &Coordinator{cfg: cfg, groups: map[string]*group{}, pending: map[WriteID]*pendingWrite{}, txns: map[int64][]*txnOffset{}}
}

// pos is where the records of write w are in the log, for ordering
// commits: after every loaded record, in WriteID order, which is the order
// the owner appends Outputs in. (Kafka compares record offsets; the core
// knows no offsets, but it knows their order, which is all it compares.)
func (c *Coordinator) pos(w WriteID) uint64 { return c.loadedRecords + uint64(w) }

func (c *Coordinator) newMemberID(prefix string) string {
	if c.cfg.NewMemberID != nil {
		return c.cfg.NewMemberID(prefix)
	}
	c.nextID++
	return prefix + "-" + strconv.FormatUint(c.nextID, 10)
}

// sortedGroups returns the groups in name order, for deterministic output.
func (c *Coordinator) sortedGroups() []*group {
	out := make([]*group, 0, len(c.groups))
	for _, g := range c.groups {
		out = append(out, g)
	}
	slices.SortFunc(out, func(a, b *group) int {
		switch {
		case a.id < b.id:
			return -1
		case a.id > b.id:
			return 1
		}
		return 0
	})
	return out
}
