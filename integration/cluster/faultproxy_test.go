package cluster

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// faultProxy listens on a loopback port and forwards every connection to
// a target. Cut closes every connection and refuses new ones (they are
// accepted and closed at once); Blackhole stalls them instead: bytes in
// either direction are read and dropped, as in a network partition. Heal
// ends either: connections a blackhole stalled are closed (their streams
// lost bytes) and new ones are forwarded again.
type faultProxy struct {
	ln     net.Listener
	target string

	accepted  atomic.Int64 // connections accepted, in any mode
	refused   atomic.Int64 // closed at accept by a Cut
	forwarded atomic.Int64 // connected to the target

	mu struct {
		sync.Mutex
		mode   proxyMode
		closed bool
		conns  map[*proxyConn]struct{}
	}
	wg sync.WaitGroup // the accept loop and every connection's pumps
}

type proxyMode int

const (
	forwarding proxyMode = iota
	cut
	blackholed
)

// proxyConn is a client connection and, unless stalled from the start,
// its connection to the target.
type proxyConn struct {
	client, server net.Conn // server is nil for a connection stalled at accept
	stalled        atomic.Bool
}

func (pc *proxyConn) close() {
	pc.client.Close()
	if pc.server != nil {
		pc.server.Close()
	}
}

// startFaultProxy starts a proxy to target on 127.0.0.1; it is closed when
// the test ends.
func startFaultProxy(t testing.TB, target string) *faultProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{ln: ln, target: target}
	p.mu.conns = map[*proxyConn]struct{}{}
	p.wg.Add(1)
	go p.acceptLoop()
	t.Cleanup(p.Close)
	return p
}

// Addr is the proxy's address, host:port.
func (p *faultProxy) Addr() string { return p.ln.Addr().String() }

// Accepted is the number of connections accepted so far; Refused those of
// them a Cut closed at once; Forwarded those connected to the target.
func (p *faultProxy) Accepted() int64  { return p.accepted.Load() }
func (p *faultProxy) Refused() int64   { return p.refused.Load() }
func (p *faultProxy) Forwarded() int64 { return p.forwarded.Load() }

// Open is the number of client connections open now (forwarding or stalled).
func (p *faultProxy) Open() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.mu.conns)
}

// Cut closes every connection and refuses new ones until Heal.
func (p *faultProxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mu.mode = cut
	for pc := range p.mu.conns {
		pc.close()
	}
}

// Blackhole stalls every connection, open or new, until Heal: nothing
// reaches the other side and nothing is closed.
func (p *faultProxy) Blackhole() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mu.mode = blackholed
	for pc := range p.mu.conns {
		pc.stalled.Store(true)
	}
}

// Heal forwards new connections again and closes the stalled ones.
func (p *faultProxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mu.mode = forwarding
	for pc := range p.mu.conns {
		if pc.stalled.Load() {
			pc.close()
		}
	}
}

// Close stops the proxy, closes every connection and waits for its
// goroutines. It is idempotent.
func (p *faultProxy) Close() {
	p.ln.Close()
	p.mu.Lock()
	p.mu.closed = true
	for pc := range p.mu.conns {
		pc.close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *faultProxy) acceptLoop() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		p.accepted.Add(1)
		p.mu.Lock()
		mode := p.mu.mode
		p.mu.Unlock()
		switch mode {
		case cut:
			p.refused.Add(1)
			c.Close()
		case blackholed:
			pc := &proxyConn{client: c}
			pc.stalled.Store(true)
			p.track(pc, func() { drain(c) })
		default:
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				p.forward(c)
			}()
		}
	}
}

// forward connects c to the target and pumps both ways until either side
// closes.
func (p *faultProxy) forward(c net.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var d net.Dialer
	s, err := d.DialContext(ctx, "tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.forwarded.Add(1)
	pc := &proxyConn{client: c, server: s}
	p.track(pc, func() {
		var both sync.WaitGroup
		both.Add(2)
		go func() { defer both.Done(); pump(pc, s, c) }()
		go func() { defer both.Done(); pump(pc, c, s) }()
		both.Wait()
	})
}

// track registers pc and runs serve for it on a goroutine of the proxy;
// pc is closed and forgotten when serve returns. A connection that comes
// in while the mode changes follows the new mode.
func (p *faultProxy) track(pc *proxyConn, serve func()) {
	p.mu.Lock()
	switch {
	case p.mu.closed || p.mu.mode == cut:
		p.mu.Unlock()
		pc.close()
		return
	case p.mu.mode == blackholed:
		pc.stalled.Store(true)
	}
	p.mu.conns[pc] = struct{}{}
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		serve()
		pc.close()
		p.mu.Lock()
		delete(p.mu.conns, pc)
		p.mu.Unlock()
	}()
}

// pump copies src to dst, dropping what it reads while pc is stalled,
// until either fails; then it closes both.
func pump(pc *proxyConn, dst, src net.Conn) {
	defer pc.close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !pc.stalled.Load() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// drain reads and drops c's bytes until it fails or is closed.
func drain(c net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		if _, err := c.Read(buf); err != nil {
			return
		}
	}
}
