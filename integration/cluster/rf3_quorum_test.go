package cluster

import (
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestTwoFailoversInQuickSuccession: the leader of partition 0 is
// SIGKILLed, and as soon as Metadata names new leaders for its partitions
// the new leader of partition 0 is SIGKILLed too. Two of three nodes are
// then down (no quorum, no acknowledgement is possible); the first victim
// is restarted at once, the partitions the second one led fail over to the
// survivors, then the second victim is restarted. Nothing acknowledged
// may be lost.
func TestTwoFailoversInQuickSuccession(t *testing.T) {
	const (
		topic      = "two-failovers"
		partitions = 6
	)
	all := allPartitions(partitions)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := startRF3(t, ctx, topic, partitions)
	ps, cs := rf3Workload(t, ctx, c, topic, partitions)

	leaders := c.waitFullISR(ctx, topic)
	round := time.Now()
	within(t, ctx, ps, "load on every partition", func() bool { return ps.ackedSince(round, all) })
	a := leaders[0]
	ledA := ledBy(leaders, a)
	c.Kill(a)
	killedA := time.Now()
	st := c.waitStates(ctx, topic, "new leaders of the first victim's partitions", func(st map[int32]partState) bool {
		for _, p := range ledA {
			if l := st[p].Leader; l <= 0 || l == a {
				return false
			}
		}
		return true
	})
	movedA := time.Since(killedA)
	b := st[0].Leader
	ledB := ledBy(leadersOf(st), b)
	c.Kill(b)
	killedB := time.Now()
	fA := ps.failoverTimes(killedA, ledA)

	c.Restart(a)
	restartedA := time.Since(killedB)
	within(t, ctx, ps, "an acknowledgement on every partition after the second kill", func() bool { return ps.ackedSince(killedB, all) })
	fB := ps.failoverTimes(killedB, ledB)
	c.Restart(b)
	c.waitFullISR(ctx, topic)
	back := time.Now()
	within(t, ctx, ps, "an acknowledgement on every partition after both restarts", func() bool { return ps.ackedSince(back, all) })

	t.Logf("killed node %d (leader of %v): new leaders in Metadata after %v, failover before the second kill %v", a, ledA, movedA.Round(time.Millisecond), fA)
	t.Logf("killed node %d (new leader of %v) %v after the first kill; node %d ready again %v after the second kill; failover %v %v",
		b, ledB, killedB.Sub(killedA).Round(time.Millisecond), a, restartedA.Round(time.Millisecond), fB, fB.Per)
	finishRF3(t, ctx, c, topic, ps, cs)
}

// downGrace: an acknowledgement the survivor sent before the second kill
// may still be on its way to the client right after it.
const downGrace = 500 * time.Millisecond

// TestTwoOfThreeDownRefusesWrites: with two of three nodes SIGKILLed the
// metadata quorum has no leader, so nothing can fence the dead nodes or
// shrink an ISR; the survivor's partitions keep an ISR of three and
// acks=all writes must not be acknowledged (they time out, or fail with
// NOT_ENOUGH_REPLICAS if an ISR had shrunk). A probe producer (acks=all,
// idempotent, 3 s delivery timeout) shows which errors clients get
// (logged, not asserted). Once
// both nodes are back, writes are acknowledged again and nothing
// acknowledged before is missing.
func TestTwoOfThreeDownRefusesWrites(t *testing.T) {
	const (
		topic      = "two-down"
		probeTopic = "two-down-probe"
		partitions = 4
	)
	all := allPartitions(partitions)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := startRF3(t, ctx, topic, partitions)
	c.createTopic(ctx, probeTopic, 1, 3, map[string]*string{"min.insync.replicas": new("2")})
	c.waitFullISR(ctx, probeTopic)
	ps, cs := rf3Workload(t, ctx, c, topic, partitions)
	c.waitFullISR(ctx, topic)
	round := time.Now()
	within(t, ctx, ps, "load on every partition", func() bool { return ps.ackedSince(round, all) })
	// Started once the workload's producers have their ids: two nodes
	// handing out producer ids at once fail one (see the report).
	probe := startProducers(ctx, c.Seeds(), probeTopic, 1, produceLimits{Interval: 50 * time.Millisecond, Delivery: 3 * time.Second})
	t.Cleanup(probe.Stop)
	within(t, ctx, ps, "load on every partition and the probe", func() bool {
		return ps.ackedSince(round, all) && probe.ackedSince(round, []int32{0})
	})
	// The survivor leads partition 0; the other two die.
	adm := c.admin()
	lead, err := leaders(ctx, adm, topic)
	adm.Close()
	if err != nil {
		t.Fatal(err)
	}
	survivor := lead[0]
	for id := int32(1); id <= 3; id++ {
		if id != survivor {
			c.Kill(id)
		}
	}
	down := time.Now()
	failedSince := func(since time.Time) []failedRecord {
		var fs []failedRecord
		for _, f := range probe.Failed() {
			if f.At.After(since) {
				fs = append(fs, f)
			}
		}
		return fs
	}
	// The window: until the probe has handed 60 more records (3 s) to its
	// client; none of them, nor any workload record, may be acknowledged.
	sentAtDown, _, _, _ := probe.Counts()
	within(t, ctx, probe, "the probe to send while two nodes are down", func() bool {
		sent, _, _, _ := probe.Counts()
		return sent >= sentAtDown+60
	})
	up := time.Now()
	// Its followers are gone and the ISR cannot shrink without a quorum:
	// an acks=all write to the survivor's partition is refused with
	// NOT_ENOUGH_REPLICAS (once they lag past replica.lag.time.max.ms).
	if err := produceOnce(ctx, c.Node(survivor).Addr, topic, 0); !errors.Is(err, kerr.NotEnoughReplicas) {
		t.Errorf("acks=all to the survivor %d with two nodes down: %v, want NOT_ENOUGH_REPLICAS", survivor, err)
	}
	for _, set := range []*producerSet{ps, probe} {
		for _, a := range set.Acked() {
			if a.At.After(down.Add(downGrace)) && a.At.Before(up) {
				t.Errorf("acknowledged %q at %d/%d %v after the second kill, with two of three nodes down",
					a.Value, a.Partition, a.Offset, a.At.Sub(down).Round(time.Millisecond))
			}
		}
	}
	t.Logf("two nodes down for %v: probe failures %v", up.Sub(down).Round(time.Millisecond), failuresByError(failedSince(down)))

	for id := int32(1); id <= 3; id++ {
		if id != survivor {
			c.Restart(id)
		}
	}
	c.waitFullISR(ctx, topic)
	within(t, ctx, ps, "an acknowledgement on every partition after the restarts", func() bool {
		return ps.ackedSince(up, all) && probe.ackedSince(up, []int32{0})
	})
	t.Logf("after the restarts (begun %v after the kills): %v; probe failures since the kills %v",
		up.Sub(down).Round(time.Millisecond), ps.failoverTimes(up, all), failuresByError(failedSince(down)))

	probe.Stop()
	rctx, rcancel := context.WithTimeout(ctx, stepTimeout)
	defer rcancel()
	probeFinal, probeBackwards, err := readBack(rctx, c.Seeds(), probeTopic)
	if err != nil {
		t.Fatal(err)
	}
	requireCorrect(t, history{Acked: probe.Acked(), NonMonotonic: probeBackwards, Final: probeFinal})
	finishRF3(t, ctx, c, topic, ps, cs)
}

// produceOnce sends one Produce request (acks=all, one record) for
// partition of topic to the node at addr, and returns the error code of its
// answer: a plain request, not a producer, whose retries would hide it.
func produceOnce(ctx context.Context, addr, topic string, partition int32) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return err
	}
	defer cl.Close()
	rec := kmsg.Record{OffsetDelta: 0, Value: []byte("probe")}
	rec.Length = int32(len(rec.AppendTo(nil)) - 1) // the length varint of a small record is one byte
	recs := rec.AppendTo(nil)
	b := kmsg.RecordBatch{
		Magic: 2, LastOffsetDelta: 0, FirstTimestamp: time.Now().UnixMilli(), MaxTimestamp: time.Now().UnixMilli(),
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: 1, Records: recs,
	}
	raw := b.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[8:], uint32(len(raw)-12))
	binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = partition, raw
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	return kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
}
