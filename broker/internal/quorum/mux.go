package quorum

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// The controller port carries two protocols; the first byte a dialer
// writes says which. Raft's own RPCs (raft.NetworkTransport's msgpack
// stream) and the forward RPC (forward.go) share the one address every
// voter already knows, so controller.quorum.voters stays Kafka's shape and
// no second port is configured.
const (
	kindRaft    byte = 'R'
	kindForward byte = 'F'
	kindCall    byte = 'C'
)

// routeTimeout bounds how long an accepted connection may take to send its
// first byte.
const routeTimeout = 10 * time.Second

// mux owns the controller listener and every connection through it, both
// accepted and dialed, so Close can close them all (raft's
// NetworkTransport leaves its inbound connections open when it closes).
type mux struct {
	ln      net.Listener
	addr    net.Addr // this node's voter address, as the others dial it
	logger  *slog.Logger
	raftCh  chan net.Conn // accepted raft connections, for streamLayer.Accept
	closing chan struct{}
	wg      sync.WaitGroup

	mu struct {
		sync.Mutex
		closed bool
		conns  map[net.Conn]struct{}
	}
}

func newMux(ln net.Listener, addr string, logger *slog.Logger) *mux {
	m := &mux{ln: ln, addr: voterAddr(addr), logger: logger, raftCh: make(chan net.Conn), closing: make(chan struct{})}
	m.mu.conns = map[net.Conn]struct{}{}
	return m
}

// serve accepts connections until close, routing raft ones to raftCh and
// the others to the handler of their kind (forward, call), each on its
// own goroutine.
func (m *mux) serve(handlers map[byte]func(net.Conn)) {
	m.wg.Go(func() {
		for {
			c, err := m.ln.Accept()
			if err != nil {
				select {
				case <-m.closing:
					return
				default:
				}
				if errors.Is(err, net.ErrClosed) {
					return
				}
				m.logger.Warn("quorum: accept", "err", err)
				continue
			}
			c, ok := m.track(c)
			if !ok {
				return
			}
			m.wg.Go(func() { m.route(c, handlers) })
		}
	})
}

func (m *mux) route(c net.Conn, handlers map[byte]func(net.Conn)) {
	var kind [1]byte
	c.SetReadDeadline(time.Now().Add(routeTimeout))
	if _, err := c.Read(kind[:]); err != nil {
		c.Close()
		return
	}
	c.SetReadDeadline(time.Time{})
	if h, ok := handlers[kind[0]]; ok {
		h(c)
		return
	}
	switch kind[0] {
	case kindRaft:
		select {
		case m.raftCh <- c:
		case <-m.closing:
			c.Close()
		}
	default:
		m.logger.Warn("quorum: unknown protocol byte on the controller port", "byte", kind[0], "remote", c.RemoteAddr())
		c.Close()
	}
}

// dial connects to a voter's address and announces kind.
func (m *mux) dial(ctx context.Context, addr string, kind byte) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	tc, ok := m.track(c)
	if !ok {
		return nil, ErrClosed
	}
	if _, err := tc.Write([]byte{kind}); err != nil {
		tc.Close()
		return nil, err
	}
	return tc, nil
}

// track registers c so close closes it; false (and c closed) after close.
func (m *mux) track(c net.Conn) (net.Conn, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mu.closed {
		c.Close()
		return nil, false
	}
	tc := &trackedConn{Conn: c, m: m}
	m.mu.conns[tc] = struct{}{}
	return tc, true
}

// close stops accepting, closes every connection and waits for the
// accept and routing goroutines. Idempotent.
func (m *mux) close() {
	m.mu.Lock()
	if m.mu.closed {
		m.mu.Unlock()
		m.wg.Wait()
		return
	}
	m.mu.closed = true
	close(m.closing)
	conns := make([]net.Conn, 0, len(m.mu.conns))
	for c := range m.mu.conns {
		conns = append(conns, c)
	}
	m.mu.Unlock()
	m.ln.Close()
	for _, c := range conns {
		c.Close()
	}
	m.wg.Wait()
}

type trackedConn struct {
	net.Conn
	m    *mux
	once sync.Once
}

func (c *trackedConn) Close() error {
	c.once.Do(func() {
		c.m.mu.Lock()
		delete(c.m.mu.conns, c)
		c.m.mu.Unlock()
	})
	return c.Conn.Close()
}

// streamLayer is the raft side of the mux (raft.StreamLayer).
type streamLayer struct{ m *mux }

var _ raft.StreamLayer = streamLayer{}

func (s streamLayer) Accept() (net.Conn, error) {
	select {
	case c := <-s.m.raftCh:
		return c, nil
	case <-s.m.closing:
		return nil, net.ErrClosed
	}
}

// Close is called by raft's transport when raft shuts down.
func (s streamLayer) Close() error {
	s.m.close()
	return nil
}

// Addr is the voter address (not the bound one, which may be a wildcard):
// raft's transport reports it as this node's address.
func (s streamLayer) Addr() net.Addr { return s.m.addr }

func (s streamLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return s.m.dial(ctx, string(address), kindRaft)
}

type voterAddr string

func (a voterAddr) Network() string { return "tcp" }
func (a voterAddr) String() string  { return string(a) }
