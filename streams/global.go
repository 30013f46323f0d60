package streams

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// globalRun is an App instance's side of its global tables: a client
// outside the group that reads every partition of each global topic into
// the table's store (the state DB's globalPartition), with the offsets
// read checkpointed beside the data, as a restore does. The loop goroutine
// owns it, as it owns the state DB: startGlobals reads the topics to their
// end before the instance joins its group, and each step applies what the
// client has fetched since, before the step's records.
type globalRun struct {
	cl    *kgo.Client
	apply map[string]func(*kgo.Record) error // topic -> its store's update
	store map[string]string                  // topic -> store name
	next  map[string]map[int32]int64         // topic -> partition -> next offset to apply
}

// startGlobals bootstraps the global tables: it reads each global topic
// from the offsets checkpointed with its store to its last stable offset,
// committing every restoreBatch records, and keeps the client for the
// loop.
func (r *run) startGlobals(ctx context.Context) error {
	topo := r.app.topo
	if len(topo.globals) == 0 {
		return nil
	}
	ends, err := r.adm.ListCommittedOffsets(ctx, topo.GlobalTopics()...)
	if err != nil {
		return fmt.Errorf("streams: end offsets of the global topics: %w", err)
	}
	g := &globalRun{apply: map[string]func(*kgo.Record) error{}, store: map[string]string{}, next: map[string]map[int32]int64{}}
	from := map[string]map[int32]kgo.Offset{}
	end := map[string]map[int32]int64{}
	for _, def := range topo.globals {
		parts, ok := ends[def.topic]
		if missing, bad := parts[-1]; !ok || (bad && errors.Is(missing.Err, kerr.UnknownTopicOrPartition)) {
			return fmt.Errorf("%w: %q, read as a global table (create it first)", ErrMissingSourceTopic, def.topic)
		}
		g.apply[def.topic], g.store[def.topic] = def.open(r.db), def.store
		g.next[def.topic], end[def.topic], from[def.topic] = map[int32]int64{}, map[int32]int64{}, map[int32]kgo.Offset{}
		rebuild := false
		for p, lo := range parts {
			if lo.Err != nil {
				return fmt.Errorf("streams: end offset of global topic %s/%d: %w", def.topic, p, lo.Err)
			}
			off, _, err := r.db.Checkpoint(def.store, p)
			if err != nil {
				return err
			}
			rebuild = rebuild || off > lo.Offset
			g.next[def.topic][p], end[def.topic][p] = off, lo.Offset
		}
		if rebuild {
			// The topic is shorter than what the store holds: it was
			// deleted and created again. Read it all over.
			r.app.log.Warn("global table store is ahead of its topic; rebuilding it", "store", def.store, "topic", def.topic)
			if err := r.db.Drop(def.store, globalPartition); err != nil {
				return err
			}
			for p := range g.next[def.topic] {
				g.next[def.topic][p] = 0
				r.db.SetCheckpoint(def.store, p, 0)
			}
		}
		for p, off := range g.next[def.topic] {
			from[def.topic][p] = kgo.NewOffset().At(off)
		}
	}
	r.glob = g
	if g.cl, err = kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(r.app.cfg.Brokers...),
		kgo.ConsumePartitions(from),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(), // markers say where a transactional topic ends
	}, r.app.cfg.ClientOptions...)...); err != nil {
		return fmt.Errorf("streams: global table client: %w", err)
	}
	applied := 0
	for !g.caughtUp(end) {
		fetches := g.cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var ferr error
		fetches.EachError(func(topic string, p int32, err error) {
			ferr = fmt.Errorf("streams: global topic %s/%d: %w", topic, p, err)
		})
		if ferr != nil {
			return ferr
		}
		n, err := r.applyGlobals(fetches)
		if err != nil {
			return err
		}
		if applied += n; applied >= restoreBatch {
			if err := r.db.Commit(); err != nil {
				return err
			}
			applied = 0
		}
	}
	return r.db.Commit()
}

func (g *globalRun) caughtUp(end map[string]map[int32]int64) bool {
	for topic, parts := range end {
		for p, off := range parts {
			if g.next[topic][p] < off {
				return false
			}
		}
	}
	return true
}

// applyGlobals applies fetched records of global topics to their stores
// and checkpoints the offsets after them, in the pending batch; records
// that cannot be decoded are logged and skipped. It returns how many it
// applied.
func (r *run) applyGlobals(fetches kgo.Fetches) (int, error) {
	g := r.glob
	n := 0
	var err error
	fetches.EachPartition(func(p kgo.FetchTopicPartition) {
		apply := g.apply[p.Topic]
		if err != nil || apply == nil || len(p.Records) == 0 {
			return
		}
		next, applied, aerr := applyChangelog(p.Records, g.next[p.Topic][p.Partition], func(rec *kgo.Record) error {
			aerr := apply(rec)
			if errors.Is(aerr, ErrBadRecord) {
				r.app.log.Warn("skipping a global table record that cannot be decoded", "err", aerr)
				return nil
			}
			return aerr
		})
		g.next[p.Topic][p.Partition], n = next, n+applied
		if aerr != nil {
			err = aerr
			return
		}
		r.db.SetCheckpoint(g.store[p.Topic], p.Partition, g.next[p.Topic][p.Partition])
	})
	return n, err
}

// pollGlobalsLocked applies what the global client has fetched since the
// last step, without waiting.
func (r *run) pollGlobalsLocked() error {
	if r.glob == nil {
		return nil
	}
	// A nil context makes PollFetches return at once with what is buffered.
	fetches := r.glob.cl.PollFetches(nil) //nolint:staticcheck // SA1012: nil is kgo's documented non-blocking poll
	fetches.EachError(func(topic string, p int32, err error) {
		r.app.log.Warn("global topic fetch error", "topic", topic, "partition", p, "err", err)
	})
	_, err := r.applyGlobals(fetches)
	return err
}

// rewindGlobalsLocked sends the global client back to the committed
// checkpoints after the state DB's batch was discarded (an aborted
// transaction), so that the global updates it held are applied again.
func (r *run) rewindGlobalsLocked() error {
	if r.glob == nil {
		return nil
	}
	set := map[string]map[int32]kgo.EpochOffset{}
	for topic, parts := range r.glob.next {
		set[topic] = map[int32]kgo.EpochOffset{}
		for p := range parts {
			off, _, err := r.db.Checkpoint(r.glob.store[topic], p)
			if err != nil {
				return err
			}
			parts[p] = off
			set[topic][p] = kgo.EpochOffset{Epoch: -1, Offset: off}
		}
	}
	r.glob.cl.SetOffsets(set)
	return nil
}

func (r *run) closeGlobals() {
	if r.glob != nil && r.glob.cl != nil {
		r.glob.cl.Close()
	}
}
