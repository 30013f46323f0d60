package wire

import (
	"encoding/binary"
	"fmt"
	"io"
	"slices"
)

// growStep is how much ReadFrame allocates at first for a frame larger than
// the caller's buffer, growing from there as bytes actually arrive; a client
// that claims a 100 MiB frame and sends nothing costs this much, not 100 MiB.
const growStep = 64 << 10

// ReadFrame reads one size-prefixed frame from r: a big-endian int32 size,
// then that many bytes, which it returns without the size.
//
// The frame is read into buf when it fits in cap(buf), so a connection that
// passes the previous frame back as buf allocates only when a frame is
// larger than any before it. A larger frame gets a new buffer that grows as
// its bytes arrive.
//
// A size below zero gives ErrNegativeSize and one above maxSize ErrFrameTooLarge;
// the body is then neither allocated nor read, and the connection must be
// closed. io.EOF means r ended cleanly before a frame; io.ErrUnexpectedEOF
// that it ended inside one. Other errors are r's.
//
// The broker passes a small maxSize (512 KiB) until a connection has sent one
// valid request, then socket.request.max.bytes (100 MiB by default).
func ReadFrame(r io.Reader, buf []byte, maxSize int32) ([]byte, error) {
	// The size is read into buf itself, so that nothing escapes to the
	// heap for it.
	if cap(buf) < 4 {
		buf = make([]byte, 0, 4)
	}
	if _, err := io.ReadFull(r, buf[:4]); err != nil {
		return nil, err
	}
	size := int32(binary.BigEndian.Uint32(buf[:4]))
	switch {
	case size < 0:
		return nil, fmt.Errorf("%w: %d", ErrNegativeSize, size)
	case size > maxSize:
		return nil, fmt.Errorf("%w: %d bytes, at most %d", ErrFrameTooLarge, size, maxSize)
	}
	n := int(size)
	if n <= cap(buf) {
		body := buf[:n]
		if _, err := io.ReadFull(r, body); err != nil {
			return nil, unexpected(err)
		}
		return body, nil
	}
	body := buf[:0]
	for len(body) < n {
		if len(body) == cap(body) {
			body = slices.Grow(body, min(n-len(body), max(cap(body), growStep)))
		}
		got, err := io.ReadFull(r, body[len(body):min(cap(body), n)])
		body = body[:len(body)+got]
		if err != nil {
			return nil, unexpected(err)
		}
	}
	return body, nil
}

// unexpected turns io.EOF inside a frame into io.ErrUnexpectedEOF.
func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// BeginFrame appends a placeholder for a frame's size to dst and returns
// dst and where the frame starts; append the frame, then call EndFrame.
func BeginFrame(dst []byte) ([]byte, int) {
	return append(dst, 0, 0, 0, 0), len(dst)
}

// EndFrame writes the size of the frame begun at start by BeginFrame: the
// bytes of dst after the placeholder.
func EndFrame(dst []byte, start int) {
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
}
