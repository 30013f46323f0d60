package broker_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/broker/brokertest"
)

// Cluster administration on three in-process nodes: leader elections
// (ElectLeaders, the automatic rebalance) and replica reassignment.

// TestClusterElectLeaders: after a preferred replica stops and returns,
// another replica leads its partition; a preferred election (ElectLeaders)
// gives it back, and a second one is not needed.
func TestClusterElectLeaders(t *testing.T) {
	c := brokertest.StartCluster(t, 3, map[string]string{"auto.leader.rebalance.enable": "false"})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := kadm.NewClient(clusterClient(t, c))
	if _, err := adm.CreateTopic(ctx, 3, 3, nil, "e"); err != nil {
		t.Fatal(err)
	}
	fullISR(t, ctx, adm, "e")
	md, err := adm.Metadata(ctx, "e")
	if err != nil {
		t.Fatal(err)
	}
	pref := md.Topics["e"].Partitions[0].Replicas[0]
	c.Node(pref).Stop(t)
	c.Restart(pref)
	adm = kadm.NewClient(clusterClient(t, c))
	leaders := fullISR(t, ctx, adm, "e")
	if leaders[0] == pref {
		t.Fatalf("partition 0 is led by its preferred replica %d again without an election", pref)
	}
	set := kadm.TopicsSet{}
	set.Add("e", 0)
	res, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, set)
	if err != nil {
		t.Fatal(err)
	}
	if r := res["e"][0]; r.Err != nil {
		t.Fatalf("preferred election: %v", r.Err)
	}
	// Every node applies the election shortly after the controller did.
	waitState(t, ctx, "the preferred replica leading partition 0", func() (bool, string) {
		leaders := fullISR(t, ctx, adm, "e")
		return leaders[0] == pref, fmt.Sprintf("leader %d, preferred %d", leaders[0], pref)
	})
	res, err = adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, set)
	if err != nil {
		t.Fatal(err)
	}
	if r := res["e"][0]; !errors.Is(r.Err, kerr.ElectionNotNeeded) {
		t.Fatalf("a second preferred election: %v, want ELECTION_NOT_NEEDED", r.Err)
	}
}

// TestClusterReassignment: a partition on one node moves to the two
// others (AlterPartitionReassignments). The new replicas copy the log
// before the switch, ListPartitionReassignments shows it while it runs,
// every record reads back from the new leader, and the old node deletes
// its copy.
func TestClusterReassignment(t *testing.T) {
	c := brokertest.StartCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := clusterClient(t, c, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic("m"))
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "m"); err != nil {
		t.Fatal(err)
	}
	from := fullISR(t, ctx, adm, "m")[0]
	var want []string
	for i := range 200 {
		v := fmt.Sprintf("m%03d", i)
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		want = append(want, v)
	}
	target := nodesBut(from)
	req := kadm.AlterPartitionAssignmentsReq{}
	req.Assign("m", 0, target)
	resp, err := adm.AlterPartitionAssignments(ctx, req)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("reassign m-0 from %d to %v: %v", from, target, err)
	}
	m0 := kadm.TopicsSet{}
	m0.Add("m", 0)
	waitState(t, ctx, "the reassignment to complete", func() (bool, string) {
		list, err := adm.ListPartitionReassignments(ctx, m0)
		if err != nil {
			return false, err.Error()
		}
		md, err := adm.Metadata(ctx, "m")
		if err != nil {
			return false, err.Error()
		}
		p := md.Topics["m"].Partitions[0]
		return len(list) == 0 && slices.Equal(p.Replicas, target) && len(p.ISR) == 2 && p.Leader != from,
			fmt.Sprintf("in progress %v, leader %d replicas %v isr %v", list, p.Leader, p.Replicas, p.ISR)
	})
	got := readAll(t, ctx, c, "m", len(want))
	if !slices.Equal(got, want) {
		t.Fatalf("after the move read %v", firstDiff(got, want))
	}
	old := filepath.Join(c.Node(from).Dir, "m-0")
	waitState(t, ctx, "the old replica's directory to go", func() (bool, string) {
		_, err := os.Stat(old)
		return os.IsNotExist(err), fmt.Sprint(err)
	})
	// Nothing left to cancel.
	cancelReq := kadm.AlterPartitionAssignmentsReq{}
	cancelReq.CancelAssign("m", 0)
	resp, err = adm.AlterPartitionAssignments(ctx, cancelReq)
	if err != nil {
		t.Fatal(err)
	}
	if err := resp.Error(); !errors.Is(err, kerr.NoReassignmentInProgress) {
		t.Fatalf("cancel with nothing in progress: %v", err)
	}

	// A reassignment that cannot complete (its new replica is stopped)
	// is listed with its adding replica until it is cancelled.
	c.Node(from).Stop(t)
	adm = kadm.NewClient(clusterClient(t, c))
	grow := kadm.AlterPartitionAssignmentsReq{}
	grow.Assign("m", 0, append(slices.Clone(target), from))
	if resp, err = adm.AlterPartitionAssignments(ctx, grow); err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("reassign to a stopped broker: %v", err)
	}
	list, err := adm.ListPartitionReassignments(ctx, m0)
	if err != nil {
		t.Fatal(err)
	}
	if r := list["m"][0]; !slices.Equal(r.AddingReplicas, []int32{from}) || len(r.RemovingReplicas) != 0 {
		t.Fatalf("listed reassignment %+v, want adding [%d]", list, from)
	}
	if resp, err = adm.AlterPartitionAssignments(ctx, cancelReq); err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("cancel: %v", err)
	}
	waitState(t, ctx, "the cancelled reassignment to revert", func() (bool, string) {
		list, err := adm.ListPartitionReassignments(ctx, m0)
		md, err2 := adm.Metadata(ctx, "m")
		if err != nil || err2 != nil {
			return false, fmt.Sprint(err, err2)
		}
		p := md.Topics["m"].Partitions[0]
		return len(list) == 0 && slices.Equal(p.Replicas, target), fmt.Sprintf("listed %v, replicas %v", list, p.Replicas)
	})
}

// TestClusterAutoLeaderRebalance: with auto.leader.rebalance.enable, a
// preferred replica that stopped and returned gets its leadership back
// from the controller alone, at the next imbalance check.
func TestClusterAutoLeaderRebalance(t *testing.T) {
	c := brokertest.StartCluster(t, 3, map[string]string{
		"auto.leader.rebalance.enable":            "true",
		"leader.imbalance.check.interval.seconds": "1",
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := kadm.NewClient(clusterClient(t, c))
	if _, err := adm.CreateTopic(ctx, 3, 3, nil, "b"); err != nil {
		t.Fatal(err)
	}
	fullISR(t, ctx, adm, "b")
	md, err := adm.Metadata(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	pref := md.Topics["b"].Partitions[0].Replicas[0]
	c.Node(pref).Stop(t)
	adm = kadm.NewClient(clusterClient(t, c))
	waitState(t, ctx, "another leader of b-0", func() (bool, string) {
		md, err := adm.Metadata(ctx, "b")
		if err != nil {
			return false, err.Error()
		}
		l := md.Topics["b"].Partitions[0].Leader
		return l >= 0 && l != pref, fmt.Sprint(l)
	})
	c.Restart(pref)
	adm = kadm.NewClient(clusterClient(t, c))
	waitState(t, ctx, "the preferred replica leading b-0 again", func() (bool, string) {
		leaders := fullISR(t, ctx, adm, "b")
		return leaders[0] == pref, fmt.Sprintf("leader %d, preferred %d", leaders[0], pref)
	})
}
