package compat

import (
	"slices"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// TestSaramaTransactions commits and aborts transactions with sarama's
// transactional producer and reads them back with sarama's consumer at both
// isolation levels: read_committed sees only the committed records (the
// last one comes after the aborted ones, so reaching it means they were
// skipped), read_uncommitted sees them all.
func TestSaramaTransactions(t *testing.T) {
	t.Parallel()
	addr := startBroker(t)
	topic := topicName(t)
	createTopic(t, addr, topic, 1)

	cfg := sarama.NewConfig()
	cfg.ClientID = "runnel-compat"
	cfg.Producer.Idempotent = true
	cfg.Producer.Transaction.ID = "sarama-txn"
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Net.MaxOpenRequests = 1
	cfg.Consumer.Return.Errors = true
	t.Logf("sarama protocol version %s", cfg.Version)

	prod, err := sarama.NewSyncProducer([]string{addr}, cfg)
	if err != nil {
		t.Fatalf("transactional producer: %v", err)
	}
	defer prod.Close()
	txn := func(commit bool, values ...string) {
		t.Helper()
		if err := prod.BeginTxn(); err != nil {
			t.Fatalf("BeginTxn: %v", err)
		}
		for _, v := range values {
			if _, _, err := prod.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder(v)}); err != nil {
				t.Fatalf("send %s: %v", v, err)
			}
		}
		if commit {
			err = prod.CommitTxn()
		} else {
			err = prod.AbortTxn()
		}
		if err != nil {
			t.Fatalf("end transaction (commit=%v): %v", commit, err)
		}
	}
	txn(true, "c1", "c2")
	txn(false, "a1", "a2")
	txn(true, "c3")

	read := func(iso sarama.IsolationLevel, n int) []string {
		t.Helper()
		ccfg := sarama.NewConfig()
		ccfg.ClientID = "runnel-compat"
		ccfg.Consumer.IsolationLevel = iso
		ccfg.Consumer.Return.Errors = true
		cons, err := sarama.NewConsumer([]string{addr}, ccfg)
		if err != nil {
			t.Fatalf("consumer: %v", err)
		}
		defer cons.Close()
		pc, err := cons.ConsumePartition(topic, 0, sarama.OffsetOldest)
		if err != nil {
			t.Fatalf("consume partition: %v", err)
		}
		defer pc.Close()
		ctx := testContext(t, 30*time.Second)
		var got []string
		for len(got) < n {
			select {
			case m := <-pc.Messages():
				got = append(got, string(m.Value))
			case err := <-pc.Errors():
				t.Fatalf("sarama consumer: %v", err)
			case <-ctx.Done():
				t.Fatalf("sarama consumer (isolation %d): have %q, want %d records: %v", iso, got, n, ctx.Err())
			}
		}
		return got
	}
	if got, want := read(sarama.ReadCommitted, 3), []string{"c1", "c2", "c3"}; !slices.Equal(got, want) {
		t.Errorf("read_committed: %q, want %q", got, want)
	}
	if got, want := read(sarama.ReadUncommitted, 5), []string{"c1", "c2", "a1", "a2", "c3"}; !slices.Equal(got, want) {
		t.Errorf("read_uncommitted: %q, want %q", got, want)
	}
}
