package postgres_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/runnel-io/runnel/connect"
	"github.com/runnel-io/runnel/connect/connectors"
	"github.com/runnel-io/runnel/connect/connecttest"
)

// source returns a PostgresSource config reading e's database.
func (e *env) source(name string, kv ...string) connect.Config {
	c := connect.Config{
		"name":             name,
		"connector.class":  "PostgresSource",
		"connection.url":   e.pg.DSN(),
		"topic.prefix":     "pg-",
		"poll.interval.ms": "50",
		"batch.max.rows":   "4",
	}
	for i := 0; i+1 < len(kv); i += 2 {
		c[kv[i]] = kv[i+1]
	}
	return c
}

// TestSource runs the source's tests on one broker and one PostgreSQL.
func TestSource(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		name string
		test func(t *testing.T, e *env)
	}{
		{"Incrementing", testSourceIncrementing},
		{"Timestamp", testSourceTimestamp},
		{"TimestampIncrementing", testSourceTimestampIncrementing},
		{"Bulk", testSourceBulk},
		{"Query", testSourceQuery},
		{"Types", testSourceTypes},
		{"TablesSpreadOverTasks", testSourceTaskConfigs},
		{"Validate", testSourceValidate},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.test(t, e) })
	}
}

// field returns the field of each record, as text.
func field(recs []map[string]any, name string) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = fmt.Sprint(r[name])
	}
	return out
}

func wantField(t *testing.T, recs []map[string]any, name string, want ...string) {
	t.Helper()
	if got := field(recs, name); !reflect.DeepEqual(got, want) {
		t.Fatalf("%s of the records: %q, want %q", name, got, want)
	}
}

func seq(from, to int) []string {
	var out []string
	for i := from; i <= to; i++ {
		out = append(out, fmt.Sprint(i))
	}
	return out
}

// Rows with a larger id arrive; a restarted worker resumes after the
// stored offset, reading nothing twice.
func testSourceIncrementing(t *testing.T, e *env) {
	e.exec(t, `CREATE TABLE inc_t (id serial PRIMARY KEY, name text)`)
	insert := func(n int) { e.exec(t, `INSERT INTO inc_t (name) SELECT 'row-' || g FROM generate_series(1, $1) g`, n) }
	insert(10)
	dir := t.TempDir()
	cfg := e.source("inc-src", "mode", "incrementing", "incrementing.column.name", "id", "table.whitelist", "inc_t")
	w := e.worker(t, dir, cfg)
	r := e.reader(t, "pg-inc_t")
	r.waitN(t, 10)
	insert(5)
	wantField(t, r.waitN(t, 15), "id", seq(1, 15)...)
	w.Close()

	insert(5)
	w = e.worker(t, dir, cfg)
	wantField(t, r.waitN(t, 20), "id", seq(1, 20)...)
	insert(1) // one more: a repeat of earlier rows would come before it
	wantField(t, r.waitN(t, 21), "id", seq(1, 21)...)

	var got string
	connecttest.WaitFor(t, 20*time.Second, "the stored offset {table: inc_t} {incrementing: 21}", func() bool {
		offs, err := w.Herder().Offsets(t.Context(), "inc-src")
		if err != nil {
			t.Fatal(err)
		}
		got = fmt.Sprint(offs)
		return got == "{[{map[table:inc_t] map[incrementing:21]}]}"
	})
}

// Rows whose timestamp moves on arrive: inserts and updates; rows that
// share a timestamp arrive whole even across polls; a restarted worker
// resumes after the stored timestamp.
func testSourceTimestamp(t *testing.T, e *env) {
	e.exec(t, `CREATE TABLE ts_t (id int, v text, updated_at timestamp NOT NULL DEFAULT clock_timestamp())`)
	e.exec(t, `INSERT INTO ts_t (id, v) VALUES (1, 'a'), (2, 'b'), (3, 'c')`)
	dir := t.TempDir()
	cfg := e.source("ts-src", "mode", "timestamp", "timestamp.column.name", "updated_at", "table.whitelist", "ts_t", "batch.max.rows", "2")
	w := e.worker(t, dir, cfg)
	r := e.reader(t, "pg-ts_t")
	wantField(t, r.waitN(t, 3), "v", "a", "b", "c")
	e.exec(t, `UPDATE ts_t SET v = 'b2', updated_at = clock_timestamp() WHERE id = 2`)
	wantField(t, r.waitN(t, 4), "v", "a", "b", "c", "b2")
	// Five rows with one timestamp, read two per poll.
	e.exec(t, `INSERT INTO ts_t (id, v, updated_at) SELECT 10 + g, 'tie', clock_timestamp() FROM generate_series(1, 5) g`)
	e.exec(t, `UPDATE ts_t SET updated_at = (SELECT max(updated_at) FROM ts_t) WHERE v = 'tie'`)
	recs := r.waitN(t, 9)
	wantField(t, recs[4:], "v", "tie", "tie", "tie", "tie", "tie")
	w.Close()

	e.exec(t, `UPDATE ts_t SET v = 'a2', updated_at = clock_timestamp() WHERE id = 1`)
	e.worker(t, dir, cfg)
	wantField(t, r.waitN(t, 10)[9:], "v", "a2")
	e.exec(t, `UPDATE ts_t SET v = 'c2', updated_at = clock_timestamp() WHERE id = 3`)
	wantField(t, r.waitN(t, 11)[9:], "v", "a2", "c2")
}

