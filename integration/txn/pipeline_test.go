package txn

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/groupmember"
)

// Pipeline members: group sessions a little above the broker's minimum
// (group.min.session.timeout.ms, 6 s); transactions that time out, should
// one be left open, well within the test.
const (
	sessionTimeout     = 6 * time.Second
	heartbeatInterval  = 500 * time.Millisecond
	transactionTimeout = 15 * time.Second
)

// pipeline is the members copying input to output: child processes
// running groupmember.RunTransact, each restartable with its Config (and
// so its transactional id).
type pipeline struct {
	t       *testing.T
	board   *groupmember.Board
	cfgs    []groupmember.Config
	running []*groupmember.Member // per member, its current process
	all     []*groupmember.Member // every process started, in order
}

// startPipeline starts n members of group copying input to output, each
// fetch taking about fetchBytes of a partition.
func startPipeline(t *testing.T, seeds []string, group, input, output string, n int, fetchBytes int32) *pipeline {
	t.Helper()
	p := &pipeline{t: t, board: groupmember.NewBoard()}
	for i := range n {
		name := fmt.Sprintf("member-%d", i+1)
		p.cfgs = append(p.cfgs, groupmember.Config{
			Name: name, Seeds: seeds, Group: group, Topic: input, Output: output,
			TransactionalID: group + "-" + name, TransactionTimeout: transactionTimeout,
			SessionTimeout: sessionTimeout, HeartbeatInterval: heartbeatInterval,
			FetchMaxPartitionBytes: fetchBytes,
		})
		p.running = append(p.running, nil)
		p.start(i)
	}
	t.Cleanup(func() {
		for _, m := range p.running {
			if m != nil && m.Running() {
				m.Kill()
			}
		}
	})
	return p
}

func (p *pipeline) start(i int) {
	p.t.Helper()
	m, err := groupmember.StartProcess(p.cfgs[i], p.board)
	if err != nil {
		p.t.Fatalf("start %s: %v", p.cfgs[i].Name, err)
	}
	p.running[i] = m
	p.all = append(p.all, m)
}

// kill SIGKILLs member i's process and waits until it is gone.
func (p *pipeline) kill(i int) { p.running[i].Kill() }

// restart starts member i again with the same Config.
func (p *pipeline) restart(i int) { p.start(i) }

// exited names the members whose process ended without being killed.
func (p *pipeline) exited() string {
	var out []string
	for _, m := range p.running {
		if !m.Running() && !m.Killed() {
			out = append(out, fmt.Sprintf("%s: %v", m.Name, m.Stop(context.Background())))
		}
	}
	return strings.Join(out, "; ")
}

// stop asks every member to finish its transaction and leave, and waits.
func (p *pipeline) stop(ctx context.Context) {
	p.t.Helper()
	for _, m := range p.running {
		if err := m.Stop(ctx); err != nil {
			p.t.Errorf("stop %s: %v", m.Name, err)
		}
	}
}

// summary adds up every process's transactions and failures.
func (p *pipeline) summary() (groupmember.Transactions, []string) {
	var sum groupmember.Transactions
	var failures []string
	for _, m := range p.all {
		tx := m.Transactions()
		sum.Committed += tx.Committed
		sum.Aborted += tx.Aborted
		sum.Copied += tx.Copied
		sum.Abandoned += tx.Abandoned
		for _, f := range m.Failures() {
			failures = append(failures, m.Name+": "+f)
		}
	}
	return sum, failures
}
