package server

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"runtime"
	"testing"
)

// The free list keeps buffers across garbage collections, hands back the
// most recent first, and never keeps more than its bounds allow.
func TestBufferListBounds(t *testing.T) {
	l := &bufferList{maxBuf: 100, maxTotal: 250}
	mk := func(n int) *[]byte { b := make([]byte, 7, n); return &b }
	a, b, big := mk(100), mk(100), mk(101)
	l.put(a)
	l.put(big) // larger than maxBuf: dropped
	l.put(b)
	l.put(mk(100)) // over maxTotal: dropped
	runtime.GC()
	runtime.GC()
	if got := l.get(); got != b || len(*got) != 0 {
		t.Fatalf("first get %p (len %d), want the last buffer put, emptied", got, len(*got))
	}
	if got := l.get(); got != a {
		t.Fatal("second get is not the first buffer put")
	}
	if got := l.get(); cap(*got) != 0 {
		t.Fatalf("empty list returned a buffer of %d bytes", cap(*got))
	}
	l.put(new([]byte)) // empty buffers are not kept
	if l.mu.total != 0 || len(l.mu.free) != 0 {
		t.Fatalf("list keeps %d buffers, %d bytes", len(l.mu.free), l.mu.total)
	}
}

// Only a frame larger than largeFrame takes a recycled buffer, and
// peeking at its size consumes nothing.
func TestLargeFrameBuffer(t *testing.T) {
	for _, c := range []struct {
		size int32
		want bool
	}{{10, false}, {largeFrame, false}, {largeFrame + 1, true}, {-1, false}} {
		in := binary.BigEndian.AppendUint32(nil, uint32(c.size))
		br := bufio.NewReader(bytes.NewReader(in))
		if got := largeFrameBuffer(br) != nil; got != c.want {
			t.Errorf("size %d: recycled buffer %v, want %v", c.size, got, c.want)
		}
		if br.Buffered() != 4 {
			t.Errorf("size %d: peek consumed bytes", c.size)
		}
	}
	if largeFrameBuffer(bufio.NewReader(bytes.NewReader([]byte{1}))) != nil {
		t.Error("short input gave a buffer")
	}
}
