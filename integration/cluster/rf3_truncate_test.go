package cluster

import (
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// diskBatch is a record batch as a node's segment files hold it.
type diskBatch struct {
	Base, Last int64
	CRC        int32
	Values     map[int64]string // uncompressed batches only
}

// diskBatches reads the batches of topic-partition from node id's segment
// files (the node may be running: a batch still being written at the end
// is left out).
func (c *Cluster) diskBatches(id int32, topic string, partition int32) ([]diskBatch, error) {
	files, err := filepath.Glob(filepath.Join(c.Node(id).Dir, fmt.Sprintf("%s-%d", topic, partition), "*.log"))
	if err != nil {
		return nil, err
	}
	slices.Sort(files)
	var out []diskBatch
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		for len(b) >= 12 {
			n := 12 + int(int32(binary.BigEndian.Uint32(b[8:12])))
			if n < 12 || n > len(b) {
				break
			}
			var rb kmsg.RecordBatch
			if err := rb.ReadFrom(b[:n]); err != nil {
				return nil, fmt.Errorf("node %d %s: batch at %d: %w", id, f, rb.FirstOffset, err)
			}
			db := diskBatch{Base: rb.FirstOffset, Last: rb.FirstOffset + int64(rb.LastOffsetDelta), CRC: rb.CRC}
			if rb.Attributes&0x7 == 0 {
				db.Values = map[int64]string{}
				recs := rb.Records
				for range rb.NumRecords {
					l, k := binary.Varint(recs)
					if k <= 0 || k+int(l) > len(recs) {
						break
					}
					var r kmsg.Record
					if err := r.ReadFrom(recs[:k+int(l)]); err != nil {
						break
					}
					db.Values[db.Base+int64(r.OffsetDelta)] = string(r.Value)
					recs = recs[k+int(l):]
				}
			}
			out = append(out, db)
			b = b[n:]
		}
	}
	return out, nil
}

