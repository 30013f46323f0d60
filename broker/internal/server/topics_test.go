package server

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/runnel-io/runnel/broker/internal/metadata"
)

// assign places with the controller's placer: every partition on three
// racks, fenced brokers left out, leaders spread evenly, added partitions
// continuing the pattern, and INVALID_REPLICATION_FACTOR beyond the
// usable brokers.
func TestAssignRackAware(t *testing.T) {
	im := metadata.Empty()
	for _, b := range []metadata.Broker{
		{ID: 1, Rack: "a"}, {ID: 2, Rack: "a"}, {ID: 3, Rack: "b"}, {ID: 4, Rack: "b"}, {ID: 5, Rack: "c"}, {ID: 6, Rack: "c"},
		{ID: 7, Rack: "c", Epoch: 9, Fenced: true},
	} {
		next, err := im.Apply(metadata.Record{RegisterBroker: &b})
		if err != nil {
			t.Fatal(err)
		}
		im = next
	}
	s := &Server{}
	parts, err := s.assign(im, "t", 0, 6, 3)
	if err != nil {
		t.Fatal(err)
	}
	leaders := map[int32]int{}
	for i, p := range parts {
		racks := map[string]bool{}
		for _, r := range p.Replicas {
			if r == 7 {
				t.Fatalf("partition %d placed on fenced broker 7: %v", i, p.Replicas)
			}
			racks[im.Brokers[r].Rack] = true
		}
		if len(racks) != 3 || p.Leader != p.Replicas[0] || !slices.Equal(p.ISR, p.Replicas) {
			t.Fatalf("partition %d: %+v spans racks %v", i, p, racks)
		}
		leaders[p.Leader]++
	}
	if len(leaders) != 6 {
		t.Fatalf("leaders %v, want one partition led by each usable broker", leaders)
	}

	// CreatePartitions: partitions 6.. continue from partition 0's leader.
	next, err := im.Apply(metadata.Record{CreateTopic: &metadata.Topic{Name: "t", Partitions: parts}})
	if err != nil {
		t.Fatal(err)
	}
	more, err := s.assign(next, "t", 6, 6, 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range more {
		leaders[p.Leader]++
	}
	for id, n := range leaders {
		if n != 2 {
			t.Fatalf("after adding partitions: broker %d leads %d, want 2 each (%v)", id, n, leaders)
		}
	}

	if _, err := s.assign(im, "u", 0, 1, 7); errCode(err) != kerr.InvalidReplicationFactor.Code {
		t.Fatalf("rf 7 over 6 usable brokers: %v (code %d)", err, errCode(err))
	}
}
