package crash

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// segmentBatch is one batch's place in a segment file.
type segmentBatch struct {
	pos, size  int64
	baseOffset int64
}

// walkSegment lists the batches of a segment file by their length fields.
func walkSegment(t *testing.T, data []byte) []segmentBatch {
	var out []segmentBatch
	for pos := int64(0); pos+12 <= int64(len(data)); {
		size := 12 + int64(binary.BigEndian.Uint32(data[pos+8:]))
		if pos+size > int64(len(data)) {
			t.Fatalf("segment ends inside a batch at %d", pos)
		}
		out = append(out, segmentBatch{pos: pos, size: size, baseOffset: int64(binary.BigEndian.Uint64(data[pos:]))})
		pos += size
	}
	return out
}

func TestGarbledTailKeepsWholeBatchesBefore(t *testing.T) {
	b := startBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const name = "garble"
	adm := newAdmin(t, b.addr)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, name); err != nil {
		t.Fatal(err)
	}
	adm.Close()

	cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr), kgo.DefaultProduceTopic(name))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for batch := range 20 {
		var rs []*kgo.Record
		for i := range 10 {
			v := fmt.Sprintf("b%02d-r%d", batch, i)
			want = append(want, v)
			rs = append(rs, &kgo.Record{Value: []byte(v)})
		}
		// One ProduceSync of records for one partition is one batch.
		if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cl.Close()
	b.kill()

	segs, err := filepath.Glob(filepath.Join(b.dir, name+"-0", "*.log"))
	if err != nil || len(segs) == 0 {
		t.Fatalf("no segment files: %v", err)
	}
	slices.Sort(segs)
	last := segs[len(segs)-1]
	data, err := os.ReadFile(last)
	if err != nil {
		t.Fatal(err)
	}
	batches := walkSegment(t, data)
	if len(batches) < 2 {
		t.Fatalf("want several batches in the last segment, got %d", len(batches))
	}
	victim := batches[len(batches)-1]
	// Flip bytes in the middle of the last batch's records.
	f, err := os.OpenFile(last, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte{0xde, 0xad, 0xbe, 0xef}, victim.pos+victim.size/2+30); err != nil {
		t.Fatal(err)
	}
	f.Close()

	b.restart()
	got := consumeAllTopic(t, ctx, b.addr, name)[0]
	if !slices.Equal(got, want[:victim.baseOffset]) {
		t.Fatalf("after recovery read %d records, want the %d before the garbled batch (first diff at %d)",
			len(got), victim.baseOffset, firstDiff(got, want))
	}
	// Appends continue at the cut.
	cl2, err := kgo.NewClient(kgo.SeedBrokers(b.addr), kgo.DefaultProduceTopic(name))
	if err != nil {
		t.Fatal(err)
	}
	defer cl2.Close()
	r, err := cl2.ProduceSync(ctx, &kgo.Record{Value: []byte("after")}).First()
	if err != nil {
		t.Fatal(err)
	}
	if r.Offset != victim.baseOffset {
		t.Fatalf("first append after recovery at offset %d, want %d", r.Offset, victim.baseOffset)
	}
}

func firstDiff(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
