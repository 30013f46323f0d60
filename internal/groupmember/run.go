package groupmember

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Config says how one member joins its group.
type Config struct {
	// Name is the member's name in reports; it is also its client id, so
	// DescribeGroups shows it.
	Name  string
	Seeds []string
	Group string
	Topic string
	// Balancer is "range", "roundrobin", "sticky" or "cooperative-sticky"
	// (the default).
	Balancer string
	// SessionTimeout and HeartbeatInterval are kgo's defaults when zero.
	SessionTimeout    time.Duration
	HeartbeatInterval time.Duration
	// InstanceID makes the member static (KIP-345) when not empty.
	InstanceID string

	// Output, when set, makes the member a stage of an exactly-once
	// pipeline (see RunTransact): it copies Topic's records, read
	// committed, to Output in one transaction per poll, with
	// TransactionalID.
	Output          string
	TransactionalID string
	// TransactionTimeout is kgo's default (40s) when zero.
	TransactionTimeout time.Duration
	// FetchMaxPartitionBytes bounds what one fetch takes of a partition
	// (kgo.FetchMaxPartitionBytes: a soft bound, a larger record batch
	// still comes whole), and so the size of a pipeline stage's
	// transactions, which copy what one poll returns; kgo's default
	// (1 MiB) when zero.
	FetchMaxPartitionBytes int32
}

// Kind is what an Event reports.
type Kind string

const (
	// Assigned: the member now also owns Partitions.
	Assigned Kind = "assigned"
	// Revoked: the member gave up Partitions in a rebalance.
	Revoked Kind = "revoked"
	// Lost: the member lost Partitions without a clean revoke (it was
	// fenced, or its session expired).
	Lost Kind = "lost"
	// Polled: the member polled the record at Partition/Offset with Value.
	Polled Kind = "polled"
	// Committed: the broker acknowledged the commit of Offsets (partition
	// → next offset to read).
	Committed Kind = "committed"
	// Failed: something went wrong in the member (Err says what); a
	// failed commit is one.
	Failed Kind = "failed"
	// Aborted: a pipeline stage (Config.Output) ended the transaction of
	// N records with an abort; Err says why when it is an error.
	Aborted Kind = "aborted"
)

// Event is one thing a member reports.
type Event struct {
	Kind       Kind            `json:"k"`
	Partitions []int32         `json:"ps,omitempty"`
	Partition  int32           `json:"p,omitempty"`
	Offset     int64           `json:"o,omitempty"`
	Value      string          `json:"v,omitempty"`
	Offsets    map[int32]int64 `json:"os,omitempty"`
	// N is the number of records a pipeline stage's transaction copied
	// (Committed) or abandoned (Aborted).
	N   int    `json:"n,omitempty"`
	Err string `json:"e,omitempty"`
}

func balancer(name string) (kgo.GroupBalancer, error) {
	switch name {
	case "range":
		return kgo.RangeBalancer(), nil
	case "roundrobin":
		return kgo.RoundRobinBalancer(), nil
	case "sticky":
		return kgo.StickyBalancer(), nil
	case "cooperative-sticky", "":
		return kgo.CooperativeStickyBalancer(), nil
	}
	return nil, fmt.Errorf("groupmember: unknown balancer %q", name)
}

// groupOpts are the client options every member has: its seeds, client
// id, group, topic, balancer and session, and callbacks that emit its
// assignments.
func groupOpts(cfg Config, emit func([]Event)) ([]kgo.Opt, error) {
	bal, err := balancer(cfg.Balancer)
	if err != nil {
		return nil, err
	}
	partitions := func(m map[string][]int32) []int32 { return m[cfg.Topic] }
	opts := []kgo.Opt{
		kgo.SeedBrokers(cfg.Seeds...),
		kgo.ClientID(cfg.Name),
		kgo.ConsumerGroup(cfg.Group),
		kgo.ConsumeTopics(cfg.Topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.Balancers(bal),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			emit([]Event{{Kind: Assigned, Partitions: partitions(m)}})
		}),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			emit([]Event{{Kind: Revoked, Partitions: partitions(m)}})
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			emit([]Event{{Kind: Lost, Partitions: partitions(m)}})
		}),
	}
	if cfg.SessionTimeout > 0 {
		opts = append(opts, kgo.SessionTimeout(cfg.SessionTimeout))
	}
	if cfg.HeartbeatInterval > 0 {
		opts = append(opts, kgo.HeartbeatInterval(cfg.HeartbeatInterval))
	}
	if cfg.InstanceID != "" {
		opts = append(opts, kgo.InstanceID(cfg.InstanceID))
	}
	if cfg.FetchMaxPartitionBytes > 0 {
		opts = append(opts, kgo.FetchMaxPartitionBytes(cfg.FetchMaxPartitionBytes))
	}
	return opts, nil
}

// Run runs one member until ctx ends, then leaves the group (a static
// member does not: KIP-345) and closes its client. emit receives the
// member's events; the callbacks of a rebalance may call it from another
// goroutine than the poll loop, never at the same time. A member with
// Config.Output runs RunTransact instead.
func Run(ctx context.Context, cfg Config, emit func([]Event)) error {
	if cfg.Output != "" {
		return RunTransact(ctx, cfg, emit)
	}
	opts, err := groupOpts(cfg, emit)
	if err != nil {
		return err
	}
	opts = append(opts, kgo.DisableAutoCommit(), kgo.BlockRebalanceOnPoll())
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			// A poll with a cancelled context holds rebalances like
			// any other; Close must be free to leave.
			cl.AllowRebalance()
			return nil
		}
		var evs []Event
		fs.EachError(func(t string, p int32, err error) {
			evs = append(evs, Event{Kind: Failed, Partition: p, Err: fmt.Sprintf("fetch %s/%d: %v", t, p, err)})
		})
		next := map[string]map[int32]kgo.EpochOffset{}
		fs.EachRecord(func(r *kgo.Record) {
			evs = append(evs, Event{Kind: Polled, Partition: r.Partition, Offset: r.Offset, Value: string(r.Value)})
			if next[r.Topic] == nil {
				next[r.Topic] = map[int32]kgo.EpochOffset{}
			}
			next[r.Topic][r.Partition] = kgo.EpochOffset{Epoch: r.LeaderEpoch, Offset: r.Offset + 1}
		})
		if len(evs) > 0 {
			emit(evs)
		}
		if len(next) > 0 {
			emit([]Event{commit(ctx, cl, next)})
		}
		cl.AllowRebalance()
	}
}

// commit commits offsets synchronously and says which the broker took.
func commit(ctx context.Context, cl *kgo.Client, offsets map[string]map[int32]kgo.EpochOffset) Event {
	ev := Event{Kind: Committed, Offsets: map[int32]int64{}}
	var errs []string
	cl.CommitOffsetsSync(ctx, offsets, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		if err != nil {
			errs = append(errs, err.Error())
			return
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
					errs = append(errs, fmt.Sprintf("%s/%d: %v", t.Topic, p.Partition, err))
					continue
				}
				if o, ok := offsets[t.Topic][p.Partition]; ok {
					ev.Offsets[p.Partition] = o.Offset
				}
			}
		}
	})
	if len(errs) > 0 && ctx.Err() == nil {
		ev.Err = "commit: " + strings.Join(errs, "; ")
	}
	return ev
}
