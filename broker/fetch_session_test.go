package broker_test

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker/brokertest"
)

// sessionFetch is a v12 fetch of topic's partitions at the given offsets
// within session id at epoch, forgetting the partitions in forget.
func sessionFetch(topic string, id, epoch int32, offsets map[int32]int64, forget ...int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version = 12
	req.ReplicaID = -1
	req.MaxBytes = 64 << 20
	req.SessionID, req.SessionEpoch = id, epoch
	if len(offsets) > 0 {
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		for _, p := range slices.Sorted(maps.Keys(offsets)) {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.LogStartOffset, rp.PartitionMaxBytes = p, offsets[p], -1, 1<<20
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	if len(forget) > 0 {
		ft := kmsg.NewFetchRequestForgottenTopic()
		ft.Topic, ft.Partitions = topic, forget
		req.ForgottenTopics = append(req.ForgottenTopics, ft)
	}
	return req
}

// answered lists the partitions a fetch response carries, with the values
// of their records.
func answered(t *testing.T, resp *kmsg.FetchResponse) map[int32][]string {
	t.Helper()
	out := map[int32][]string{}
	for _, st := range resp.Topics {
		for _, sp := range st.Partitions {
			if sp.ErrorCode != 0 {
				t.Fatalf("partition %d: %s", sp.Partition, errName(sp.ErrorCode))
			}
			out[sp.Partition] = values(parseBatches(t, sp.RecordBatches))
		}
	}
	return out
}

// An incremental fetch session over the wire: a full fetch opens it, later
// fetches send only what changed and get only what changed; a wrong epoch
// or an unknown id is a top-level error with no partitions.
func TestFetchSessionIncremental(t *testing.T) {
	b := brokertest.Start(t)
	rc := dialRaw(t, b.Addr())
	rc.createTopic("sess", 2, nil)
	rc.produce("sess", 0, batchOf("a", "b"))

	resp := rc.roundTrip(sessionFetch("sess", 0, 0, map[int32]int64{0: 0, 1: 0})).(*kmsg.FetchResponse)
	id := resp.SessionID
	if resp.ErrorCode != 0 || id == 0 {
		t.Fatalf("full fetch: %s, session id %d", errName(resp.ErrorCode), id)
	}
	if got := fmt.Sprint(answered(t, resp)); got != "map[0:[a b] 1:[]]" {
		t.Fatalf("full fetch answered %s", got)
	}

	// Partition 0 moves past its records; nothing changed, nothing answered.
	resp = rc.roundTrip(sessionFetch("sess", id, 1, map[int32]int64{0: 2})).(*kmsg.FetchResponse)
	if resp.ErrorCode != 0 || resp.SessionID != id || len(resp.Topics) != 0 {
		t.Fatalf("idle incremental fetch: %s, session %d, %d topics", errName(resp.ErrorCode), resp.SessionID, len(resp.Topics))
	}

	// New records on partition 1, which the request does not name: the
	// session remembers its offset.
	rc.produce("sess", 1, batchOf("c"))
	resp = rc.roundTrip(sessionFetch("sess", id, 2, nil)).(*kmsg.FetchResponse)
	if got := fmt.Sprint(answered(t, resp)); got != "map[1:[c]]" {
		t.Fatalf("incremental fetch answered %s, want only partition 1", got)
	}

	// The same epoch again, and an unknown session.
	for _, c := range []struct {
		id, epoch int32
		want      *kerr.Error
	}{{id, 2, kerr.InvalidFetchSessionEpoch}, {id + 1000, 1, kerr.FetchSessionIDNotFound}} {
		resp = rc.roundTrip(sessionFetch("sess", c.id, c.epoch, map[int32]int64{0: 0})).(*kmsg.FetchResponse)
		if resp.ErrorCode != c.want.Code || resp.SessionID != 0 || len(resp.Topics) != 0 {
			t.Fatalf("session %d epoch %d: %s, session %d, %d topics; want %s with none",
				c.id, c.epoch, errName(resp.ErrorCode), resp.SessionID, len(resp.Topics), c.want.Message)
		}
	}

	// Forget partition 1: its new records are no longer answered.
	rc.produce("sess", 1, batchOf("d"))
	rc.produce("sess", 0, batchOf("e"))
	resp = rc.roundTrip(sessionFetch("sess", id, 3, map[int32]int64{1: 1}, 1)).(*kmsg.FetchResponse)
	if got := fmt.Sprint(answered(t, resp)); got != "map[0:[e]]" {
		t.Fatalf("after forgetting partition 1: %s", got)
	}

	// Epoch -1 closes the session.
	resp = rc.roundTrip(sessionFetch("sess", id, -1, map[int32]int64{0: 0})).(*kmsg.FetchResponse)
	if resp.ErrorCode != 0 || resp.SessionID != 0 {
		t.Fatalf("closing fetch: %s, session %d", errName(resp.ErrorCode), resp.SessionID)
	}
	resp = rc.roundTrip(sessionFetch("sess", id, 4, nil)).(*kmsg.FetchResponse)
	if resp.ErrorCode != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("closed session: %s", errName(resp.ErrorCode))
	}
}
