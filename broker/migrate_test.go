package broker_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/broker/brokertest"
	"github.com/runnel-io/runnel/broker/internal/metadata"
)

// TestJournalMigratesIntoQuorum: a data directory written before the
// metadata quorum (a __meta journal, no __cluster_metadata) starts with its
// cluster id, topics and data, once; the journal is kept as
// __meta.migrated, and a second restart reads the quorum alone.
func TestJournalMigratesIntoQuorum(t *testing.T) {
	b := brokertest.Start(t)
	dir := b.Dir
	cl := newClient(t, b)
	ctx := testCtx(t)
	newAdmin(t, b).CreateTopic(ctx, 1, 1, nil, "old")
	for _, v := range []string{"a", "b", "c"} {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "old", Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cl.Close()
	b.Stop(t)

	// Turn the directory into one the journal-era broker wrote.
	if err := os.RemoveAll(filepath.Join(dir, "__cluster_metadata")); err != nil {
		t.Fatal(err)
	}
	st, err := metadata.Open(vfs.Default, filepath.Join(dir, "__meta"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Propose(context.Background(),
		metadata.Record{SetClusterID: &metadata.SetClusterID{ID: "journal-cluster"}},
		metadata.Record{RegisterBroker: &metadata.Broker{ID: 1, Host: "127.0.0.1", Port: 1}},
		metadata.Record{CreateTopic: &metadata.Topic{Name: "old", ID: [16]byte{9}, Partitions: []metadata.Partition{{Leader: 1, Replicas: []int32{1}, ISR: []int32{1}}}}},
	); err != nil {
		t.Fatal(err)
	}
	st.Close()

	for round := range 2 {
		b = brokertest.Start(t, b.Settings)
		adm := newAdmin(t, b)
		m, err := adm.Metadata(ctx)
		if err != nil || m.Cluster != "journal-cluster" {
			t.Fatalf("round %d: cluster id %q, %v", round, m.Cluster, err)
		}
		var got []string
		for _, r := range consume(t, b, "old", 3) {
			got = append(got, string(r.Value))
		}
		if !slices.Equal(got, []string{"a", "b", "c"}) {
			t.Fatalf("round %d: read %v", round, got)
		}
		if _, err := os.Stat(filepath.Join(dir, "__meta.migrated", "journal")); err != nil {
			t.Fatalf("round %d: the journal was not kept as __meta.migrated: %v", round, err)
		}
		if _, err := os.Stat(filepath.Join(dir, "__meta")); !os.IsNotExist(err) {
			t.Fatalf("round %d: __meta is still there: %v", round, err)
		}
		b.Stop(t)
	}
}
