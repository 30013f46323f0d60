package brokertest

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

// Deadlines and sizes of the process harness.
const (
	readyTimeout = 60 * time.Second // a start or restart until /readyz and the Kafka port answer
	stopTimeout  = 30 * time.Second // SIGTERM until the process exits
	startTries   = 3                // fresh port sets tried when a port was taken at start
	logTailLines = 100              // lines of each node's log printed when a test fails
)

// errPortTaken: a node exited at start because one of its ports was in use.
var errPortTaken = errors.New("port already in use")

// processKeys are the settings StartProcesses sets itself for each node.
var processKeys = []string{"node.id", "log.dirs", "listeners", "advertised.listeners", "runnel.http.listener", "controller.quorum.voters"}

var runnel struct {
	once sync.Once
	dir  string // the temporary directory holding bin
	bin  string
	err  error
}

// BuildRunnel builds cmd/runnel (go build) the first time a test of this
// test binary asks, and returns the binary's path; later calls return the
// same binary, or the same build error. The binary lives in a temporary
// directory that Main removes: a package whose tests call BuildRunnel
// should have
//
//	func TestMain(m *testing.M) { brokertest.Main(m) }
func BuildRunnel(t testing.TB) string {
	t.Helper()
	runnel.once.Do(func() {
		runnel.dir, runnel.err = os.MkdirTemp("", "brokertest-runnel")
		if runnel.err != nil {
			return
		}
		bin := filepath.Join(runnel.dir, "runnel")
		out, err := exec.Command("go", "build", "-o", bin, "github.com/runnel-io/runnel/cmd/runnel").CombinedOutput()
		if err != nil {
			runnel.err = fmt.Errorf("go build cmd/runnel: %w\n%s", err, out)
			return
		}
		runnel.bin = bin
	})
	if runnel.err != nil {
		t.Fatalf("brokertest: %v", runnel.err)
	}
	return runnel.bin
}

// Main runs the tests of m, removes the binary BuildRunnel built (if any)
// and exits with the tests' status. Call it from TestMain.
func Main(m *testing.M) {
	code := m.Run()
	if runnel.dir != "" {
		os.RemoveAll(runnel.dir)
	}
	os.Exit(code)
}

// ProcessOptions describe the nodes StartProcesses starts.
type ProcessOptions struct {
	// Binary is the runnel binary to run (see BuildRunnel).
	Binary string
	// Nodes is how many nodes to start (node.id 1..Nodes); 1 if zero.
	Nodes int
	// Settings are every node's settings beyond those the harness sets
	// (node.id, log.dirs, listeners, advertised.listeners,
	// runnel.http.listener, controller.quorum.voters), passed as
	// --name=value: Kafka names such as "min.insync.replicas", or
	// runnel's own flags such as "log-level".
	Settings map[string]string
	// Advertise, when set, returns the address node id advertises to
	// clients (advertised.listeners) given the address its Kafka listener
	// binds: a test puts a proxy there. Without it a node advertises what
	// it binds.
	Advertise func(id int32, addr string) string
	// Voters, when set, returns node id's controller.quorum.voters given
	// the controller address of every node (controllers[i] is node i+1's):
	// a test routes a node's Raft traffic through proxies of its own.
	// Without it every node names the controllers themselves. It is not
	// called for a single node, which has no voters.
	Voters func(id int32, controllers []string) string
	// Advertise and Voters are called each time the nodes get ports:
	// once, and again when a start is retried on fresh ports because one
	// was taken.
}

// Process is one node of Processes. Its addresses and directory stay the
// same across restarts.
type Process struct {
	ID             int32
	Addr           string // the Kafka listener it binds, 127.0.0.1:port
	Advertised     string // what clients are told to dial: Addr unless ProcessOptions.Advertise says otherwise
	ControllerAddr string // its own entry in controller.quorum.voters (more than one node only)
	Voters         string // its controller.quorum.voters; empty for a single node
	HTTPAddr       string // /metrics, /healthz, /readyz
	Dir            string // log.dirs
	LogPath        string // stdout and stderr of every run, appended

	run  *run // nil while not running; guarded by Processes.mu
	runs int  // processes started so far
}

// run is one run of a node.
type run struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once it exited and was reaped
	err  error         // Wait's result, read after done
}

// Processes is a cluster of `runnel broker` child processes on loopback,
// every node a voter of the metadata quorum. Its methods are for the test
// goroutine; Seeds and Running may be called from any goroutine.
type Processes struct {
	// Nodes are the nodes; Nodes[i] has node.id i+1.
	Nodes []*Process

	t    testing.TB
	opts ProcessOptions
	mu   sync.Mutex // guards every Process's run
}

