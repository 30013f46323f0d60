package partition

import (
	"errors"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestVerificationGuard: a transactional batch appended with
// AppendVerified opens a transaction only with the producer's current
// guard; a marker or a newer verification voids a guard, and a refused
// batch writes nothing.
func TestVerificationGuard(t *testing.T) {
	p := openTest(t, vfs.NewMem(), testConfig(), nil)
	defer p.Close()
	const pid = 7
	refused := func(b []byte, g VerificationGuard, what string) {
		t.Helper()
		leo := p.Offsets().LogEnd
		if _, err := p.AppendVerified(b, -1, g); !errors.Is(err, ErrInvalidTxnState) {
			t.Fatalf("%s: %v, want ErrInvalidTxnState", what, err)
		}
		if got := p.Offsets().LogEnd; got != leo {
			t.Fatalf("%s: the refused batch moved the log end from %d to %d", what, leo, got)
		}
	}

	refused(txnBatch(1, pid, 0, 0), 0, "no verification")
	g := p.StartVerification(pid)
	if g == 0 {
		t.Fatal("StartVerification gave no guard for a producer without a transaction")
	}
	if _, err := p.AppendVerified(txnBatch(1, pid, 0, 0), -1, g); err != nil {
		t.Fatal(err)
	}
	if g2 := p.StartVerification(pid); g2 != 0 {
		t.Fatalf("StartVerification with the transaction open: guard %d, want 0", g2)
	}
	// Further batches of the open transaction need no guard.
	if _, err := p.AppendVerified(txnBatch(1, pid, 0, 1), -1, 0); err != nil {
		t.Fatal(err)
	}

	// Verified, then the transaction ends before the batch lands: the
	// batch must not open a new transaction.
	mustMark(t, p, Marker{ProducerID: pid, ProducerEpoch: 0, Commit: true})
	g = p.StartVerification(pid)
	mustMark(t, p, Marker{ProducerID: pid, ProducerEpoch: 0, Commit: false})
	refused(txnBatch(1, pid, 0, 2), g, "guard voided by a marker")

	// A newer verification voids the older guard.
	old := p.StartVerification(pid)
	cur := p.StartVerification(pid)
	refused(txnBatch(1, pid, 0, 2), old, "an older guard")
	if _, err := p.AppendVerified(txnBatch(1, pid, 0, 2), -1, cur); err != nil {
		t.Fatal(err)
	}
	if open := openTxns(p); len(open) != 1 || open[0][0] != pid {
		t.Fatalf("open transactions %v, want producer %d's", open, pid)
	}
	// Plain batches are not guarded.
	if _, err := p.AppendVerified(makeBatch(1, 1000, -1, -1, -1), -1, 0); err != nil {
		t.Fatal(err)
	}
}
