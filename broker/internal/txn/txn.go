package txn

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// State is a transaction's state, numbered as the state byte of Kafka's
// TransactionLogValue and named as DescribeTransactions and
// ListTransactions name it.
type State int8

// The states of a transactional id, as Kafka's TransactionState.
// PrepareEpochFence is never written: here, as in Kafka, an epoch fence
// is the pending abort of an Ongoing transaction with a bumped epoch.
// Dead is never current either: it is the pending state of an expiring
// id, whose record is a tombstone.
const (
	Empty State = iota
	Ongoing
	PrepareCommit
	PrepareAbort
	CompleteCommit
	CompleteAbort
	Dead
	PrepareEpochFence
)

var stateNames = [...]string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence"}

func (s State) String() string {
	if s < 0 || int(s) >= len(stateNames) {
		return "Unknown"
	}
	return stateNames[s]
}

// ParseState returns the state named s (exactly, as Kafka's
// TransactionState.fromName), and false for an unknown name.
func ParseState(s string) (State, bool) {
	for i, n := range stateNames {
		if n == s {
			return State(i), true
		}
	}
	return 0, false
}

// Config holds the broker settings the coordinator enforces.
type Config struct {
	MaxTimeout   time.Duration // transaction.max.timeout.ms
	IDExpiration time.Duration // transactional.id.expiration.ms
	// AbortCheckInterval is
	// transaction.abort.timed.out.transaction.cleanup.interval.ms and
	// ExpiryCheckInterval
	// transaction.remove.expired.transaction.cleanup.interval.ms: how
	// often Tick looks for timed-out transactions and expired ids (zero:
	// at every Tick).
	AbortCheckInterval  time.Duration
	ExpiryCheckInterval time.Duration
	// CoordinatorEpoch is the leader epoch of the __transaction_state
	// partition, stamped on every marker.
	CoordinatorEpoch int32
	// NewProducerID allocates a producer id, or fails with the Kafka
	// error to answer. nil: a counter from 0, which keeps tests
	// deterministic; the broker passes its cluster-wide allocator.
	NewProducerID func() (int64, *kerr.Error)
}

// Waiter names a request; its answer arrives in an Output's Replies.
type Waiter uint64

// Reply is an answer to a request.
type Reply struct {
	To   Waiter
	Resp kmsg.Response
}

// Record is a record for the `__transaction_state` partition. A nil Value
// is a tombstone.
type Record struct {
	Key, Value []byte
}

// TopicPartition names a partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

func compareTP(a, b TopicPartition) int {
	return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
}

// Marker is the transaction marker to write (WriteTxnMarkers) to each of
// Partitions. Once every partition has it, the owner reports
// [Coordinator.MarkersWritten].
type Marker struct {
	TransactionalID  string
	ProducerID       int64
	ProducerEpoch    int16
	Commit           bool
	CoordinatorEpoch int32
	Partitions       []TopicPartition
}

// Output is what a call asks its owner to do: append Records to the
// partition (one batch), make them durable and report the outcome with
// [Coordinator.Written](Write); deliver Replies; write Markers.
type Output struct {
	Replies []Reply
	Records []Record
	// Write names Records; zero when there are none. The state the
	// records carry stays pending, and the replies that depend on it
	// unsent, until Written reports them durable.
	Write   WriteID
	Markers []Marker
}

func (o *Output) reply(w Waiter, r kmsg.Response) { o.Replies = append(o.Replies, Reply{w, r}) }

// meta is what a transactional id's record says, and the pending state a
// write will make true.
type meta struct {
	producerID, lastProducerID int64
	epoch, lastEpoch           int16
	timeout                    time.Duration
	state                      State
	partitions                 []TopicPartition // sorted
	start                      int64            // ms; -1 when no transaction has started
	updated                    int64            // ms
}

func (m meta) clone() meta {
	m.partitions = slices.Clone(m.partitions)
	return m
}

func (m meta) has(tp TopicPartition) bool {
	_, ok := slices.BinarySearchFunc(m.partitions, tp, compareTP)
	return ok
}

// txn is one transactional id.
type txn struct {
	id string
	meta
	// pending is the transition whose record is being written: the
	// coordinator answers clients CONCURRENT_TRANSACTIONS meanwhile, as
	// Kafka does while pendingState is set (a leader's verification
	// reads the durable state: checkVerify).
	pending *transit
}

// visible reports whether the id has ever been written: a new id whose
// first record failed is kept (as Kafka keeps it) but not shown.
func (t *txn) visible() bool { return t.epoch >= 0 }

func exhausted(epoch int16) bool { return epoch >= math.MaxInt16-1 }

// Coordinator holds the transactional ids of one __transaction_state
// partition. See the package documentation.
type Coordinator struct {
	cfg        Config
	txns       map[string]*txn
	nextPID    int64
	nextAbort  time.Time
	nextExpiry time.Time
	nextWrite  WriteID
	pending    map[WriteID]*pendingWrite
	staged     *pendingWrite
}

// New returns an empty coordinator.
func New(cfg Config) *Coordinator {
	return &Coordinator{cfg: cfg, txns: map[string]*txn{}, pending: map[WriteID]*pendingWrite{}}
}

func (c *Coordinator) newProducerID() (int64, *kerr.Error) {
	if c.cfg.NewProducerID != nil {
		return c.cfg.NewProducerID()
	}
	id := c.nextPID
	c.nextPID++
	return id, nil
}

func (c *Coordinator) sortedTxns() []*txn {
	out := make([]*txn, 0, len(c.txns))
	for _, t := range c.txns {
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b *txn) int { return strings.Compare(a.id, b.id) })
	return out
}

// fencedCode is PRODUCER_FENCED as a client of version v understands it:
// versions before min only know INVALID_PRODUCER_EPOCH (Kafka's KafkaApis
// does the same mapping).
func fencedCode(e *kerr.Error, v, min int16) int16 {
	if e == nil {
		return 0
	}
	if e == kerr.ProducerFenced && v < min {
		return kerr.InvalidProducerEpoch.Code
	}
	return e.Code
}
