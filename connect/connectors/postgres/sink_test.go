package postgres_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/connect"
	"github.com/runnel-io/runnel/connect/connectors"
	"github.com/runnel-io/runnel/connect/connecttest"
)

// sink returns a PostgresSink config of topic into e's database.
func (e *env) sink(name, topic string, kv ...string) connect.Config {
	c := connect.Config{
		"name":            name,
		"connector.class": "PostgresSink",
		"topics":          topic,
		"connection.url":  e.pg.DSN(),
	}
	for i := 0; i+1 < len(kv); i += 2 {
		c[kv[i]] = kv[i+1]
	}
	return c
}

// TestSink runs the sink's tests on one broker and one PostgreSQL.
func TestSink(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		name string
		test func(t *testing.T, e *env)
	}{
		{"Insert", testSinkInsert},
		{"UpsertByValue", testSinkUpsertByValue},
		{"UpsertByKey", testSinkUpsertByKey},
		{"DeleteOnTombstone", testSinkDelete},
		{"AutoCreateAndEvolve", testSinkAutoCreate},
		{"ExactlyOnce", testSinkExactlyOnce},
		{"Reconnects", testSinkReconnects},
		{"BadRecordFailsTheTask", testSinkBadRecordFails},
		{"BadRecordTolerated", testSinkBadRecordTolerated},
		{"Validate", testSinkValidate},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.test(t, e) })
	}
}

// Insert mode appends every record as a row, with COPY, in batches of
// batch.size.
func testSinkInsert(t *testing.T, e *env) {
	var recs []kv
	for i := range 25 {
		recs = append(recs, rec("", fmt.Sprintf(`{"id":%d,"name":"item-%d","price":%d.5,"ok":%t}`, i, i, i, i%2 == 0)))
	}
	recs = append(recs, rec("", `{"id":7,"name":"again"}`)) // no key: a second row
	e.produce(t, "ins", recs...)
	e.worker(t, t.TempDir(), e.sink("ins-sink", "ins", "table.name.format", "rows_${topic}", "auto.create", "true", "batch.size", "10"))
	connecttest.WaitFor(t, 20*time.Second, "26 rows", func() bool { return e.count(t, `SELECT count(*) FROM rows_ins`) == 26 })
	e.wantRows(t, `SELECT id, name, price, ok FROM rows_ins WHERE id IN (3, 7) ORDER BY id, name`,
		"3 item-3 3.5 false", "7 again <nil> <nil>", "7 item-7 7.5 false")
}

// Upsert with the key in the value: duplicates in a batch and across
// batches end as one row per key, holding the last record's fields.
func testSinkUpsertByValue(t *testing.T, e *env) {
	var first []kv
	for round := range 2 {
		for id := range 50 {
			first = append(first, rec("", fmt.Sprintf(`{"id":%d,"v":%d}`, id, round)))
		}
	}
	e.produce(t, "ups", first...) // 100 records, 50 ids: duplicates in every batch
	e.worker(t, t.TempDir(), e.sink("ups-sink", "ups", "insert.mode", "upsert", "pk.mode", "record_value", "pk.fields", "id",
		"auto.create", "true", "batch.size", "30"))
	connecttest.WaitFor(t, 20*time.Second, "50 rows of v=1", func() bool {
		return e.count(t, `SELECT count(*) FROM ups WHERE v = 1`) == 50
	})
	var second []kv
	for id := 25; id < 75; id++ {
		second = append(second, rec("", fmt.Sprintf(`{"id":%d,"v":2}`, id)))
	}
	e.produce(t, "ups", second...)
	connecttest.WaitFor(t, 20*time.Second, "ids 25-74 at v=2", func() bool {
		return e.count(t, `SELECT count(*) FROM ups WHERE v = 2`) == 50
	})
	e.wantRows(t, `SELECT count(*), count(DISTINCT id), min(id), max(id), sum(v)::bigint FROM ups`, "75 75 0 74 125")
	e.wantRows(t, `SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = 'ups'::regclass`, "PRIMARY KEY (id)")
}

