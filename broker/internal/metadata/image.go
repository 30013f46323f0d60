// Package metadata holds the cluster's metadata image and the records that
// change it.
//
// The image is immutable: every change produces a new *Image, published
// atomically, so request handlers read a consistent snapshot without locks.
// Changes are Records, appended to a journal and then applied. Today the
// server's journal is a local file (Store); the controller quorum
// (broker/internal/quorum) is a Raft log whose FSM applies the same Records
// in the same way, and snapshots the image with WriteSnapshot, so the
// server switches from one to the other without changes above this package.
package metadata

import (
	"maps"
	"slices"
)

// Image is one consistent view of the cluster's metadata. Never mutate an
// Image that has been published; Apply returns a new one.
type Image struct {
	ClusterID string
	// Offset is the number of records applied to reach this image.
	Offset int64
	// NextProducerID is the first producer id not yet handed out.
	NextProducerID int64

	Brokers    map[int32]Broker
	Topics     map[string]*Topic
	TopicsByID map[[16]byte]*Topic
	// BrokerConfigs are dynamic broker configs: the key "" holds the
	// cluster-wide defaults, and a broker id in decimal holds one broker's.
	BrokerConfigs map[string]map[string]string
}

// Broker is a registered broker.
type Broker struct {
	ID   int32  `json:"id"`
	Host string `json:"host"`
	Port int32  `json:"port"`
	Rack string `json:"rack,omitempty"`
	// Epoch is the broker epoch the active controller handed out when the
	// broker registered (Kafka's broker epoch): a re-registration gets a
	// larger one, and requests carrying an older one are refused. 0 is a
	// broker registered without the controller (the server's own
	// registration before the quorum is wired), which is never fenced.
	Epoch int64 `json:"epoch,omitempty"`
	// Incarnation identifies one run of the broker process: the same
	// incarnation registering again keeps its epoch.
	Incarnation string `json:"incarnation,omitempty"`
	// Fenced brokers lead no partition and are in no ISR (but the last
	// one, see controller); a broker registers fenced and is unfenced by
	// its first heartbeat that has caught up with the metadata.
	Fenced bool `json:"fenced,omitempty"`
	// InControlledShutdown: the broker asked to shut down; the controller
	// moves leadership away from it and elects it nowhere.
	InControlledShutdown bool `json:"in_controlled_shutdown,omitempty"`
}

// Usable reports whether b may lead partitions and join ISRs: registered,
// not fenced, not shutting down.
func (b Broker) Usable() bool { return !b.Fenced && !b.InControlledShutdown }

// Topic is a topic and its partitions.
type Topic struct {
	Name       string            `json:"name"`
	ID         [16]byte          `json:"id"`
	Partitions []Partition       `json:"partitions"`
	Configs    map[string]string `json:"configs,omitempty"`
	Internal   bool              `json:"internal,omitempty"`
}

// Partition is one partition's placement and leadership.
type Partition struct {
	Leader      int32   `json:"leader"`
	LeaderEpoch int32   `json:"leader_epoch"`
	Replicas    []int32 `json:"replicas"`
	ISR         []int32 `json:"isr"`
	// Epoch counts every change to the partition (KRaft's partition epoch).
	Epoch int32 `json:"epoch"`
	// AddingReplicas and RemovingReplicas are set while a reassignment
	// runs (Kafka's): Replicas then holds the target replicas followed by
	// the removing ones; the adding ones copy the log as followers, and
	// once all of them are in the ISR the controller makes Replicas the
	// target.
	AddingReplicas   []int32 `json:"adding_replicas,omitempty"`
	RemovingReplicas []int32 `json:"removing_replicas,omitempty"`
}

// Reassigning reports whether a reassignment of the partition runs.
func (p Partition) Reassigning() bool {
	return len(p.AddingReplicas) > 0 || len(p.RemovingReplicas) > 0
}

// TargetReplicas is the replica set the partition ends with: Replicas
// without the removing ones.
func (p Partition) TargetReplicas() []int32 {
	out := make([]int32, 0, len(p.Replicas))
	for _, r := range p.Replicas {
		if !slices.Contains(p.RemovingReplicas, r) {
			out = append(out, r)
		}
	}
	return out
}

// Empty returns the image of a cluster with nothing in it.
func Empty() *Image {
	return &Image{
		Brokers:       map[int32]Broker{},
		Topics:        map[string]*Topic{},
		TopicsByID:    map[[16]byte]*Topic{},
		BrokerConfigs: map[string]map[string]string{},
	}
}

// Topic returns the named topic, or nil.
func (im *Image) Topic(name string) *Topic { return im.Topics[name] }

// TopicNames returns the topic names, sorted.
func (im *Image) TopicNames() []string {
	return slices.Sorted(maps.Keys(im.Topics))
}

// clone copies the image's maps (not the topics they point to).
func (im *Image) clone() *Image {
	c := *im
	c.Brokers = maps.Clone(im.Brokers)
	c.Topics = maps.Clone(im.Topics)
	c.TopicsByID = maps.Clone(im.TopicsByID)
	c.BrokerConfigs = maps.Clone(im.BrokerConfigs)
	return &c
}

func (t *Topic) clone() *Topic {
	c := *t
	c.Partitions = slices.Clone(t.Partitions)
	c.Configs = maps.Clone(t.Configs)
	return &c
}

// BrokerIDs returns the registered broker ids, sorted.
func (im *Image) BrokerIDs() []int32 {
	return slices.Sorted(maps.Keys(im.Brokers))
}
