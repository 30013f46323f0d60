package main

import (
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// txnProducer returns a transactional franz-go client for id that
// produces to the partition each record names.
func txnProducer(t *testing.T, c *cli, id string) *kgo.Client {
	t.Helper()
	return c.client(kgo.TransactionalID(id), kgo.RecordPartitioner(kgo.ManualPartitioner()))
}

// produceInTxn begins a transaction on cl and produces one record to each
// of topic's partitions ps, leaving the transaction open.
func produceInTxn(t *testing.T, cl *kgo.Client, topic string, ps ...int32) {
	t.Helper()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		r := &kgo.Record{Topic: topic, Partition: p, Value: []byte("v" + strconv.Itoa(int(p)))}
		if err := cl.ProduceSync(t.Context(), r).FirstErr(); err != nil {
			t.Fatalf("produce to %s[%d] in a transaction: %v", topic, p, err)
		}
	}
}

// producerID is cl's producer id and epoch, as text.
func producerID(t *testing.T, cl *kgo.Client) (id, epoch string) {
	t.Helper()
	pid, e, err := cl.ProducerID(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return strconv.FormatInt(pid, 10), strconv.Itoa(int(e))
}

// onlyNode is the node id of the cluster's one broker, as text.
func onlyNode(t *testing.T, c *cli) string {
	t.Helper()
	m, err := kadm.NewClient(c.client()).BrokerMetadata(t.Context())
	if err != nil || len(m.Brokers) != 1 {
		t.Fatalf("broker metadata: %v, %d brokers", err, len(m.Brokers))
	}
	return strconv.Itoa(int(m.Brokers[0].NodeID))
}

// waitTxnState polls until the transactional id is in state, or fails
// after 20s: a commit's markers are written after EndTxn is answered, so
// the state reaches CompleteCommit a little later.
func waitTxnState(t *testing.T, c *cli, id, state string) {
	t.Helper()
	adm := kadm.NewClient(c.client())
	deadline := time.Now().Add(20 * time.Second)
	for {
		ds, err := adm.DescribeTransactions(t.Context(), id)
		if err == nil && ds[id].Err == nil && ds[id].State == state {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("transactional id %q: state %q (err %v, %v) after 20s, want %s", id, ds[id].State, err, ds[id].Err, state)
		}
		time.Sleep(20 * time.Millisecond) // polling with a deadline: the broker has no state-change feed
	}
}

// completedState is the state kafka-transactions shows for an id whose
// last transaction committed: CompleteCommit in Kafka and Runnel. kfake
// keeps no completed states and shows such an id as Empty.
func completedState(t *testing.T) string {
	if strings.HasSuffix(t.Name(), "/kfake") {
		return "Empty"
	}
	return "CompleteCommit"
}

func TestTxnListDescribe(t *testing.T) {
	onBrokers(t, func(t *testing.T, c *cli) {
		c.ok("", "topic", "create", "orders", "-p", "3")
		open := txnProducer(t, c, "open-tx")
		produceInTxn(t, open, "orders", 0, 2)
		done := txnProducer(t, c, "done-tx")
		produceInTxn(t, done, "orders", 1)
		if err := done.EndTransaction(t.Context(), kgo.TryCommit); err != nil {
			t.Fatal(err)
		}
		openPID, openEpoch := producerID(t, open)
		donePID, _ := producerID(t, done)
		node := onlyNode(t, c)
		doneState := completedState(t)
		waitTxnState(t, c, "done-tx", doneState)

		rows := table(c.ok("", "txn", "list"))
		want := [][]string{
			{"TransactionalId", "Coordinator", "ProducerId", "TransactionState"},
			{"done-tx", node, donePID, doneState},
			{"open-tx", node, openPID, "Ongoing"},
		}
		if !slices.EqualFunc(rows, want, slices.Equal) {
			t.Errorf("list: got %q, want %q", rows, want)
		}
		for _, tc := range []struct {
			args []string
			want []string
		}{
			{[]string{"--state", "Ongoing"}, []string{"open-tx"}},
			{[]string{"--state", "ongoing," + strings.ToUpper(doneState)}, []string{"done-tx", "open-tx"}}, // case-insensitive
			{[]string{"--state", "PrepareAbort"}, nil},
			{[]string{"--transactional-id-pattern", "^open"}, []string{"open-tx"}},
			{[]string{"--duration-filter", "-1"}, []string{"done-tx", "open-tx"}},
			// Neither was opened an hour ago. (kfake applies the filter to
			// open transactions only and keeps done-tx.)
			{[]string{"--duration-filter", "3600000", "--transactional-id-pattern", "open"}, nil},
		} {
			var got []string
			for _, r := range table(c.ok("", append([]string{"txn", "list"}, tc.args...)...))[1:] {
				got = append(got, r[0])
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("list %q: got %q, want %q", tc.args, got, tc.want)
			}
		}
		var listed txnListing
		if err := json.Unmarshal([]byte(c.ok("", "txn", "list", "--state", "Ongoing", "-o", "json")), &listed); err != nil {
			t.Fatal(err)
		}
		if strconv.FormatInt(listed.ProducerID, 10) != openPID || listed.TransactionalID != "open-tx" || listed.State != "Ongoing" {
			t.Errorf("list -o json: %+v", listed)
		}

		before := time.Now().UnixMilli()
		rows = table(c.ok("", "txn", "describe", "open-tx"))
		if want := []string{"CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch", "TransactionState", "TransactionTimeoutMs",
			"CurrentTransactionStartTimeMs", "TransactionDurationMs", "TopicPartitions"}; len(rows) != 2 || !slices.Equal(rows[0], want) {
			t.Fatalf("describe: %q", rows)
		}
		r := rows[1]
		if want := []string{node, "open-tx", openPID, openEpoch, "Ongoing", "40000"}; !slices.Equal(r[:6], want) || r[8] != "orders-0,orders-2" {
			t.Errorf("describe open-tx: got %q, want %q ... orders-0,orders-2 (franz-go's default timeout is 40s)", r, want)
		}
		start, err1 := strconv.ParseInt(r[6], 10, 64)
		dur, err2 := strconv.ParseInt(r[7], 10, 64)
		if err1 != nil || err2 != nil || start <= 0 || start > before || dur < 0 || dur > time.Now().UnixMilli()-start+1000 {
			t.Errorf("describe open-tx: start %q and duration %q, want a time before %d and its age", r[6], r[7], before)
		}

		// The committed one has no open partitions; both at once, and
		// JSON with the same numbers.
		rows = table(c.ok("", "txn", "describe", "open-tx", "done-tx"))
		if len(rows) != 3 || rows[1][1] != "done-tx" || rows[1][4] != doneState || rows[1][8] != "-" || rows[2][1] != "open-tx" {
			t.Errorf("describe both: %q", rows)
		}
		var v txnView
		if err := json.Unmarshal([]byte(c.ok("", "txn", "describe", "open-tx", "-o", "json")), &v); err != nil {
			t.Fatal(err)
		}
		if v.State != "Ongoing" || v.StartTimeMs == nil || *v.StartTimeMs != start || len(v.Partitions) != 1 ||
			v.Partitions[0].Topic != "orders" || !slices.Equal(v.Partitions[0].Partitions, []int32{0, 2}) {
			t.Errorf("describe -o json: %+v", v)
		}

		// An unknown id is an error; the known ones are still printed.
		out, _, err := c.run("", "txn", "describe", "nope", "open-tx")
		if !errors.Is(err, errTxnMissing) || !strings.Contains(err.Error(), `transactional id "nope" does not exist (see "runnel txn list")`) {
			t.Errorf("describe unknown id: %v", err)
		}
		if rows := table(out); len(rows) != 2 || rows[1][1] != "open-tx" {
			t.Errorf("describe unknown+known printed %q, want open-tx", out)
		}

		// The partition leader knows the open transaction's producer and
		// where the transaction started (offset 0 of orders[2]).
		rows = table(c.ok("", "txn", "describe-producers", "--topic", "orders", "--partition", "2"))
		if want := []string{"ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence", "LastTimestamp", "CurrentTransactionStartOffset"}; len(rows) != 2 || !slices.Equal(rows[0], want) {
			t.Fatalf("describe-producers: %q", rows)
		}
		if r := rows[1]; r[0] != openPID || r[1] != openEpoch || r[3] != "0" || r[5] != "0" {
			t.Errorf("describe-producers orders[2]: %q, want producer %s epoch %s, sequence 0, transaction from offset 0", r, openPID, openEpoch)
		}
		if err := open.EndTransaction(t.Context(), kgo.TryAbort); err != nil {
			t.Fatal(err)
		}
	})
}

func TestTxnBadInput(t *testing.T) {
	onBrokers(t, func(t *testing.T, c *cli) {
		c.ok("", "topic", "create", "t", "-p", "2")
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"txn", "list", "--state", "Ongoing,Running"}, `unknown state "Running"`},
			{[]string{"txn", "list", "-o", "xml"}, "want text or json"},
			{[]string{"txn", "list", "extra"}, "takes no arguments"},
			{[]string{"txn", "list", "--transactional-id-pattern", "(("}, "RE2 regular expression"},
			{[]string{"txn", "describe"}, "missing TRANSACTIONAL-ID"},
			{[]string{"txn", "describe", "nope"}, `transactional id "nope" does not exist`},
			{[]string{"txn", "describe-producers", "--partition", "0"}, "missing --topic"},
			{[]string{"txn", "describe-producers", "--topic", "t"}, "missing --partition"},
			{[]string{"txn", "describe-producers", "--topic", "t", "--partition", "5"}, `partition 5 does not exist: topic "t" has 2 partitions (0-1)`},
			{[]string{"txn", "describe-producers", "--topic", "missing", "--partition", "0"}, `topic "missing" does not exist`},
		} {
			if err := c.fail("", tc.args...); !strings.Contains(err.Error(), tc.want) {
				t.Errorf("runnel %s: got %q, want it to contain %q", strings.Join(tc.args, " "), err, tc.want)
			}
		}
		// No transactions: a header only, and no producers on a partition.
		if rows := table(c.ok("", "txn", "list")); len(rows) != 1 {
			t.Errorf("list without transactions: %q", rows)
		}
		if rows := table(c.ok("", "txn", "describe-producers", "--topic", "t", "--partition", "1")); len(rows) != 1 {
			t.Errorf("describe-producers without producers: %q", rows)
		}
	})
}
