package broker_test

// The group coordinator's writes as Kafka's: committed offsets and a
// SyncGroup's assignment take effect only once their records are durable,
// a failed write leaves the previous state and answers Kafka's error, and
// the records of one OffsetCommit are one record batch.

import (
	"context"
	"errors"
	"io"
	"maps"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker"
	"github.com/runnel-io/runnel/broker/brokertest"
	plog "github.com/runnel-io/runnel/broker/internal/log"
)

// offsetsFaults acts on the fsyncs of __consumer_offsets segments: while
// failing they return errorfs.ErrInjected; when held, the next one
// signals entered and waits for release.
type offsetsFaults struct {
	failing  atomic.Bool
	held     atomic.Bool
	entered  chan struct{}
	release  chan struct{}
	released sync.Once
}

// unhold lets a held fsync go on; calling it again is harmless.
func (f *offsetsFaults) unhold() { f.released.Do(func() { close(f.release) }) }

func newOffsetsFaults() *offsetsFaults {
	return &offsetsFaults{entered: make(chan struct{}, 1), release: make(chan struct{})}
}

func (f *offsetsFaults) MaybeError(op errorfs.Op) error {
	if op.Kind != errorfs.OpFileSyncData || !strings.Contains(op.Path, "__consumer_offsets-") || !strings.HasSuffix(op.Path, ".log") {
		return nil
	}
	if f.held.CompareAndSwap(true, false) {
		f.entered <- struct{}{}
		<-f.release
	}
	if f.failing.Load() {
		return errorfs.ErrInjected
	}
	return nil
}

func (f *offsetsFaults) String() string { return "offsetsFaults" }

// startFaulty starts a broker whose files go through f. A partition whose
// fsync failed stays failed until reopened, and the broker's Close reports
// it (log.ErrFailed); any other error at close fails the test.
func startFaulty(t *testing.T, f *offsetsFaults, settings ...map[string]string) *brokertest.Broker {
	t.Helper()
	s := map[string]string{
		"log.dirs":             t.TempDir(),
		"listeners":            "PLAINTEXT://127.0.0.1:0",
		"runnel.http.listener": "127.0.0.1:0",
	}
	maps.Copy(s, groupSettings)
	for _, m := range settings {
		maps.Copy(s, m)
	}
	b, err := broker.New(broker.Config{Settings: s, FS: errorfs.Wrap(vfs.Default, f)})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- b.Run(context.Background()) }()
	t.Cleanup(func() {
		f.failing.Store(false) // the other partitions sync at close
		f.unhold()
		if err := b.Close(); err != nil && !errors.Is(err, plog.ErrFailed) {
			t.Errorf("close: %v", err)
		}
		if err := <-done; err != nil && !errors.Is(err, plog.ErrFailed) {
			t.Errorf("run: %v", err)
		}
	})
	return &brokertest.Broker{Broker: b, Dir: s["log.dirs"], Settings: s}
}

// commitOffsets commits offsets[p] to partition p of topic for a group
// without members (generation -1), each with meta, and returns each
// partition's error code.
func commitOffsets(t *testing.T, rc *rawConn, group, topic string, offsets []int64, meta string) []int16 {
	t.Helper()
	resp := rc.roundTrip(commitMany(group, topic, offsets, meta)).(*kmsg.OffsetCommitResponse)
	var codes []int16
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			codes = append(codes, rp.ErrorCode)
		}
	}
	return codes
}

