package pgwrite

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/runnel-io/runnel/internal/pgtest"
)

// TestWriter runs every test against one server, each subtest in a schema
// of its own.
func TestWriter(t *testing.T) {
	srv := pgtest.Start(t)
	tests := map[string]func(t *testing.T, conn *pgx.Conn){
		"Insert":              testInsert,
		"InsertDuplicateKey":  testInsertDuplicateKey,
		"Upsert":              testUpsert,
		"UpsertPartialFields": testUpsertPartialFields,
		"Tombstones":          testTombstones,
		"TombstonesIgnored":   testTombstonesIgnored,
		"CompositeKey":        testCompositeKey,
		"AutoEvolve":          testAutoEvolve,
		"NoAutoCreate":        testNoAutoCreate,
		"WrongType":           testWrongType,
		"Offsets":             testOffsets,
		"TableChangedUnderIt": testTableChangedUnderIt,
		"QuotedNames":         testQuotedNames,
	}
	for name, test := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			conn := srv.Connect(t)
			schema := strings.ToLower(name)
			exec(t, conn, `CREATE SCHEMA `+schema)
			exec(t, conn, `SET search_path = `+schema)
			test(t, conn)
		})
	}
}

func testInsert(t *testing.T, conn *pgx.Conn) {
	w := newWriter(t, Config{Table: "orders", PKFields: []string{"id"}, AutoCreate: true})
	write(t, w, conn,
		Row{Key: m("id", 1), Value: m("qty", 2, "price", 1.5, "paid", true, "note", "first", "tags", []any{"a", "b"})},
		Row{Key: m("id", 2), Value: m("qty", 3, "price", 2, "paid", false, "note", nil, "tags", map[string]any{"x": 1})},
	)
	wantColumns(t, conn, "orders", "id bigint NO, note text YES, paid boolean YES, price double precision YES, qty bigint YES, tags jsonb YES")
	wantRows(t, conn, `SELECT id, qty, price, paid, note, tags::text FROM orders ORDER BY id`,
		`1 2 1.5 true first ["a", "b"]`,
		`2 3 2 false <nil> {"x": 1}`)
	// COPY appends: a second batch adds rows.
	write(t, w, conn, Row{Key: m("id", 3), Value: m("qty", 4)})
	wantRows(t, conn, `SELECT id, qty, note FROM orders WHERE id = 3`, `3 4 <nil>`)
}

func testInsertDuplicateKey(t *testing.T, conn *pgx.Conn) {
	w := newWriter(t, Config{Table: "t", PKFields: []string{"id"}, AutoCreate: true})
	write(t, w, conn, Row{Key: m("id", 1), Value: m("v", "a")})
	err := w.Write(t.Context(), conn, []Row{{Key: m("id", 2)}, {Key: m("id", 1), Value: m("v", "b")}})
	if err == nil || !strings.Contains(err.Error(), `"t"`) || !strings.Contains(err.Error(), "duplicate key") {
		t.Fatalf("inserting an existing key: %v", err)
	}
	wantRows(t, conn, `SELECT id, v FROM t`, `1 a`) // the whole batch failed
}

func testUpsert(t *testing.T, conn *pgx.Conn) {
	eachUpsert(t, func(t *testing.T, upsert upsertFunc, table string) {
		w := newWriter(t, Config{Table: table, Mode: Upsert, PKFields: []string{"id"}, AutoCreate: true})
		upsertVia(t, w, conn, upsert,
			Row{Key: m("id", 1), Value: m("v", "a", "n", 1)},
			Row{Key: m("id", 2), Value: m("v", "b", "n", 2)},
			Row{Key: m("id", 1), Value: m("v", "c", "n", 3)}, // last of id 1 wins
		)
		wantRows(t, conn, `SELECT id, v, n FROM `+table+` ORDER BY id`, `1 c 3`, `2 b 2`)
		upsertVia(t, w, conn, upsert,
			Row{Key: m("id", 2), Value: m("v", "d", "n", 4)},
			Row{Key: m("id", 3), Value: m("v", "e", "n", 5)},
			Row{Key: m("id", 2), Value: m("v", "f", "n", 6)},
		)
		wantRows(t, conn, `SELECT id, v, n FROM `+table+` ORDER BY id`, `1 c 3`, `2 f 6`, `3 e 5`)
	})
}

