package transforms

import (
	"reflect"
	"testing"

	"github.com/runnel-io/runnel/connect"
)

func TestExtractField(t *testing.T) {
	addr := structSchema("city", strSchema, "geo.zone", optStr)
	s := structSchema("id", int32Schema, "addr", addr)
	value := map[string]any{"id": int64(1), "addr": map[string]any{"city": "Oslo", "geo.zone": "n"}}
	runCases(t, newTransform(t, "ExtractField$Key", connect.Config{"field": "id"}), []transformCase{
		{name: "schemaless", in: connect.Record{Key: value, Value: "v"}, want: connect.Record{Key: int64(1), Value: "v"}},
		{name: "with schema", in: connect.Record{Key: value, KeySchema: s}, want: connect.Record{Key: int64(1), KeySchema: int32Schema}},
		{name: "missing field", in: connect.Record{Key: map[string]any{}}, want: connect.Record{}},
		{name: "nil", in: connect.Record{Value: "v"}, want: connect.Record{Value: "v"}},
		{name: "nil with schema", in: connect.Record{KeySchema: s}, want: connect.Record{KeySchema: int32Schema}},
		{name: "not a map", in: connect.Record{Key: "k"}, err: "Only Map objects supported in absence of schema for [field extraction], found: string"},
		{name: "unknown field", in: connect.Record{Key: map[string]any{}, KeySchema: structSchema("x", strSchema)}, err: "Unknown field: id"},
		{name: "not a struct", in: connect.Record{Key: int64(1), KeySchema: int32Schema},
			err: "Only Struct objects supported for [field extraction], found a value of schema type int32"},
	})
	runCases(t, newTransform(t, "ExtractField$Value", connect.Config{"field": "addr.`geo.zone`", "field.syntax.version": "V2"}), []transformCase{
		{name: "nested", in: connect.Record{Value: value}, want: connect.Record{Value: "n"}},
		{name: "nested with schema", in: connect.Record{Value: value, ValueSchema: s}, want: connect.Record{Value: "n", ValueSchema: optStr}},
		{name: "missing parent", in: connect.Record{Value: map[string]any{"addr": "x"}}, want: connect.Record{}},
		{name: "unknown nested field", in: connect.Record{Value: value, ValueSchema: structSchema("addr", structSchema())}, err: "Unknown field: addr.geo.zone"},
	})
	// With V1 a dot is part of the name.
	runCases(t, newTransform(t, "ExtractField$Value", connect.Config{"field": "a.b"}), []transformCase{
		{name: "V1", in: connect.Record{Value: map[string]any{"a.b": 1, "a": map[string]any{"b": 2}}}, want: connect.Record{Value: 1}},
	})
}

func TestParseFieldPath(t *testing.T) {
	for in, want := range map[string][]string{
		"a":       {"a"},
		"a.b.c":   {"a", "b", "c"},
		"`a.b`.c": {"a.b", "c"},
		"a.`b.c`": {"a", "b.c"},
		"`a\\`b`": {"a`b"},
		"a`b.c":   {"a`b", "c"},
		"`a.b":    nil,
		"a..b":    nil,
		".a":      nil,
	} {
		got, err := parseFieldPath(in)
		if want == nil {
			if err == nil {
				t.Errorf("parseFieldPath(%q) = %q, want an error", in, got)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("parseFieldPath(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	p, _ := registry(t).Lookup("ExtractField$Value")
	if _, err := p.NewTransformation(connect.Config{"field": "a..b", "field.syntax.version": "v2"}); err == nil {
		t.Error("a..b was accepted")
	}
	if _, errs := p.Config.Parse(connect.Config{"field": "a", "field.syntax.version": "V3"}); len(errs) != 1 {
		t.Errorf("field.syntax.version=V3: %v", errs)
	}
}
