package streams

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// restoreBatch is how many changelog records a restore applies between
// commits of the state DB (each with its checkpoint), bounding memory.
const restoreBatch = 100_000

// restorePendingLocked brings the stores of newly assigned tasks up to
// their changelogs, opens the tasks and resumes fetching their input. It
// commits what was processed first (exactly once, when a transaction is
// open).
func (r *run) restorePendingLocked(ctx context.Context) error {
	if err := r.commitLocked(ctx); err != nil {
		return err
	}
	if err := r.beginLocked(); err != nil { // keep the loop's invariant: in a transaction
		return err
	}
	ids := make([]TaskID, 0, len(r.mu.pending))
	for id := range r.mu.pending {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i].String() < ids[j].String() })
	start := time.Now()
	defer func() { r.app.metrics.restoreTime.Add(time.Since(start).Seconds()) }()
	resume := map[string][]int32{}
	for _, id := range ids {
		for _, s := range r.loggedStores(id) {
			if err := r.restoreStore(ctx, s, id.Partition); err != nil {
				return fmt.Errorf("streams: task %s: restore %s: %w", id, s.name, err)
			}
		}
		if _, err := r.eng.open(id); err != nil {
			return err
		}
		for _, topic := range r.app.topo.subs[id.Subtopology].topics {
			n := r.app.topo.topics[topic]
			name := r.eng.env.topicName(n, topic)
			resume[name] = append(resume[name], id.Partition)
		}
		delete(r.mu.pending, id)
	}
	r.cl.ResumeFetchPartitions(resume)
	return nil
}

// restoreStore reads one store partition's changelog from its checkpoint
// to the end (the last stable offset: aborted transactions are skipped)
// and applies it.
func (r *run) restoreStore(ctx context.Context, s *storeDef, partition int32) error {
	topic := r.eng.changelogTopic(s.name)
	ends, err := r.adm.ListCommittedOffsets(ctx, topic)
	if err != nil {
		return fmt.Errorf("end offset of %s: %w", topic, err)
	}
	endOff, ok := ends.Lookup(topic, partition)
	if !ok || endOff.Err != nil {
		return fmt.Errorf("end offset of %s/%d: %v", topic, partition, endOff.Err)
	}
	end := endOff.Offset
	from, have, err := r.db.Checkpoint(s.name, partition)
	if err != nil {
		return err
	}
	if have && from > end {
		// The changelog is shorter than our state: it was deleted and
		// recreated. Our state is not its state.
		r.app.log.Warn("local state is ahead of its changelog; rebuilding it", "store", s.name, "partition", partition, "checkpoint", from, "end", end)
		if err := r.db.Drop(s.name, partition); err != nil {
			return err
		}
		if err := r.db.Commit(); err != nil {
			return err
		}
		have = false
	}
	if !have {
		from = 0
	}
	if from >= end {
		r.app.metrics.restoreLeft.WithLabelValues(s.name, strconv.Itoa(int(partition))).Set(0)
		return nil
	}
	apply := restorer(r, s, partition)
	applyKV := func(rec *kgo.Record) error { return apply(rec.Key, rec.Value) }
	r.rcl.AddConsumePartitions(map[string]map[int32]kgo.Offset{topic: {partition: kgo.NewOffset().At(from)}})
	defer r.rcl.RemoveConsumePartitions(map[string][]int32{topic: {partition}})
	next, applied := from, 0
	for next < end {
		fetches := r.rcl.PollFetches(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var ferr error
		fetches.EachError(func(_ string, _ int32, err error) { ferr = err })
		if ferr != nil {
			return ferr
		}
		var aerr error
		fetches.EachPartition(func(p kgo.FetchTopicPartition) {
			if aerr != nil || p.Topic != topic || p.Partition != partition {
				return
			}
			var n int
			next, n, aerr = applyChangelog(p.Records, next, applyKV)
			applied += n
		})
		if aerr != nil {
			return fmt.Errorf("changelog %s/%d: %w", topic, partition, aerr)
		}
		if applied >= restoreBatch || next >= end {
			r.app.metrics.restored.WithLabelValues(s.name).Add(float64(applied))
			r.app.metrics.restoreLeft.WithLabelValues(s.name, strconv.Itoa(int(partition))).Set(float64(end - next))
			r.db.SetCheckpoint(s.name, partition, next)
			// Restored data can be read again: no need to wait for the
			// disk (a crash leaves state and checkpoint at an earlier batch).
			if err := r.db.CommitNoSync(); err != nil {
				return err
			}
			applied = 0
		}
	}
	return nil
}

// applyChangelog applies one fetched changelog partition's records in
// order with apply, skipping control records (transaction markers). It
// returns the offset after the last record it went through (next when
// there is none) and how many it applied, and stops at apply's first error.
func applyChangelog(recs []*kgo.Record, next int64, apply func(*kgo.Record) error) (int64, int, error) {
	n := 0
	for _, rec := range recs {
		next = rec.Offset + 1
		if rec.Attrs.IsControl() {
			continue
		}
		if err := apply(rec); err != nil {
			return next, n, err
		}
		n++
	}
	return next, n, nil
}

// restorer returns the function that applies one changelog record to a
// store partition of s's kind.
func restorer(r *run, s *storeDef, partition int32) func(key, value []byte) error {
	switch s.kind {
	case windowStore:
		return r.db.Window(s.name, partition, s.retention).Restore
	case sessionStore:
		return r.db.Session(s.name, partition, s.retention).Restore
	default:
		return r.db.KeyValue(s.name, partition).Restore
	}
}
