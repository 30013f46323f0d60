package controller

import (
	"slices"
	"time"

	"github.com/runnel-io/runnel/broker/internal/metadata"
)

// Config is the active controller's settings (broker configs of the node
// that runs it).
type Config struct {
	// NodeID is the node the controller runs on: a new incarnation of it
	// registers at once (the old one was this process's predecessor).
	NodeID int32
	// SessionTimeout is broker.session.timeout.ms: a broker that has not
	// heartbeated for this long is fenced.
	SessionTimeout time.Duration
	// UncleanLeaderElection is the static broker default of
	// unclean.leader.election.enable; a topic's own config and the
	// cluster-wide dynamic default (image.BrokerConfigs[""]) come first.
	UncleanLeaderElection bool
	// AutoLeaderRebalance is auto.leader.rebalance.enable.
	AutoLeaderRebalance bool
	// LeaderImbalancePercentage is leader.imbalance.per.broker.percentage.
	LeaderImbalancePercentage int32
	// LeaderImbalanceCheckInterval is
	// leader.imbalance.check.interval.seconds.
	LeaderImbalanceCheckInterval time.Duration
}

// Controller is the active controller's state that is not in the metadata
// image: each broker's session deadline and the next rebalance check. It
// is a deterministic core: every method takes the newest image and the
// current time and returns the records to propose; it starts no goroutine
// and reads no clock. Not safe for concurrent use: one owner drives it.
type Controller struct {
	cfg Config
	// sessions holds the heartbeat deadline of each registration.
	sessions map[int32]session
	// nextRebalance is when Tick next checks leader imbalance; zero until
	// the first Tick.
	nextRebalance time.Time
	// dropped counts changes left out because they did not apply (see
	// batch.add); tests expect 0.
	dropped int
}

type session struct {
	epoch    int64
	deadline time.Time
}

// New returns a controller with no sessions: every registered, unfenced
// broker gets a full session timeout from the first Tick (or heartbeat)
// that sees it, as a newly elected Kafka controller gives them.
func New(cfg Config) *Controller {
	return &Controller{cfg: cfg, sessions: map[int32]session{}}
}

// batch accumulates records and the image they lead to, so each decision
// sees the ones before it and the batch is known to apply as a whole.
type batch struct {
	im      *metadata.Image
	recs    []metadata.Record
	dropped int
}

// add applies r to the batch's image and keeps it. A record that does not
// apply is dropped (counted), so the batch always applies whole: the
// controller only makes valid changes against the image it holds, but an
// image with a partition that already breaks the rules (an ISR outside its
// replicas, written by hand) is left as it is rather than fought over.
func (b *batch) add(r metadata.Record) bool {
	im, err := b.im.Apply(r)
	if err != nil {
		b.dropped++
		return false
	}
	b.im = im
	b.recs = append(b.recs, r)
	return true
}

// Tick fences brokers whose session expired, re-elects where the brokers'
// states call for it (a partition without a leader whose replica came
// back, a leader or ISR member that is no longer usable), and, every
// leader.imbalance.check.interval.seconds when auto.leader.rebalance.enable
// is on, moves leadership back to preferred replicas of brokers whose
// imbalance is over leader.imbalance.per.broker.percentage.
func (c *Controller) Tick(im *metadata.Image, now time.Time) []metadata.Record {
	b := &batch{im: im}
	for id := range c.sessions {
		if _, ok := im.Brokers[id]; !ok {
			delete(c.sessions, id)
		}
	}
	for _, id := range im.BrokerIDs() {
		br := im.Brokers[id]
		if br.Epoch == 0 || br.Fenced {
			continue // not managed by the controller, or fenced already
		}
		s, ok := c.sessions[id]
		if !ok || s.epoch != br.Epoch {
			c.sessions[id] = session{epoch: br.Epoch, deadline: now.Add(c.cfg.SessionTimeout)}
			continue
		}
		if !now.Before(s.deadline) {
			fenceBroker(b, br)
		}
	}
	c.reconcile(b, nil)
	completeReassignments(b)
	if c.cfg.AutoLeaderRebalance {
		if c.nextRebalance.IsZero() {
			c.nextRebalance = now.Add(c.cfg.LeaderImbalanceCheckInterval)
		} else if !now.Before(c.nextRebalance) {
			c.nextRebalance = now.Add(c.cfg.LeaderImbalanceCheckInterval)
			rebalance(b, c.cfg.LeaderImbalancePercentage)
		}
	}
	return c.done(b)
}