// A row sets the fields it has; the table's other columns keep their value.
func testUpsertPartialFields(t *testing.T, conn *pgx.Conn) {
	eachUpsert(t, func(t *testing.T, upsert upsertFunc, table string) {
		w := newWriter(t, Config{Table: table, Mode: Upsert, PKFields: []string{"id"}, AutoCreate: true})
		upsertVia(t, w, conn, upsert, Row{Key: m("id", 1), Value: m("a", "a1", "b", "b1")}, Row{Key: m("id", 2), Value: m("a", "a2", "b", "b2")})
		upsertVia(t, w, conn, upsert,
			Row{Key: m("id", 1), Value: m("a", "A1")},
			Row{Key: m("id", 2), Value: m("b", nil)},
			Row{Key: m("id", 3)},
		)
		wantRows(t, conn, `SELECT id, a, b FROM `+table+` ORDER BY id`, `1 A1 b1`, `2 a2 <nil>`, `3 <nil> <nil>`)
	})
}

func testTombstones(t *testing.T, conn *pgx.Conn) {
	eachUpsert(t, func(t *testing.T, upsert upsertFunc, table string) {
		w := newWriter(t, Config{Table: table, Mode: Upsert, PKFields: []string{"id"}, AutoCreate: true, DeleteEnabled: true})
		upsertVia(t, w, conn, upsert, Row{Key: m("id", 1), Value: m("v", "a")}, Row{Key: m("id", 2), Value: m("v", "b")},
			Row{Key: m("id", 3), Value: m("v", "c")})
		upsertVia(t, w, conn, upsert,
			Row{Key: m("id", 1), Tombstone: true},     // deletes 1
			Row{Key: m("id", 4), Value: m("v", "d")},  // 4 is inserted...
			Row{Key: m("id", 4), Tombstone: true},     // ...and deleted: never there
			Row{Key: m("id", 2), Tombstone: true},     // 2 is deleted...
			Row{Key: m("id", 2), Value: m("v", "B")},  // ...and written again
			Row{Key: m("id", 9), Tombstone: true},     // deleting a missing row is fine
			Row{Key: m("id", 3.0)},                    // 3.0 is key 3...
			Row{Key: m("id", 3), Value: m("v", "CC")}, // ...and this its last record
		)
		wantRows(t, conn, `SELECT id, v FROM `+table+` ORDER BY id`, `2 B`, `3 CC`)
	})
	// A batch of tombstones only, before the table exists, does nothing.
	w := newWriter(t, Config{Table: "never", Mode: Upsert, PKFields: []string{"id"}, AutoCreate: true, DeleteEnabled: true})
	write(t, w, conn, Row{Key: m("id", 1), Tombstone: true})
	wantRows(t, conn, `SELECT count(*) FROM pg_tables WHERE tablename = 'never'`, `0`)
}

func testTombstonesIgnored(t *testing.T, conn *pgx.Conn) {
	w := newWriter(t, Config{Table: "t", Mode: Upsert, PKFields: []string{"id"}, AutoCreate: true})
	write(t, w, conn, Row{Key: m("id", 1), Value: m("v", "a")})
	write(t, w, conn,
		Row{Key: m("id", 1), Tombstone: true},
		Row{Key: m("id", 2), Value: m("v", "b")},
		Row{Key: m("id", 2), Tombstone: true}, // ignored: 2 stays
	)
	wantRows(t, conn, `SELECT id, v FROM t ORDER BY id`, `1 a`, `2 b`)
}

func testCompositeKey(t *testing.T, conn *pgx.Conn) {
	w := newWriter(t, Config{Table: "t", Mode: Upsert, PKFields: []string{"region", "id"}, AutoCreate: true, DeleteEnabled: true})
	write(t, w, conn,
		Row{Key: m("region", "eu", "id", 1), Value: m("v", 1)},
		Row{Key: m("region", "us", "id", 1), Value: m("v", 2)},
		Row{Key: m("region", "eu", "id", 2), Value: m("v", 3)},
	)
	wantColumns(t, conn, "t", "region text NO, id bigint NO, v bigint YES")
	write(t, w, conn,
		Row{Key: m("region", "eu", "id", 1), Tombstone: true},
		Row{Key: m("region", "us", "id", 1), Value: m("v", 20)},
	)
	wantRows(t, conn, `SELECT region, id, v FROM t ORDER BY region, id`, `eu 2 3`, `us 1 20`)
	wantRows(t, conn, `SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = 't'::regclass`,
		`PRIMARY KEY (region, id)`)

	err := w.Write(t.Context(), conn, []Row{{Key: m("region", "eu"), Value: m("v", 1)}})
	if !errors.Is(err, ErrMissingKey) || !strings.Contains(err.Error(), `"id"`) {
		t.Fatalf("a record without id: %v, want ErrMissingKey naming id", err)
	}
}

