package metadata

import (
	"reflect"
	"testing"
)

// TestRecordsOfRebuildsTheImage: the records RecordsOf gives rebuild the
// image on an empty one, field by field (but the record count).
func TestRecordsOfRebuildsTheImage(t *testing.T) {
	v := "2"
	im := Empty()
	for _, r := range []Record{
		{SetClusterID: &SetClusterID{ID: "c1"}},
		{RegisterBroker: &Broker{ID: 1, Host: "h1", Port: 9092, Rack: "r1"}},
		{RegisterBroker: &Broker{ID: 2, Host: "h2", Port: 9093, Epoch: 7, Incarnation: "i", Fenced: true}},
		{CreateTopic: &Topic{Name: "b", ID: [16]byte{2}, Partitions: []Partition{{Leader: 1, LeaderEpoch: 3, Replicas: []int32{1}, ISR: []int32{1}, Epoch: 4}}, Configs: map[string]string{"retention.ms": "5"}}},
		{CreateTopic: &Topic{Name: "a", ID: [16]byte{1}, Internal: true, Partitions: []Partition{{Leader: -1, Replicas: []int32{2}, ISR: []int32{2}}}}},
		{SetBrokerConfig: &SetConfig{Name: "", Key: "min.insync.replicas", Value: &v}},
		{SetBrokerConfig: &SetConfig{Name: "1", Key: "log.retention.ms", Value: &v}},
		{AllocateProducers: &AllocateProducers{Start: 0, Count: 1000}},
	} {
		next, err := im.Apply(r)
		if err != nil {
			t.Fatal(err)
		}
		im = next
	}
	re := Empty()
	for _, r := range RecordsOf(im) {
		next, err := re.Apply(r)
		if err != nil {
			t.Fatalf("%+v: %v", r, err)
		}
		re = next
	}
	re.Offset = im.Offset
	if !reflect.DeepEqual(re, im) {
		t.Fatalf("rebuilt image differs:\n got %+v\nwant %+v", re, im)
	}
}

// TestClusterIDIsSetOnce: a second, different cluster id is refused; the
// same one again is harmless.
func TestClusterIDIsSetOnce(t *testing.T) {
	im, err := Empty().Apply(Record{SetClusterID: &SetClusterID{ID: "a"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := im.Apply(Record{SetClusterID: &SetClusterID{ID: "a"}}); err != nil {
		t.Fatalf("same id again: %v", err)
	}
	if _, err := im.Apply(Record{SetClusterID: &SetClusterID{ID: "b"}}); err == nil {
		t.Fatal("a different id was accepted")
	}
}