func (c *Controller) done(b *batch) []metadata.Record {
	c.dropped += b.dropped
	return b.recs
}

func fenceBroker(b *batch, br metadata.Broker) {
	yes, no := true, false
	ch := &metadata.ChangeBroker{ID: br.ID, Epoch: br.Epoch, Fenced: &yes}
	if br.InControlledShutdown {
		ch.InControlledShutdown = &no
	}
	b.add(metadata.Record{ChangeBroker: ch})
}

// reconcile re-decides the leader and ISR of every partition (only of
// those with a replica in only, when only is not nil) against the
// batch's image, adding a ChangePartition for each that changes.
func (c *Controller) reconcile(b *batch, only map[int32]bool) {
	for _, name := range b.im.TopicNames() {
		t := b.im.Topics[name]
		for i, p := range t.Partitions {
			if only != nil && !slices.ContainsFunc(p.Replicas, func(r int32) bool { return only[r] }) {
				continue
			}
			if q, changed := c.rebuild(b.im, t, p); changed {
				b.add(metadata.Record{ChangePartition: &metadata.ChangePartition{Topic: name, Partition: int32(i), State: q}})
			}
		}
	}
}

// usable reports whether broker id is registered, unfenced and not
// shutting down: it may lead and be in ISRs.
func usable(im *metadata.Image, id int32) bool {
	b, ok := im.Brokers[id]
	return ok && b.Usable()
}

// rebuild is the leader election of one partition against im:
//
//   - ISR members that are not usable leave the ISR, but the ISR never
//     becomes empty: the last leader (or first member) stays, so that when
//     it returns it can lead again without losing committed records;
//   - a leader that is usable and in the ISR stays;
//   - else the first replica, in replica order, that is usable and in
//     the ISR leads;
//   - else, if unclean.leader.election.enable holds for the topic, the
//     first usable replica leads and the ISR is reset to it;
//   - else the partition is offline: leader -1.
//
// A change bumps the partition epoch; a change of leader (to -1 too)
// bumps the leader epoch.
func (c *Controller) rebuild(im *metadata.Image, t *metadata.Topic, p metadata.Partition) (metadata.Partition, bool) {
	isr := make([]int32, 0, len(p.ISR))
	for _, r := range p.ISR {
		if usable(im, r) {
			isr = append(isr, r)
		}
	}
	if len(isr) == 0 && len(p.ISR) > 0 {
		keep := p.ISR[0]
		if slices.Contains(p.ISR, p.Leader) {
			keep = p.Leader
		}
		isr = append(isr, keep)
	}
	leader := p.Leader
	if leader < 0 || !usable(im, leader) || !slices.Contains(isr, leader) {
		leader = -1
		for _, r := range p.Replicas {
			if slices.Contains(isr, r) && usable(im, r) {
				leader = r
				break
			}
		}
		if leader == -1 && c.unclean(im, t) {
			for _, r := range p.Replicas {
				if usable(im, r) {
					leader, isr = r, []int32{r}
					break
				}
			}
		}
	}
	return change(p, leader, isr)
}

// change returns p with leader and isr, its epochs bumped, and whether
// that differs from p.
func change(p metadata.Partition, leader int32, isr []int32) (metadata.Partition, bool) {
	if leader == p.Leader && slices.Equal(isr, p.ISR) {
		return p, false
	}
	q := p
	q.Replicas = slices.Clone(p.Replicas)
	q.ISR = slices.Clone(isr)
	if leader != p.Leader {
		q.Leader = leader
		q.LeaderEpoch++
	}
	q.Epoch++
	return q, true
}

// unclean is the topic's effective unclean.leader.election.enable: its
// own config, else the cluster-wide dynamic default, else the static one.
func (c *Controller) unclean(im *metadata.Image, t *metadata.Topic) bool {
	const key = "unclean.leader.election.enable"
	if v, ok := t.Configs[key]; ok {
		return v == "true"
	}
	if v, ok := im.BrokerConfigs[""][key]; ok {
		return v == "true"
	}
	return c.cfg.UncleanLeaderElection
}

// Sessions returns each broker's session deadline (for tests and
// status).
func (c *Controller) Sessions() map[int32]time.Time {
	m := make(map[int32]time.Time, len(c.sessions))
	for id, s := range c.sessions {
		m[id] = s.deadline
	}
	return m
}
