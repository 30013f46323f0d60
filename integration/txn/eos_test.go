package txn

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

const (
	inputTopic  = "eos-in"
	outputTopic = "eos-out"
	group       = "eos-pipeline"
	partitions  = 6
	members     = 3
	// maxPollRecords bounds a transaction's records.
	maxPollRecords = 5000
	// defaultRecords is N when RUNNEL_TXN_RECORDS is not set.
	defaultRecords = 200_000
)

// TestExactlyOnceUnderKills is issue 5's acceptance test: a
// consume-transform-produce pipeline of GroupTransactSessions copies N
// records while its members and the brokers are SIGKILLed at random; the
// output read with read_committed holds every input record exactly once;
// read_uncommitted may show aborted records, read_committed never does.
func TestExactlyOnceUnderKills(t *testing.T) {
	n := envInt(t, "RUNNEL_TXN_RECORDS", defaultRecords)
	seed := uint64(envInt(t, "RUNNEL_TXN_SEED", int(time.Now().UnixNano()%1e15)))
	t.Logf("RUNNEL_TXN_RECORDS=%d RUNNEL_TXN_SEED=%d (the seed repeats the chaos's choices, not its timing)", n, seed)
	ctx, cancel := context.WithTimeout(context.Background(), timeout(n))
	defer cancel()

	c := startCluster(t)
	c.createTopic(ctx, inputTopic, partitions)
	c.createTopic(ctx, outputTopic, partitions)
	began := time.Now()
	if err := fill(ctx, c.Addrs(), inputTopic, n); err != nil {
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

	began = time.Now()
	p := startPipeline(t, c.Addrs(), group, inputTopic, outputTopic, members, maxPollRecords)
	ch := &chaos{t: t, rng: rand.New(rand.NewPCG(seed, seed)), c: c, p: p, group: group, input: inputTopic, ends: ends}
	// The faults start once a transaction has committed, so that
	// __consumer_offsets and __transaction_state exist and are in sync.
	first, cancelFirst := context.WithTimeout(ctx, recoverTimeout)
	err = waitFor(first, "the pipeline's first transaction", func(ctx context.Context) string {
		if got, err := ch.progress(ctx); err != nil || got.sum() == 0 {
			return fmt.Sprintf("committed offsets %v (%v); members exited on their own: %q", got, err, p.exited())
		}
		return ""
	})
	cancelFirst()
	if err != nil {
		t.Fatal(err)
	}
	c.waitHealthy(ctx, "every partition, the internal topics' too, with a full ISR")
	ch.run(ctx)
	copied := time.Since(began)
	sum, failures := p.summary()
	t.Logf("the pipeline copied %d records in %v under %d member kills and %d broker kills; its members reported %d transactions committed (%d records), %d aborted (%d records), %d failures",
		n, copied.Round(time.Millisecond), ch.members, ch.brokers, sum.Committed, sum.Copied, sum.Aborted, sum.Abandoned, len(failures))
	for i, f := range failures {
		if i == 10 {
			t.Logf("  ... and %d more", len(failures)-i)
			break
		}
		t.Logf("  %s", f)
	}
	p.stop(ctx)

	// Every transaction has ended: the output's last stable offsets are
	// its high watermarks.
	var outEnds offsets
	stable, cancelStable := context.WithTimeout(ctx, recoverTimeout)
	err = waitFor(stable, "every transaction on the output to end", func(ctx context.Context) string {
		lso, err := c.endOffsets(ctx, outputTopic, true)
		if err != nil {
			return err.Error()
		}
		hwm, err := c.endOffsets(ctx, outputTopic, false)
		if err != nil {
			return err.Error()
		}
		for p, o := range hwm {
			if lso[p] != o {
				return fmt.Sprintf("last stable offsets %v, high watermarks %v", lso, hwm)
			}
		}
		outEnds = hwm
		return ""
	})
	cancelStable()
	if err != nil {
		t.Fatal(err)
	}
	got, err := ch.progress(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for p, end := range ends {
		if got[p] != end {
			t.Errorf("group %s committed %v of %s, its end offsets are %v", group, got, inputTopic, ends)
			break
		}
	}

	began = time.Now()
	rc, err := readTopic(ctx, c.Addrs(), outputTopic, true, outEnds)
	if err != nil {
		t.Fatal(err)
	}
	ru, err := readTopic(ctx, c.Addrs(), outputTopic, false, outEnds)
	if err != nil {
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
	return 3*time.Minute + time.Duration(n)*200*time.Microsecond
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
