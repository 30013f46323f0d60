package harness

import (
	"context"
	"errors"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
)

// TestProduceConsume runs the drivers against kfake: produce, list, and
// consume one and a half passes over the data set.
func TestProduceConsume(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	seeds := c.ListenAddrs()
	log := &ClientLog{}
	cl, err := NewClient(seeds, log, ProducerOpts(100)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx := t.Context()
	if err := CreateTopic(ctx, adm, "t", 3, nil); err != nil {
		t.Fatal(err)
	}
	if err := Produce(ctx, cl, "t", 1000, Payload(100), nil); err != nil {
		t.Fatal(err)
	}
	d, err := LoadDataset(ctx, adm, "t", 100)
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Records(); got != 1000 {
		t.Fatalf("data set has %d records, want 1000", got)
	}
	if err := Consume(ctx, seeds, d, 1500, log, nil); err != nil {
		t.Fatal(err)
	}
	bad := d
	bad.ValueSize = 99
	if err := Consume(ctx, seeds, bad, 10, log, nil); err == nil {
		t.Fatal("consume with the wrong value size: no error")
	}
	if n := log.Count(); n != 0 {
		t.Errorf("client warnings: %d, first %q", n, log.First())
	}
	if err := DeleteTopic(ctx, adm, "t"); err != nil {
		t.Fatal(err)
	}
}

func TestRaw(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	if err := RawProduce(ctx, dir, 3*RawChunk+5); err != nil {
		t.Fatal(err)
	}
	left, err := os.ReadDir(dir)
	if err != nil || len(left) != 0 {
		t.Fatalf("raw produce left %v (%v)", left, err)
	}
	path, err := WriteRawFile(dir, RawChunk+7)
	if err != nil {
		t.Fatal(err)
	}
	if err := RawConsume(ctx, path, 5*RawChunk+3); err != nil {
		t.Fatal(err)
	}
}

func TestWatchStalls(t *testing.T) {
	ctx, cancel := Watch(t.Context(), 300*time.Millisecond, func() int64 { return 0 }, func() string { return "stuck" }, nil)
	defer cancel()
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("Watch did not cancel a run without progress")
	}
	if err := context.Cause(ctx); !errors.Is(err, ErrStalled) {
		t.Fatalf("cause %v, want ErrStalled", err)
	}

	var p atomic.Int64
	sick := errors.New("broker exited")
	ctx, cancel = Watch(t.Context(), time.Hour, p.Load, func() string { return "" }, func() error { return sick })
	defer cancel()
	<-ctx.Done()
	if err := context.Cause(ctx); !errors.Is(err, sick) {
		t.Fatalf("cause %v, want the health error", err)
	}
}

func TestProcfs(t *testing.T) {
	m, err := ReadMemory(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if m.RSS <= 0 || m.HWM < m.RSS {
		t.Fatalf("memory %+v", m)
	}
	if _, err := ProcessCPU(os.Getpid()); err != nil {
		t.Fatal(err)
	}
	if SelfCPU() <= 0 {
		t.Fatal("SelfCPU is 0")
	}
}

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{
		"10GB": 10e9, "64MiB": 64 << 20, "1000": 1000, "1.5 kB": 1500, "2GiB": 2 << 30,
	} {
		if got, err := ParseBytes(in); err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "GB", "10XB", "-1"} {
		if _, err := ParseBytes(in); err == nil {
			t.Errorf("ParseBytes(%q): no error", in)
		}
	}
}
