package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Deadlines of the process harness.
const (
	readyTimeout = 60 * time.Second // a start or restart until /readyz and the Kafka port answer
	stopTimeout  = 30 * time.Second // SIGTERM until the process exits
	startTries   = 3                // fresh port sets tried when a port was taken at start
	logTailLines = 100              // lines of each node's log printed when a test fails
)

// errPortTaken: a node exited at start because one of its ports was in use.
var errPortTaken = errors.New("port already in use")

// harnessKeys are the settings startCluster sets itself for each node.
var harnessKeys = []string{"node.id", "log.dirs", "listeners", "advertised.listeners", "runnel.http.listener", "controller.quorum.voters"}

// Node is one broker of a Cluster. Its addresses and directory stay the
// same across restarts.
type Node struct {
	ID             int32
	Addr           string      // the Kafka listener it binds, 127.0.0.1:port
	Advertised     string      // what clients dial: Proxy's address, or Addr
	Proxy          *faultProxy // in front of Addr, with withKafkaProxies; else nil
	ControllerAddr string      // its controller.quorum.voters address (n > 1 only)
	// QuorumProxies, with withQuorumProxies: per peer id, the proxy this
	// node's Raft dials that peer through (in front of the peer's
	// ControllerAddr); this node's controller.quorum.voters names them.
	QuorumProxies map[int32]*faultProxy
	HTTPAddr      string // /metrics, /healthz, /readyz
	Dir           string // log.dirs
	LogPath       string // stdout and stderr of every run, appended

	proc *process // nil while not running; guarded by Cluster.mu
	runs int      // processes started so far
}

// process is one run of a node.
type process struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once it exited and was reaped
	err  error         // Wait's result, read after done
}

// Cluster is n `runnel broker` processes on loopback. Its methods are for
// the test goroutine; Seeds and Running may be called from any goroutine.
type Cluster struct {
	t             testing.TB
	settings      map[string]string
	voters        map[int32]string // controller.quorum.voters per node; none for one node
	proxied       bool             // withKafkaProxies
	quorumProxied bool             // withQuorumProxies
	direct        bool             // withDirectClients
	nodes         []*Node
	mu            sync.Mutex // guards every Node's proc
}

// clusterOption changes how startCluster runs its nodes.
type clusterOption func(*Cluster)

// withKafkaProxies puts a faultProxy in front of every node's Kafka
// listener and advertises the proxy's address, so clients (and, with
// replication, followers fetching from a leader) reach each node through
// its Node.Proxy. The controller (Raft) port is not proxied.
func withKafkaProxies() clusterOption { return func(c *Cluster) { c.proxied = true } }

// startCluster starts n nodes with node.id 1..n and the given extra
// settings (Kafka names, e.g. "min.insync.replicas": "2"), and returns once
// every node answers /readyz and accepts Kafka connections. For n > 1 each
// node is a voter of controller.quorum.voters. Nodes are killed when the
// test ends; if it failed, the tail of each node's log is printed.
func startCluster(t testing.TB, n int, settings map[string]string, opts ...clusterOption) *Cluster {
	t.Helper()
	for _, k := range harnessKeys {
		if _, ok := settings[k]; ok {
			t.Fatalf("startCluster: %s is set by the harness", k)
		}
	}
	root := t.TempDir()
	c := &Cluster{t: t, settings: settings}
	for _, o := range opts {
		o(c)
	}
	for i := range n {
		id := int32(i + 1)
		c.nodes = append(c.nodes, &Node{
			ID:      id,
			Dir:     filepath.Join(root, fmt.Sprintf("node-%d", id)),
			LogPath: filepath.Join(root, fmt.Sprintf("node-%d.log", id)),
		})
	}
	t.Cleanup(func() {
		c.killAll()
		if t.Failed() {
			c.dumpLogs()
		}
	})
	for try := 1; ; try++ {
		err := c.assignPorts()
		if err == nil {
			for _, nd := range c.nodes {
				if err = c.spawn(nd); err != nil {
					break
				}
			}
		}
		for _, nd := range c.nodes {
			if err == nil {
				err = c.waitReady(nd)
			}
		}
		if err == nil {
			return c
		}
		c.killAll()
		if !errors.Is(err, errPortTaken) || try == startTries {
			t.Fatalf("startCluster: %v", err)
		}
		t.Logf("startCluster: %v; trying again with fresh ports", err)
	}
}

