package harness

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
)

// The raw limit: what this machine can do with the same bytes and none of
// the protocol. The producer side sends RawChunk-byte frames, the largest
// record batch franz-go builds (ProducerBatchMaxBytes default), over one
// loopback TCP connection, with at most ProduceBufferBytes unacknowledged
// like the producer's buffer. The receiver writes each frame to a file and
// fsyncs with group commit: one fsync covers every frame written before it
// started, and frames that arrive during an fsync wait for the next one,
// which is what the broker's "many concurrent appends share one fsync"
// promises. A frame is acknowledged once synced.
const RawChunk = 1 << 20

// RawProduce moves total bytes through the raw produce path, writing the
// file in dir, and returns when every byte is acknowledged as synced. The
// file is removed before it returns.
func RawProduce(ctx context.Context, dir string, total int64) (err error) {
	if total <= 0 {
		return nil
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer ln.Close()
	f, err := os.CreateTemp(dir, "raw-*.log")
	if err != nil {
		return err
	}
	defer func() {
		f.Close()
		err = errors.Join(err, os.Remove(f.Name()))
	}()

	var acked atomic.Int64
	ctx, cancel := Watch(ctx, StallTimeout(), acked.Load, func() string {
		return fmt.Sprintf("%d of %d raw bytes acknowledged", acked.Load(), total)
	}, nil)
	defer cancel()

	recvErr := make(chan error, 1)
	go func() { recvErr <- rawReceive(ln, f) }()

	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", ln.Addr().String())
	if err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()

	frames := (total + RawChunk - 1) / RawChunk
	tokens := make(chan struct{}, ProduceBufferBytes/RawChunk)
	ackErr := make(chan error, 1)
	go func() {
		var hdr [8]byte
		var n int64
		for n < frames {
			if _, err := io.ReadFull(conn, hdr[:]); err != nil {
				ackErr <- fmt.Errorf("raw: read ack after %d of %d frames: %w", n, frames, err)
				return
			}
			k := int64(binary.BigEndian.Uint64(hdr[:]))
			for range k {
				<-tokens
			}
			n += k
			acked.Store(min(total, n*RawChunk))
		}
		ackErr <- nil
	}()

	frame := make([]byte, 4+RawChunk)
	copy(frame[4:], Payload(RawChunk))
	for sent := int64(0); sent < total; {
		size := min(int64(RawChunk), total-sent)
		select {
		case tokens <- struct{}{}:
		case <-ctx.Done():
			return fmt.Errorf("raw produce: %w", cause(ctx, ctx.Err()))
		}
		binary.BigEndian.PutUint32(frame, uint32(size))
		if _, err := conn.Write(frame[:4+size]); err != nil {
			return fmt.Errorf("raw produce: write: %w", cause(ctx, err))
		}
		sent += size
	}
	if err := <-ackErr; err != nil {
		return cause(ctx, err)
	}
	conn.Close()
	if err := <-recvErr; err != nil {
		return err
	}
	return nil
}

// rawReceive accepts one connection and appends its frames to f, with
// group commit: the reader writes frames, a syncer fsyncs whatever has been
// written and acknowledges that many frames.
func rawReceive(ln net.Listener, f *os.File) error {
	conn, err := ln.Accept()
	if err != nil {
		return err
	}
	defer conn.Close()
	var gc struct {
		sync.Mutex
		cond    sync.Cond
		pending uint64
		done    bool
	}
	gc.cond.L = &gc.Mutex
	syncErr := make(chan error, 1)
	go func() {
		var ack [8]byte
		for {
			gc.Lock()
			for gc.pending == 0 && !gc.done {
				gc.cond.Wait()
			}
			n := gc.pending
			gc.pending = 0
			gc.Unlock()
			if n == 0 {
				syncErr <- nil
				return
			}
			if err := f.Sync(); err != nil {
				syncErr <- fmt.Errorf("raw: fsync: %w", err)
				conn.Close()
				return
			}
			binary.BigEndian.PutUint64(ack[:], n)
			if _, err := conn.Write(ack[:]); err != nil {
				syncErr <- fmt.Errorf("raw: write ack: %w", err)
				return
			}
		}
	}()
	var readErr error
	buf := make([]byte, RawChunk)
	var hdr [4]byte
	for {
		if _, err := io.ReadFull(conn, hdr[:]); err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				readErr = fmt.Errorf("raw: read frame header: %w", err)
			}
			break
		}
		n := binary.BigEndian.Uint32(hdr[:])
		if n > RawChunk {
			readErr = fmt.Errorf("raw: frame of %d bytes", n)
			break
		}
		if _, err := io.ReadFull(conn, buf[:n]); err != nil {
			readErr = fmt.Errorf("raw: read frame: %w", err)
			break
		}
		if _, err := f.Write(buf[:n]); err != nil {
			readErr = fmt.Errorf("raw: write file: %w", err)
			break
		}
		gc.Lock()
		gc.pending++
		gc.cond.Signal()
		gc.Unlock()
	}
	gc.Lock()
	gc.done = true
	gc.cond.Signal()
	gc.Unlock()
	return errors.Join(readErr, <-syncErr)
}

// WriteRawFile writes size bytes to a new file in dir for RawConsume and
// returns its name. It does not fsync: consumers read from the page cache,
// here as on a broker that has just been produced to.
func WriteRawFile(dir string, size int64) (string, error) {
	f, err := os.CreateTemp(dir, "raw-*.log")
	if err != nil {
		return "", err
	}
	chunk := Payload(RawChunk)
	for left := size; left > 0; left -= RawChunk {
		if _, err := f.Write(chunk[:min(left, RawChunk)]); err != nil {
			f.Close()
			return "", err
		}
	}
	return f.Name(), f.Close()
}

// RawConsume moves total bytes through the raw consume path: a sender
// copies the file at path (again from its start whenever it runs out) to
// one loopback TCP connection with sendfile, the way a zero-copy fetch
// would, and the receiver reads it into a 1 MiB buffer.
func RawConsume(ctx context.Context, path string, total int64) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.Size() == 0 {
		return fmt.Errorf("raw consume: %s is empty", path)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer ln.Close()

	var got atomic.Int64
	ctx, cancel := Watch(ctx, StallTimeout(), got.Load, func() string {
		return fmt.Sprintf("%d of %d raw bytes received", got.Load(), total)
	}, nil)
	defer cancel()

	sendErr := make(chan error, 1)
	go func() {
		sendErr <- func() error {
			conn, err := ln.Accept()
			if err != nil {
				return err
			}
			defer conn.Close()
			f, err := os.Open(path)
			if err != nil {
				return err
			}
			defer f.Close()
			for sent := int64(0); sent < total; {
				if _, err := f.Seek(0, io.SeekStart); err != nil {
					return err
				}
				n, err := io.CopyN(conn, f, min(fi.Size(), total-sent))
				sent += n
				if err != nil {
					return fmt.Errorf("raw consume: send: %w", err)
				}
			}
			return nil
		}()
	}()

	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", ln.Addr().String())
	if err != nil {
		return err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	buf := make([]byte, 1<<20)
	for got.Load() < total {
		n, err := conn.Read(buf)
		got.Add(int64(n))
		if err != nil {
			if got.Load() == total && errors.Is(err, io.EOF) {
				break
			}
			return fmt.Errorf("raw consume: read after %d of %d bytes: %w", got.Load(), total, cause(ctx, err))
		}
	}
	if g := got.Load(); g != total {
		return fmt.Errorf("raw consume: received %d bytes, want %d", g, total)
	}
	return <-sendErr
}
