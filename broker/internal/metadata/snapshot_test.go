package metadata

import (
	"bytes"
	"strings"
	"testing"
)

func TestSnapshotRoundTrip(t *testing.T) {
	v := "compact"
	yes := true
	im := Empty()
	for _, r := range []Record{
		{SetClusterID: &SetClusterID{ID: "c1"}},
		{RegisterBroker: &Broker{ID: 2, Host: "h2", Port: 9092, Rack: "r"}},
		{RegisterBroker: &Broker{ID: 1, Host: "h1", Port: 9092}},
		{CreateTopic: &Topic{Name: "b", ID: [16]byte{2}, Partitions: []Partition{{Leader: 1, Replicas: []int32{1, 2}, ISR: []int32{1}}}}},
		{CreateTopic: &Topic{Name: "a", ID: [16]byte{1}, Internal: true}},
		{SetTopicConfig: &SetConfig{Name: "b", Key: "cleanup.policy", Value: &v}},
		{SetBrokerConfig: &SetConfig{Name: "1", Key: "k", Value: &v}},
		{AllocateProducers: &AllocateProducers{Start: 0, Count: 1000}},
		{RegisterBroker: &Broker{ID: 3, Host: "h3", Port: 9092, Rack: "r", Epoch: 9, Incarnation: "i3", Fenced: true}},
		{ChangeBroker: &ChangeBroker{ID: 3, Epoch: 9, InControlledShutdown: &yes}},
		{ChangePartition: &ChangePartition{Topic: "b", Partition: 0, State: Partition{Leader: 2, LeaderEpoch: 1, Epoch: 1, Replicas: []int32{1, 2}, ISR: []int32{2}}}},
	} {
		next, err := im.Apply(r)
		if err != nil {
			t.Fatal(err)
		}
		im = next
	}
	var a, b bytes.Buffer
	if err := im.WriteSnapshot(&a); err != nil {
		t.Fatal(err)
	}
	got, err := ReadSnapshot(bytes.NewReader(a.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if !got.Equal(im) || !im.Equal(got) {
		t.Fatalf("round trip changed the image:\n%+v\n%+v", im, got)
	}
	if got.TopicsByID[[16]byte{2}] != got.Topic("b") {
		t.Fatal("TopicsByID not rebuilt")
	}
	if err := got.WriteSnapshot(&b); err != nil || !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatalf("equal images wrote different snapshots (%v)", err)
	}
	if b := got.Brokers[3]; b.Epoch != 9 || b.Incarnation != "i3" || !b.Fenced || !b.InControlledShutdown {
		t.Fatalf("broker 3 after round trip: %+v", b)
	}
	if p := got.Topic("b").Partitions[0]; p.Leader != 2 || p.LeaderEpoch != 1 || p.Epoch != 1 {
		t.Fatalf("partition after round trip: %+v", p)
	}
	if im.Equal(Empty()) {
		t.Fatal("Equal says a full image equals the empty one")
	}
	for _, bad := range []string{"", "{", `{"version":2}`, `{"version":1,"topics":[null]}`} {
		if _, err := ReadSnapshot(strings.NewReader(bad)); err == nil {
			t.Errorf("ReadSnapshot(%q) accepted", bad)
		}
	}
}

// FuzzReadSnapshot: any bytes give an image or an error, never a panic;
// an image it accepts writes and reads back equal.
func FuzzReadSnapshot(f *testing.F) {
	im, _ := Empty().Apply(Record{CreateTopic: &Topic{Name: "a", ID: [16]byte{1}, Partitions: []Partition{{Replicas: []int32{1}}}}})
	var b bytes.Buffer
	if err := im.WriteSnapshot(&b); err != nil {
		f.Fatal(err)
	}
	f.Add(b.Bytes())
	f.Add([]byte(`{"version":1,"topics":[{"name":"a"},{"name":"b"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		im, err := ReadSnapshot(bytes.NewReader(data))
		if err != nil {
			return
		}
		var out bytes.Buffer
		if err := im.WriteSnapshot(&out); err != nil {
			t.Fatal(err)
		}
		again, err := ReadSnapshot(&out)
		if err != nil || !again.Equal(im) {
			t.Fatalf("accepted snapshot does not round-trip: %v", err)
		}
	})
}
