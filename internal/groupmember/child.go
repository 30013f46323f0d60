package groupmember

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
)

// childEnv carries a child member's Config, as JSON.
const childEnv = "RUNNEL_GROUPMEMBER_CONFIG"

// MainIfChild runs a member and exits when this process was started by
// StartProcess; otherwise it returns at once. Call it first in TestMain.
//
// The child writes one JSON Event per line to stdout, each batch with one
// write, so the parent has every report written before a SIGKILL. It
// leaves the group and exits when its stdin closes.
func MainIfChild() {
	raw, ok := os.LookupEnv(childEnv)
	if !ok {
		return
	}
	var cfg Config
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "groupmember child:", err)
		os.Exit(2)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	var mu sync.Mutex
	emit := func(evs []Event) {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		for _, ev := range evs {
			enc.Encode(ev)
		}
		mu.Lock()
		defer mu.Unlock()
		if _, err := os.Stdout.Write(buf.Bytes()); err != nil {
			os.Exit(3) // the parent is gone
		}
	}
	if err := Run(ctx, cfg, emit); err != nil {
		fmt.Fprintln(os.Stderr, "groupmember child:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// StartProcess runs a member in a child process: the running executable
// (a test binary whose TestMain calls MainIfChild) started again with cfg.
// Stop closes its stdin (the member leaves the group); Kill sends SIGKILL.
func StartProcess(cfg Config, board *Board) (*Member, error) {
	raw, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), childEnv+"="+string(raw))
	// A test that dies must not leave members behind.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	m := newMember(cfg.Name, board)
	var once sync.Once
	m.stop = func() { once.Do(func() { stdin.Close() }) }
	m.kill = func() { cmd.Process.Signal(syscall.SIGKILL) }
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		var readErr error
		for sc.Scan() {
			var ev Event
			if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
				// A SIGKILL can cut the last line short; only that
				// line may be unreadable.
				readErr = fmt.Errorf("member %s: bad report %q: %w", cfg.Name, sc.Text(), err)
				continue
			}
			m.apply([]Event{ev})
		}
		err := cmd.Wait()
		if err == nil {
			err = readErr
		} else {
			err = fmt.Errorf("member %s: %w\n%s", cfg.Name, err, strings.TrimSpace(stderr.String()))
		}
		if readErr != nil && !m.Killed() {
			err = errors.Join(err, readErr)
		}
		m.finish(err)
	}()
	return m, nil
}
