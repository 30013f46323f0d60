package txn

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	inputTopic  = "eos-in"
	outputTopic = "eos-out"
	group       = "eos-pipeline"
	partitions  = 6
	members     = 3
	// batchBytes keeps transactions small, so that there are many: the
	// input is written in record batches of about this size (some 200
	// records), and each fetch of a member takes about one batch of a
	// partition.
	batchBytes = 4 << 10
	// defaultRecords is N when RUNNEL_TXN_RECORDS is not set: the issue's
	// million. Measured with -race on a 2-core machine of CI's kind
	// (`go test -race -run TestExactlyOnceUnderKills ./integration/txn`,
	// main at f2673ce): 94 to 101 s alone (cluster 5 s, fill 11-13 s, the
	// copy under its six faults 62-74 s in some 1,500 transactions, both
	// reads and the check 10-12 s). Beside the other integration packages
	// it took up to 150 s and starved their clusters: make runs it alone.
	// Without -race the copy takes 26-45 s, too short for the faults
	// (some 6-9 s each) to reach minEach of each kind: there N is twice
	// this (recordsFactor).
	defaultRecords = 1_000_000
)

// TestExactlyOnceUnderKills is issue 5's acceptance test: a
// consume-transform-produce pipeline of GroupTransactSessions copies N
// records while its members and the brokers are SIGKILLed at random; the
// output read with read_committed holds every input record exactly once;
// read_uncommitted may show aborted records, read_committed never does.
func TestExactlyOnceUnderKills(t *testing.T) {
	n := envInt(t, "RUNNEL_TXN_RECORDS", defaultRecords*recordsFactor)
	seed := uint64(envInt(t, "RUNNEL_TXN_SEED", int(time.Now().UnixNano()%1e15)))
	t.Logf("RUNNEL_TXN_RECORDS=%d RUNNEL_TXN_SEED=%d (the seed repeats the chaos's choices, not its timing)", n, seed)
	ctx, cancel := context.WithTimeout(context.Background(), timeout(n))
	defer cancel()

	c := startCluster(t)
	c.createTopic(ctx, inputTopic, partitions)
	c.createTopic(ctx, outputTopic, partitions)
	began := time.Now()
	if err := fill(ctx, c.Addrs(), inputTopic, n, batchBytes); err != nil {
		t.Fatal(err)
	}
	ends, err := c.endOffsets(ctx, inputTopic, false)
	if err != nil {
		t.Fatal(err)
	}
	if ends.sum() != int64(n) {
		t.Fatalf("the input holds %d records (end offsets %v), %d were written", ends.sum(), ends, n)
	}
	t.Logf("filled %s with %d records in %v: end offsets %v", inputTopic, n, time.Since(began).Round(time.Millisecond), ends)

	// The pipeline copies under the chaos until the group has committed
	// the input's end offsets: the transactions that commit them commit
	// the copies, so the output should then hold N committed records.
	began = time.Now()
	p := startPipeline(t, c.Addrs(), group, inputTopic, outputTopic, members, batchBytes)
	ch := &chaos{t: t, rng: rand.New(rand.NewPCG(seed, seed)), c: c, p: p, group: group, input: inputTopic, ends: ends}
	ch.run(ctx)
	switch {
	case ch.members < minEach || ch.brokers < minEach:
		t.Errorf("the pipeline was done after %d member kills and %d broker kills, want %d of each at least (%d planned): too few records to copy?",
			ch.members, ch.brokers, minEach, faults)
	case ch.members+ch.brokers < faults:
		t.Logf("the pipeline was done after %d of the %d faults planned", ch.members+ch.brokers, faults)
	}
	ch.awaitDone(ctx)
	sum, failures := p.summary()
	t.Logf("the pipeline copied %d records in %v under %d member kills and %d broker kills; its members reported %d transactions committed (%d records), %d aborted (%d records), %d failures",
		n, time.Since(began).Round(time.Millisecond), ch.members, ch.brokers, sum.Committed, sum.Copied, sum.Aborted, sum.Abandoned, len(failures))
	for i, f := range failures {
		if i == 10 {
			t.Logf("  ... and %d more", len(failures)-i)
			break
		}
		t.Logf("  %s", f)
	}
	p.stop(ctx)
	outEnds := c.awaitStable(ctx, outputTopic)
	if done, got := ch.done(ctx); !done {
		t.Errorf("group %s committed %v of %s after the members stopped; its end offsets are %v", group, got, inputTopic, ends)
	}

	began = time.Now()
	var rc, ru map[int32][]rec
	var rcErr, ruErr error
	var wg sync.WaitGroup
	wg.Go(func() { rc, rcErr = readTopic(ctx, c.Addrs(), outputTopic, true, outEnds) })
	wg.Go(func() { ru, ruErr = readTopic(ctx, c.Addrs(), outputTopic, false, outEnds) })
	wg.Wait()
	if err := errors.Join(rcErr, ruErr); err != nil {
		t.Fatal(err)
	}
	counts, rep := checkCopies(n, rc, ru)
	t.Logf("read %s (end offsets %v, %d in all) both ways in %v: read_uncommitted has %d data records (%d committed, %d aborted copies, %d open) and %d markers",
		outputTopic, outEnds, outEnds.sum(), time.Since(began).Round(time.Millisecond), counts.Uncommitted, counts.Committed, counts.Aborted, counts.Open, counts.Markers)
	if !rep.ok() {
		t.Fatalf("the output is not every input value exactly once: %v", rep)
	}
}

// timeout bounds the whole test for n records: what the default size
// needs with room to spare, and more for larger runs.
func timeout(n int) time.Duration {
	return 3*time.Minute + time.Duration(n)*60*time.Microsecond
}

// envInt is the integer in environment variable name, or def.
func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	v, err := strconv.Atoi(strings.ReplaceAll(s, "_", ""))
	if err != nil || v <= 0 {
		t.Fatalf("%s=%q: want a positive integer", name, s)
	}
	return v
}
