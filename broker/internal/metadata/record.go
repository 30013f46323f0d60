package metadata

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
)

// Errors returned when a record cannot apply to an image.
var (
	ErrTopicExists    = errors.New("metadata: topic already exists")
	ErrUnknownTopic   = errors.New("metadata: unknown topic")
	ErrBadRecord      = errors.New("metadata: malformed record")
	ErrPartitionCount = errors.New("metadata: partition count can only grow")
	// ErrStaleEpoch: a record made from an older image (a broker or
	// partition epoch that moved on since); it changes nothing, and the
	// controller decides again from the newer image.
	ErrStaleEpoch = errors.New("metadata: stale epoch")
	// ErrClusterID: the cluster is named already, with another id.
	ErrClusterID = errors.New("metadata: the cluster has another id")
)

// Record is one change to the metadata. Exactly one field is set.
type Record struct {
	SetClusterID      *SetClusterID      `json:"set_cluster_id,omitempty"`
	RegisterBroker    *Broker            `json:"register_broker,omitempty"`
	CreateTopic       *Topic             `json:"create_topic,omitempty"`
	DeleteTopic       *DeleteTopic       `json:"delete_topic,omitempty"`
	AddPartitions     *AddPartitions     `json:"add_partitions,omitempty"`
	SetTopicConfig    *SetConfig         `json:"set_topic_config,omitempty"`
	SetBrokerConfig   *SetConfig         `json:"set_broker_config,omitempty"`
	ChangePartition   *ChangePartition   `json:"change_partition,omitempty"`
	AllocateProducers *AllocateProducers `json:"allocate_producers,omitempty"`
	ChangeBroker      *ChangeBroker      `json:"change_broker,omitempty"`
}

// ChangeBroker fences, unfences or marks for controlled shutdown one
// registration of a broker (Kafka's FenceBroker, UnfenceBroker and
// BrokerRegistrationChange records). Epoch must be the registration's.
type ChangeBroker struct {
	ID                   int32 `json:"id"`
	Epoch                int64 `json:"epoch"`
	Fenced               *bool `json:"fenced,omitempty"`
	InControlledShutdown *bool `json:"in_controlled_shutdown,omitempty"`
}

// SetClusterID names the cluster; it is the first record of a new cluster,
// and may not rename it.
type SetClusterID struct {
	ID string `json:"id"`
}

// DeleteTopic removes a topic.
type DeleteTopic struct {
	Name string `json:"name"`
}

// AddPartitions appends partitions to a topic.
type AddPartitions struct {
	Topic      string      `json:"topic"`
	Partitions []Partition `json:"partitions"`
}

// SetConfig sets (Value non-nil) or removes (Value nil) one config key of a
// topic (Name is the topic) or of the brokers (Name "" for the cluster-wide
// default, or a broker id).
type SetConfig struct {
	Name  string  `json:"name"`
	Key   string  `json:"key"`
	Value *string `json:"value"`
}

// ChangePartition replaces one partition's leadership and ISR. The new
// state's Epoch must be larger than the current one (so a change made from
// an older image is refused with ErrStaleEpoch), its LeaderEpoch no
// smaller; its leader is -1 or in its ISR, and its ISR is a subset of its
// replicas without repeats.
type ChangePartition struct {
	Topic     string    `json:"topic"`
	Partition int32     `json:"partition"`
	State     Partition `json:"state"`
}

// AllocateProducers hands out the producer ids [Start, Start+Count).
type AllocateProducers struct {
	Start int64 `json:"start"`
	Count int64 `json:"count"`
}

