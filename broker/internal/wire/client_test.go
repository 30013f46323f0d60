package wire_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/runnel-io/runnel/broker/internal/wire"
)

// miniBroker answers ApiVersions and Metadata over real TCP with nothing but
// this package and kmsg: the read loop of doc.go, so that real clients check
// the framing. It advertises ApiVersions up to apiVersionsMax.
type miniBroker struct {
	ln             net.Listener
	apiVersionsMax int16
	wg             sync.WaitGroup

	mu struct {
		sync.Mutex
		seen []wire.RequestHeader
		errs []error
	}
}

func startMiniBroker(t *testing.T, apiVersionsMax int16) *miniBroker {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &miniBroker{ln: ln, apiVersionsMax: apiVersionsMax}
	b.wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			b.wg.Go(func() { b.serve(conn) })
		}
	})
	t.Cleanup(func() {
		ln.Close()
		b.wg.Wait()
	})
	return b
}

func (b *miniBroker) serve(conn net.Conn) {
	defer conn.Close()
	r := bufio.NewReader(conn)
	var buf, out []byte
	maxSize := int32(64 << 10)
	for {
		frame, err := wire.ReadFrame(r, buf, maxSize)
		if err != nil {
			b.fail(err)
			return
		}
		buf = frame
		h, body, err := wire.ParseRequestHeader(frame)
		b.mu.Lock()
		b.mu.seen = append(b.mu.seen, h)
		b.mu.Unlock()
		if h.APIKey == 18 && errors.Is(err, wire.ErrUnsupportedVersion) {
			out = wire.AppendApiVersionsUnsupported(out[:0], h.CorrelationID, b.keys()[:1])
			if _, err := conn.Write(out); err != nil {
				return
			}
			continue
		}
		if err != nil {
			b.fail(err)
			return
		}
		req, err := wire.DecodeRequest(h, body)
		if err != nil {
			b.fail(err)
			return
		}
		maxSize = 100 << 20
		var resp kmsg.Response
		switch req := req.(type) {
		case *kmsg.ApiVersionsRequest:
			r := req.ResponseKind().(*kmsg.ApiVersionsResponse)
			r.ApiKeys = b.keys()
			resp = r
		case *kmsg.MetadataRequest:
			r := req.ResponseKind().(*kmsg.MetadataResponse)
			host, port, _ := net.SplitHostPort(b.ln.Addr().String())
			p, _ := strconv.Atoi(port)
			br := kmsg.NewMetadataResponseBroker()
			br.NodeID, br.Host, br.Port = 0, host, int32(p)
			r.Brokers = append(r.Brokers, br)
			r.ControllerID = 0
			resp = r
		default:
			b.fail(errors.New("unexpected " + kmsg.NameForKey(req.Key())))
			return
		}
		out = wire.AppendResponse(out[:0], h.CorrelationID, req, resp)
		if _, err := conn.Write(out); err != nil {
			return
		}
	}
}

func (b *miniBroker) keys() []kmsg.ApiVersionsResponseApiKey {
	return []kmsg.ApiVersionsResponseApiKey{
		{ApiKey: 18, MinVersion: 0, MaxVersion: b.apiVersionsMax},
		{ApiKey: 3, MinVersion: 0, MaxVersion: kmsg.NewPtrMetadataRequest().MaxVersion()},
	}
}

func (b *miniBroker) fail(err error) {
	if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
		return
	}
	b.mu.Lock()
	b.mu.errs = append(b.mu.errs, err)
	b.mu.Unlock()
}

// franz-go, at its newest (flexible) versions and at Kafka 0.11's (none
// flexible), talks to the mini broker.
func TestFranzGoClient(t *testing.T) {
	for _, tt := range []struct {
		name     string
		versions *kversion.Versions
	}{
		{"newest", nil},
		{"kafka-0.11", kversion.V0_11_0()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := startMiniBroker(t, kmsg.NewPtrApiVersionsRequest().MaxVersion())
			opts := []kgo.Opt{kgo.SeedBrokers(b.ln.Addr().String()), kgo.ClientID("wire-test")}
			if tt.versions != nil {
				opts = append(opts, kgo.MaxVersions(tt.versions))
			}
			cl, err := kgo.NewClient(opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.Brokers) != 1 {
				t.Fatalf("metadata %+v", resp)
			}
			cl.Close()
			b.mu.Lock()
			defer b.mu.Unlock()
			if len(b.mu.errs) > 0 {
				t.Fatalf("broker errors: %v", b.mu.errs)
			}
			for _, h := range b.mu.seen {
				if h.ClientID == nil || *h.ClientID != "wire-test" {
					t.Fatalf("header %+v", h)
				}
				t.Logf("%s v%d", kmsg.NameForKey(h.APIKey), h.APIVersion)
			}
		})
	}
}

// A client newer than the broker sends ApiVersions at a version the broker
// does not know; it gets the v0 UNSUPPORTED_VERSION answer on the same
// connection and retries with the version offered there.
func TestApiVersionsFromTheFuture(t *testing.T) {
	b := startMiniBroker(t, 3)
	conn, err := net.Dial("tcp", b.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	r := bufio.NewReader(conn)

	// ApiVersions v77 with a header v2 that carries a tagged field.
	future, start := wire.BeginFrame(nil)
	future = binary.BigEndian.AppendUint16(future, 18)
	future = binary.BigEndian.AppendUint16(future, 77)
	future = binary.BigEndian.AppendUint32(future, 5)
	future = binary.BigEndian.AppendUint16(future, 3)
	future = append(future, "cli"...)
	future = append(future, 1, 9, 2, 'h', 'i')           // tagged fields: tag 9, 2 bytes
	future = append(future, 4, 'g', 'o', 3, '9', '9', 0) // some future body
	wire.EndFrame(future, start)
	if _, err := conn.Write(future); err != nil {
		t.Fatal(err)
	}
	frame, err := wire.ReadFrame(r, nil, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(0)
	if id := binary.BigEndian.Uint32(frame); id != 5 {
		t.Fatalf("correlation id %d", id)
	}
	if err := resp.ReadFrom(frame[4:]); err != nil || resp.ErrorCode != 35 || len(resp.ApiKeys) != 1 || resp.ApiKeys[0].MaxVersion != 3 {
		t.Fatalf("response %+v, %v", resp, err)
	}

	// The retry at the offered version is answered normally.
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(resp.ApiKeys[0].MaxVersion)
	req.ClientSoftwareName, req.ClientSoftwareVersion = "go", "1"
	if _, err := conn.Write(kmsg.NewRequestFormatter().AppendRequest(nil, req, 6)); err != nil {
		t.Fatal(err)
	}
	frame, err = wire.ReadFrame(r, nil, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	ok := kmsg.NewPtrApiVersionsResponse()
	ok.SetVersion(3)
	if err := ok.ReadFrom(frame[4:]); err != nil || ok.ErrorCode != 0 || len(ok.ApiKeys) != 2 {
		t.Fatalf("response %+v, %v", ok, err)
	}
}
