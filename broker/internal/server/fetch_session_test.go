package server

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// clock is a settable time source for the session cache.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

// sessionReq builds a v12 fetch of topic "t" partitions at offsets.
func sessionReq(id, epoch int32, parts map[int32]int64, forget ...int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version = 12
	req.SessionID, req.SessionEpoch = id, epoch
	if len(parts) > 0 {
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "t"
		for p := int32(0); p < 100; p++ {
			if off, ok := parts[p]; ok {
				rp := kmsg.NewFetchRequestTopicPartition()
				rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p, off, 1<<20
				rt.Partitions = append(rt.Partitions, rp)
			}
		}
		req.Topics = append(req.Topics, rt)
	}
	if len(forget) > 0 {
		ft := kmsg.NewFetchRequestForgottenTopic()
		ft.Topic, ft.Partitions = "t", forget
		req.ForgottenTopics = append(req.ForgottenTopics, ft)
	}
	return req
}

// answer is one partition's answer: records, high watermark, error.
type answer struct {
	records bool
	hw      int64
	code    int16
}

// respond builds the response to plan as the fetch handler does (one entry
// per partition, in plan order) and hands it to finish; it returns the
// partitions left in the response.
func respond(s *fetchSessions, plan fetchPlan, answers map[int32]answer) []int32 {
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = 12
	for i, fp := range plan.parts {
		if i == 0 {
			st := kmsg.NewFetchResponseTopic()
			st.Topic = fp.key.topic
			resp.Topics = append(resp.Topics, st)
		}
		sp := kmsg.NewFetchResponseTopicPartition()
		sp.Partition = fp.key.part
		a := answers[fp.key.part]
		sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset, sp.ErrorCode = a.hw, a.hw, 0, a.code
		sp.RecordBatches = []byte{}
		if a.records {
			sp.RecordBatches = []byte{1, 2, 3}
		}
		resp.Topics[0].Partitions = append(resp.Topics[0].Partitions, sp)
	}
	s.finish(plan, resp, false)
	var left []int32
	for _, st := range resp.Topics {
		for _, sp := range st.Partitions {
			left = append(left, sp.Partition)
		}
	}
	return left
}

func planParts(p fetchPlan) map[int32]int64 {
	m := map[int32]int64{}
	for _, fp := range p.parts {
		m[fp.key.part] = fp.offset
	}
	return m
}

func order(p fetchPlan) []int32 {
	var o []int32
	for _, fp := range p.parts {
		o = append(o, fp.key.part)
	}
	return o
}

func begin(t *testing.T, s *fetchSessions, req *kmsg.FetchRequest) fetchPlan {
	t.Helper()
	p, err := s.begin(req)
	if err != nil {
		t.Fatalf("begin(id %d, epoch %d): %v", req.SessionID, req.SessionEpoch, err)
	}
	return p
}

