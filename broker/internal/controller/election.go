package controller

import (
	"fmt"
	"slices"

	"github.com/runnel-io/runnel/broker/internal/metadata"
)

// ElectionType is ElectLeaders' election type, with Kafka's values.
type ElectionType int8

const (
	// Preferred makes the first replica the leader, if it is usable and
	// in the ISR.
	Preferred ElectionType = 0
	// Unclean elects a leader for a partition that has none: from the
	// ISR if possible, else any usable replica (the ISR is reset to it),
	// whatever the topic's unclean.leader.election.enable says.
	Unclean ElectionType = 1
)

// ElectLeader is ElectLeaders for one partition against im (a pure
// function): the partition's new state, or Kafka's error for it
// (ErrElectionNotNeeded when the partition already has the leader asked
// for, ErrPreferredLeaderNotAvailable, ErrEligibleLeadersNotAvailable,
// ErrUnknownPartition, ErrInvalidElectionType).
func ElectLeader(im *metadata.Image, topic string, partition int32, typ ElectionType) (*metadata.ChangePartition, error) {
	t := im.Topic(topic)
	if t == nil || partition < 0 || int(partition) >= len(t.Partitions) {
		return nil, fmt.Errorf("%w: %s-%d", ErrUnknownPartition, topic, partition)
	}
	p := t.Partitions[partition]
	var leader int32 = -1
	isr := p.ISR
	switch typ {
	case Preferred:
		if len(p.Replicas) == 0 {
			return nil, fmt.Errorf("%w: %s-%d has no replicas", ErrPreferredLeaderNotAvailable, topic, partition)
		}
		pref := p.Replicas[0]
		if p.Leader == pref {
			return nil, fmt.Errorf("%w: %s-%d is led by its preferred replica %d", ErrElectionNotNeeded, topic, partition, pref)
		}
		if !usable(im, pref) || !slices.Contains(p.ISR, pref) {
			return nil, fmt.Errorf("%w: %s-%d: preferred replica %d is fenced, shutting down or not in the ISR %v",
				ErrPreferredLeaderNotAvailable, topic, partition, pref, p.ISR)
		}
		leader = pref
		isr = slices.DeleteFunc(slices.Clone(isr), func(r int32) bool { return !usable(im, r) })
	case Unclean:
		if p.Leader >= 0 && usable(im, p.Leader) && slices.Contains(p.ISR, p.Leader) {
			return nil, fmt.Errorf("%w: %s-%d has leader %d", ErrElectionNotNeeded, topic, partition, p.Leader)
		}
		for _, r := range p.Replicas {
			if usable(im, r) && slices.Contains(p.ISR, r) {
				leader = r
				break
			}
		}
		if leader < 0 {
			for _, r := range p.Replicas {
				if usable(im, r) {
					leader, isr = r, []int32{r}
					break
				}
			}
		}
		if leader < 0 {
			return nil, fmt.Errorf("%w: %s-%d: no replica of %v is usable", ErrEligibleLeadersNotAvailable, topic, partition, p.Replicas)
		}
		// Drop unusable members, as the controller's own elections do.
		kept := slices.DeleteFunc(slices.Clone(isr), func(r int32) bool { return !usable(im, r) })
		isr = kept
	default:
		return nil, fmt.Errorf("%w: %d", ErrInvalidElectionType, typ)
	}
	q, _ := change(p, leader, isr)
	return &metadata.ChangePartition{Topic: topic, Partition: partition, State: q}, nil
}

// rebalance is the automatic leader rebalance: for every usable broker
// whose share of preferred partitions (it is the first replica) led by
// another broker is above pct percent, a preferred election for each of
// them that can have one.
func rebalance(b *batch, pct int32) {
	type part struct {
		topic string
		index int32
	}
	preferred := map[int32]int{}
	notLed := map[int32][]part{}
	for _, name := range b.im.TopicNames() {
		for i, p := range b.im.Topics[name].Partitions {
			if len(p.Replicas) == 0 {
				continue
			}
			pref := p.Replicas[0]
			preferred[pref]++
			if p.Leader != pref {
				notLed[pref] = append(notLed[pref], part{name, int32(i)})
			}
		}
	}
	for _, id := range b.im.BrokerIDs() {
		n := preferred[id]
		if n == 0 || !usable(b.im, id) || len(notLed[id])*100 <= int(pct)*n {
			continue
		}
		for _, p := range notLed[id] {
			ch, err := ElectLeader(b.im, p.topic, p.index, Preferred)
			if err == nil {
				b.add(metadata.Record{ChangePartition: ch})
			}
		}
	}
}

// ElectRequest is an ElectLeaders request: one election type for the
// named partitions (every partition when Partitions is nil).
type ElectRequest struct {
	Type       ElectionType     `json:"type"`
	Partitions []ElectPartition `json:"partitions"`
}

// ElectPartition names one partition of an ElectRequest.
type ElectPartition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

// PartitionResult is one partition's outcome of an ElectLeaders or
// AlterPartitionReassignments request: its Kafka error code (0: done) and
// message.
type PartitionResult struct {
	Topic        string `json:"topic"`
	Partition    int32  `json:"partition"`
	ErrorCode    int16  `json:"error_code,omitempty"`
	ErrorMessage string `json:"error_message,omitempty"`
}

// set records err (nil: success) as the result's code and message.
func (r *PartitionResult) set(err error) {
	if err != nil {
		resp := ResponseFor(nil, err)
		r.ErrorCode, r.ErrorMessage = resp.ErrorCode, resp.ErrorMessage
	}
}

// ElectReply answers an ElectRequest, partition by partition.
type ElectReply struct {
	Results []PartitionResult `json:"results"`
}

// Elect runs ElectLeader for every partition of r against im, each on the
// image the ones before it made, and returns the outcome of each and the
// records of the elections that happened (one batch, all or none).
func Elect(im *metadata.Image, r ElectRequest) (ElectReply, []metadata.Record) {
	parts := r.Partitions
	if parts == nil {
		for _, name := range im.TopicNames() {
			for i := range im.Topics[name].Partitions {
				parts = append(parts, ElectPartition{Topic: name, Partition: int32(i)})
			}
		}
	}
	b := &batch{im: im}
	var reply ElectReply
	for _, p := range parts {
		res := PartitionResult{Topic: p.Topic, Partition: p.Partition}
		ch, err := ElectLeader(b.im, p.Topic, p.Partition, r.Type)
		if err == nil && !b.add(metadata.Record{ChangePartition: ch}) {
			err = fmt.Errorf("%w: %s-%d changed meanwhile", ErrElectionNotNeeded, p.Topic, p.Partition)
		}
		res.set(err)
		reply.Results = append(reply.Results, res)
	}
	return reply, b.recs
}
