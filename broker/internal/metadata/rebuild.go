package metadata

import "slices"

// RecordsOf returns records that rebuild im when applied to an empty image
// (all but Offset, which counts records): the cluster id, brokers, topics
// with their partitions' state, broker configs and the producer id block.
// The single-node journal's image is moved into the quorum this way.
func RecordsOf(im *Image) []Record {
	var recs []Record
	if im.ClusterID != "" {
		recs = append(recs, Record{SetClusterID: &SetClusterID{ID: im.ClusterID}})
	}
	for _, id := range im.BrokerIDs() {
		b := im.Brokers[id]
		recs = append(recs, Record{RegisterBroker: &b})
	}
	for _, name := range im.TopicNames() {
		recs = append(recs, Record{CreateTopic: im.Topics[name].clone()})
	}
	names := make([]string, 0, len(im.BrokerConfigs))
	for name := range im.BrokerConfigs {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		keys := make([]string, 0, len(im.BrokerConfigs[name]))
		for k := range im.BrokerConfigs[name] {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			v := im.BrokerConfigs[name][k]
			recs = append(recs, Record{SetBrokerConfig: &SetConfig{Name: name, Key: k, Value: &v}})
		}
	}
	if im.NextProducerID > 0 {
		recs = append(recs, Record{AllocateProducers: &AllocateProducers{Start: 0, Count: im.NextProducerID}})
	}
	return recs
}