// StartProcesses starts opts.Nodes `runnel broker` processes on loopback
// and returns once every node answers /readyz and accepts Kafka
// connections. Each node has its own Kafka, controller and HTTP port and
// data directory, and logs to a file whose tail is printed if the test
// fails. A start that fails because another process took a port is
// retried on fresh ports. The nodes are killed when the test ends; a
// broker left behind by a test binary that died is killed too (Pdeathsig,
// on Linux).
func StartProcesses(t testing.TB, opts ProcessOptions) *Processes {
	t.Helper()
	if opts.Binary == "" {
		t.Fatal("brokertest: StartProcesses needs ProcessOptions.Binary (see BuildRunnel)")
	}
	for _, k := range processKeys {
		if _, ok := opts.Settings[k]; ok {
			t.Fatalf("brokertest: StartProcesses sets %s itself", k)
		}
	}
	opts.Nodes = max(opts.Nodes, 1)
	root := t.TempDir()
	c := &Processes{t: t, opts: opts}
	for i := range opts.Nodes {
		id := int32(i + 1)
		c.Nodes = append(c.Nodes, &Process{
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
			for _, nd := range c.Nodes {
				if err = c.spawn(nd); err != nil {
					break
				}
			}
		}
		for _, nd := range c.Nodes {
			if err == nil {
				err = c.waitReady(nd)
			}
		}
		if err == nil {
			return c
		}
		c.killAll()
		if !errors.Is(err, errPortTaken) || try == startTries {
			t.Fatalf("brokertest: StartProcesses: %v", err)
		}
		t.Logf("brokertest: StartProcesses: %v; trying again with fresh ports", err)
	}
}

// assignPorts gives every node three free loopback ports. All listeners
// stay open until every port is picked, so no two are the same; another
// process may still take one before the node binds it, which the node's
// start reports as errPortTaken.
func (c *Processes) assignPorts() error {
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	var controllers []string
	for _, nd := range c.Nodes {
		for _, addr := range []*string{&nd.Addr, &nd.ControllerAddr, &nd.HTTPAddr} {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				return err
			}
			lns = append(lns, ln)
			*addr = ln.Addr().String()
		}
		controllers = append(controllers, nd.ControllerAddr)
	}
	for _, nd := range c.Nodes {
		nd.Advertised = nd.Addr
		if c.opts.Advertise != nil {
			nd.Advertised = c.opts.Advertise(nd.ID, nd.Addr)
		}
		nd.Voters = ""
		switch {
		case len(c.Nodes) == 1:
		case c.opts.Voters != nil:
			nd.Voters = c.opts.Voters(nd.ID, controllers)
		default:
			nd.Voters = VotersOf(controllers)
		}
	}
	return nil
}

// VotersOf is the controller.quorum.voters value that names
// controllers[i] as node i+1.
func VotersOf(controllers []string) string {
	voters := make([]string, len(controllers))
	for i, addr := range controllers {
		voters[i] = fmt.Sprintf("%d@%s", i+1, addr)
	}
	return strings.Join(voters, ",")
}

// Args is the command line node id runs with, after the binary.
func (c *Processes) Args(id int32) []string {
	nd := c.Node(id)
	args := []string{"broker",
		"--node.id=" + strconv.Itoa(int(nd.ID)),
		"--log.dirs=" + nd.Dir,
		"--listeners=PLAINTEXT://" + nd.Addr,
		"--runnel.http.listener=" + nd.HTTPAddr,
	}
	if nd.Advertised != nd.Addr {
		args = append(args, "--advertised.listeners=PLAINTEXT://"+nd.Advertised)
	}
	if nd.Voters != "" {
		args = append(args, "--controller.quorum.voters="+nd.Voters)
	}
	keys := make([]string, 0, len(c.opts.Settings))
	for k := range c.opts.Settings {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		args = append(args, "--"+k+"="+c.opts.Settings[k])
	}
	return args
}

// spawn starts a process for nd, logging to nd.LogPath.
func (c *Processes) spawn(nd *Process) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if nd.run != nil {
		return fmt.Errorf("node %d is already running", nd.ID)
	}
	logf, err := os.OpenFile(nd.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close() // the child has its own descriptor
	nd.runs++
	args := c.Args(nd.ID)
	fmt.Fprintf(logf, "=== run %d of node %d at %s: runnel %s\n", nd.runs, nd.ID, time.Now().Format(time.RFC3339Nano), strings.Join(args, " "))
	cmd := exec.Command(c.opts.Binary, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// A test binary that dies (a timeout's panic runs no cleanup) must not
	// leave a broker behind.
	setPdeathsig(cmd)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start node %d: %w", nd.ID, err)
	}
	r := &run{cmd: cmd, done: make(chan struct{})}
	go func() {
		r.err = cmd.Wait()
		close(r.done)
	}()
	nd.run = r
	return nil
}

