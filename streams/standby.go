package streams

import (
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/streams/internal/assign"
)

// standbyRun keeps this instance's standby tasks warm (Config.Standbys):
// a client outside the group follows the changelog partitions of each
// standby task's stores and applies them to the local state, checkpointed
// as a restore is, so that when the task moves here its restore starts
// from about where its changelog ends. The loop goroutine owns it; the
// group's assignment (run.q.standby) says which tasks to follow.
type standbyRun struct {
	cl    *kgo.Client
	tasks map[TaskID]bool
	// parts are the changelog partitions followed: topic -> partition ->
	// the store and its next offset.
	parts map[string]map[int32]*standbyPart
}

type standbyPart struct {
	store *storeDef
	next  int64
	apply func(key, value []byte) error
}

// syncStandbysLocked follows the changelogs of the standby tasks the last
// assignment gave this instance (those not active or restoring here), stops
// following the others, and applies what the client has fetched, without
// waiting.
func (r *run) syncStandbysLocked() error {
	if r.app.cfg.Standbys == 0 {
		return nil
	}
	sb := r.standby
	want := map[TaskID]bool{}
	r.q.Lock()
	for _, t := range r.q.standby {
		id := TaskID{Subtopology: t.Subtopology, Partition: t.Partition}
		if _, active := r.eng.tasks[id]; !active && !r.mu.pending[id] {
			want[id] = true
		}
	}
	r.q.Unlock()
	add := map[string]map[int32]kgo.Offset{}
	remove := map[string][]int32{}
	for id := range sb.tasks {
		if !want[id] {
			delete(sb.tasks, id)
			for _, s := range r.loggedStores(id) {
				topic := r.eng.changelogTopic(s.name)
				delete(sb.parts[topic], id.Partition)
				remove[topic] = append(remove[topic], id.Partition)
			}
		}
	}
	for id := range want {
		if sb.tasks[id] {
			continue
		}
		sb.tasks[id] = true
		for _, s := range r.loggedStores(id) {
			from, _, err := r.db.Checkpoint(s.name, id.Partition)
			if err != nil {
				return err
			}
			topic := r.eng.changelogTopic(s.name)
			if sb.parts[topic] == nil {
				sb.parts[topic] = map[int32]*standbyPart{}
			}
			sb.parts[topic][id.Partition] = &standbyPart{store: s, next: from, apply: restorer(r, s, id.Partition)}
			if add[topic] == nil {
				add[topic] = map[int32]kgo.Offset{}
			}
			add[topic][id.Partition] = kgo.NewOffset().At(from)
		}
	}
	if len(remove) > 0 {
		sb.cl.RemoveConsumePartitions(remove)
	}
	if len(add) > 0 {
		sb.cl.AddConsumePartitions(add)
	}
	r.app.metrics.standbyTasks.Set(float64(len(sb.tasks)))
	if len(sb.tasks) == 0 {
		return nil
	}
	fetches := sb.cl.PollFetches(nil) //nolint:staticcheck // SA1012: nil is kgo's documented non-blocking poll
	fetches.EachError(func(topic string, p int32, err error) {
		r.app.log.Warn("standby changelog fetch error", "topic", topic, "partition", p, "err", err)
	})
	var err error
	fetches.EachPartition(func(p kgo.FetchTopicPartition) {
		part := sb.parts[p.Topic][p.Partition]
		if err != nil || part == nil || len(p.Records) == 0 {
			return // a partition removed since it was fetched
		}
		var n int
		apply := func(rec *kgo.Record) error { return part.apply(rec.Key, rec.Value) }
		if part.next, n, err = applyChangelog(p.Records, part.next, apply); err != nil {
			err = fmt.Errorf("streams: standby of %s/%d: %w", p.Topic, p.Partition, err)
			return
		}
		r.db.SetCheckpoint(part.store.name, p.Partition, part.next)
		r.app.metrics.standbyRecords.WithLabelValues(part.store.name).Add(float64(n))
	})
	return err
}

// loggedStores are the stores of task id that have a changelog.
func (r *run) loggedStores(id TaskID) []*storeDef {
	var out []*storeDef
	for _, s := range r.app.topo.subs[id.Subtopology].stores {
		if s.logged {
			out = append(out, s)
		}
	}
	return out
}

// rewindStandbysLocked sends the standby client back to the committed
// checkpoints after the state DB's batch was discarded (an aborted
// transaction), so that the updates the batch held are applied again.
func (r *run) rewindStandbysLocked() error {
	if r.standby == nil {
		return nil
	}
	set := map[string]map[int32]kgo.EpochOffset{}
	for topic, parts := range r.standby.parts {
		set[topic] = map[int32]kgo.EpochOffset{}
		for p, part := range parts {
			off, _, err := r.db.Checkpoint(part.store.name, p)
			if err != nil {
				return err
			}
			part.next = off
			set[topic][p] = kgo.EpochOffset{Epoch: -1, Offset: off}
		}
	}
	r.standby.cl.SetOffsets(set)
	return nil
}

// snapshotOffsetsLocked records, for the assignor's next join, how far
// the local state of each active and standby task goes (the sum of its
// stores' checkpoints), so that tasks go where their state is.
func (r *run) snapshotOffsetsLocked() {
	ids := r.eng.taskIDs()
	if r.standby != nil {
		for id := range r.standby.tasks {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i].String() < ids[j].String() })
	offs := map[assign.Task]int64{}
	for _, id := range ids {
		var sum int64
		for _, s := range r.loggedStores(id) {
			if off, ok, err := r.db.Checkpoint(s.name, id.Partition); err == nil && ok {
				sum += off
			}
		}
		if sum > 0 {
			offs[assign.Task{Subtopology: id.Subtopology, Partition: id.Partition}] = sum
		}
	}
	r.q.Lock()
	r.q.offsets = offs
	r.q.Unlock()
}

// localOffsets is the assignor's Config.Offsets: the last snapshot.
func (r *run) localOffsets() map[assign.Task]int64 {
	r.q.Lock()
	defer r.q.Unlock()
	return r.q.offsets
}

func (r *run) closeStandbys() {
	if r.standby != nil && r.standby.cl != nil {
		r.standby.cl.Close()
	}
}