func equalInts(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A session's partitions are added, changed and removed by incremental
// fetches; each fetch reads every partition of the session; the response
// keeps only partitions with records, an error or a new high watermark;
// answered partitions move to the end.
func TestFetchSessionAddChangeRemove(t *testing.T) {
	c := &clock{time.Unix(1000, 0)}
	s := newFetchSessions(10, c.now)

	full := begin(t, s, sessionReq(0, 0, map[int32]int64{0: 5, 1: 7}))
	if full.sessionID == 0 || full.incremental {
		t.Fatalf("full fetch: session %d incremental %v", full.sessionID, full.incremental)
	}
	id := full.sessionID
	// A full fetch answers every partition, changed or not.
	if got := respond(s, full, map[int32]answer{0: {hw: 10}, 1: {hw: 7}}); !equalInts(got, []int32{0, 1}) {
		t.Fatalf("full response has %v", got)
	}

	// Epoch 1: nothing sent, so both partitions are read at their offsets;
	// only 0's high watermark moved.
	inc := begin(t, s, sessionReq(id, 1, nil))
	if !inc.incremental || inc.sessionID != id {
		t.Fatalf("incremental plan %+v", inc)
	}
	if got := planParts(inc); got[0] != 5 || got[1] != 7 || len(got) != 2 {
		t.Fatalf("incremental reads %v", got)
	}
	if got := respond(s, inc, map[int32]answer{0: {hw: 11}, 1: {hw: 7}}); !equalInts(got, []int32{0}) {
		t.Fatalf("unchanged partition answered: %v", got)
	}
	// 0 was answered, so it moved behind 1.
	inc = begin(t, s, sessionReq(id, 2, map[int32]int64{1: 9, 2: 0}))
	if got := order(inc); !equalInts(got, []int32{1, 0, 2}) {
		t.Fatalf("session order %v, want [1 0 2] (answered 0 moved back, new 2 appended)", got)
	}
	if got := planParts(inc); got[1] != 9 || got[0] != 5 || got[2] != 0 {
		t.Fatalf("offsets after change %v", got)
	}
	// A new partition is answered even when empty; an error is answered.
	if got := respond(s, inc, map[int32]answer{0: {hw: 11}, 1: {hw: 7, code: 1}, 2: {hw: 0}}); !equalInts(got, []int32{1, 2}) {
		t.Fatalf("response %v, want the errored and the new partition", got)
	}
	// Once the error is gone the partition is answered again.
	inc = begin(t, s, sessionReq(id, 3, nil, 0))
	if got := order(inc); !equalInts(got, []int32{1, 2}) {
		t.Fatalf("after forgetting 0: %v", got)
	}
	if got := respond(s, inc, map[int32]answer{1: {hw: 7}, 2: {hw: 0}}); !equalInts(got, []int32{1}) {
		t.Fatalf("response %v, want partition 1 again after its error", got)
	}
	// Records are always answered.
	inc = begin(t, s, sessionReq(id, 4, nil))
	if got := respond(s, inc, map[int32]answer{1: {hw: 7}, 2: {hw: 0, records: true}}); !equalInts(got, []int32{2}) {
		t.Fatalf("response %v, want the partition with records", got)
	}
}

func TestFetchSessionEpochs(t *testing.T) {
	c := &clock{time.Unix(1000, 0)}
	s := newFetchSessions(10, c.now)
	id := begin(t, s, sessionReq(0, 0, map[int32]int64{0: 0})).sessionID

	for _, e := range []int32{0 + 2, 7} {
		if _, err := s.begin(sessionReq(id, e, nil)); !errors.Is(err, errFetchSessionEpoch) {
			t.Fatalf("epoch %d: %v, want errFetchSessionEpoch", e, err)
		}
	}
	begin(t, s, sessionReq(id, 1, nil))
	// The epoch moved when the request was accepted: the same epoch again
	// (a retry, or a concurrent request) is refused.
	if _, err := s.begin(sessionReq(id, 1, nil)); !errors.Is(err, errFetchSessionEpoch) {
		t.Fatalf("repeated epoch: %v", err)
	}
	begin(t, s, sessionReq(id, 2, nil))

	if _, err := s.begin(sessionReq(id+100, 1, nil)); !errors.Is(err, errFetchSessionNotFound) {
		t.Fatalf("unknown id: %v", err)
	}
	if got := errCode(errFetchSessionEpoch); got != 71 {
		t.Fatalf("INVALID_FETCH_SESSION_EPOCH code %d", got)
	}
	if got := errCode(errFetchSessionNotFound); got != 70 {
		t.Fatalf("FETCH_SESSION_ID_NOT_FOUND code %d", got)
	}
	if nextEpoch(1<<31-1) != 1 {
		t.Fatal("epoch does not wrap to 1")
	}
}

// Epoch -1 is a sessionless full fetch and closes the session it names;
// epoch 0 with an id closes that session and opens another.
func TestFetchSessionClose(t *testing.T) {
	c := &clock{time.Unix(1000, 0)}
	s := newFetchSessions(10, c.now)
	id := begin(t, s, sessionReq(0, 0, map[int32]int64{0: 0})).sessionID
	p := begin(t, s, sessionReq(id, -1, map[int32]int64{0: 3}))
	if p.sessionID != 0 || p.incremental || planParts(p)[0] != 3 {
		t.Fatalf("sessionless plan %+v", p)
	}
	if _, err := s.begin(sessionReq(id, 1, nil)); !errors.Is(err, errFetchSessionNotFound) {
		t.Fatalf("closed session: %v", err)
	}
	id = begin(t, s, sessionReq(0, 0, map[int32]int64{0: 0})).sessionID
	id2 := begin(t, s, sessionReq(id, 0, map[int32]int64{0: 0})).sessionID
	if id2 == 0 || id2 == id || s.len() != 1 {
		t.Fatalf("reopen: %d -> %d, %d sessions", id, id2, s.len())
	}
	// Forgetting every partition closes the session: sessionless answer.
	p = begin(t, s, sessionReq(id2, 1, nil, 0))
	if p.sessionID != 0 || len(p.parts) != 0 || s.len() != 0 {
		t.Fatalf("emptied session: plan %+v, %d sessions", p, s.len())
	}
	// Below v7 there are no sessions.
	req := sessionReq(0, 0, map[int32]int64{0: 0})
	req.Version = 6
	if p := begin(t, s, req); p.sessionID != 0 || s.len() != 0 {
		t.Fatal("v6 fetch opened a session")
	}
}

// A full cache evicts as Kafka: a session idle for two minutes goes first;
// else a larger new session evicts the smallest one older than two
// minutes; else the new fetch runs sessionless. The evicted session's next
// fetch gets FETCH_SESSION_ID_NOT_FOUND.
func TestFetchSessionEviction(t *testing.T) {
	c := &clock{time.Unix(1000, 0)}
	s := newFetchSessions(2, c.now)
	a := begin(t, s, sessionReq(0, 0, map[int32]int64{0: 0})).sessionID
	c.t = c.t.Add(time.Second)
	b := begin(t, s, sessionReq(0, 0, map[int32]int64{0: 0, 1: 0})).sessionID

	// Full, nothing idle or old: sessionless.
	if p := begin(t, s, sessionReq(0, 0, map[int32]int64{0: 0, 1: 0, 2: 0})); p.sessionID != 0 {
		t.Fatalf("full cache gave session %d", p.sessionID)
	}

	// Both older than two minutes and just used: a three-partition
	// session evicts the smallest, a.
	c.t = c.t.Add(fetchSessionEvictAfter + time.Second)
	begin(t, s, sessionReq(a, 1, nil))
	begin(t, s, sessionReq(b, 1, nil))
	n := begin(t, s, sessionReq(0, 0, map[int32]int64{0: 0, 1: 0, 2: 0})).sessionID
	if n == 0 {
		t.Fatal("larger session not admitted")
	}
	if _, err := s.begin(sessionReq(a, 2, nil)); !errors.Is(err, errFetchSessionNotFound) {
		t.Fatalf("evicted session: %v", err)
	}
	// A one-partition session cannot evict larger, recently used ones.
	if p := begin(t, s, sessionReq(0, 0, map[int32]int64{0: 0})); p.sessionID != 0 {
		t.Fatal("small session evicted a larger one")
	}
	// Idle for two minutes: any new session may evict it.
	c.t = c.t.Add(fetchSessionEvictAfter + time.Second)
	begin(t, s, sessionReq(n, 1, nil))
	if p := begin(t, s, sessionReq(0, 0, map[int32]int64{0: 0})); p.sessionID == 0 {
		t.Fatal("idle session not evicted")
	}
	if _, err := s.begin(sessionReq(b, 2, nil)); !errors.Is(err, errFetchSessionNotFound) {
		t.Fatalf("idle evicted session: %v", err)
	}

	// No slots: always sessionless.
	none := newFetchSessions(0, c.now)
	if p := begin(t, none, sessionReq(0, 0, map[int32]int64{0: 0})); p.sessionID != 0 {
		t.Fatal("session with zero slots")
	}
}

// A session opened with topic names cannot go on with topic ids.
func TestFetchSessionTopicIDSwitch(t *testing.T) {
	s := newFetchSessions(10, time.Now)
	id := begin(t, s, sessionReq(0, 0, map[int32]int64{0: 0})).sessionID
	req := sessionReq(id, 1, nil)
	req.Version = 13
	if _, err := s.begin(req); !errors.Is(err, errFetchSessionTopicID) {
		t.Fatalf("switch to ids: %v", err)
	}
}
