package server

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker/internal/wire"
)

// preAuthMaxBytes caps a frame before the connection has sent one valid
// request, unless the frame's header already names an API key and version
// the broker serves (looksLikeRequest), so a stray client (an HTTP
// request, a port scanner) cannot make the broker allocate
// socket.request.max.bytes.
const preAuthMaxBytes = 512 << 10

// maxInFlight bounds the requests a connection may have read but not yet
// answered; the reader stops reading while that many wait.
const maxInFlight = 64

// conn is one client connection. A reader goroutine (serve) reads, decodes
// and dispatches requests in order; handlers answer at once or later (a
// produce waiting for its fsync, a fetch waiting for data); a writer
// goroutine writes the answers in request order.
type conn struct {
	s      *Server
	nc     net.Conn
	queue  chan *request
	done   chan struct{}
	once   sync.Once
	wg     sync.WaitGroup // handlers answering later
	remote string
	// iov is the writer's reusable list of buffers for a vectored write.
	iov net.Buffers
}

// request is one request in flight on a connection.
type request struct {
	hdr   wire.RequestHeader
	kreq  kmsg.Request
	start time.Time

	resp kmsg.Response
	// later, when set, computes the response off the reader goroutine.
	later func() kmsg.Response
	// release, when set, returns buffers the response aliases; the writer
	// calls it once the response is written or dropped.
	release func()
	// noReply is set for acks=0 produces: nothing is written back.
	noReply bool
	// closeAfter closes the connection once the responses before this one
	// are written, as Kafka does when an acks=0 produce fails (the
	// producer has no other way to learn of it).
	closeAfter bool
	ready      chan struct{}
	// frame, when set, is the request's frame buffer, recycled after the
	// response is written.
	frame *[]byte
}

func (s *Server) newConn(nc net.Conn) *conn {
	return &conn{s: s, nc: nc, queue: make(chan *request, maxInFlight), done: make(chan struct{}), remote: nc.RemoteAddr().String()}
}

func (c *conn) close() {
	c.once.Do(func() {
		close(c.done)
		c.nc.Close()
	})
}

// closing is closed when the connection is going away; handlers that wait
// select on it.
func (c *conn) closing() <-chan struct{} { return c.done }

func (c *conn) serve() {
	m := c.s.metrics
	m.connections.Inc()
	m.connectionsTotal.Inc()
	defer m.connections.Dec()
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		c.writeLoop()
	}()
	c.readLoop()
	c.wg.Wait()
	close(c.queue)
	<-writerDone
	c.close()
}

func (c *conn) readLoop() {
	// An error closes the connection at once; a request that asks to
	// close after it (a failed acks=0 produce) lets the writer send the
	// earlier responses first.
	graceful := false
	defer func() {
		if !graceful {
			c.close()
		}
	}()
	br := bufio.NewReaderSize(c.nc, 64<<10)
	limit := int32(preAuthMaxBytes)
	for {
		// A fresh buffer per request, as decoded requests alias it; a
		// large frame (a produce) reads into a recycled one instead.
		fb := largeFrameBuffer(br)
		frameLimit := limit
		if limit == preAuthMaxBytes && looksLikeRequest(br) {
			// A first request may be large (franz-go opens a connection
			// with a multi-MiB Produce): its header already names an API
			// and a version this broker serves, so it is a Kafka client.
			frameLimit = c.s.cfg.SocketRequestMaxBytes
		}
		frame, err := wire.ReadFrame(br, bufSlice(fb), frameLimit)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				c.s.logger.Debug("closing connection", "remote", c.remote, "err", err)
			}
			return
		}
		hdr, body, err := wire.ParseRequestHeader(frame)
		if err != nil && !errors.Is(err, wire.ErrUnsupportedVersion) {
			c.s.logger.Debug("closing connection: bad request header", "remote", c.remote, "err", err)
			return
		}
		h, ok := lookupHandler(hdr.APIKey)
		if !ok || hdr.APIVersion < h.min || hdr.APIVersion > h.max || err != nil {
			if hdr.APIKey == kmsg.ApiVersions.Int16() {
				// KIP-511: answer a too-new ApiVersions in v0 form with
				// UNSUPPORTED_VERSION and our versions, so the client retries.
				if !c.enqueue(&request{hdr: hdr, kreq: &kmsg.ApiVersionsRequest{}, resp: apiVersionsUnsupported(), start: time.Now()}) {
					return
				}
				continue
			}
			c.s.metrics.unsupported.Inc()
			c.s.logger.Debug("closing connection: unsupported request", "remote", c.remote, "key", hdr.APIKey, "version", hdr.APIVersion)
			return
		}
		req, err := wire.DecodeRequest(hdr, body)
		if err != nil {
			c.s.logger.Debug("closing connection: undecodable request", "remote", c.remote, "key", hdr.APIKey, "version", hdr.APIVersion, "err", err)
			return
		}
		limit = c.s.cfg.SocketRequestMaxBytes
		r := &request{hdr: hdr, kreq: req, start: time.Now()}
		if fb != nil && hdr.APIKey == kmsg.Produce.Int16() {
			// Done with once written: the records were appended to the
			// log in the handler, and nothing else keeps them.
			*fb = frame
			r.frame = fb
		}
		r.resp = h.fn(c, r)
		if !c.enqueue(r) {
			return
		}
		if r.closeAfter {
			graceful = true
			return
		}
	}
}

