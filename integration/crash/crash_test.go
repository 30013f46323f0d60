// Package crash kills a broker process with SIGKILL while producers write
// and consumer groups commit, and checks that nothing acknowledged is lost
// or duplicated: records, groups and committed offsets.
package crash

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/internal/groupmember"
)

var runnelBin string

func TestMain(m *testing.M) {
	// The live member of group_test.go runs in a child process: this binary.
	groupmember.MainIfChild()
	dir, err := os.MkdirTemp("", "runnel-crash")
	if err != nil {
		panic(err)
	}
	runnelBin = filepath.Join(dir, "runnel")
	build := exec.Command("go", "build", "-o", runnelBin, "github.com/runnel-io/runnel/cmd/runnel")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building runnel:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// brokerProc is a broker running as a child process.
type brokerProc struct {
	cmd  *exec.Cmd
	addr string
	done chan struct{}
}

var listening = regexp.MustCompile(`listening on (\S+)`)

// startBroker starts `runnel broker` on dir with an ephemeral port and waits
// until it says where it listens.
func startBroker(t *testing.T, dir string) *brokerProc {
	t.Helper()
	cmd := exec.Command(runnelBin, "broker",
		"--log.dirs", dir,
		"--listeners", "PLAINTEXT://127.0.0.1:0",
		"--runnel.http.listener", "",
		"--num.partitions", "8",
		"--log.segment.bytes", "1048576",
	)
	// A test that dies (a timeout's panic runs no cleanup) must not leave
	// a broker behind.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &brokerProc{cmd: cmd, done: make(chan struct{})}
	addrc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			if m := listening.FindStringSubmatch(line); m != nil {
				select {
				case addrc <- m[1]:
				default:
				}
			}
			if testing.Verbose() {
				t.Log("broker:", line)
			}
		}
		cmd.Wait()
		close(p.done)
	}()
	select {
	case p.addr = <-addrc:
	case <-p.done:
		t.Fatal("broker exited before listening")
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatal("broker did not start listening within 60s")
	}
	t.Cleanup(func() { p.kill() })
	return p
}

func (p *brokerProc) kill() {
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

const (
	topic       = "crash"
	partitions  = 8
	producers   = 4
	killAfter   = 20000 // acknowledged records before the kill
	afterwards  = 1000  // records produced after the restart
	valueFormat = "p%d-%09d"
)

func TestSIGKILLKeepsAcknowledgedWrites(t *testing.T) {
	dir := t.TempDir()
	b := startBroker(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	adm := newAdmin(t, b.addr)
	if _, err := adm.CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	adm.Close()

	// Producers write numbered values; acked[p] collects what the broker
	// acknowledged.
	var acked [producers]sync.Map
	var nAcked atomic.Int64
	killed := make(chan struct{})
	// Producers block in Produce once their buffer is full and the broker
	// is gone; cancelling their context at the kill releases them.
	pctx, pcancel := context.WithCancel(ctx)
	defer pcancel()
	var wg sync.WaitGroup
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl, err := kgo.NewClient(
				kgo.SeedBrokers(b.addr),
				kgo.DefaultProduceTopic(topic),
				kgo.RequiredAcks(kgo.AllISRAcks()),
				kgo.RecordRetries(3),
				kgo.ProduceRequestTimeout(5*time.Second),
			)
			if err != nil {
				t.Error(err)
				return
			}
			defer cl.Close()
			for i := 0; ; i++ {
				select {
				case <-killed:
					return
				default:
				}
				v := fmt.Sprintf(valueFormat, p, i)
				r := &kgo.Record{Key: []byte(strconv.Itoa(i % 64)), Value: []byte(v)}
				cl.Produce(pctx, r, func(r *kgo.Record, err error) {
					if err == nil {
						acked[p].Store(string(r.Value), r.Partition)
						nAcked.Add(1)
					}
				})
			}
		}()
	}
	for nAcked.Load() < killAfter {
		select {
		case <-ctx.Done():
			t.Fatalf("only %d records acknowledged before the deadline", nAcked.Load())
		case <-time.After(10 * time.Millisecond):
		}
	}
	b.kill()
	close(killed)
	pcancel()
	wg.Wait()
	total := 0
	for p := range producers {
		acked[p].Range(func(_, _ any) bool { total++; return true })
	}
	t.Logf("killed the broker after %d acknowledged records", total)

	b2 := startBroker(t, dir)
	got := consumeAll(t, ctx, b2.addr)

	seen := map[string]int32{}
	for part, values := range got {
		last := make(map[int]int, producers)
		for _, v := range values {
			if prev, dup := seen[v]; dup {
				t.Fatalf("value %s stored twice (partitions %d and %d)", v, prev, part)
			}
			seen[v] = part
			var p, i int
			if _, err := fmt.Sscanf(v, valueFormat, &p, &i); err != nil {
				t.Fatalf("unexpected value %q", v)
			}
			if prev, ok := last[p]; ok && i <= prev {
				t.Fatalf("partition %d: producer %d's record %d after %d", part, p, i, prev)
			}
			last[p] = i
		}
	}
	for p := range producers {
		acked[p].Range(func(k, v any) bool {
			part, ok := seen[k.(string)]
			if !ok {
				t.Errorf("acknowledged record %s is missing after the crash", k)
				return false
			}
			if part != v.(int32) {
				t.Errorf("record %s acknowledged on partition %d but found on %d", k, v, part)
			}
			return true
		})
	}

	// Writes continue after the restart.
	cl, err := kgo.NewClient(kgo.SeedBrokers(b2.addr), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var rs []*kgo.Record
	for i := range afterwards {
		rs = append(rs, &kgo.Record{Value: []byte(fmt.Sprintf("after-%d", i))})
	}
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatalf("produce after restart: %v", err)
	}
	n := 0
	for _, values := range consumeAll(t, ctx, b2.addr) {
		for _, v := range values {
			if strings.HasPrefix(v, "after-") {
				n++
			}
		}
	}
	if n != afterwards {
		t.Fatalf("read %d records written after the restart, want %d", n, afterwards)
	}
}

func newAdmin(t *testing.T, addr string) *kadm.Client {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	return kadm.NewClient(cl)
}

// consumeAll reads every partition of the crash topic from the start to
// its current end.
func consumeAll(t *testing.T, ctx context.Context, addr string) map[int32][]string {
	t.Helper()
	return consumeAllTopic(t, ctx, addr, topic)
}

// consumeAllTopic reads every partition from the start to its current end.
func consumeAllTopic(t *testing.T, ctx context.Context, addr, topic string) map[int32][]string {
	t.Helper()
	adm := newAdmin(t, addr)
	defer adm.Close()
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			t.Fatalf("end offset of partition %d: %v", o.Partition, o.Err)
		}
		if o.Offset > 0 {
			want[o.Partition] = o.Offset
		}
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	got := map[int32][]string{}
	next := map[int32]int64{}
	for len(want) > 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consuming: %v (still waiting for %v)", err, want)
		}
		fs.EachError(func(_ string, p int32, err error) { t.Fatalf("fetch partition %d: %v", p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset != next[r.Partition] {
				t.Fatalf("partition %d: offset %d after %d", r.Partition, r.Offset, next[r.Partition]-1)
			}
			next[r.Partition] = r.Offset + 1
			got[r.Partition] = append(got[r.Partition], string(r.Value))
			if end, ok := want[r.Partition]; ok && r.Offset+1 >= end {
				delete(want, r.Partition)
			}
		})
	}
	return got
}
