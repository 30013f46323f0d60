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
}

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