// Rows that share a timestamp are told apart by the incrementing column:
// one statement stamps them all with now().
func testSourceTimestampIncrementing(t *testing.T, e *env) {
	e.exec(t, `CREATE TABLE tsi_t (id bigserial PRIMARY KEY, v text, updated_at timestamptz NOT NULL DEFAULT now())`)
	e.exec(t, `INSERT INTO tsi_t (v) SELECT 'v' || g FROM generate_series(1, 10) g`)
	dir := t.TempDir()
	cfg := e.source("tsi-src", "mode", "timestamp+incrementing", "timestamp.column.name", "updated_at",
		"incrementing.column.name", "id", "table.whitelist", "tsi_t", "batch.max.rows", "3")
	w := e.worker(t, dir, cfg)
	r := e.reader(t, "pg-tsi_t")
	wantField(t, r.waitN(t, 10), "id", seq(1, 10)...)
	e.exec(t, `UPDATE tsi_t SET v = 'u', updated_at = now() WHERE id IN (2, 4, 6)`)
	wantField(t, r.waitN(t, 13)[10:], "id", "2", "4", "6")
	w.Close()

	e.exec(t, `INSERT INTO tsi_t (v) VALUES ('new')`)
	e.exec(t, `UPDATE tsi_t SET v = 'u2', updated_at = now() WHERE id = 1`)
	e.worker(t, dir, cfg)
	wantField(t, r.waitN(t, 15)[13:], "id", "11", "1")
	e.exec(t, `INSERT INTO tsi_t (v) VALUES ('last')`)
	wantField(t, r.waitN(t, 16)[13:], "id", "11", "1", "12")
}

// Bulk reads the whole table at every poll, without offsets.
func testSourceBulk(t *testing.T, e *env) {
	e.exec(t, `CREATE TABLE bulk_t (id int, v text)`)
	e.exec(t, `INSERT INTO bulk_t VALUES (1, 'a'), (2, 'b'), (3, 'c')`)
	w := e.worker(t, t.TempDir(), e.source("bulk-src", "mode", "bulk", "table.whitelist", "bulk_t", "poll.interval.ms", "100"))
	r := e.reader(t, "pg-bulk_t")
	wantField(t, r.waitN(t, 6)[:6], "id", "1", "2", "3", "1", "2", "3")
	e.exec(t, `INSERT INTO bulk_t VALUES (4, 'd')`)
	connecttest.WaitFor(t, 20*time.Second, "the new row", func() bool {
		return strings.Contains(fmt.Sprint(field(r.waitN(t, len(r.recs)+1), "id")), "4")
	})
	offs, err := w.Herder().Offsets(t.Context(), "bulk-src")
	if err != nil || strings.Contains(fmt.Sprint(offs), "bulk_t") {
		t.Fatalf("bulk mode stored offsets: %v, %v", offs, err)
	}
}

// A query is read like a table, filtered and ordered by the mode's
// columns; its rows go to topic.prefix.
func testSourceQuery(t *testing.T, e *env) {
	e.exec(t, `CREATE TABLE q_orders (id int PRIMARY KEY, customer int, total numeric(10, 2))`)
	e.exec(t, `CREATE TABLE q_customers (id int PRIMARY KEY, name text)`)
	e.exec(t, `INSERT INTO q_customers VALUES (1, 'ann'), (2, 'bob')`)
	e.exec(t, `INSERT INTO q_orders VALUES (1, 1, 10.5), (2, 2, 20), (3, 1, 30.25)`)
	e.worker(t, t.TempDir(), e.source("q-src", "mode", "incrementing", "incrementing.column.name", "id", "topic.prefix", "orders-with-names",
		"query", `SELECT o.id, c.name, o.total FROM q_orders o JOIN q_customers c ON c.id = o.customer`))
	r := e.reader(t, "orders-with-names")
	recs := r.waitN(t, 3)
	wantField(t, recs, "name", "ann", "bob", "ann")
	wantField(t, recs, "total", "10.50", "20.00", "30.25")
	e.exec(t, `INSERT INTO q_orders VALUES (4, 2, 1)`)
	wantField(t, r.waitN(t, 4)[3:], "name", "bob")
}

