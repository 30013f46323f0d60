package controller

import (
	"fmt"
	"slices"

	"github.com/runnel-io/runnel/broker/internal/metadata"
)

// Reassignment, as Kafka's controller runs it (KIP-455): a partition's
// replicas move to a target set without a moment with fewer copies.
// Starting it makes Replicas the target followed by the replicas being
// removed, and records which are adding and removing; the adding ones
// host the partition and fetch it as followers. Each Tick completes the
// reassignments whose adding replicas have all joined the ISR: Replicas
// becomes the target, the removed replicas leave the ISR, and a leader
// outside the target hands over to the first target replica in the ISR.
// A reassignment to the current replicas, or a cancellation (a nil
// target), reverts to the original replicas.

// ReassignRequest is an AlterPartitionReassignments request.
type ReassignRequest struct {
	Partitions []ReassignPartition `json:"partitions"`
}

// ReassignPartition asks for one partition's target replicas; nil cancels
// the reassignment in progress.
type ReassignPartition struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Replicas  []int32 `json:"replicas"`
}

// ReassignReply answers a ReassignRequest, partition by partition.
type ReassignReply struct {
	Results []PartitionResult `json:"results"`
}

// Reassign starts (or cancels) the reassignments of r against im, each on
// the image the ones before made, and returns each partition's outcome and
// the records (one batch).
func Reassign(im *metadata.Image, r ReassignRequest) (ReassignReply, []metadata.Record) {
	b := &batch{im: im}
	var reply ReassignReply
	for _, rp := range r.Partitions {
		res := PartitionResult{Topic: rp.Topic, Partition: rp.Partition}
		ch, err := reassign(b.im, rp)
		if err == nil && ch != nil && !b.add(metadata.Record{ChangePartition: ch}) {
			err = fmt.Errorf("%w: %s-%d changed meanwhile", ErrInvalidReplicaAssignment, rp.Topic, rp.Partition)
		}
		res.set(err)
		reply.Results = append(reply.Results, res)
	}
	return reply, b.recs
}

func reassign(im *metadata.Image, rp ReassignPartition) (*metadata.ChangePartition, error) {
	t := im.Topic(rp.Topic)
	if t == nil || rp.Partition < 0 || int(rp.Partition) >= len(t.Partitions) {
		return nil, fmt.Errorf("%w: %s-%d", ErrUnknownPartition, rp.Topic, rp.Partition)
	}
	p := t.Partitions[rp.Partition]
	original := originalReplicas(p)
	target := rp.Replicas
	if target == nil {
		if !p.Reassigning() {
			return nil, fmt.Errorf("%w: %s-%d", ErrNoReassignmentInProgress, rp.Topic, rp.Partition)
		}
		target = original
	}
	if len(target) == 0 {
		return nil, fmt.Errorf("%w: %s-%d: no replicas", ErrInvalidReplicaAssignment, rp.Topic, rp.Partition)
	}
	for i, id := range target {
		if slices.Contains(target[:i], id) {
			return nil, fmt.Errorf("%w: %s-%d: replica %d twice in %v", ErrInvalidReplicaAssignment, rp.Topic, rp.Partition, id, target)
		}
		if _, ok := im.Brokers[id]; !ok {
			return nil, fmt.Errorf("%w: %s-%d: broker %d is not registered", ErrInvalidReplicaAssignment, rp.Topic, rp.Partition, id)
		}
	}
	q := p
	q.Epoch++
	q.AddingReplicas, q.RemovingReplicas = nil, nil
	for _, id := range target {
		if !slices.Contains(original, id) {
			q.AddingReplicas = append(q.AddingReplicas, id)
		}
	}
	for _, id := range original {
		if !slices.Contains(target, id) {
			q.RemovingReplicas = append(q.RemovingReplicas, id)
		}
	}
	q.Replicas = append(slices.Clone(target), q.RemovingReplicas...)
	if !q.Reassigning() {
		// Back to (or already at) the original replicas, in the target's
		// order: what the adding replicas copied is dropped with them.
		q.Replicas = slices.Clone(target)
		q.ISR = slices.DeleteFunc(slices.Clone(p.ISR), func(r int32) bool { return !slices.Contains(target, r) })
		if len(q.ISR) == 0 {
			q.ISR = []int32{p.ISR[0]}
		}
		if !slices.Contains(q.ISR, q.Leader) && q.Leader != -1 {
			q.Leader = q.ISR[0]
			q.LeaderEpoch++
		}
	}
	return &metadata.ChangePartition{Topic: rp.Topic, Partition: rp.Partition, State: q}, nil
}

// originalReplicas is the replica set before the reassignment in
// progress (Replicas without the adding ones), or Replicas.
func originalReplicas(p metadata.Partition) []int32 {
	out := make([]int32, 0, len(p.Replicas))
	for _, r := range p.Replicas {
		if !slices.Contains(p.AddingReplicas, r) {
			out = append(out, r)
		}
	}
	return out
}

// completeReassignments finishes, in b, every reassignment whose adding
// replicas are all in the ISR (Tick calls it).
func completeReassignments(b *batch) {
	for _, name := range b.im.TopicNames() {
		for i, p := range b.im.Topics[name].Partitions {
			if !p.Reassigning() || !isSubset(p.AddingReplicas, p.ISR) {
				continue
			}
			target := p.TargetReplicas()
			q := p
			q.Epoch++
			q.Replicas = target
			q.AddingReplicas, q.RemovingReplicas = nil, nil
			q.ISR = slices.DeleteFunc(slices.Clone(p.ISR), func(r int32) bool { return !slices.Contains(target, r) })
			if !slices.Contains(q.ISR, q.Leader) {
				q.Leader = -1
				for _, r := range target {
					if slices.Contains(q.ISR, r) && usable(b.im, r) {
						q.Leader = r
						break
					}
				}
				q.LeaderEpoch++
			}
			if len(q.ISR) == 0 {
				continue // no target replica in sync: wait
			}
			b.add(metadata.Record{ChangePartition: &metadata.ChangePartition{Topic: name, Partition: int32(i), State: q}})
		}
	}
}

func isSubset(a, b []int32) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}
