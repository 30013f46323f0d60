package controller

import (
	"fmt"
	"slices"

	"github.com/runnel-io/runnel/broker/internal/metadata"
)

// Placement asks for the replicas of partitions [First, First+Count) of
// a topic.
type Placement struct {
	// First is the id of the first partition to place (the topic's
	// current count for CreatePartitions, 0 for a new topic).
	First int
	Count int
	// ReplicationFactor is the replicas per partition.
	ReplicationFactor int
	// Start picks where the striping starts in the rack-alternated broker
	// list (taken modulo its length): random for a new topic (Kafka's
	// placer starts at random), the index of partition 0's leader when
	// adding partitions, so the new ones continue the pattern.
	Start int
}

// Place assigns replicas with Kafka's rack-aware assignment (AdminUtils'
// assignReplicasToBrokersRackAware, which KRaft's StripedReplicaPlacer
// keeps in spirit): brokers are listed alternating racks (rack-less
// brokers form one rack of their own), partition i's leader is the
// (i+Start)-th of that list, so leaders stripe evenly; its followers
// follow at a shift that grows every full round, skipping a broker whose
// rack already holds a replica while some rack holds none, so a partition
// spans as many racks as it can. Fenced brokers and brokers in controlled
// shutdown are left out. A replication factor above the usable brokers
// is ErrInvalidReplicationFactor. It is a pure function.
func Place(brokers []metadata.Broker, p Placement) ([][]int32, error) {
	if p.Count <= 0 || p.First < 0 {
		return nil, fmt.Errorf("%w: %d partitions from %d", ErrInvalidPartitions, p.Count, p.First)
	}
	var live []metadata.Broker
	for _, b := range brokers {
		if b.Usable() {
			live = append(live, b)
		}
	}
	if p.ReplicationFactor <= 0 || p.ReplicationFactor > len(live) {
		return nil, fmt.Errorf("%w: replication factor %d, %d usable brokers (%d registered, the others fenced or shutting down)",
			ErrInvalidReplicationFactor, p.ReplicationFactor, len(live), len(brokers))
	}
	list, rackOf, racks := rackAlternated(live)
	n := len(list)
	start := ((p.Start % n) + n) % n
	shift := start
	out := make([][]int32, 0, p.Count)
	for id := p.First; id < p.First+p.Count; id++ {
		if id > 0 && id%n == 0 {
			shift++
		}
		first := (id + start) % n
		leader := list[first]
		replicas := []int32{leader}
		withRack := map[string]bool{rackOf[leader]: true}
		for k := 0; len(replicas) < p.ReplicationFactor; k++ {
			b := list[followerIndex(first, shift*racks, k, n)]
			rack := rackOf[b]
			if (withRack[rack] && len(withRack) < racks) || slices.Contains(replicas, b) {
				continue
			}
			replicas = append(replicas, b)
			withRack[rack] = true
		}
		out = append(out, replicas)
	}
	return out, nil
}

// followerIndex is Kafka's replicaIndex: the k-th candidate after the
// leader at first, shifted so successive rounds pair leaders with other
// followers.
func followerIndex(first, shift, k, n int) int {
	return (first + 1 + (shift+k)%(n-1)) % n
}

// rackAlternated lists the brokers taking one from each rack in turn
// (racks in name order, brokers by id within a rack): racks a:{1,2},
// b:{3} give 1,3,2.
func rackAlternated(brokers []metadata.Broker) (list []int32, rackOf map[int32]string, racks int) {
	byRack := map[string][]int32{}
	rackOf = map[int32]string{}
	for _, b := range brokers {
		byRack[b.Rack] = append(byRack[b.Rack], b.ID)
		rackOf[b.ID] = b.Rack
	}
	names := make([]string, 0, len(byRack))
	for r, ids := range byRack {
		names = append(names, r)
		slices.Sort(ids)
	}
	slices.Sort(names)
	for i := 0; len(list) < len(brokers); i++ {
		for _, r := range names {
			if i < len(byRack[r]) {
				list = append(list, byRack[r][i])
			}
		}
	}
	return list, rackOf, len(names)
}

// StartOf is the Start that makes Place continue a topic whose partition 0
// is led by broker leader: leader's index in the rack-alternated list of
// the usable brokers (0 if it is not among them).
func StartOf(brokers []metadata.Broker, leader int32) int {
	var live []metadata.Broker
	for _, b := range brokers {
		if b.Usable() {
			live = append(live, b)
		}
	}
	list, _, _ := rackAlternated(live)
	return max(0, slices.Index(list, leader))
}