// assignPorts gives every node three free loopback ports. All listeners
// stay open until every port is picked, so no two are the same; another
// process may still take one before the node binds it, which the node's
// start reports as errPortTaken.
func (c *Cluster) assignPorts() error {
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	pick := func() (string, error) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", err
		}
		lns = append(lns, ln)
		return ln.Addr().String(), nil
	}
	for _, nd := range c.nodes {
		for _, addr := range []*string{&nd.Addr, &nd.ControllerAddr, &nd.HTTPAddr} {
			a, err := pick()
			if err != nil {
				return err
			}
			*addr = a
		}
		nd.Advertised = nd.Addr
		if c.proxied {
			if nd.Proxy != nil {
				nd.Proxy.Close() // of a try whose ports were taken
			}
			nd.Proxy = startFaultProxy(c.t, nd.Addr)
			nd.Advertised = nd.Proxy.Addr()
		}
	}
	c.voters = map[int32]string{}
	if len(c.nodes) > 1 {
		for _, nd := range c.nodes {
			c.voters[nd.ID] = c.votersOf(nd)
		}
	}
	return nil
}

// votersOf is nd's controller.quorum.voters: every node's controller
// address, or with withQuorumProxies, for every peer a new proxy from nd
// to it (closing those of a previous try).
func (c *Cluster) votersOf(nd *Node) string {
	for _, px := range nd.QuorumProxies {
		px.Close()
	}
	nd.QuorumProxies = nil
	var voters []string
	for _, peer := range c.nodes {
		addr := peer.ControllerAddr
		if c.quorumProxied && peer != nd {
			if nd.QuorumProxies == nil {
				nd.QuorumProxies = map[int32]*faultProxy{}
			}
			px := startFaultProxy(c.t, peer.ControllerAddr)
			nd.QuorumProxies[peer.ID] = px
			addr = px.Addr()
		}
		voters = append(voters, fmt.Sprintf("%d@%s", peer.ID, addr))
	}
	return strings.Join(voters, ",")
}

// args is the command line of a node.
func (c *Cluster) args(nd *Node) []string {
	args := []string{"broker",
		"--node.id=" + strconv.Itoa(int(nd.ID)),
		"--log.dirs=" + nd.Dir,
		"--listeners=PLAINTEXT://" + nd.Addr,
		"--runnel.http.listener=" + nd.HTTPAddr,
	}
	if c.proxied {
		args = append(args, "--advertised.listeners=PLAINTEXT://"+nd.Advertised)
	}
	if v := c.voters[nd.ID]; v != "" {
		args = append(args, "--controller.quorum.voters="+v)
	}
	keys := make([]string, 0, len(c.settings))
	for k := range c.settings {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		args = append(args, "--"+k+"="+c.settings[k])
	}
	return args
}

// spawn starts a process for nd, logging to nd.LogPath.
func (c *Cluster) spawn(nd *Node) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if nd.proc != nil {
		return fmt.Errorf("node %d is already running", nd.ID)
	}
	logf, err := os.OpenFile(nd.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close() // the child has its own descriptor
	nd.runs++
	args := c.args(nd)
	fmt.Fprintf(logf, "=== run %d of node %d at %s: runnel %s\n", nd.runs, nd.ID, time.Now().Format(time.RFC3339Nano), strings.Join(args, " "))
	cmd := exec.Command(runnelBin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// A test that dies (a timeout's panic runs no cleanup) must not leave
	// a broker behind.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start node %d: %w", nd.ID, err)
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	nd.proc = p
	return nil
}

// waitReady waits until nd's /readyz says ready and its Kafka port accepts
// a connection, or its process exits, or readyTimeout passes.
func (c *Cluster) waitReady(nd *Node) error {
	p := c.proc(nd)
	if p == nil {
		return fmt.Errorf("node %d is not running", nd.ID)
	}
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	hc := &http.Client{Timeout: time.Second}
	for {
		if ready(ctx, hc, nd) {
			return nil
		}
		select {
		case <-p.done:
			c.clear(nd, p)
			tail := lastLines(nd.LogPath, 20)
			if strings.Contains(tail, "address already in use") {
				return fmt.Errorf("node %d: %w:\n%s", nd.ID, errPortTaken, tail)
			}
			return fmt.Errorf("node %d exited before it was ready (%v):\n%s", nd.ID, p.err, tail)
		case <-ctx.Done():
			return fmt.Errorf("node %d not ready within %v:\n%s", nd.ID, readyTimeout, lastLines(nd.LogPath, 20))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// ready: /readyz answers 200 and the Kafka listener accepts a connection.
func ready(ctx context.Context, hc *http.Client, nd *Node) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+nd.HTTPAddr+"/readyz", nil)
	if err != nil {
		return false
	}
	resp, err := hc.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false
	}
	var d net.Dialer
	dctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	conn, err := d.DialContext(dctx, "tcp", nd.Addr)
	if err != nil {
		return false
	}
	conn.Close()
	return true
}

func (c *Cluster) proc(nd *Node) *process {
	c.mu.Lock()
	defer c.mu.Unlock()
	return nd.proc
}

// clear forgets p, nd's process, once it exited.
func (c *Cluster) clear(nd *Node, p *process) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if nd.proc == p {
		nd.proc = nil
	}
}

