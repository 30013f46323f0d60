package controller

import (
	"fmt"
	"slices"

	"github.com/runnel-io/runnel/broker/internal/metadata"
)

// AlterPartitionRequest is one partition of a leader's AlterPartition: the
// ISR it proposes, and the epochs it holds.
type AlterPartitionRequest struct {
	Broker         int32   `json:"broker"` // the requesting leader
	BrokerEpoch    int64   `json:"broker_epoch"`
	Topic          string  `json:"topic"`
	Partition      int32   `json:"partition"`
	LeaderEpoch    int32   `json:"leader_epoch"`
	PartitionEpoch int32   `json:"partition_epoch"`
	ISR            []int32 `json:"isr"`
}

// AlterPartition validates a leader's ISR change against im (a pure
// function) and returns the partition's state after it, and the record
// that makes the change (nil when the ISR is the current one). The checks
// and their errors are Kafka's, in Kafka's order: the requester's broker
// epoch (ErrStaleBrokerEpoch), the partition (ErrUnknownPartition), the
// leader epoch (ErrFencedLeaderEpoch), that the requester leads
// (ErrNotLeader), the partition epoch (ErrInvalidUpdateVersion), the ISR
// a non-empty subset of the replicas without repeats that holds the leader
// (ErrInvalidISR), and every member registered, unfenced and not shutting
// down (ErrIneligibleReplica).
func AlterPartition(im *metadata.Image, r AlterPartitionRequest) (metadata.Partition, *metadata.Record, error) {
	br, ok := im.Brokers[r.Broker]
	if !ok || br.Epoch != r.BrokerEpoch {
		return metadata.Partition{}, nil, fmt.Errorf("%w: broker %d epoch %d", ErrStaleBrokerEpoch, r.Broker, r.BrokerEpoch)
	}
	t := im.Topic(r.Topic)
	if t == nil || r.Partition < 0 || int(r.Partition) >= len(t.Partitions) {
		return metadata.Partition{}, nil, fmt.Errorf("%w: %s-%d", ErrUnknownPartition, r.Topic, r.Partition)
	}
	p := t.Partitions[r.Partition]
	if r.LeaderEpoch != p.LeaderEpoch {
		return p, nil, fmt.Errorf("%w: %s-%d: leader epoch %d, current %d", ErrFencedLeaderEpoch, r.Topic, r.Partition, r.LeaderEpoch, p.LeaderEpoch)
	}
	if r.Broker != p.Leader {
		return p, nil, fmt.Errorf("%w: %s-%d: broker %d, leader %d", ErrNotLeader, r.Topic, r.Partition, r.Broker, p.Leader)
	}
	if r.PartitionEpoch != p.Epoch {
		return p, nil, fmt.Errorf("%w: %s-%d: partition epoch %d, current %d", ErrInvalidUpdateVersion, r.Topic, r.Partition, r.PartitionEpoch, p.Epoch)
	}
	if len(r.ISR) == 0 || !slices.Contains(r.ISR, p.Leader) {
		return p, nil, fmt.Errorf("%w: %v must hold the leader %d", ErrInvalidISR, r.ISR, p.Leader)
	}
	for i, id := range r.ISR {
		if !slices.Contains(p.Replicas, id) || slices.Contains(r.ISR[:i], id) {
			return p, nil, fmt.Errorf("%w: %v is not a subset of the replicas %v", ErrInvalidISR, r.ISR, p.Replicas)
		}
	}
	for _, id := range r.ISR {
		if !usable(im, id) {
			return p, nil, fmt.Errorf("%w: broker %d is fenced, shutting down or not registered", ErrIneligibleReplica, id)
		}
	}
	q, changed := change(p, p.Leader, r.ISR)
	if !changed {
		return p, nil, nil
	}
	return q, &metadata.Record{ChangePartition: &metadata.ChangePartition{Topic: r.Topic, Partition: r.Partition, State: q}}, nil
}