// Upsert with the key in the record's key: every key field makes the
// primary key when pk.fields is empty, and key fields win over the
// value's.
func testSinkUpsertByKey(t *testing.T, e *env) {
	e.produce(t, "upk",
		rec(`{"region":"eu","id":1}`, `{"qty":1,"id":99}`),
		rec(`{"region":"us","id":1}`, `{"qty":2}`),
		rec(`{"region":"eu","id":1}`, `{"qty":3}`),
	)
	e.worker(t, t.TempDir(), e.sink("upk-sink", "upk", "insert.mode", "upsert", "pk.mode", "record_key", "auto.create", "true"))
	connecttest.WaitFor(t, 20*time.Second, "two rows", func() bool { return e.count(t, `SELECT count(*) FROM upk`) == 2 })
	e.produce(t, "upk", rec(`{"region":"us","id":1}`, `{"qty":4}`))
	connecttest.WaitFor(t, 20*time.Second, "us/1 at 4", func() bool { return e.count(t, `SELECT qty FROM upk WHERE region = 'us'`) == 4 })
	e.wantRows(t, `SELECT region, id, qty FROM upk ORDER BY region`, "eu 1 3", "us 1 4")
	e.wantRows(t, `SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = 'upk'::regclass`, "PRIMARY KEY (id, region)")
}

// A tombstone deletes its key's row; a primitive key is the one column
// of pk.fields.
func testSinkDelete(t *testing.T, e *env) {
	var recs []kv
	for i := 1; i <= 5; i++ {
		recs = append(recs, rec(fmt.Sprintf(`"k%d"`, i), fmt.Sprintf(`{"qty":%d}`, i)))
	}
	e.produce(t, "del", recs...)
	w := e.worker(t, t.TempDir(), e.sink("del-sink", "del", "insert.mode", "upsert", "pk.mode", "record_key", "pk.fields", "sku",
		"delete.enabled", "true", "auto.create", "true"))
	connecttest.WaitFor(t, 20*time.Second, "5 rows", func() bool { return e.count(t, `SELECT count(*) FROM del`) == 5 })
	e.produce(t, "del", tombstone(`"k2"`), rec(`"k5"`, `{"qty":50}`), tombstone(`"k4"`), tombstone(`"k9"`),
		rec(`"k6"`, `{"qty":6}`), tombstone(`"k6"`))
	connecttest.WaitFor(t, 20*time.Second, "k2 and k4 deleted, k5 updated", func() bool {
		return e.count(t, `SELECT count(*) FROM del`) == 3 && e.count(t, `SELECT qty FROM del WHERE sku = 'k5'`) == 50
	})
	e.wantRows(t, `SELECT sku, qty FROM del ORDER BY sku`, "k1 1", "k3 3", "k5 50")
	if st := connecttest.TaskStatus(t, w, "del-sink"); st.State != connect.StateRunning {
		t.Fatalf("task %s: %s", st.State, st.Trace)
	}
}

// auto.create makes the table from the fields (in a schema named by
// table.name.format), auto.evolve adds a column for a new field.
func testSinkAutoCreate(t *testing.T, e *env) {
	e.exec(t, `CREATE SCHEMA sinktest`)
	e.produce(t, "evo.v1", rec("", `{"id":1,"n":2,"f":1.5,"s":"x","b":true,"obj":{"a":[1]},"arr":[1,"two"],"later":null}`))
	e.worker(t, t.TempDir(), e.sink("evo-sink", "evo.v1", "table.name.format", "sinktest.${topic}", "insert.mode", "upsert",
		"pk.mode", "record_value", "pk.fields", "id", "auto.create", "true", "auto.evolve", "true"))
	cols := `SELECT column_name, data_type, is_nullable FROM information_schema.columns
		WHERE table_schema = 'sinktest' AND table_name = 'evo.v1' ORDER BY ordinal_position`
	connecttest.WaitFor(t, 20*time.Second, "the table", func() bool { return len(e.rows(t, cols)) > 0 })
	e.wantRows(t, cols, "id bigint NO", "arr jsonb YES", "b boolean YES", "f double precision YES",
		"n bigint YES", "obj jsonb YES", "s text YES")
	e.produce(t, "evo.v1", rec("", `{"id":2,"n":3,"extra":"new","later":7}`))
	connecttest.WaitFor(t, 20*time.Second, "the second row", func() bool { return e.count(t, `SELECT count(*) FROM sinktest."evo.v1"`) == 2 })
	e.wantRows(t, cols, "id bigint NO", "arr jsonb YES", "b boolean YES", "f double precision YES",
		"n bigint YES", "obj jsonb YES", "s text YES", "extra text YES", "later bigint YES")
	e.wantRows(t, `SELECT id, n, s, obj::text, extra, later FROM sinktest."evo.v1" ORDER BY id`,
		`1 2 x {"a": [1]} <nil> <nil>`, `2 3 <nil> <nil> new 7`)
}