func commitMany(group, topic string, offsets []int64, meta string) *kmsg.OffsetCommitRequest {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = 9
	req.Group, req.Generation = group, -1
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	for p, o := range offsets {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata = int32(p), o, -1, &meta
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

// fetchedOffsets returns the group's committed offset of partitions
// 0..n-1 of topic (-1 where there is none).
func fetchedOffsets(t *testing.T, rc *rawConn, group, topic string, n int) []int64 {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = 7
	req.Group = group
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic = topic
	for p := range n {
		rt.Partitions = append(rt.Partitions, int32(p))
	}
	req.Topics = append(req.Topics, rt)
	resp := rc.roundTrip(req).(*kmsg.OffsetFetchResponse)
	if resp.ErrorCode != 0 {
		t.Fatalf("offset fetch of %s: %s", group, errName(resp.ErrorCode))
	}
	out := make([]int64, n)
	for _, st := range resp.Topics {
		for _, sp := range st.Partitions {
			out[sp.Partition] = sp.Offset
		}
	}
	return out
}

// allCodes reports whether every code is want (0: no error).
func allCodes(codes []int16, want int16) bool {
	for _, c := range codes {
		if c != want {
			return false
		}
	}
	return len(codes) > 0
}

// scrape returns the broker's /metrics page.
func scrape(t *testing.T, b *brokertest.Broker) string {
	t.Helper()
	resp, err := http.Get("http://" + b.HTTPAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(body)
}

// A commit whose fsync fails is answered with Kafka's error for a storage
// failure (NOT_COORDINATOR), and neither OffsetFetch nor the lag metric
// ever shows its offset.
func TestOffsetCommitFailedFsyncKeepsPreviousOffset(t *testing.T) {
	f := newOffsetsFaults()
	b := startFaulty(t, f)
	rc := dialRaw(t, b.Addr())
	rc.createTopic("t", 1, nil)
	produceN(t, b, "t", 0, 20)
	if codes := commitOffsets(t, rc, "g", "t", []int64{5}, ""); !allCodes(codes, 0) {
		t.Fatalf("first commit: %v", codes)
	}

	f.failing.Store(true)
	if codes := commitOffsets(t, rc, "g", "t", []int64{9}, ""); !allCodes(codes, kerr.NotCoordinator.Code) {
		t.Fatalf("commit whose fsync fails: codes %v, want NOT_COORDINATOR", codes)
	}
	if got := fetchedOffsets(t, rc, "g", "t", 1); got[0] != 5 {
		t.Errorf("OffsetFetch after the failed commit: %d, want the previous 5", got[0])
	}
	if m := scrape(t, b); !strings.Contains(m, `runnel_broker_group_lag{group="g",partition="0",topic="t"} 15`) {
		t.Errorf("lag after the failed commit is not 20-5:\n%s", grepLines(m, "runnel_broker_group_lag"))
	}
}

// A leader's SyncGroup whose group record cannot be made durable: every
// waiting SyncGroup gets NOT_COORDINATOR and the group rebalances, as
// Kafka's coordinator does; no member is told of the lost assignment.
func TestSyncGroupFailedWriteRebalances(t *testing.T) {
	f := newOffsetsFaults()
	b := startFaulty(t, f)
	rc := dialRaw(t, b.Addr())
	joined := joinNew(t, rc, "sg")

	f.failing.Store(true)
	resp := rc.roundTrip(syncReq("sg", joined.MemberID, joined.Generation, map[string]string{joined.MemberID: "p0"})).(*kmsg.SyncGroupResponse)
	wantCode(t, "SyncGroup whose record fails", resp.ErrorCode, kerr.NotCoordinator)
	if len(resp.MemberAssignment) != 0 {
		t.Errorf("the failed SyncGroup carried the assignment %q", resp.MemberAssignment)
	}
	d := describeGroup(t, newAdmin(t, b), "sg")
	if d.State != "PreparingRebalance" {
		t.Errorf("group after the failed SyncGroup: %s, want PreparingRebalance", d.State)
	}
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.MemberID, hb.Generation = "sg", joined.MemberID, joined.Generation
	wantCode(t, "heartbeat after the failed SyncGroup", rc.roundTrip(hb).(*kmsg.HeartbeatResponse).ErrorCode, kerr.RebalanceInProgress)
}

// An OffsetFetch racing a commit never sees the new offset before the
// commit is durable: with the commit's fsync held, fetches (and the lag
// metric) show the previous offset; once it is released the commit is
// answered and fetches show the new one.
func TestOffsetFetchRacingCommitSeesOnlyDurableOffsets(t *testing.T) {
	f := newOffsetsFaults()
	b := startFaulty(t, f)
	rc := dialRaw(t, b.Addr())
	rc.createTopic("t", 1, nil)
	produceN(t, b, "t", 0, 20)
	if codes := commitOffsets(t, rc, "g", "t", []int64{5}, ""); !allCodes(codes, 0) {
		t.Fatalf("first commit: %v", codes)
	}

	f.held.Store(true)
	committer := dialRaw(t, b.Addr())
	corr := committer.send(commitMany("g", "t", []int64{9}, ""))
	select {
	case <-f.entered: // the commit's records are appended; its fsync waits
	case <-time.After(ioTimeout):
		t.Fatal("the commit's fsync of __consumer_offsets never started")
	}
	reader := dialRaw(t, b.Addr())
	for range 3 {
		if got := fetchedOffsets(t, reader, "g", "t", 1); got[0] != 5 {
			t.Fatalf("OffsetFetch during the commit's fsync: %d, want the previous 5", got[0])
		}
	}
	if m := scrape(t, b); !strings.Contains(m, `runnel_broker_group_lag{group="g",partition="0",topic="t"} 15`) {
		t.Errorf("lag during the commit's fsync is not 20-5:\n%s", grepLines(m, "runnel_broker_group_lag"))
	}
	f.unhold()
	var resp kmsg.OffsetCommitResponse
	resp.Version = 9
	committer.read(corr, &resp)
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("commit: %s", errName(code))
	}
	if got := fetchedOffsets(t, reader, "g", "t", 1); got[0] != 9 {
		t.Errorf("OffsetFetch after the commit's answer: %d, want 9", got[0])
	}
}

// The records of one OffsetCommit are one record batch in
// __consumer_offsets (here ~320 KB, above the 256 KiB at which they used
// to be split), so a crash keeps all or none of them.
func TestOffsetCommitIsOneBatch(t *testing.T) {
	b := brokertest.Start(t, groupSettings)
	rc := dialRaw(t, b.Addr())
	const parts = 80
	rc.createTopic("wide", parts, nil)
	offsets := make([]int64, parts)
	for p := range offsets {
		offsets[p] = int64(p + 1)
	}
	meta := strings.Repeat("m", 4000)
	if codes := commitOffsets(t, rc, "onebatch", "wide", offsets, meta); !allCodes(codes, 0) {
		t.Fatalf("commit: %v", codes)
	}
	batches := groupBatches(t, rc, "onebatch")
	if len(batches) != 1 || batches[0] != parts {
		t.Errorf("the commit's records are in batches of %v records, want one batch of %d", batches, parts)
	}
}

// A commit whose one batch would exceed the offsets topic's
// max.message.bytes fails as a whole with INVALID_COMMIT_OFFSET_SIZE, as
// Kafka answers RecordTooLarge for an OffsetCommit, and none of its
// offsets is stored; a smaller commit then succeeds.
func TestOffsetCommitTooLargeForOneBatch(t *testing.T) {
	b := brokertest.Start(t, groupSettings, map[string]string{"message.max.bytes": "65536"})
	rc := dialRaw(t, b.Addr())
	const parts = 20
	rc.createTopic("wide", parts, nil)
	offsets := make([]int64, parts)
	for p := range offsets {
		offsets[p] = int64(p + 1)
	}
	meta := strings.Repeat("m", 4000) // 20 × 4000 B > 64 KiB
	if codes := commitOffsets(t, rc, "big", "wide", offsets, meta); !allCodes(codes, kerr.InvalidCommitOffsetSize.Code) {
		t.Fatalf("commit of %d × %d bytes: codes %v, want INVALID_COMMIT_OFFSET_SIZE for every partition", parts, len(meta), codes)
	}
	for p, o := range fetchedOffsets(t, rc, "big", "wide", parts) {
		if o != -1 {
			t.Errorf("partition %d has offset %d after the refused commit", p, o)
		}
	}
	if n := groupBatches(t, rc, "big"); len(n) != 0 {
		t.Errorf("the refused commit left batches of %v records", n)
	}
	if codes := commitOffsets(t, rc, "big", "wide", offsets[:5], meta); !allCodes(codes, 0) {
		t.Fatalf("commit of 5 partitions: %v", codes)
	}
	if got := fetchedOffsets(t, rc, "big", "wide", 5); got[4] != 5 {
		t.Errorf("after the smaller commit: %v", got)
	}
}

// groupBatches returns, for each batch of __consumer_offsets that holds
// records of group, how many records it holds.
func groupBatches(t *testing.T, rc *rawConn, group string) []int {
	t.Helper()
	var out []int
	for p := range int32(50) {
		from := int64(0)
		for {
			sp := fetchPartition(t, rc.roundTrip(fetchReq("__consumer_offsets", p, from, -1, 0, 0)).(*kmsg.FetchResponse))
			if sp.ErrorCode != 0 {
				t.Fatalf("fetch __consumer_offsets-%d: %s", p, errName(sp.ErrorCode))
			}
			b := sp.RecordBatches
			if len(b) == 0 {
				break
			}
			start := from
			for len(b) >= 61 {
				var kb kmsg.RecordBatch
				if err := kb.ReadFrom(b); err != nil {
					break // a partial batch at the end
				}
				size := 12 + int(kb.Length)
				recs := parseBatches(t, b[:size])
				n := 0
				for _, r := range recs {
					if strings.Contains(r.Key, group) {
						n++
					}
				}
				if n > 0 {
					out = append(out, n)
				}
				from = kb.FirstOffset + int64(kb.LastOffsetDelta) + 1
				b = b[size:]
			}
			if from >= sp.HighWatermark {
				break
			}
			if from == start {
				t.Fatalf("__consumer_offsets-%d: no whole batch parsed at offset %d (%d bytes fetched, high watermark %d)", p, from, len(sp.RecordBatches), sp.HighWatermark)
			}
		}
	}
	return out
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