func testAutoEvolve(t *testing.T, conn *pgx.Conn) {
	w := newWriter(t, Config{Table: "t", Mode: Upsert, PKFields: []string{"id"}, AutoCreate: true, AutoEvolve: true})
	write(t, w, conn, Row{Key: m("id", 1), Value: m("a", "x", "later", nil)})
	wantColumns(t, conn, "t", "id bigint NO, a text YES") // "later" was only null
	write(t, w, conn,
		Row{Key: m("id", 2), Value: m("a", "y", "b", 1, "later", nil)},
		Row{Key: m("id", 3), Value: m("a", "z", "b", 2.5, "c", map[string]any{"k": []any{"v"}})},
	)
	wantColumns(t, conn, "t", "id bigint NO, a text YES, b double precision YES, c jsonb YES")
	wantRows(t, conn, `SELECT id, a, b, c::text FROM t ORDER BY id`, `1 x <nil> <nil>`, `2 y 1 <nil>`, `3 z 2.5 {"k": ["v"]}`)

	// Conflicting types of a new field.
	err := w.Write(t.Context(), conn, []Row{{Key: m("id", 4), Value: m("d", "s")}, {Key: m("id", 5), Value: m("d", true)}})
	if !errors.Is(err, ErrWrongType) || !strings.Contains(err.Error(), `"d"`) {
		t.Fatalf("a new field with text and boolean values: %v, want ErrWrongType naming d", err)
	}

	// Without auto.evolve a new field fails the batch.
	fixed := newWriter(t, Config{Table: "t", Mode: Upsert, PKFields: []string{"id"}})
	err = fixed.Write(t.Context(), conn, []Row{{Key: m("id", 1), Value: m("a", "ok")}, {Key: m("id", 2), Value: m("e", 1)}})
	if !errors.Is(err, ErrNoColumn) || !strings.Contains(err.Error(), `"t" has no column "e"`) {
		t.Fatalf("a new field without auto.evolve: %v, want ErrNoColumn naming t and e", err)
	}
	if re := (*RecordError)(nil); !errors.As(err, &re) || re.Index != 1 {
		t.Fatalf("a new field without auto.evolve: %v is not a RecordError of record 1", err)
	}
	// A new field that is null everywhere needs no column.
	write(t, fixed, conn, Row{Key: m("id", 1), Value: m("e", nil, "a", "xx")})
	wantRows(t, conn, `SELECT a FROM t WHERE id = 1`, `xx`)
}

func testNoAutoCreate(t *testing.T, conn *pgx.Conn) {
	w := newWriter(t, Config{Table: "missing"})
	err := w.Write(t.Context(), conn, []Row{{Value: m("a", 1)}})
	if !errors.Is(err, ErrNoTable) || !strings.Contains(err.Error(), `"missing"`) {
		t.Fatalf("writing a missing table: %v, want ErrNoTable naming it", err)
	}
}

