package harness

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"
)

// RunnelBinary returns the runnel binary to start brokers from:
// $RUNNEL_BIN when set, else one built now with `go build` into dir.
func RunnelBinary(ctx context.Context, dir string) (string, error) {
	return buildOrEnv(ctx, "RUNNEL_BIN", dir, "runnel", "github.com/runnel-io/runnel/cmd/runnel")
}

// KfakeBinary returns the kfakebroker binary (bench/cmd/kfakebroker) to
// start kfake processes from: $KFAKE_BIN when set, else one built now with
// `go build` into dir.
func KfakeBinary(ctx context.Context, dir string) (string, error) {
	return buildOrEnv(ctx, "KFAKE_BIN", dir, "kfakebroker", "github.com/runnel-io/runnel/bench/cmd/kfakebroker")
}

// buildOrEnv returns $env when set, else builds pkg into dir/name.
func buildOrEnv(ctx context.Context, env, dir, name, pkg string) (string, error) {
	if bin := os.Getenv(env); bin != "" {
		if _, err := os.Stat(bin); err != nil {
			return "", fmt.Errorf("%s: %w", env, err)
		}
		return bin, nil
	}
	bin := filepath.Join(dir, name)
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, pkg)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", pkg, err, out)
	}
	return bin, nil
}

// Process is a broker child process: `runnel broker` (StartProcess) or
// kfakebroker (StartKfakeProcess).
type Process struct {
	// Addr is the Kafka listener, host:port.
	Addr string
	// name is what the process calls itself ("runnel broker",
	// "kfakebroker"), in its listening line and in errors.
	name string
	cmd  *exec.Cmd
	tail *lineTail
	done chan struct{}

	mu struct {
		sync.Mutex
		exitErr  error
		exited   bool
		stopping bool
	}
}

// StartProcess starts `bin broker` with its data in dataDir on a free
// loopback port, without the HTTP listener and with warnings-only logs;
// flags (as --name=value) are added. It returns once the broker prints
// that it listens.
func StartProcess(ctx context.Context, bin, dataDir string, flags ...string) (*Process, error) {
	args := append([]string{"broker",
		"--log.dirs", dataDir,
		"--listeners", "PLAINTEXT://127.0.0.1:0",
		"--runnel.http.listener", "",
		"--log-level", "warn",
	}, flags...)
	return startBroker(ctx, "runnel broker", exec.Command(bin, args...))
}

// StartKfakeProcess starts the kfakebroker binary bin (one kfake broker,
// data in memory) on a free loopback port and returns once it prints that
// it listens.
func StartKfakeProcess(ctx context.Context, bin string) (*Process, error) {
	return startBroker(ctx, "kfakebroker", exec.Command(bin))
}

// startBroker starts cmd and waits until it prints "<name> listening on
// ADDR" on stderr.
func startBroker(ctx context.Context, name string, cmd *exec.Cmd) (*Process, error) {
	listeningRE := regexp.MustCompile(regexp.QuoteMeta(name) + ` listening on (\S+)`)
	// A benchmark killed by its timeout must not leave a broker behind.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout = nil
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &Process{name: name, cmd: cmd, tail: &lineTail{max: 40}, done: make(chan struct{})}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			p.tail.add(line)
			if m := listeningRE.FindStringSubmatch(line); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
		err := cmd.Wait()
		p.mu.Lock()
		p.mu.exited, p.mu.exitErr = true, err
		p.mu.Unlock()
		close(p.done)
	}()
	select {
	case p.Addr = <-addr:
		return p, nil
	case <-p.done:
		return nil, fmt.Errorf("%s exited before listening: %v\n%s", name, p.exitErr(), p.tail)
	case <-time.After(60 * time.Second):
		p.kill()
		return nil, fmt.Errorf("%s did not print its address within 60s\n%s", name, p.tail)
	case <-ctx.Done():
		p.kill()
		return nil, ctx.Err()
	}
}

// PID is the process id.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Health returns an error, with the last lines of its stderr, once the
// process has exited without Stop.
func (p *Process) Health() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.exited && !p.mu.stopping {
		return fmt.Errorf("%s (pid %d) exited: %v\n%s", p.name, p.PID(), p.mu.exitErr, p.tail)
	}
	return nil
}

// Stop sends SIGTERM and waits up to 30s for the broker to exit; it is an
// error if the broker had already exited, exits non-zero or must be
// killed. Calling Stop again returns nil.
func (p *Process) Stop() error {
	p.mu.Lock()
	if p.mu.stopping {
		p.mu.Unlock()
		return nil
	}
	exitedBefore := p.mu.exited
	p.mu.stopping = true
	p.mu.Unlock()
	if exitedBefore {
		return fmt.Errorf("%s (pid %d) exited before Stop: %v\n%s", p.name, p.PID(), p.exitErr(), p.tail)
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		p.kill()
		return fmt.Errorf("%s (pid %d) did not exit within 30s of SIGTERM; killed\n%s", p.name, p.PID(), p.tail)
	}
	if err := p.exitErr(); err != nil {
		return fmt.Errorf("%s (pid %d) stopped with %v\n%s", p.name, p.PID(), err, p.tail)
	}
	return nil
}

func (p *Process) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

func (p *Process) exitErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.exitErr
}

// lineTail keeps the last max lines of a stream.
type lineTail struct {
	max int
	mu  struct {
		sync.Mutex
		lines   []string
		dropped int
	}
}

func (t *lineTail) add(line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.mu.lines) == t.max {
		t.mu.lines = t.mu.lines[1:]
		t.mu.dropped++
	}
	t.mu.lines = append(t.mu.lines, line)
}

// String is the kept lines, indented, for error messages.
func (t *lineTail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.mu.lines) == 0 {
		return "  (stderr was empty)"
	}
	var sb strings.Builder
	if t.mu.dropped > 0 {
		fmt.Fprintf(&sb, "  (%d earlier stderr lines dropped)\n", t.mu.dropped)
	}
	for _, l := range t.mu.lines {
		sb.WriteString("  | " + l + "\n")
	}
	return strings.TrimSuffix(sb.String(), "\n")
}