// TestRestartedFollowerTruncatesAndCatchesUp, in two parts.
//
// Catch-up: a follower of partition 0 is SIGKILLed, writes go on, it is
// restarted and must rejoin the ISR of every partition.
//
// Truncation: the leader L of partition 0 gets a tail that no other
// replica has: both followers are frozen (SIGSTOP), and records are
// produced to partition 0 with acks=1 (answered by the leader alone; with
// the followers frozen the high watermark cannot pass them). The test
// checks the tail is in L's segment files, SIGKILLs L, thaws the
// followers: once L's session expires one of them leads, and the
// workload writes past the tail's offsets there. L is restarted: it must
// truncate its divergent tail (OffsetForLeaderEpoch) and copy the new
// leader's records, so that every replica's segment files hold the same
// batches (base offset, last offset, CRC) below the high watermark and L
// no longer holds the tail records the new leader overwrote; consumers'
// reads are in the usual check (no offset may hold two values, across
// reads and the final read), with the acks=all workload.
func TestRestartedFollowerTruncatesAndCatchesUp(t *testing.T) {
	const (
		topic      = "truncate"
		partitions = 3
		tailLen    = 20
	)
	all := allPartitions(partitions)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := startRF3(t, ctx, topic, partitions)
	ps, cs := rf3Workload(t, ctx, c, topic, partitions)

	// Catch-up.
	leaders := c.waitFullISR(ctx, topic)
	round := time.Now()
	within(t, ctx, ps, "load on every partition", func() bool { return ps.ackedSince(round, all) })
	var f int32
	for _, id := range []int32{1, 2, 3} {
		if id != leaders[0] {
			f = id
			break
		}
	}
	c.Kill(f)
	killed := time.Now()
	_, before, _, _ := ps.Counts()
	within(t, ctx, ps, "writes on every partition while the follower is down", func() bool {
		_, acked, _, _ := ps.Counts()
		return ps.ackedSince(killed, all) && acked >= before+300
	})
	_, during, _, _ := ps.Counts()
	restart := time.Now()
	c.Restart(f)
	c.waitFullISR(ctx, topic)
	t.Logf("follower %d down %v while %d records were acknowledged; back in every ISR %v after its restart",
		f, restart.Sub(killed).Round(time.Millisecond), during-before, time.Since(restart).Round(time.Millisecond))

	// Truncation.
	leaders = c.waitFullISR(ctx, topic)
	l := leaders[0]
	var followers []int32
	for _, id := range []int32{1, 2, 3} {
		if id != l {
			followers = append(followers, id)
		}
	}
	one, err := kgo.NewClient(kgo.SeedBrokers(c.Seeds()...), kgo.ClientID("acks-1"),
		kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	pctx, pcancel := context.WithTimeout(ctx, stepTimeout)
	defer pcancel()
	if err := one.ProduceSync(pctx, &kgo.Record{Partition: 0, Value: []byte("warm-up")}).FirstErr(); err != nil {
		t.Fatalf("acks=1 warm-up: %v", err)
	}
	for _, id := range followers {
		c.Signal(id, syscall.SIGSTOP)
	}
	tail := map[int64]string{}
	for i := range tailLen {
		v := fmt.Sprintf("tail-%02d", i)
		r, err := one.ProduceSync(pctx, &kgo.Record{Partition: 0, Value: []byte(v)}).First()
		if err != nil {
			t.Fatalf("acks=1 %s with the followers frozen: %v", v, err)
		}
		tail[r.Offset] = v
	}
	one.Close()
	c.Kill(l)
	killedL := time.Now()
	for _, id := range followers {
		c.Signal(id, syscall.SIGCONT)
	}
	onL, err := c.diskBatches(l, topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	for o, v := range tail {
		if !slices.ContainsFunc(onL, func(b diskBatch) bool { return b.Values[o] == v }) {
			t.Fatalf("node %d's log lacks its acks=1 record %q at offset %d", l, v, o)
		}
	}
	tailEnd := slices.Max(slices.Collect(maps.Keys(tail))) + 1
	st := c.waitStates(ctx, topic, "a new leader of partition 0", func(st map[int32]partState) bool {
		return st[0].Leader > 0 && st[0].Leader != l
	})
	within(t, ctx, ps, "acks=all writes on partition 0 past the old leader's tail", func() bool {
		for _, a := range ps.Acked() {
			if a.Partition == 0 && a.Offset >= tailEnd && a.At.After(killedL) {
				return true
			}
		}
		return false
	})
	overwritten := time.Since(killedL)
	c.Restart(l)
	c.waitFullISR(ctx, topic)

	// Every replica holds the same batches below the high watermark, and
	// the old leader lost at least one tail record: the new leader wrote
	// other records at its offsets. (A follower may legitimately hold the
	// first tail records: a fetch it had in flight when it was frozen can
	// be answered with them and read once it is thawed.)
	var last string
	wctx, wcancel := context.WithTimeout(ctx, stepTimeout)
	defer wcancel()
	err = waitUntil(wctx, "every replica of partition 0 to hold the same batches", func() bool {
		hw := c.endOffsets(ctx, topic)[0]
		var ref []diskBatch
		for _, id := range []int32{1, 2, 3} {
			bs, err := c.diskBatches(id, topic, 0)
			if err != nil {
				last = err.Error()
				return false
			}
			bs = slices.DeleteFunc(bs, func(b diskBatch) bool { return b.Base >= hw })
			if id == l {
				gone := 0
				for o, v := range tail {
					if !slices.ContainsFunc(bs, func(b diskBatch) bool { return b.Values[o] == v }) {
						gone++
					}
				}
				if gone == 0 {
					last = fmt.Sprintf("node %d still holds every tail record below %d", id, hw)
					return false
				}
			}
			if id == 1 {
				ref = bs
				continue
			}
			if !slices.EqualFunc(ref, bs, func(a, b diskBatch) bool { return a.Base == b.Base && a.Last == b.Last && a.CRC == b.CRC }) {
				last = fmt.Sprintf("node %d: %d batches below %d, node 1 %d", id, len(bs), hw, len(ref))
				return false
			}
		}
		last = ""
		return len(ref) > 0 && ref[len(ref)-1].Last+1 >= hw
	})
	if err != nil {
		t.Fatalf("%v: %s", err, last)
	}
	t.Logf("leader %d of partition 0 held %d acks=1 records at offsets [%d, %d) with its followers frozen; node %d led after it was killed; acks=all writes past them %v after the kill; after its restart every replica holds the same batches",
		l, len(tail), tailEnd-tailLen, tailEnd, st[0].Leader, overwritten.Round(time.Millisecond))
	finishRF3(t, ctx, c, topic, ps, cs)
}
