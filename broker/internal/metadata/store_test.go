package metadata

import (
	"context"
	"errors"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

func TestStoreProposeReplay(t *testing.T) {
	fs := vfs.NewCrashableMem()
	ctx := context.Background()
	s, err := Open(fs, "meta", nil)
	if err != nil {
		t.Fatal(err)
	}
	var seen []int64
	s.Watch(func(_, im *Image) { seen = append(seen, im.Offset) })
	v := "1000"
	err = s.Propose(ctx,
		Record{SetClusterID: &SetClusterID{ID: "c1"}},
		Record{CreateTopic: &Topic{Name: "a", ID: [16]byte{1}, Partitions: []Partition{{Leader: 1, Replicas: []int32{1}, ISR: []int32{1}}}}},
	)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Propose(ctx, Record{SetTopicConfig: &SetConfig{Name: "a", Key: "retention.ms", Value: &v}}); err != nil {
		t.Fatal(err)
	}
	// A batch with one bad record changes nothing.
	err = s.Propose(ctx,
		Record{AddPartitions: &AddPartitions{Topic: "a", Partitions: []Partition{{Leader: 1}}}},
		Record{DeleteTopic: &DeleteTopic{Name: "missing"}},
	)
	if !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("want ErrUnknownTopic, got %v", err)
	}
	if got := len(s.Image().Topic("a").Partitions); got != 1 {
		t.Fatalf("failed proposal changed the image: %d partitions", got)
	}
	if len(seen) != 2 || seen[1] != 3 {
		t.Fatalf("watch calls %v, want offsets [2 3]", seen)
	}

	// Only synced bytes survive a crash; Propose syncs before returning.
	crashed := fs.CrashClone(vfs.CrashCloneCfg{})
	s.Close()
	s2, err := Open(crashed, "meta", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	im := s2.Image()
	if im.ClusterID != "c1" || im.Offset != 3 || im.Topic("a").Configs["retention.ms"] != "1000" {
		t.Fatalf("replayed image wrong: %+v", im)
	}
	if im.TopicsByID[[16]byte{1}] != im.Topic("a") {
		t.Fatal("TopicsByID does not point at the same topic")
	}
}

func TestStoreTornTail(t *testing.T) {
	fs := vfs.NewMem()
	ctx := context.Background()
	s, err := Open(fs, "meta", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Propose(ctx, Record{SetClusterID: &SetClusterID{ID: "c1"}}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	f, err := fs.OpenReadWrite("meta/journal", vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := f.Stat()
	// half a frame: a length that claims more bytes than follow
	if _, err := f.WriteAt([]byte{0, 0, 0, 50, 1, 2, 3, 4, '{'}, st.Size()); err != nil {
		t.Fatal(err)
	}
	f.Close()
	s2, err := Open(fs, "meta", nil)
	if err != nil {
		t.Fatal(err)
	}
	if s2.Image().ClusterID != "c1" {
		t.Fatal("lost the good record")
	}
	if err := s2.Propose(ctx, Record{RegisterBroker: &Broker{ID: 1, Host: "h", Port: 1}}); err != nil {
		t.Fatal(err)
	}
	s2.Close()
	s3, err := Open(fs, "meta", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s3.Close()
	if _, ok := s3.Image().Brokers[1]; !ok || s3.Image().Offset != 2 {
		t.Fatalf("record after the cut tail was lost: %+v", s3.Image())
	}
}
