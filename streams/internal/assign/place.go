package assign

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// This file is the deterministic core: given the tasks and what every
// member reported, it decides who runs what. No IO, no clocks; the same
// inputs (members in kgo's order) give the same plan on any leader.

// member is one group member as the leader sees it.
type member struct {
	id         string
	generation int32 // the generation its owned partitions are from
	info       memberInfo
	owned      []kmsg.ConsumerMemberMetadataOwnedPartition
	standby    map[Task]struct{} // info.standby as a set
	active     map[Task]struct{} // info.active as a set
}

func newMember(id string, generation int32, info memberInfo, owned []kmsg.ConsumerMemberMetadataOwnedPartition) member {
	m := member{id: id, generation: generation, info: info, owned: owned,
		standby: make(map[Task]struct{}, len(info.standby)),
		active:  make(map[Task]struct{}, len(info.active)),
	}
	for _, t := range info.standby {
		m.standby[t] = struct{}{}
	}
	for _, t := range info.active {
		m.active[t] = struct{}{}
	}
	return m
}

// state reports whether m has local state for t and how much: its
// reported offset (-1 if none) and whether it ran t, as active or standby.
func (m *member) state(t Task) (offset int64, ran, ok bool) {
	offset, hasOffset := m.info.offsets[t]
	if !hasOffset {
		offset = -1
	}
	_, sb := m.standby[t]
	_, ac := m.active[t]
	ran = sb || ac
	return offset, ran, hasOffset || ran
}

// quota keeps counts balanced: every member gets lo, extra of them lo+1.
type quota struct {
	lo, extra int
	count     []int
}

func newQuota(total, members int) *quota {
	return &quota{lo: total / members, extra: total % members, count: make([]int, members)}
}

func (q *quota) canTake(i int) bool {
	return q.count[i] < q.lo || q.count[i] == q.lo && q.extra > 0
}

func (q *quota) take(i int) {
	if q.count[i] == q.lo {
		q.extra--
	}
	q.count[i]++
}

// betterState reports whether member i is a better home for t than member
// j (j < 0: no candidate yet): more state, then fewer tasks, then earlier.
func betterState(ms []member, q *quota, t Task, i, j int) bool {
	if j < 0 {
		return true
	}
	oi, ri, _ := ms[i].state(t)
	oj, rj, _ := ms[j].state(t)
	if oi != oj {
		return oi > oj
	}
	if ri != rj {
		return ri
	}
	return q.count[i] < q.count[j]
}

// leastLoaded returns the member with the fewest tasks among those ok
// accepts, or -1.
func leastLoaded(q *quota, ok func(i int) bool) int {
	best := -1
	for i := range q.count {
		if ok(i) && (best < 0 || q.count[i] < q.count[best]) {
			best = i
		}
	}
	return best
}

// placeActive returns the owner (member index) of every task. Members keep
// the tasks they own while balance allows (the claim of the highest
// generation wins); the rest go first to members with state for them,
// then to the least loaded.
func placeActive(tasks []Task, ms []member) []int {
	owner := make([]int, len(tasks))
	prev := make([]int, len(tasks))
	for k, t := range tasks {
		owner[k], prev[k] = -1, -1
		for i := range ms {
			if _, ok := ms[i].active[t]; ok && (prev[k] < 0 || ms[i].generation > ms[prev[k]].generation) {
				prev[k] = i
			}
		}
	}
	q := newQuota(len(tasks), len(ms))
	// Sticky: every previous owner keeps up to lo, then the extra slots go
	// to previous owners that have more, in task order.
	for k := range tasks {
		if p := prev[k]; p >= 0 && q.count[p] < q.lo {
			owner[k] = p
			q.take(p)
		}
	}
	for k := range tasks {
		if p := prev[k]; p >= 0 && owner[k] < 0 && q.canTake(p) {
			owner[k] = p
			q.take(p)
		}
	}
	// Orphans with a warm home: the member with the most state.
	for k, t := range tasks {
		if owner[k] >= 0 {
			continue
		}
		best := -1
		for i := range ms {
			if _, _, ok := ms[i].state(t); ok && q.canTake(i) && betterState(ms, q, t, i, best) {
				best = i
			}
		}
		if best >= 0 {
			owner[k] = best
			q.take(best)
		}
	}
	for k := range tasks {
		if owner[k] < 0 {
			i := leastLoaded(q, q.canTake) // never -1: the quotas add up to len(tasks)
			owner[k] = i
			q.take(i)
		}
	}
	return owner
}