// exactly.once stores the offsets with the rows: after the group's
// committed offsets are deleted, a new worker starts where the table
// says and writes nothing twice (insert mode, no primary key, so a
// duplicate would be a second row).
func testSinkExactlyOnce(t *testing.T, e *env) {
	connecttest.CreateTopic(t, e.seeds, "eo", 3, nil)
	produceN := func(from, to int) {
		var recs []kv
		for i := from; i < to; i++ {
			recs = append(recs, rec(fmt.Sprintf(`"k%d"`, i), fmt.Sprintf(`{"n":%d}`, i)))
		}
		e.produce(t, "eo", recs...)
	}
	dir := t.TempDir()
	cfg := e.sink("eo-sink", "eo", "exactly.once", "true", "auto.create", "true", "batch.size", "40", "tasks.max", "2")
	stored := `SELECT coalesce(sum(next_offset), 0)::bigint FROM runnel_connect_offsets WHERE connector = 'eo-sink'`

	produceN(0, 300)
	w := e.worker(t, dir, cfg)
	connecttest.WaitFor(t, 30*time.Second, "300 rows and their offsets", func() bool {
		return e.count(t, `SELECT count(*) FROM eo`) == 300 && e.count(t, stored) == 300
	})
	e.wantRows(t, `SELECT count(*) FROM runnel_connect_offsets WHERE connector = 'eo-sink' AND topic = 'eo'`, "3")
	w.Close()

	// Forget what the group committed: without the stored offsets the
	// next worker would read every partition from its start.
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.DeleteGroup(t.Context(), "connect-eo-sink"); err != nil {
		t.Fatal(err)
	}
	if offs, err := adm.FetchOffsets(t.Context(), "connect-eo-sink"); err != nil || len(offs) != 0 {
		t.Fatalf("the group's offsets after deleting it: %v, %v", offs, err)
	}

	produceN(300, 500)
	e.worker(t, dir, cfg)
	// The offsets commit with the rows: once they say 500, every write
	// has happened, duplicates included.
	connecttest.WaitFor(t, 30*time.Second, "offsets at 500", func() bool { return e.count(t, stored) == 500 })
	e.wantRows(t, `SELECT count(*), count(DISTINCT n), min(n), max(n) FROM eo`, "500 500 0 499")
}

