package wire_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker/internal/wire"
)

// randomFetchResponse builds a response with what a broker sets: topics
// (named and with ids), partitions with offsets and errors, aborted
// transactions (nil, empty or some), and records fields that are null,
// empty, small (copied) and large (spliced).
func randomFetchResponse(r *rand.Rand, version int16) *kmsg.FetchResponse {
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(version)
	resp.ThrottleMillis = r.Int32N(1000)
	resp.ErrorCode = int16(r.IntN(3))
	resp.SessionID = r.Int32()
	for range r.IntN(4) {
		st := kmsg.NewFetchResponseTopic()
		st.Topic = fmt.Sprintf("topic-%d", r.IntN(1000))
		for i := range st.TopicID {
			st.TopicID[i] = byte(r.IntN(256))
		}
		for range r.IntN(5) {
			sp := kmsg.NewFetchResponseTopicPartition()
			sp.Partition = r.Int32N(100)
			sp.ErrorCode = int16(r.IntN(2))
			sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = r.Int64(), r.Int64(), r.Int64N(5)-1
			switch r.IntN(3) {
			case 0:
				sp.AbortedTransactions = nil
			case 1:
				sp.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
			case 2:
				for range 1 + r.IntN(3) {
					a := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
					a.ProducerID, a.FirstOffset = r.Int64(), r.Int64()
					sp.AbortedTransactions = append(sp.AbortedTransactions, a)
				}
			}
			sp.PreferredReadReplica = r.Int32N(3) - 1
			switch r.IntN(4) {
			case 0:
				sp.RecordBatches = nil
			case 1:
				sp.RecordBatches = []byte{}
			case 2:
				sp.RecordBatches = randomBytes(r, 1+r.IntN(100))
			case 3:
				sp.RecordBatches = randomBytes(r, wire.SpliceMinBytes+r.IntN(3*wire.SpliceMinBytes))
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

func randomBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.IntN(256))
	}
	return b
}

// The hand-framed Fetch response is byte for byte what kmsg encodes, for
// every version the broker serves, and the large records fields are not
// copied into the header buffer.
func TestAppendFetchResponseMatchesKmsg(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for version := int16(4); version <= 16; version++ {
		for i := range 200 {
			resp := randomFetchResponse(r, version)
			if !wire.CanHandFrameFetch(resp) {
				t.Fatalf("v%d #%d: CanHandFrameFetch false for a plain response", version, i)
			}
			req := kmsg.NewPtrFetchRequest()
			req.SetVersion(version)
			want := wire.AppendResponse(nil, 42, req, resp)

			hdr, bufs := wire.AppendFetchResponse([]byte("prev"), 42, resp, nil)
			if string(hdr[:4]) != "prev" {
				t.Fatal("dst overwritten")
			}
			var got bytes.Buffer
			for _, b := range bufs {
				got.Write(b)
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Fatalf("v%d #%d: hand-framed response differs from kmsg's (%d vs %d bytes)", version, i, got.Len(), len(want))
			}
			var large int
			for _, st := range resp.Topics {
				for _, sp := range st.Partitions {
					if len(sp.RecordBatches) >= wire.SpliceMinBytes {
						large += len(sp.RecordBatches)
					}
				}
			}
			if copied := len(hdr) - 4; copied != len(want)-large {
				t.Fatalf("v%d #%d: %d bytes in the header buffer, want %d (large records spliced, not copied)", version, i, copied, len(want)-large)
			}
		}
	}
}

// A response with a field the hand framing does not write is left to kmsg.
func TestCanHandFrameFetchRefusesTaggedFields(t *testing.T) {
	for name, set := range map[string]func(*kmsg.FetchResponse){
		"version 3":       func(r *kmsg.FetchResponse) { r.SetVersion(3) },
		"version 17":      func(r *kmsg.FetchResponse) { r.SetVersion(17) },
		"node endpoints":  func(r *kmsg.FetchResponse) { r.Brokers = []kmsg.FetchResponseBroker{kmsg.NewFetchResponseBroker()} },
		"current leader":  func(r *kmsg.FetchResponse) { r.Topics[0].Partitions[0].CurrentLeader.LeaderID = 1 },
		"diverging epoch": func(r *kmsg.FetchResponse) { r.Topics[0].Partitions[0].DivergingEpoch.Epoch = 3 },
		"snapshot id":     func(r *kmsg.FetchResponse) { r.Topics[0].Partitions[0].SnapshotID.EndOffset = 9 },
		"unknown tag":     func(r *kmsg.FetchResponse) { r.Topics[0].Partitions[0].UnknownTags.Set(7, []byte{1}) },
	} {
		resp := kmsg.NewPtrFetchResponse()
		resp.SetVersion(12)
		st := kmsg.NewFetchResponseTopic()
		st.Partitions = append(st.Partitions, kmsg.NewFetchResponseTopicPartition())
		resp.Topics = append(resp.Topics, st)
		if !wire.CanHandFrameFetch(resp) {
			t.Fatalf("%s: plain response refused", name)
		}
		set(resp)
		if wire.CanHandFrameFetch(resp) {
			t.Errorf("%s: accepted", name)
		}
	}
}

// Written with writev over real TCP, the frame reads back as kmsg's.
func TestAppendFetchResponseOverTCP(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	resp := randomFetchResponse(rand.New(rand.NewPCG(3, 4)), 16)
	for len(resp.Topics) == 0 {
		resp = randomFetchResponse(rand.New(rand.NewPCG(uint64(len(resp.Topics)), 5)), 16)
	}
	resp.Topics[0].Partitions = append(resp.Topics[0].Partitions, kmsg.NewFetchResponseTopicPartition())
	resp.Topics[0].Partitions[len(resp.Topics[0].Partitions)-1].RecordBatches = randomBytes(rand.New(rand.NewPCG(6, 7)), 1<<20)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, bufs := wire.AppendFetchResponse(nil, 9, resp, nil)
		bufs.WriteTo(c)
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	frame, err := wire.ReadFrame(c, nil, 64<<20)
	if err != nil {
		t.Fatal(err)
	}
	back := kmsg.NewPtrFetchResponse()
	back.SetVersion(16)
	if err := back.ReadFrom(frame[5:]); err != nil { // correlation id, header tags
		t.Fatal(err)
	}
	if !bytes.Equal(back.AppendTo(nil), resp.AppendTo(nil)) {
		t.Fatal("response read back differs")
	}
}

// Aborted transactions (read_committed fetches) cost no allocation in the
// hand framing: a response allocates as much with them as without.
func TestAppendFetchResponseAbortedNoAllocs(t *testing.T) {
	allocs := func(aborted []kmsg.FetchResponseTopicPartitionAbortedTransaction) float64 {
		resp := kmsg.NewPtrFetchResponse()
		resp.SetVersion(12)
		st := kmsg.NewFetchResponseTopic()
		for i := range 3 {
			sp := kmsg.NewFetchResponseTopicPartition()
			sp.Partition = int32(i)
			sp.AbortedTransactions = aborted
			sp.RecordBatches = make([]byte, wire.SpliceMinBytes)
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
		dst, bufs := wire.AppendFetchResponse(nil, 1, resp, nil)
		return testing.AllocsPerRun(50, func() {
			dst, bufs = wire.AppendFetchResponse(dst[:0], 1, resp, bufs[:0])
		})
	}
	without := allocs(nil)
	with := allocs([]kmsg.FetchResponseTopicPartitionAbortedTransaction{{ProducerID: 5, FirstOffset: 9}, {ProducerID: 6, FirstOffset: 11}})
	if with > without {
		t.Fatalf("%v allocations per response with aborted transactions, %v without", with, without)
	}
}
