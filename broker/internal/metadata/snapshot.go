package metadata

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
)

// snapshotVersion is the format of WriteSnapshot's output; ReadSnapshot
// refuses any other.
const snapshotVersion = 1

// snapshot is an image in a form JSON can carry: TopicsByID (keyed by a
// [16]byte, which encoding/json cannot use as a map key) is rebuilt from
// Topics on read.
type snapshot struct {
	Version        int                          `json:"version"`
	ClusterID      string                       `json:"cluster_id"`
	Offset         int64                        `json:"offset"`
	NextProducerID int64                        `json:"next_producer_id"`
	Brokers        []Broker                     `json:"brokers"`
	Topics         []*Topic                     `json:"topics"`
	BrokerConfigs  map[string]map[string]string `json:"broker_configs"`
}

// WriteSnapshot writes the whole image to w (JSON, brokers and topics in id
// and name order, so equal images give equal bytes). The controller
// quorum's Raft snapshots are this.
func (im *Image) WriteSnapshot(w io.Writer) error {
	s := snapshot{
		Version:        snapshotVersion,
		ClusterID:      im.ClusterID,
		Offset:         im.Offset,
		NextProducerID: im.NextProducerID,
		BrokerConfigs:  im.BrokerConfigs,
	}
	for _, id := range im.BrokerIDs() {
		s.Brokers = append(s.Brokers, im.Brokers[id])
	}
	for _, n := range im.TopicNames() {
		s.Topics = append(s.Topics, im.Topics[n])
	}
	if err := json.NewEncoder(w).Encode(&s); err != nil {
		return fmt.Errorf("metadata: write snapshot: %w", err)
	}
	return nil
}

// ReadSnapshot reads an image that WriteSnapshot wrote.
func ReadSnapshot(r io.Reader) (*Image, error) {
	var s snapshot
	if err := json.NewDecoder(r).Decode(&s); err != nil {
		return nil, fmt.Errorf("metadata: read snapshot: %w", err)
	}
	if s.Version != snapshotVersion {
		return nil, fmt.Errorf("%w: snapshot version %d, want %d", ErrBadRecord, s.Version, snapshotVersion)
	}
	im := Empty()
	im.ClusterID, im.Offset, im.NextProducerID = s.ClusterID, s.Offset, s.NextProducerID
	for _, b := range s.Brokers {
		im.Brokers[b.ID] = b
	}
	for _, t := range s.Topics {
		if t == nil || im.Topics[t.Name] != nil || im.TopicsByID[t.ID] != nil {
			return nil, fmt.Errorf("%w: snapshot topic missing, or its name or id repeated", ErrBadRecord)
		}
		im.Topics[t.Name] = t
		im.TopicsByID[t.ID] = t
	}
	for k, m := range s.BrokerConfigs {
		im.BrokerConfigs[k] = m
	}
	return im, nil
}

// Equal reports whether two images hold the same metadata (tests compare
// the images of a quorum's nodes with it).
func (im *Image) Equal(o *Image) bool {
	if im.ClusterID != o.ClusterID || im.Offset != o.Offset || im.NextProducerID != o.NextProducerID ||
		len(im.Brokers) != len(o.Brokers) || len(im.Topics) != len(o.Topics) || len(im.TopicsByID) != len(o.TopicsByID) ||
		len(im.BrokerConfigs) != len(o.BrokerConfigs) {
		return false
	}
	for id, b := range im.Brokers {
		if o.Brokers[id] != b {
			return false
		}
	}
	for n, t := range im.Topics {
		u := o.Topics[n]
		if u == nil || u.ID != t.ID || u.Internal != t.Internal || !equalMaps(t.Configs, u.Configs) ||
			!slices.EqualFunc(t.Partitions, u.Partitions, equalPartitions) || o.TopicsByID[t.ID] != u {
			return false
		}
	}
	for k, m := range im.BrokerConfigs {
		if om, ok := o.BrokerConfigs[k]; !ok || !equalMaps(m, om) {
			return false
		}
	}
	return true
}

func equalPartitions(a, b Partition) bool {
	return a.Leader == b.Leader && a.LeaderEpoch == b.LeaderEpoch && a.Epoch == b.Epoch &&
		slices.Equal(a.Replicas, b.Replicas) && slices.Equal(a.ISR, b.ISR)
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