// A connection that breaks is a retriable error: the write is tried
// again on a new connection and the task keeps running.
func testSinkReconnects(t *testing.T, e *env) {
	e.produce(t, "recon", rec("", `{"id":1}`))
	w := e.worker(t, t.TempDir(), e.sink("recon-sink", "recon", "auto.create", "true"))
	connecttest.WaitFor(t, 20*time.Second, "the first row", func() bool { return e.count(t, `SELECT count(*) FROM recon`) == 1 })
	e.wantRows(t, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = 'runnel-connect recon-sink'`, "1")
	e.produce(t, "recon", rec("", `{"id":2}`), rec("", `{"id":3}`))
	connecttest.WaitFor(t, 20*time.Second, "the rows after the connection broke", func() bool { return e.count(t, `SELECT count(*) FROM recon`) == 3 })
	if st := connecttest.TaskStatus(t, w, "recon-sink"); st.State != connect.StateRunning {
		t.Fatalf("task %s: %s", st.State, st.Trace)
	}
}

// A value that does not fit its column fails the task, with a trace
// that names the record, the table and the column.
func testSinkBadRecordFails(t *testing.T, e *env) {
	e.exec(t, `CREATE TABLE bad (id bigint PRIMARY KEY, qty bigint)`)
	e.produce(t, "bad", rec("", `{"id":1,"qty":1}`), rec("", `{"id":2,"qty":"many"}`), rec("", `{"id":3,"qty":3}`))
	w := e.worker(t, t.TempDir(), e.sink("bad-sink", "bad", "insert.mode", "upsert", "pk.mode", "record_value", "pk.fields", "id"))
	var st connect.TaskStatus
	connecttest.WaitFor(t, 20*time.Second, "the task to fail", func() bool {
		st = connecttest.TaskStatus(t, w, "bad-sink")
		return st.State == connect.StateFailed
	})
	for _, want := range []string{"record bad-0@1", `table "bad", column "qty" (bigint)`, `"many" (string): not an integer`} {
		if !strings.Contains(st.Trace, want) {
			t.Errorf("trace lacks %q:\n%s", want, st.Trace)
		}
	}
	e.wantRows(t, `SELECT count(*) FROM bad WHERE id >= 2`, "0")
}

// With errors.tolerance=all, records the table cannot take are skipped
// (and logged); the rest are written and the task keeps running.
func testSinkBadRecordTolerated(t *testing.T, e *env) {
	e.exec(t, `CREATE TABLE tolerant (id bigint PRIMARY KEY, qty bigint)`)
	e.produce(t, "tolerant", rec("", `{"id":1,"qty":1}`), rec("", `{"id":2,"qty":"many"}`), rec("", `"not an object"`),
		rec("", `{"id":3,"qty":3,"unknown":true}`), rec("", `{"id":4,"qty":4}`))
	w := e.worker(t, t.TempDir(), e.sink("tolerant-sink", "tolerant", "insert.mode", "upsert", "pk.mode", "record_value", "pk.fields", "id",
		"errors.tolerance", "all", "errors.log.enable", "true"))
	connecttest.WaitFor(t, 20*time.Second, "rows 1 and 4", func() bool { return e.count(t, `SELECT count(*) FROM tolerant`) == 2 })
	e.produce(t, "tolerant", rec("", `{"id":5,"qty":5}`))
	connecttest.WaitFor(t, 20*time.Second, "row 5", func() bool { return e.count(t, `SELECT count(*) FROM tolerant`) == 3 })
	e.wantRows(t, `SELECT id, qty FROM tolerant ORDER BY id`, "1 1", "4 4", "5 5")
	if st := connecttest.TaskStatus(t, w, "tolerant-sink"); st.State != connect.StateRunning {
		t.Fatalf("task %s: %s", st.State, st.Trace)
	}
}

// Rules that span keys are reported on the key to change.
func testSinkValidate(t *testing.T, e *env) {
	w := e.worker(t, t.TempDir())
	for _, tc := range []struct {
		kv       []string
		key, msg string
	}{
		{[]string{"insert.mode", "upsert"}, "pk.mode", "insert.mode=upsert needs a primary key"},
		{[]string{"pk.mode", "record_value"}, "pk.fields", "pk.mode=record_value needs pk.fields"},
		{[]string{"pk.mode", "kafka", "pk.fields", "a,b"}, "pk.fields", "three pk.fields"},
		{[]string{"pk.fields", "id"}, "pk.fields", "pk.mode is none"},
		{[]string{"insert.mode", "upsert", "pk.mode", "record_value", "pk.fields", "id", "delete.enabled", "true"}, "delete.enabled", "needs pk.mode=record_key"},
		{[]string{"pk.mode", "record_key", "delete.enabled", "true"}, "delete.enabled", "needs insert.mode=upsert"},
		{[]string{"connection.url", "postgres://u:secret@host:notaport/db"}, "connection.url", "not a PostgreSQL URL"},
		{[]string{"table.name.format", ".${topic}"}, "table.name.format", "needs a table name"},
		{[]string{"insert.mode", "merge"}, "insert.mode", "String must be one of: insert, upsert"},
	} {
		infos, err := w.Herder().Validate(t.Context(), e.sink("v", "t", tc.kv...))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, c := range infos.Configs {
			if c.Definition.Name == tc.key {
				got = c.Value.Errors
			}
		}
		if len(got) == 0 || !strings.Contains(strings.Join(got, "; "), tc.msg) {
			t.Errorf("%v: errors of %s are %q, want %q", tc.kv, tc.key, got, tc.msg)
		}
		// The runtime's "Invalid value X" shows the value as given; what
		// the check adds masks the password.
		if _, ours, _ := strings.Cut(strings.Join(got, "; "), tc.msg); strings.Contains(ours, "secret") {
			t.Errorf("%v: the error shows the password: %q", tc.kv, got)
		}
	}
}

// The plugin is registered under its class and aliases.
func TestSinkRegistered(t *testing.T) {
	r := connectors.NewRegistry()
	for _, name := range []string{"io.runnel.connect.postgres.PostgresSinkConnector", "PostgresSink", "postgres-sink"} {
		p, err := r.Lookup(name)
		if err != nil || p.Type != connect.SinkPlugin {
			t.Errorf("%s: %v, %v", name, p, err)
		}
	}
}