// enqueue hands r to the writer, starting its later step if it has one. It
// reports false when the connection is closing.
func (c *conn) enqueue(r *request) bool {
	r.ready = make(chan struct{})
	if r.later != nil {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			r.resp = r.later()
			close(r.ready)
		}()
	} else {
		close(r.ready)
	}
	select {
	case c.queue <- r:
		return true
	case <-c.done:
		return false
	}
}

func (c *conn) writeLoop() {
	for r := range c.queue {
		<-r.ready
		c.write(r)
		if r.release != nil {
			r.release()
		}
		if r.frame != nil {
			frameBuffers.put(r.frame)
		}
	}
}

// write sends r's response, if it has one.
func (c *conn) write(r *request) {
	key := kmsg.Key(r.hdr.APIKey)
	c.s.metrics.observe(key, time.Since(r.start))
	if r.noReply || r.resp == nil {
		return
	}
	select {
	case <-c.done:
		return // draining: the reader has gone
	default:
	}
	r.resp.SetVersion(r.kreq.GetVersion())
	buf := getWriteBuffer()
	defer putWriteBuffer(buf)
	if fr, ok := r.resp.(*kmsg.FetchResponse); ok && wire.CanHandFrameFetch(fr) {
		// The records go out from the buffer they were read into, in one
		// writev with the hand-framed rest (see wire.AppendFetchResponse).
		var bufs net.Buffers
		*buf, bufs = wire.AppendFetchResponse((*buf)[:0], r.hdr.CorrelationID, fr, c.iov[:0])
		c.iov = bufs[:0]
		n, err := bufs.WriteTo(c.nc)
		clear(c.iov[:cap(c.iov)]) // drop references to the records
		c.s.metrics.bytesOut.Add(float64(n))
		if err != nil {
			c.close()
		}
		return
	}
	*buf = wire.AppendResponse((*buf)[:0], r.hdr.CorrelationID, r.kreq, r.resp)
	c.s.metrics.bytesOut.Add(float64(len(*buf)))
	if _, err := c.nc.Write(*buf); err != nil {
		c.close()
	}
}

// apiVersionsUnsupported is the v0 ApiVersions answer to a version we do not
// know.
func apiVersionsUnsupported() kmsg.Response {
	resp := apiVersionsResponse()
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	return resp
}

// looksLikeRequest peeks at the next frame's request header and reports
// whether it names an API key and version this broker serves.
// It peeks only for a frame over the cap, so short and malformed frames
// go straight to wire.ReadFrame.
func looksLikeRequest(br *bufio.Reader) bool {
	b, err := br.Peek(4)
	if err != nil || int32(binary.BigEndian.Uint32(b)) <= preAuthMaxBytes {
		return false
	}
	if b, err = br.Peek(8); err != nil { // size, API key, API version
		return false
	}
	key, version := int16(binary.BigEndian.Uint16(b[4:])), int16(binary.BigEndian.Uint16(b[6:]))
	h, ok := lookupHandler(key)
	return ok && version >= h.min && version <= h.max
}
