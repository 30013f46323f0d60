package transforms

import (
	"testing"
	"time"

	"github.com/runnel-io/runnel/connect"
)

func TestInsertField(t *testing.T) {
	ts := time.UnixMilli(1714564800123)
	meta := connect.Record{Topic: "orders", Partition: 3, Offset: 42, Timestamp: ts}
	with := func(r connect.Record, key any, ks *connect.Schema, v any, vs *connect.Schema) connect.Record {
		r.Key, r.KeySchema, r.Value, r.ValueSchema = key, ks, v, vs
		return r
	}
	all := connect.Config{
		"topic.field": "topic", "partition.field": "part?", "offset.field": "off!",
		"timestamp.field": "ts!", "static.field": "src", "static.value": "db1",
	}
	in := structSchema("id", int32Schema)
	out := structSchema("id", int32Schema,
		"topic", optStr,
		"part", &connect.Schema{Type: connect.Int32, Optional: true},
		"off", &connect.Schema{Type: connect.Int64},
		"ts", &connect.Schema{Type: connect.Int64, Name: "org.apache.kafka.connect.data.Timestamp", Version: 1},
		"src", optStr)
	inserted := map[string]any{"id": int64(1), "topic": "orders", "part": int64(3), "off": int64(42), "ts": int64(1714564800123), "src": "db1"}

	runCases(t, newTransform(t, "InsertField$Value", all), []transformCase{
		{name: "schemaless",
			in:   with(meta, "k", nil, map[string]any{"id": int64(1)}, nil),
			want: with(meta, "k", nil, inserted, nil)},
		{name: "with schema",
			in:   with(meta, "k", strSchema, map[string]any{"id": int64(1)}, in),
			want: with(meta, "k", strSchema, inserted, out)},
		{name: "a tombstone passes",
			in:   with(meta, "k", nil, nil, in),
			want: with(meta, "k", nil, nil, in)},
		{name: "not a map", in: with(meta, nil, nil, "text", nil),
			err: "Only Map objects supported in absence of schema for [field insertion], found: string"},
		{name: "a struct schema with a string", in: with(meta, nil, nil, "text", in),
			err: "Only Struct objects supported for [field insertion], found: string"},
		{name: "not a struct schema", in: with(meta, nil, nil, int64(1), int32Schema),
			err: "Only Struct objects supported for [field insertion], found a value of schema type int32"},
		{name: "a field the schema has", in: with(meta, nil, nil, map[string]any{"topic": "x"}, structSchema("topic", strSchema)),
			err: "Cannot create field because of field name duplication topic"},
		{name: "a required timestamp missing", in: with(connect.Record{Topic: "t"}, nil, nil, map[string]any{"id": int64(1)}, in),
			err: "field ts is required but the record has no timestamp"},
	})

	// Without a timestamp the field is left out, or null with a schema.
	runCases(t, newTransform(t, "InsertField$Value", connect.Config{"timestamp.field": "ts"}), []transformCase{
		{name: "schemaless, no timestamp",
			in:   connect.Record{Value: map[string]any{"id": int64(1)}},
			want: connect.Record{Value: map[string]any{"id": int64(1)}}},
		{name: "with schema, no timestamp",
			in: connect.Record{Value: map[string]any{"id": int64(1)}, ValueSchema: in},
			want: connect.Record{Value: map[string]any{"id": int64(1), "ts": nil}, ValueSchema: structSchema("id", int32Schema,
				"ts", &connect.Schema{Type: connect.Int64, Optional: true, Name: "org.apache.kafka.connect.data.Timestamp", Version: 1})}},
	})

	runCases(t, newTransform(t, "org.apache.kafka.connect.transforms.InsertField$Key", connect.Config{"topic.field": "t", "static.field": "s"}), []transformCase{
		{name: "key",
			in:   connect.Record{Topic: "x", Key: map[string]any{}, Value: "v"},
			want: connect.Record{Topic: "x", Key: map[string]any{"t": "x", "s": ""}, Value: "v"}},
	})
	runCases(t, newTransform(t, "InsertField$Value", nil), []transformCase{
		{name: "nothing to insert", in: connect.Record{Value: "text"}, want: connect.Record{Value: "text"}},
	})
}

func TestInsertFieldBuildsASchemaOnce(t *testing.T) {
	tr := newTransform(t, "InsertField$Value", connect.Config{"topic.field": "topic"})
	s := structSchema("id", int32Schema)
	var got []*connect.Schema
	for range 3 {
		r := connect.Record{Value: map[string]any{"id": int64(1)}, ValueSchema: s}
		if _, err := tr.Apply(&r); err != nil {
			t.Fatal(err)
		}
		got = append(got, r.ValueSchema)
	}
	if got[0] != got[1] || got[1] != got[2] || got[0] == s {
		t.Errorf("schemas %p %p %p from %p; want one new schema", got[0], got[1], got[2], s)
	}
	if len(s.Fields) != 1 {
		t.Errorf("the input schema changed: %v", s.Fields)
	}
}

func TestParseInsertionSpec(t *testing.T) {
	for in, want := range map[string]insertionSpec{
		"":     {},
		" ":    {},
		"a":    {name: "a", optional: true, set: true},
		"a?":   {name: "a", optional: true, set: true},
		"a!":   {name: "a", optional: false, set: true},
		" b! ": {name: "b", optional: false, set: true},
	} {
		if got := parseInsertionSpec(in); got != want {
			t.Errorf("parseInsertionSpec(%q) = %+v, want %+v", in, got, want)
		}
	}
}