// Column types become JSON values as the package doc says.
func testSourceTypes(t *testing.T, e *env) {
	e.exec(t, `CREATE TABLE types_t (
		id bigint PRIMARY KEY, small smallint, f4 real, f8 double precision, nan double precision, num numeric(12, 3),
		b boolean, s varchar(10), ts timestamp, tstz timestamptz, d date, j jsonb, bin bytea, arr int[], tags text[],
		u uuid, iv interval, nothing text)`)
	e.exec(t, `SET TimeZone = 'America/New_York'`) // the session's zone does not matter: timestamptz is an instant
	e.exec(t, `INSERT INTO types_t VALUES (1, 2, 0.1, 2.5, 'NaN', 12.5, true, 'str', '2024-01-02 03:04:05.123456',
		'2024-01-02 03:04:05+01', '2024-02-29', '{"a": [1, "x"]}', '\x0102', '{1,2}', '{a,b}',
		'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '1 day 2 hours', NULL)`)
	e.exec(t, `RESET TimeZone`)
	check := func(name string, numeric string, want map[string]string) {
		e.worker(t, t.TempDir(), e.source(name, "mode", "incrementing", "incrementing.column.name", "id", "table.whitelist", "types_t",
			"topic.prefix", name+"-", "numeric.mapping", numeric))
		v := e.reader(t, name+"-types_t").waitN(t, 1)[0]
		for k, w := range want {
			if got := fmt.Sprintf("%T %v", v[k], v[k]); got != w {
				t.Errorf("numeric.mapping=%s: %s is %s, want %s", numeric, k, got, w)
			}
		}
	}
	want := map[string]string{
		"id": "json.Number 1", "small": "json.Number 2", "f4": "json.Number 0.1", "f8": "json.Number 2.5", "nan": "string NaN",
		"num": "string 12.500", "b": "bool true", "s": "string str",
		"ts": "string 2024-01-02T03:04:05.123456Z", "tstz": "string 2024-01-02T02:04:05Z", "d": "string 2024-02-29",
		"j": "map[string]interface {} map[a:[1 x]]", "bin": "string AQI=", "arr": "[]interface {} [1 2]", "tags": "[]interface {} [a b]",
		"u": "string a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "iv": "string 1 day 02:00:00", "nothing": "<nil> <nil>",
	}
	check("types", "none", want)
	want["num"] = "json.Number 12.5"
	check("types-fit", "best_fit", want)
}

// TaskConfigs spreads the tables over tasks; without a whitelist it lists
// the tables of the search_path but the blacklist.
func testSourceTaskConfigs(t *testing.T, e *env) {
	p, err := connectors.NewRegistry().Lookup("PostgresSource")
	if err != nil {
		t.Fatal(err)
	}
	tables := func(cfg connect.Config, max int) []string {
		t.Helper()
		tasks, err := p.TaskConfigs(cfg, max)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, c := range tasks {
			out = append(out, c["tables"])
		}
		return out
	}
	cfg := e.source("spread", "mode", "bulk", "table.whitelist", "a,b,c,d,e")
	if got := tables(cfg, 2); !reflect.DeepEqual(got, []string{"a,b", "c,d,e"}) {
		t.Errorf("5 tables over 2 tasks: %q", got)
	}
	if got := tables(cfg, 9); len(got) != 5 || got[4] != "e" {
		t.Errorf("5 tables over at most 9 tasks: %q", got)
	}
	e.exec(t, `CREATE SCHEMA other`)
	e.exec(t, `CREATE TABLE other.hidden (id int)`) // not in the search_path
	cfg = e.source("spread", "mode", "bulk", "table.blacklist", "bulk_t,q_orders,q_customers")
	got := strings.Join(tables(cfg, 1), ",")
	if !strings.Contains(got, "inc_t") || strings.Contains(got, "bulk_t") || strings.Contains(got, "hidden") || strings.Contains(got, "q_orders") {
		t.Errorf("tables listed: %q", got)
	}
}

// Rules that span keys are reported on the key to change.
func testSourceValidate(t *testing.T, e *env) {
	w := e.worker(t, t.TempDir())
	for _, tc := range []struct {
		kv       []string
		key, msg string
	}{
		{[]string{"mode", "incrementing"}, "incrementing.column.name", "needs incrementing.column.name"},
		{[]string{"mode", "timestamp+incrementing", "incrementing.column.name", "id"}, "timestamp.column.name", "needs timestamp.column.name"},
		{[]string{"mode", "bulk", "query", "SELECT 1", "table.whitelist", "t"}, "query", "mutually exclusive"},
		{[]string{"mode", "bulk", "query", "SELECT 1", "topic.prefix", ""}, "topic.prefix", "must be set"},
		{[]string{"mode", "bulk", "table.whitelist", "a", "table.blacklist", "b"}, "table.blacklist", "mutually exclusive"},
		{[]string{"mode", "sometimes"}, "mode", "String must be one of"},
		{[]string{"mode", "bulk", "db.timezone", "Mars/Olympus"}, "db.timezone", "not a time zone"},
	} {
		infos, err := w.Herder().Validate(t.Context(), e.source("v", tc.kv...))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, c := range infos.Configs {
			if c.Definition.Name == tc.key {
				got = c.Value.Errors
			}
		}
		if !strings.Contains(strings.Join(got, "; "), tc.msg) {
			t.Errorf("%v: errors of %s are %q, want %q", tc.kv, tc.key, got, tc.msg)
		}
	}
}
