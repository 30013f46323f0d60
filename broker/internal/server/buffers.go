package server

import (
	"bufio"
	"encoding/binary"
	"sync"
)

// Buffers for fetches and responses.
//
// A fetch reads its partitions' records into one buffer that the response
// then aliases until the writer has sent it, so each fetch in flight holds
// a buffer of up to max_bytes (a megabyte per partition by default). These
// buffers are kept on a bounded free list rather than in a sync.Pool: a
// sync.Pool is emptied by every other garbage collection, and a consumer
// that allocates fast (franz-go decoding small records in the same process,
// or any busy broker) collects every few fetches, so a pooled buffer was
// mostly a fresh allocation, zeroed, faulted in and scavenged again.

const (
	// maxRecordBuffer is the largest record buffer kept for reuse; larger
	// ones (a fetch near a large max_bytes) are left to the collector.
	maxRecordBuffer = 64 << 20
	// maxRecordBuffersTotal bounds the bytes the free list keeps.
	maxRecordBuffersTotal = 64 << 20
)

// bufferList is a LIFO free list of byte buffers that keeps at most
// maxTotal bytes of capacity, none larger than maxBuf.
type bufferList struct {
	maxBuf, maxTotal int
	mu               struct {
		sync.Mutex
		free  []*[]byte
		total int
	}
}

// get returns an empty buffer, the most recently returned one if any.
func (l *bufferList) get() *[]byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(l.mu.free)
	if n == 0 {
		return new([]byte)
	}
	b := l.mu.free[n-1]
	l.mu.free[n-1] = nil
	l.mu.free = l.mu.free[:n-1]
	l.mu.total -= cap(*b)
	return b
}

// put returns b for reuse, or drops it when it is too large or the list
// is full.
func (l *bufferList) put(b *[]byte) {
	c := cap(*b)
	if c == 0 || c > l.maxBuf {
		return
	}
	*b = (*b)[:0]
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.total+c > l.maxTotal {
		return
	}
	l.mu.free = append(l.mu.free, b)
	l.mu.total += c
}

// recordBuffers holds the buffers fetches read records into, shared by all
// connections.
var recordBuffers = &bufferList{maxBuf: maxRecordBuffer, maxTotal: maxRecordBuffersTotal}

// maxPooledWriteBuffer is the largest response-encoding buffer kept.
const maxPooledWriteBuffer = 1 << 20

// writeBuffers holds the buffers responses are encoded into. They are
// small (a hand-framed fetch puts only its headers there), so a sync.Pool
// that the collector empties now and then costs little.
var writeBuffers = sync.Pool{New: func() any { return new([]byte) }}

func getWriteBuffer() *[]byte { return writeBuffers.Get().(*[]byte) }

func putWriteBuffer(b *[]byte) {
	if cap(*b) <= maxPooledWriteBuffer {
		*b = (*b)[:0]
		writeBuffers.Put(b)
	}
}

// Produce frames. A connection reads every request into a fresh buffer,
// since decoded requests alias it; wire.ReadFrame grows that buffer as the
// bytes arrive (so a claimed size costs nothing until it is sent), which
// for a megabyte produce is five allocations and four copies. Frames of
// more than largeFrame bytes read into a buffer from frameBuffers instead,
// and a produce's frame goes back there once its response is written.
const (
	largeFrame           = 64 << 10
	maxFrameBuffer       = 2 << 20
	maxFrameBuffersTotal = 32 << 20
)

var frameBuffers = &bufferList{maxBuf: maxFrameBuffer, maxTotal: maxFrameBuffersTotal}

// largeFrameBuffer returns a recycled buffer when the next frame in br is
// larger than largeFrame, else nil. It only peeks at the size.
func largeFrameBuffer(br *bufio.Reader) *[]byte {
	b, err := br.Peek(4)
	if err != nil || int32(binary.BigEndian.Uint32(b)) <= largeFrame {
		return nil
	}
	return frameBuffers.get()
}

// bufSlice returns the buffer b points to, or nil.
func bufSlice(b *[]byte) []byte {
	if b == nil {
		return nil
	}
	return *b
}