// placeStandby returns each member's standby tasks: up to standbys
// replicas (at most one per member, never on the active owner) of every
// task stateful accepts, balanced across members, preferring members with
// state for the task.
func placeStandby(tasks []Task, owner []int, ms []member, standbys int, stateful func(int) bool) [][]Task {
	out := make([][]Task, len(ms))
	replicas := min(standbys, len(ms)-1)
	if replicas <= 0 {
		return out
	}
	var want []int // indexes into tasks of stateful ones
	for k, t := range tasks {
		if stateful == nil || stateful(t.Subtopology) {
			want = append(want, k)
		}
	}
	q := newQuota(len(want)*replicas, len(ms))
	holders := make([][]int, len(tasks))
	free := func(k, i int) bool {
		if owner[k] == i {
			return false
		}
		for _, h := range holders[k] {
			if h == i {
				return false
			}
		}
		return true
	}
	give := func(k, i int) {
		holders[k] = append(holders[k], i)
		q.take(i)
	}
	for _, k := range want { // sticky and warm first
		for len(holders[k]) < replicas {
			best := -1
			for i := range ms {
				if _, _, ok := ms[i].state(tasks[k]); ok && free(k, i) && q.canTake(i) && betterState(ms, q, tasks[k], i, best) {
					best = i
				}
			}
			if best < 0 {
				break
			}
			give(k, best)
		}
	}
	for _, k := range want {
		for len(holders[k]) < replicas {
			i := leastLoaded(q, func(i int) bool { return free(k, i) && q.canTake(i) })
			if i < 0 { // the only members with room run it already
				i = leastLoaded(q, func(i int) bool { return free(k, i) })
			}
			give(k, i)
		}
	}
	rebalanceStandby(tasks, want, holders, q.count, free, ms)
	for _, k := range want {
		for _, i := range holders[k] {
			out[i] = append(out[i], tasks[k])
		}
	}
	return out
}

// rebalanceStandby repairs what the greedy placement could not balance
// (the last replicas may fit only on members already full): while some
// member has two standbys more than another, it moves one over, the task
// the receiver has the most state for. It stops when no such move exists;
// every move lowers the spread, so it ends.
func rebalanceStandby(tasks []Task, want []int, holders [][]int, count []int, free func(k, i int) bool, ms []member) {
	for {
		moved := false
		for h := range count {
			for l := range count {
				if count[h]-count[l] < 2 {
					continue
				}
				best, bestAt := -1, -1
				for _, k := range want {
					at := slices.Index(holders[k], h)
					if at < 0 || !free(k, l) {
						continue
					}
					if best < 0 || stateAbove(&ms[l], tasks[k], tasks[best]) {
						best, bestAt = k, at
					}
				}
				if best >= 0 {
					holders[best][bestAt] = l
					count[h]--
					count[l]++
					moved = true
				}
			}
		}
		if !moved {
			return
		}
	}
}

// stateAbove reports whether m has more state for t than for u.
func stateAbove(m *member, t, u Task) bool {
	ot, rt, _ := m.state(t)
	ou, ru, _ := m.state(u)
	if ot != ou {
		return ot > ou
	}
	return rt && !ru
}

// cooperative withholds, for this round, every task planned for a member
// while another member still owns one of its partitions: that member gets
// an assignment without the task, revokes its partitions and rejoins, and
// the next round hands the task over. This is kgo's
// BalancePlan.AdjustCooperative at task granularity, including its
// KIP-792 rule: a claim beaten by a strictly higher generation claim of
// the same partition is stale and does not prove ownership.
// It returns the owner of every task for this round, -1 for withheld.
func cooperative(topo topology, tasks []Task, owner []int, ms []member) []int {
	type tp struct {
		topic string
		p     int32
	}
	type claim struct {
		gen     int32
		members []int
	}
	claims := make(map[tp]*claim)
	for i := range ms {
		for _, o := range ms[i].owned {
			for _, p := range o.Partitions {
				c := claims[tp{o.Topic, p}]
				if c == nil {
					c = &claim{gen: ms[i].generation}
					claims[tp{o.Topic, p}] = c
				}
				c.gen = max(c.gen, ms[i].generation)
				c.members = append(c.members, i)
			}
		}
	}
	final := make([]int, len(tasks))
	for k, t := range tasks {
		o := owner[k]
		final[k] = o
		ownsAll, others := true, false
		for _, topic := range topo.subs[t.Subtopology] {
			c := claims[tp{topic, t.Partition}]
			if c == nil {
				ownsAll = false
				continue
			}
			owns := false
			for _, i := range c.members {
				if i != o {
					others = true
				} else if ms[i].generation >= c.gen {
					owns = true
				}
			}
			ownsAll = ownsAll && owns
		}
		if others && !ownsAll {
			final[k] = -1
		}
	}
	return final
}