// Apply returns the image that results from applying r to im. im is not
// modified. An error leaves nothing changed.
func (im *Image) Apply(r Record) (*Image, error) {
	n := im.clone()
	n.Offset++
	switch {
	case r.SetClusterID != nil:
		// Set once: nodes starting together may each propose an id; the
		// first applied wins and the others read it.
		if n.ClusterID != "" && n.ClusterID != r.SetClusterID.ID {
			return nil, fmt.Errorf("%w: cluster id is %s, not %s", ErrClusterID, n.ClusterID, r.SetClusterID.ID)
		}
		n.ClusterID = r.SetClusterID.ID
	case r.RegisterBroker != nil:
		b := *r.RegisterBroker
		// A registration must raise the epoch; one without the controller
		// (epoch 0) may not replace one the controller made.
		if old, ok := n.Brokers[b.ID]; ok && old.Epoch != 0 && b.Epoch <= old.Epoch {
			return nil, fmt.Errorf("%w: broker %d registration epoch %d, registered with %d", ErrStaleEpoch, b.ID, b.Epoch, old.Epoch)
		}
		n.Brokers[b.ID] = b
	case r.ChangeBroker != nil:
		c := r.ChangeBroker
		b, ok := n.Brokers[c.ID]
		if !ok || b.Epoch != c.Epoch {
			return nil, fmt.Errorf("%w: broker %d epoch %d is not registered", ErrStaleEpoch, c.ID, c.Epoch)
		}
		if c.Fenced != nil {
			b.Fenced = *c.Fenced
		}
		if c.InControlledShutdown != nil {
			b.InControlledShutdown = *c.InControlledShutdown
		}
		n.Brokers[c.ID] = b
	case r.CreateTopic != nil:
		t := r.CreateTopic
		if _, ok := n.Topics[t.Name]; ok {
			return nil, fmt.Errorf("%w: %s", ErrTopicExists, t.Name)
		}
		t = t.clone()
		n.Topics[t.Name] = t
		n.TopicsByID[t.ID] = t
	case r.DeleteTopic != nil:
		t, ok := n.Topics[r.DeleteTopic.Name]
		if !ok {
			return nil, fmt.Errorf("%w: %s", ErrUnknownTopic, r.DeleteTopic.Name)
		}
		delete(n.Topics, t.Name)
		delete(n.TopicsByID, t.ID)
	case r.AddPartitions != nil:
		t, err := n.topicForChange(r.AddPartitions.Topic)
		if err != nil {
			return nil, err
		}
		t.Partitions = append(t.Partitions, r.AddPartitions.Partitions...)
	case r.SetTopicConfig != nil:
		c := r.SetTopicConfig
		t, err := n.topicForChange(c.Name)
		if err != nil {
			return nil, err
		}
		t.Configs = setKey(t.Configs, c.Key, c.Value)
	case r.SetBrokerConfig != nil:
		c := r.SetBrokerConfig
		if c.Name != "" {
			if _, err := strconv.ParseInt(c.Name, 10, 32); err != nil {
				return nil, fmt.Errorf("%w: broker config name %q", ErrBadRecord, c.Name)
			}
		}
		n.BrokerConfigs[c.Name] = setKey(maps.Clone(n.BrokerConfigs[c.Name]), c.Key, c.Value)
	case r.ChangePartition != nil:
		c := r.ChangePartition
		t, err := n.topicForChange(c.Topic)
		if err != nil {
			return nil, err
		}
		if c.Partition < 0 || int(c.Partition) >= len(t.Partitions) {
			return nil, fmt.Errorf("%w: %s-%d", ErrUnknownTopic, c.Topic, c.Partition)
		}
		if err := n.checkChange(t.Partitions[c.Partition], c.State); err != nil {
			return nil, fmt.Errorf("%s-%d: %w", c.Topic, c.Partition, err)
		}
		t.Partitions[c.Partition] = c.State
	case r.AllocateProducers != nil:
		a := r.AllocateProducers
		if a.Count <= 0 {
			return nil, fmt.Errorf("%w: producer id block of %d", ErrBadRecord, a.Count)
		}
		if a.Start < n.NextProducerID {
			// Another node reserved a block first: the proposer asks
			// again from the newer image.
			return nil, fmt.Errorf("%w: producer id block %d+%d below %d", ErrStaleEpoch, a.Start, a.Count, n.NextProducerID)
		}
		n.NextProducerID = a.Start + a.Count
	default:
		return nil, fmt.Errorf("%w: no change set", ErrBadRecord)
	}
	return n, nil
}

// topicForChange replaces the named topic in n with a copy that the caller
// may modify, and returns the copy.
func (im *Image) topicForChange(name string) (*Topic, error) {
	t, ok := im.Topics[name]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrUnknownTopic, name)
	}
	t = t.clone()
	im.Topics[name] = t
	im.TopicsByID[t.ID] = t
	return t, nil
}

func setKey(m map[string]string, k string, v *string) map[string]string {
	if v == nil {
		delete(m, k)
		return m
	}
	if m == nil {
		m = map[string]string{}
	}
	m[k] = *v
	return m
}

// checkChange validates a ChangePartition's new state against the current
// one and the brokers: a leader must be a registered broker that is
// Usable, and so must every ISR member while the partition has a leader
// (an offline partition keeps its last ISR member, fenced or not). So a
// change decided on an older image (a broker fenced since) is refused.
func (im *Image) checkChange(cur, next Partition) error {
	if next.Epoch <= cur.Epoch || next.LeaderEpoch < cur.LeaderEpoch {
		return fmt.Errorf("%w: partition epoch %d (leader epoch %d) over %d (%d)",
			ErrStaleEpoch, next.Epoch, next.LeaderEpoch, cur.Epoch, cur.LeaderEpoch)
	}
	for _, set := range [][]int32{next.AddingReplicas, next.RemovingReplicas} {
		for _, r := range set {
			if !slices.Contains(next.Replicas, r) {
				return fmt.Errorf("%w: reassigned replicas %v not all among replicas %v", ErrBadRecord, set, next.Replicas)
			}
		}
	}
	for i, r := range next.ISR {
		if !slices.Contains(next.Replicas, r) || slices.Contains(next.ISR[:i], r) {
			return fmt.Errorf("%w: ISR %v is not a subset of replicas %v", ErrBadRecord, next.ISR, next.Replicas)
		}
	}
	if next.Leader != -1 && !slices.Contains(next.ISR, next.Leader) {
		return fmt.Errorf("%w: leader %d not in ISR %v", ErrBadRecord, next.Leader, next.ISR)
	}
	if next.Leader != -1 {
		for _, r := range next.ISR {
			if b, ok := im.Brokers[r]; !ok || !b.Usable() {
				return fmt.Errorf("%w: broker %d in ISR %v is not registered, fenced or shutting down", ErrStaleEpoch, r, next.ISR)
			}
		}
	}
	return nil
}
