package cluster

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"testing"
	"time"
)

// startEcho starts a TCP echo server on loopback, closed when the test ends.
func startEcho(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				io.Copy(c, c)
				c.Close()
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// roundTrip writes msg and reads as many bytes back, within d.
func roundTrip(c net.Conn, msg string, d time.Duration) (string, error) {
	c.SetDeadline(time.Now().Add(d))
	defer c.SetDeadline(time.Time{})
	if _, err := c.Write([]byte(msg)); err != nil {
		return "", err
	}
	buf := make([]byte, len(msg))
	_, err := io.ReadFull(c, buf)
	return string(buf), err
}

func mustEcho(t *testing.T, c net.Conn, msg string) {
	t.Helper()
	if got, err := roundTrip(c, msg, 5*time.Second); err != nil || got != msg {
		t.Fatalf("echo of %q: got %q, %v", msg, got, err)
	}
}

// mustBeClosed: reading c ends (EOF or reset) rather than timing out.
func mustBeClosed(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := c.Read(make([]byte, 1))
	if err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read on a connection the proxy should have closed: %v", err)
	}
}

// mustStall: msg gets no answer within a short wait, and the connection
// stays open. (A stall can only be seen as nothing arriving for a while.)
func mustStall(t *testing.T, c net.Conn, msg string) {
	t.Helper()
	if got, err := roundTrip(c, msg, 200*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("blackholed connection answered %q, %v; want a timeout", got, err)
	}
}

// waitFor waits up to 5 s for cond.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := waitUntil(ctx, what, cond); err != nil {
		t.Fatal(err)
	}
}

func TestFaultProxy(t *testing.T) {
	p := startFaultProxy(t, startEcho(t))

	c1 := dial(t, p.Addr())
	mustEcho(t, c1, "hello")
	c2 := dial(t, p.Addr())
	mustEcho(t, c2, "world")
	if p.Accepted() != 2 || p.Forwarded() != 2 || p.Open() != 2 {
		t.Fatalf("accepted %d, forwarded %d, open %d; want 2, 2, 2", p.Accepted(), p.Forwarded(), p.Open())
	}

	// Cut: open connections close, new ones are closed at once.
	p.Cut()
	mustBeClosed(t, c1)
	mustBeClosed(t, c2)
	c3 := dial(t, p.Addr())
	mustBeClosed(t, c3)
	waitFor(t, "the cut connections to be forgotten", func() bool { return p.Open() == 0 })
	if p.Refused() != 1 {
		t.Fatalf("refused %d, want 1", p.Refused())
	}

	// Heal: forwarding again.
	p.Heal()
	c4 := dial(t, p.Addr())
	mustEcho(t, c4, "again")

	// Blackhole: the open connection and a new one stall, neither closes.
	p.Blackhole()
	mustStall(t, c4, "lost")
	c5 := dial(t, p.Addr())
	mustStall(t, c5, "lost too")
	waitFor(t, "two stalled connections", func() bool { return p.Open() == 2 })

	// Heal closes the stalled connections; new ones forward.
	p.Heal()
	mustBeClosed(t, c4)
	mustBeClosed(t, c5)
	c6 := dial(t, p.Addr())
	mustEcho(t, c6, "healed")
	if p.Accepted() != 6 || p.Forwarded() != 4 {
		t.Fatalf("accepted %d, forwarded %d; want 6, 4", p.Accepted(), p.Forwarded())
	}

	p.Close()
	mustBeClosed(t, c6)
	if p.Open() != 0 {
		t.Fatalf("open %d after Close", p.Open())
	}
	p.Close() // idempotent
}
