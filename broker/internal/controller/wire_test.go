package controller

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/runnel-io/runnel/broker/internal/metadata"
)

// A request and its response cross the wire: the reply comes back equal,
// and a refusal comes back as the same sentinel and Kafka code.
func TestWireRoundTrip(t *testing.T) {
	req := Request{Heartbeat: &Heartbeat{ID: 3, Epoch: 9, MetadataOffset: 12, WantShutdown: true}}
	got, err := DecodeRequest(req.Encode())
	if err != nil || got.Heartbeat == nil || *got.Heartbeat != *req.Heartbeat {
		t.Fatalf("request round trip: %+v, %v", got, err)
	}
	resp, err := DecodeResponse(ResponseFor(HeartbeatReply{IsCaughtUp: true, ShouldShutDown: true}, nil).Encode())
	if err != nil || resp.Err() != nil || resp.Heartbeat == nil || !resp.Heartbeat.ShouldShutDown || !resp.Heartbeat.IsCaughtUp {
		t.Fatalf("reply round trip: %+v, %v", resp, err)
	}
	p := metadata.Partition{Leader: 2, LeaderEpoch: 3, Epoch: 4, Replicas: []int32{1, 2}, ISR: []int32{2}}
	resp, err = DecodeResponse(ResponseFor(p, nil).Encode())
	if err != nil || resp.AlterPartition == nil || resp.AlterPartition.Epoch != 4 {
		t.Fatalf("partition round trip: %+v, %v", resp, err)
	}
	_, _, aerr := AlterPartition(metadata.Empty(), AlterPartitionRequest{Broker: 1})
	resp, _ = DecodeResponse(ResponseFor(nil, aerr).Encode())
	if err := resp.Err(); !errors.Is(err, ErrStaleBrokerEpoch) || !errors.Is(err, kerr.StaleBrokerEpoch) || err.Error() != aerr.Error() {
		t.Fatalf("refusal round trip: %v (from %v)", err, aerr)
	}
	resp, _ = DecodeResponse(ResponseFor(nil, ErrNotLeader).Encode())
	if err := resp.Err(); !errors.Is(err, kerr.InvalidRequest) {
		t.Fatalf("shared code: %v", err)
	}
	resp, _ = DecodeResponse(ResponseFor(nil, errors.New("disk on fire")).Encode())
	if err := resp.Err(); !errors.Is(err, kerr.UnknownServerError) {
		t.Fatalf("unmapped error: %v", err)
	}
	for _, bad := range []string{"", "{", "{}", `{"heartbeat":{},"register":{"id":1}}`, `{"heartbeat":null}`} {
		if _, err := DecodeRequest([]byte(bad)); !errors.Is(err, ErrBadMessage) {
			t.Errorf("DecodeRequest(%q): %v", bad, err)
		}
	}
}

// FuzzDecode: any bytes decode to a request or response or give an error,
// never a panic; a decoded request encodes and decodes again.
func FuzzDecode(f *testing.F) {
	f.Add(Request{AlterPartition: &AlterPartitionRequest{Topic: "t", ISR: []int32{1, 2}}}.Encode())
	f.Add(ResponseFor(nil, ErrFencedLeaderEpoch).Encode())
	f.Add([]byte(`{"error_code":-32768}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if r, err := DecodeRequest(b); err == nil {
			if _, err := DecodeRequest(r.Encode()); err != nil {
				t.Fatalf("a decoded request does not decode again: %v", err)
			}
		}
		if r, err := DecodeResponse(b); err == nil {
			_ = r.Err()
		}
	})
}