func testWrongType(t *testing.T, conn *pgx.Conn) {
	exec(t, conn, `CREATE TABLE t (id integer PRIMARY KEY, qty bigint, price real, ok boolean, name varchar(10), doc json, at timestamptz)`)
	w := newWriter(t, Config{Table: "t", Mode: Upsert, PKFields: []string{"id"}})
	for _, tc := range []struct {
		field string
		value any
		want  string
	}{
		{"qty", "12", `column "qty" (bigint), record 1: "12" (string): not an integer`},
		{"qty", 1.5, `column "qty" (bigint), record 1: 1.5 (float64): 1.5 is not an integer`},
		{"price", "1", `column "price" (real), record 1: "1" (string): not a number`},
		{"ok", int64(1), `column "ok" (boolean), record 1: 1 (int64): not a boolean`},
		{"name", int64(7), `column "name" (character varying(10)), record 1: 7 (int64): not a string`},
		{"at", map[string]any{}, `column "at" (timestamp with time zone), record 1: map[string]interface {}{} (map[string]interface {}): not a scalar`},
	} {
		err := w.Write(t.Context(), conn, []Row{{Key: m("id", 1)}, {Key: m("id", 2), Value: map[string]any{tc.field: tc.value}}})
		if !errors.Is(err, ErrWrongType) || !strings.Contains(err.Error(), `table "t", `+tc.want) {
			t.Errorf("%s = %#v: got %v\nwant ErrWrongType with %q", tc.field, tc.value, err, tc.want)
		}
		if re := (*RecordError)(nil); !errors.As(err, &re) || re.Index != 1 {
			t.Errorf("%s = %#v: %v is not a RecordError of record 1", tc.field, tc.value, err)
		}
	}
	err := w.Write(t.Context(), conn, []Row{{Key: m("id", 1<<40)}})
	if !errors.Is(err, ErrWrongType) || !strings.Contains(err.Error(), `column "id" (integer), record 0: 1099511627776 (int64): 1099511627776 is out of range`) {
		t.Errorf("id out of range: %v", err)
	}
	wantRows(t, conn, `SELECT count(*) FROM t`, `0`)

	// What fits is written: integral floats to integers, integers to
	// floats, anything to json, strings parsed by the type.
	write(t, w, conn, Row{Key: m("id", 2.0), Value: m("qty", 3.0, "price", 4, "ok", true, "name", "n",
		"doc", "just a string", "at", "2024-01-02T03:04:05Z")})
	wantRows(t, conn, `SELECT id, qty, price, ok, name, doc::text, to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') FROM t`,
		`2 3 4 true n "just a string" 2024-01-02 03:04:05`)
}

func testOffsets(t *testing.T, conn *pgx.Conn) {
	ctx := t.Context()
	if got, err := ReadOffsets(ctx, conn, "sink"); err != nil || len(got) != 0 {
		t.Fatalf("offsets before any were stored: %v, %v", got, err)
	}
	w := newWriter(t, Config{Table: "t", Mode: Upsert, PKFields: []string{"id"}, AutoCreate: true})
	err := w.WriteWithOffsets(ctx, conn, []Row{{Key: m("id", 1), Value: m("n", 1)}}, "sink",
		[]Offset{{Topic: "b", Partition: 0, Next: 11}, {Topic: "a", Partition: 1, Next: 5}})
	if err != nil {
		t.Fatal(err)
	}
	wantOffsets(t, conn, "sink", Offset{"a", 1, 5}, Offset{"b", 0, 11})

	// A failed batch stores neither its rows nor its offsets.
	err = w.WriteWithOffsets(ctx, conn, []Row{{Key: m("id", 2), Value: m("n", 2)}, {Key: m("id", 3), Value: m("n", "three")}},
		"sink", []Offset{{Topic: "a", Partition: 1, Next: 7}})
	if !errors.Is(err, ErrWrongType) {
		t.Fatalf("a batch with a bad value: %v, want ErrWrongType", err)
	}
	wantOffsets(t, conn, "sink", Offset{"a", 1, 5}, Offset{"b", 0, 11})
	wantRows(t, conn, `SELECT id, n FROM t`, `1 1`)

	// Offsets that fail to store (here: a transaction that cannot commit)
	// take the rows with them.
	exec(t, conn, `CREATE FUNCTION no_more() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'no more offsets'; END $$`)
	exec(t, conn, `CREATE CONSTRAINT TRIGGER no_more AFTER INSERT OR UPDATE ON `+OffsetsTable+` DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION no_more()`)
	err = w.WriteWithOffsets(ctx, conn, []Row{{Key: m("id", 4), Value: m("n", 4)}}, "sink", []Offset{{Topic: "a", Partition: 1, Next: 8}})
	if err == nil || !strings.Contains(err.Error(), "no more offsets") {
		t.Fatalf("a commit that fails: %v", err)
	}
	wantRows(t, conn, `SELECT id, n FROM t`, `1 1`)
	exec(t, conn, `DROP TRIGGER no_more ON `+OffsetsTable)

	// Connectors are apart; a later batch moves the offsets on.
	err = w.WriteWithOffsets(ctx, conn, []Row{{Key: m("id", 2), Value: m("n", 2)}}, "other", []Offset{{Topic: "a", Partition: 1, Next: 1}})
	if err != nil {
		t.Fatal(err)
	}
	err = w.WriteWithOffsets(ctx, conn, nil, "sink", []Offset{{Topic: "a", Partition: 1, Next: 9}})
	if err != nil {
		t.Fatal(err)
	}
	wantOffsets(t, conn, "sink", Offset{"a", 1, 9}, Offset{"b", 0, 11})
	wantOffsets(t, conn, "other", Offset{"a", 1, 1})
}