// waitReady waits until nd's /readyz says ready and its Kafka port accepts
// a connection, or its process exits, or readyTimeout passes.
func (c *Processes) waitReady(nd *Process) error {
	r := c.runOf(nd)
	if r == nil {
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
		case <-r.done:
			c.clear(nd, r)
			tail := lastLines(nd.LogPath, 20)
			if strings.Contains(tail, "address already in use") {
				return fmt.Errorf("node %d: %w:\n%s", nd.ID, errPortTaken, tail)
			}
			return fmt.Errorf("node %d exited before it was ready (%v):\n%s", nd.ID, r.err, tail)
		case <-ctx.Done():
			return fmt.Errorf("node %d not ready within %v:\n%s", nd.ID, readyTimeout, lastLines(nd.LogPath, 20))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// ready: /readyz answers 200 and the Kafka listener accepts a connection.
func ready(ctx context.Context, hc *http.Client, nd *Process) bool {
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

func (c *Processes) runOf(nd *Process) *run {
	c.mu.Lock()
	defer c.mu.Unlock()
	return nd.run
}

// clear forgets r, nd's run, once it exited.
func (c *Processes) clear(nd *Process, r *run) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if nd.run == r {
		nd.run = nil
	}
}

// Node returns node id (1..n).
func (c *Processes) Node(id int32) *Process {
	c.t.Helper()
	if id < 1 || int(id) > len(c.Nodes) {
		c.t.Fatalf("brokertest: no node %d in a cluster of %d", id, len(c.Nodes))
	}
	return c.Nodes[id-1]
}

// running returns node id's run, failing the test if it is not running.
func (c *Processes) running(id int32) *run {
	c.t.Helper()
	r := c.runOf(c.Node(id))
	if r == nil {
		c.t.Fatalf("brokertest: node %d is not running", id)
	}
	return r
}

// Signal sends node id sig (SIGSTOP freezes it, SIGCONT thaws it).
func (c *Processes) Signal(id int32, sig os.Signal) {
	c.t.Helper()
	if err := c.running(id).cmd.Process.Signal(sig); err != nil {
		c.t.Fatalf("brokertest: signal %v to node %d: %v", sig, id, err)
	}
}

// Kill sends node id SIGKILL and waits until the process is gone.
func (c *Processes) Kill(id int32) {
	c.t.Helper()
	r := c.running(id)
	r.cmd.Process.Signal(syscall.SIGKILL)
	<-r.done
	c.clear(c.Node(id), r)
}

// Stop sends node id SIGTERM and waits for it to exit; the test fails
// unless it exits cleanly (status 0) within 30 s.
func (c *Processes) Stop(id int32) {
	c.t.Helper()
	r := c.running(id)
	r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.done:
	case <-time.After(stopTimeout):
		r.cmd.Process.Signal(syscall.SIGKILL)
		<-r.done
		c.clear(c.Node(id), r)
		c.t.Fatalf("brokertest: node %d did not stop within %v of SIGTERM; killed it", id, stopTimeout)
	}
	c.clear(c.Node(id), r)
	if r.err != nil {
		c.t.Errorf("brokertest: node %d did not exit cleanly after SIGTERM: %v", id, r.err)
	}
}

// Restart starts node id again, stopped or killed, on the same ports and
// directory, and waits until it is ready. A port another process holds
// meanwhile is retried for up to a minute.
func (c *Processes) Restart(id int32) {
	c.t.Helper()
	if err := c.restart(c.Node(id)); err != nil {
		c.t.Fatalf("brokertest: restart: %v", err)
	}
}

// restart is Restart for any goroutine.
func (c *Processes) restart(nd *Process) error {
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
func (c *Processes) Running(id int32) bool { return c.runOf(c.Node(id)) != nil }

// Addrs returns the advertised Kafka address of every node, running or
// not, in id order.
func (c *Processes) Addrs() []string {
	var addrs []string
	for _, nd := range c.Nodes {
		addrs = append(addrs, nd.Advertised)
	}
	return addrs
}

// Seeds returns the advertised Kafka addresses of the running nodes: seed
// brokers for a new client.
func (c *Processes) Seeds() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var addrs []string
	for _, nd := range c.Nodes {
		if nd.run != nil {
			addrs = append(addrs, nd.Advertised)
		}
	}
	return addrs
}

// killAll kills every running node and waits for them.
func (c *Processes) killAll() {
	for _, nd := range c.Nodes {
		if r := c.runOf(nd); r != nil {
			r.cmd.Process.Signal(syscall.SIGKILL)
			<-r.done
			c.clear(nd, r)
		}
	}
}

// dumpLogs prints the tail of every node's log.
func (c *Processes) dumpLogs() {
	for _, nd := range c.Nodes {
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