// Node returns node id (1..n).
func (c *Cluster) Node(id int32) *Node {
	c.t.Helper()
	if id < 1 || int(id) > len(c.nodes) {
		c.t.Fatalf("no node %d in a cluster of %d", id, len(c.nodes))
	}
	return c.nodes[id-1]
}

// running returns node id's process, failing the test if it is not running.
func (c *Cluster) running(id int32) *process {
	c.t.Helper()
	p := c.proc(c.Node(id))
	if p == nil {
		c.t.Fatalf("node %d is not running", id)
	}
	return p
}

// Kill sends node id SIGKILL and waits until the process is gone.
func (c *Cluster) Kill(id int32) {
	c.t.Helper()
	p := c.running(id)
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
	c.clear(c.Node(id), p)
}

// Stop sends node id SIGTERM and waits for a clean exit (status 0).
func (c *Cluster) Stop(id int32) {
	c.t.Helper()
	p := c.running(id)
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(stopTimeout):
		p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.done
		c.clear(c.Node(id), p)
		c.t.Fatalf("node %d did not stop within %v of SIGTERM; killed it", id, stopTimeout)
	}
	c.clear(c.Node(id), p)
	if p.err != nil {
		c.t.Errorf("node %d did not exit cleanly after SIGTERM: %v", id, p.err)
	}
}

// Restart starts node id again, stopped or killed, on the same ports and
// directory, and waits until it is ready. A port another process holds
// meanwhile is retried until readyTimeout.
func (c *Cluster) Restart(id int32) {
	c.t.Helper()
	if err := c.restart(c.Node(id)); err != nil {
		c.t.Fatalf("restart: %v", err)
	}
}

// restart is Restart for any goroutine.
func (c *Cluster) restart(nd *Node) error {
	deadline := time.Now().Add(readyTimeout)
	for {
		err := c.spawn(nd)
		if err == nil {
			err = c.waitReady(nd)
		}
		if err == nil || !errors.Is(err, errPortTaken) || time.Now().After(deadline) {
			return err
		}
	}
}

// Running reports whether node id's process is running.
func (c *Cluster) Running(id int32) bool { return c.proc(c.Node(id)) != nil }

// Addrs returns the advertised Kafka address of every node, running or
// not, in id order.
func (c *Cluster) Addrs() []string {
	var addrs []string
	for _, nd := range c.nodes {
		addrs = append(addrs, nd.Advertised)
	}
	return addrs
}

// Seeds returns the advertised Kafka addresses of the running nodes: seed
// brokers for a new client.
func (c *Cluster) Seeds() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var addrs []string
	for _, nd := range c.nodes {
		if nd.proc != nil {
			addrs = append(addrs, nd.Advertised)
		}
	}
	return addrs
}

// killAll kills every running node and waits for them.
func (c *Cluster) killAll() {
	for _, nd := range c.nodes {
		if p := c.proc(nd); p != nil {
			p.cmd.Process.Signal(syscall.SIGKILL)
			<-p.done
			c.clear(nd, p)
		}
	}
}

// dumpLogs prints the tail of every node's log.
func (c *Cluster) dumpLogs() {
	for _, nd := range c.nodes {
		c.t.Logf("--- last %d lines of node %d's log (%s):\n%s", logTailLines, nd.ID, nd.LogPath, lastLines(nd.LogPath, logTailLines))
	}
}

// lastLines returns the last n lines of the file at path.
func lastLines(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(%v)", err)
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
