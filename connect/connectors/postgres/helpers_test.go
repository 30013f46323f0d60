package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/broker/brokertest"
	"github.com/runnel-io/runnel/connect"
	"github.com/runnel-io/runnel/connect/connecttest"
	"github.com/runnel-io/runnel/internal/pgtest"
)

// env is what the tests of one top-level test share: a broker, a private
// PostgreSQL and a connection to it. Subtests use their own topics,
// connectors and tables.
type env struct {
	seeds []string
	pg    *pgtest.Server
	db    *pgx.Conn
}

func newEnv(t *testing.T) *env {
	b := brokertest.Start(t, map[string]string{"group.initial.rebalance.delay.ms": "0"})
	pg := pgtest.Start(t)
	return &env{seeds: []string{b.Addr()}, pg: pg, db: pg.Connect(t)}
}

// worker starts a standalone worker with conns; its offsets file is in
// dir, so that a worker started again on dir resumes. It is closed when
// the test ends, if not before.
func (e *env) worker(t *testing.T, dir string, conns ...connect.Config) *connect.Worker {
	t.Helper()
	return connecttest.StartWorker(t, e.seeds, dir, nil, nil, conns...)
}

// kv is a record to produce: JSON key and value; a nil value is a
// tombstone.
type kv struct {
	key   string
	value *string
}

func rec(key, value string) kv { return kv{key, &value} }
func tombstone(key string) kv  { return kv{key: key} }

// produce writes records to topic, in order, keyed to partitions by key.
func (e *env) produce(t *testing.T, topic string, recs ...kv) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.seeds...), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var rs []*kgo.Record
	for _, r := range recs {
		kr := &kgo.Record{Topic: topic}
		if r.key != "" {
			kr.Key = []byte(r.key)
		}
		if r.value != nil {
			kr.Value = []byte(*r.value)
		}
		rs = append(rs, kr)
	}
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// rows returns the rows of a query, each as its values separated by
// spaces.
func (e *env) rows(t *testing.T, sql string, args ...any) []string {
	t.Helper()
	rows, err := e.db.Query(t.Context(), sql, args...)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	var out []string
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		s := make([]string, len(vals))
		for i, v := range vals {
			s[i] = fmt.Sprint(v)
		}
		out = append(out, strings.Join(s, " "))
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return out
}

// count returns the number a query returns, -1 when it fails (a table
// not created yet).
func (e *env) count(t *testing.T, sql string) int {
	t.Helper()
	var n int
	if err := e.db.QueryRow(t.Context(), sql).Scan(&n); err != nil {
		return -1
	}
	return n
}

func (e *env) exec(t *testing.T, sql string, args ...any) {
	t.Helper()
	if _, err := e.db.Exec(t.Context(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// wantRows checks the rows of a query.
func (e *env) wantRows(t *testing.T, sql string, want ...string) {
	t.Helper()
	if got := e.rows(t, sql); !slices.Equal(got, want) {
		t.Fatalf("%s:\ngot  %q\nwant %q", sql, got, want)
	}
}

// reader reads a topic from its start, with JSON values.
type reader struct {
	cl   *kgo.Client
	recs []map[string]any
}

func (e *env) reader(t *testing.T, topic string) *reader {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.seeds...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return &reader{cl: cl}
}

// waitN reads until the topic has given n records in all, and returns
// them.
func (r *reader) waitN(t *testing.T, n int) []map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for len(r.recs) < n {
		fs := r.cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d records, want %d: %v", len(r.recs), n, r.recs)
		}
		for _, kr := range fs.Records() {
			d := json.NewDecoder(strings.NewReader(string(kr.Value)))
			d.UseNumber()
			var v map[string]any
			if err := d.Decode(&v); err != nil {
				t.Fatalf("record %d: %q: %v", len(r.recs), kr.Value, err)
			}
			r.recs = append(r.recs, v)
		}
	}
	return r.recs
}