// After a failure the Writer reads the table again: here the table was
// dropped and created again with another column behind its back.
func testTableChangedUnderIt(t *testing.T, conn *pgx.Conn) {
	w := newWriter(t, Config{Table: "t", Mode: Upsert, PKFields: []string{"id"}, AutoCreate: true, AutoEvolve: true})
	write(t, w, conn, Row{Key: m("id", 1), Value: m("a", "x")})
	exec(t, conn, `DROP TABLE t`)
	exec(t, conn, `CREATE TABLE t (id bigint PRIMARY KEY, b text)`)
	if err := w.Write(t.Context(), conn, []Row{{Key: m("id", 2), Value: m("a", "y")}}); err == nil {
		t.Fatal("writing column a, which is gone, succeeded")
	}
	write(t, w, conn, Row{Key: m("id", 2), Value: m("a", "y")})
	wantRows(t, conn, `SELECT id, a, b FROM t`, `2 y <nil>`)
}

func testQuotedNames(t *testing.T, conn *pgx.Conn) {
	exec(t, conn, `CREATE SCHEMA "Other Schema"`)
	w := newWriter(t, Config{Schema: "Other Schema", Table: `We"ird Table`, Mode: Upsert, PKFields: []string{"Key Col"},
		AutoCreate: true, AutoEvolve: true, DeleteEnabled: true})
	write(t, w, conn, Row{Key: m("Key Col", "k1"), Value: m(`va"l`, 1, "select", true)})
	write(t, w, conn, Row{Key: m("Key Col", "k2"), Value: m("new; DROP TABLE x", "y")}, Row{Key: m("Key Col", "k1"), Tombstone: true})
	wantRows(t, conn, `SELECT "Key Col", "va""l", "select", "new; DROP TABLE x" FROM "Other Schema"."We""ird Table"`, `k2 <nil> <nil> y`)
}

func newWriter(t *testing.T, cfg Config) *Writer {
	t.Helper()
	w, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func write(t *testing.T, w *Writer, conn *pgx.Conn, rows ...Row) {
	t.Helper()
	if err := w.Write(t.Context(), conn, rows); err != nil {
		t.Fatal(err)
	}
}

func upsertVia(t *testing.T, w *Writer, conn *pgx.Conn, upsert upsertFunc, rows ...Row) {
	t.Helper()
	if err := w.writeVia(t.Context(), conn, rows, upsert); err != nil {
		t.Fatal(err)
	}
}

func exec(t *testing.T, conn *pgx.Conn, sql string) {
	t.Helper()
	if _, err := conn.Exec(t.Context(), sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// wantRows checks the rows a query returns, each as its values printed
// with %v and joined by spaces.
func wantRows(t *testing.T, conn *pgx.Conn, sql string, want ...string) {
	t.Helper()
	rows, err := conn.Query(t.Context(), sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (string, error) {
		vals, err := r.Values()
		s := make([]string, len(vals))
		for i, v := range vals {
			s[i] = fmt.Sprint(v)
		}
		return strings.Join(s, " "), err
	})
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	if !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want) == 0) {
		t.Fatalf("%s:\ngot  %q\nwant %q", sql, got, want)
	}
}

// wantColumns checks a table's columns: name, type, nullable.
func wantColumns(t *testing.T, conn *pgx.Conn, table, want string) {
	t.Helper()
	var got string
	err := conn.QueryRow(t.Context(), `
		SELECT string_agg(column_name || ' ' || data_type || ' ' || is_nullable, ', ' ORDER BY ordinal_position)
		FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1`, table).Scan(&got)
	if err != nil || got != want {
		t.Fatalf("columns of %s: %q, %v\nwant %q", table, got, err, want)
	}
}

func wantOffsets(t *testing.T, conn *pgx.Conn, connector string, want ...Offset) {
	t.Helper()
	got, err := ReadOffsets(t.Context(), conn, connector)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("offsets of %s: %v, %v; want %v", connector, got, err, want)
	}
}

// m builds a field map from name, value pairs; Go ints become int64, as
// JSON decoding gives.
func m(kv ...any) map[string]any {
	fields := map[string]any{}
	for i := 0; i < len(kv); i += 2 {
		v := kv[i+1]
		if n, ok := v.(int); ok {
			v = int64(n)
		}
		fields[kv[i].(string)] = v
	}
	return fields
}
