package metadata

import (
	"errors"
	"testing"
)

// TestBrokerAndPartitionChanges: registrations, ChangeBroker and
// ChangePartition are refused when made from an older image (stale
// epochs) or when they break the partition invariants, and a refused
// record changes nothing.
func TestBrokerAndPartitionChanges(t *testing.T) {
	yes, no := true, false
	im := Empty()
	apply := func(r Record) error {
		t.Helper()
		next, err := im.Apply(r)
		if err != nil {
			if next != nil {
				t.Fatal("Apply returned an image with an error")
			}
			return err
		}
		im = next
		return nil
	}
	must := func(r Record) {
		t.Helper()
		if err := apply(r); err != nil {
			t.Fatal(err)
		}
	}
	must(Record{RegisterBroker: &Broker{ID: 1, Epoch: 5, Fenced: true}})
	must(Record{RegisterBroker: &Broker{ID: 2}})
	must(Record{RegisterBroker: &Broker{ID: 2, Host: "moved"}}) // epoch 0 over epoch 0: the server's own, as today
	must(Record{CreateTopic: &Topic{Name: "t", Partitions: []Partition{{Leader: 2, Replicas: []int32{1, 2}, ISR: []int32{2}}}}})

	for _, c := range []struct {
		name string
		r    Record
		want error
	}{
		{"re-register with the same epoch", Record{RegisterBroker: &Broker{ID: 1, Epoch: 5}}, ErrStaleEpoch},
		{"re-register with an older epoch", Record{RegisterBroker: &Broker{ID: 1, Epoch: 4}}, ErrStaleEpoch},
		{"re-register without the controller", Record{RegisterBroker: &Broker{ID: 1}}, ErrStaleEpoch},
		{"change an old registration", Record{ChangeBroker: &ChangeBroker{ID: 1, Epoch: 4, Fenced: &no}}, ErrStaleEpoch},
		{"change an unknown broker", Record{ChangeBroker: &ChangeBroker{ID: 7, Epoch: 0, Fenced: &no}}, ErrStaleEpoch},
		{"partition epoch not larger", Record{ChangePartition: &ChangePartition{Topic: "t", State: Partition{Leader: 2, Replicas: []int32{1, 2}, ISR: []int32{2}}}}, ErrStaleEpoch},
		{"leader epoch smaller", Record{ChangePartition: &ChangePartition{Topic: "t", State: Partition{Leader: 2, LeaderEpoch: -1, Epoch: 1, Replicas: []int32{1, 2}, ISR: []int32{2}}}}, ErrStaleEpoch},
		{"leader outside the ISR", Record{ChangePartition: &ChangePartition{Topic: "t", State: Partition{Leader: 1, Epoch: 1, Replicas: []int32{1, 2}, ISR: []int32{2}}}}, ErrBadRecord},
		{"ISR outside the replicas", Record{ChangePartition: &ChangePartition{Topic: "t", State: Partition{Leader: 2, Epoch: 1, Replicas: []int32{1, 2}, ISR: []int32{2, 3}}}}, ErrBadRecord},
		{"fenced leader", Record{ChangePartition: &ChangePartition{Topic: "t", State: Partition{Leader: 1, Epoch: 1, Replicas: []int32{1, 2}, ISR: []int32{1}}}}, ErrStaleEpoch},
		{"fenced ISR member", Record{ChangePartition: &ChangePartition{Topic: "t", State: Partition{Leader: 2, Epoch: 1, Replicas: []int32{1, 2}, ISR: []int32{2, 1}}}}, ErrStaleEpoch},
		{"ISR repeats", Record{ChangePartition: &ChangePartition{Topic: "t", State: Partition{Leader: 2, Epoch: 1, Replicas: []int32{1, 2}, ISR: []int32{2, 2}}}}, ErrBadRecord},
	} {
		before := im
		if err := apply(c.r); !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
		if im != before {
			t.Fatalf("%s: refused record changed the image", c.name)
		}
	}

	must(Record{ChangeBroker: &ChangeBroker{ID: 1, Epoch: 5, Fenced: &no}})
	if b := im.Brokers[1]; b.Fenced || !b.Usable() {
		t.Fatalf("unfenced broker: %+v", b)
	}
	must(Record{ChangeBroker: &ChangeBroker{ID: 1, Epoch: 5, InControlledShutdown: &yes}})
	if b := im.Brokers[1]; b.Fenced || !b.InControlledShutdown || b.Usable() {
		t.Fatalf("shutting-down broker: %+v", b)
	}
	must(Record{RegisterBroker: &Broker{ID: 1, Epoch: 8, Fenced: true}})
	if b := im.Brokers[1]; b.Epoch != 8 || b.InControlledShutdown {
		t.Fatalf("re-registered broker: %+v", b)
	}
	// Offline, keeping a fenced last ISR member.
	must(Record{ChangePartition: &ChangePartition{Topic: "t", State: Partition{Leader: -1, LeaderEpoch: 1, Epoch: 1, Replicas: []int32{1, 2}, ISR: []int32{1}}}})
	if p := im.Topic("t").Partitions[0]; p.Leader != -1 || p.Epoch != 1 {
		t.Fatalf("partition: %+v", p)
	}
}
