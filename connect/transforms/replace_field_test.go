package transforms

import (
	"testing"

	"github.com/runnel-io/runnel/connect"
)

func TestReplaceField(t *testing.T) {
	value := map[string]any{"a": int64(1), "b": "x", "c": true, "d": nil}
	s := structSchema("a", int32Schema, "b", strSchema, "c", &connect.Schema{Type: connect.Boolean}, "d", optStr)
	for _, tc := range []struct {
		name   string
		cfg    connect.Config
		want   map[string]any
		schema *connect.Schema
	}{
		{"exclude", connect.Config{"exclude": "b,zz"},
			map[string]any{"a": int64(1), "c": true, "d": nil},
			structSchema("a", int32Schema, "c", &connect.Schema{Type: connect.Boolean}, "d", optStr)},
		{"include", connect.Config{"include": "c, a"},
			map[string]any{"a": int64(1), "c": true},
			structSchema("a", int32Schema, "c", &connect.Schema{Type: connect.Boolean})},
		{"exclude wins", connect.Config{"include": "a,b", "exclude": "a"},
			map[string]any{"b": "x"}, structSchema("b", strSchema)},
		{"renames", connect.Config{"include": "a,b", "renames": "a:id, b:name"},
			map[string]any{"id": int64(1), "name": "x"}, structSchema("id", int32Schema, "name", strSchema)},
		{"a swap", connect.Config{"include": "a,b", "renames": "a:b,b:a"},
			map[string]any{"b": int64(1), "a": "x"}, structSchema("b", int32Schema, "a", strSchema)},
		{"deprecated whitelist", connect.Config{"whitelist": "a"}, map[string]any{"a": int64(1)}, structSchema("a", int32Schema)},
		{"deprecated blacklist", connect.Config{"blacklist": "a,b,c"}, map[string]any{"d": nil}, structSchema("d", optStr)},
		{"include over whitelist", connect.Config{"include": "b", "whitelist": "a"}, map[string]any{"b": "x"}, structSchema("b", strSchema)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runCases(t, newTransform(t, "ReplaceField$Value", tc.cfg), []transformCase{
				{name: "schemaless", in: connect.Record{Value: value}, want: connect.Record{Value: tc.want}},
				{name: "with schema", in: connect.Record{Value: value, ValueSchema: s}, want: connect.Record{Value: tc.want, ValueSchema: tc.schema}},
			})
		})
	}

	runCases(t, newTransform(t, "ReplaceField$Key", connect.Config{"renames": "a:b"}), []transformCase{
		{name: "key", in: connect.Record{Key: map[string]any{"a": 1}, Value: "v"}, want: connect.Record{Key: map[string]any{"b": 1}, Value: "v"}},
		{name: "tombstone key", in: connect.Record{Value: "v"}, want: connect.Record{Value: "v"}},
		{name: "not a map", in: connect.Record{Key: []any{}},
			err: "Only Map objects supported in absence of schema for [field replacement], found: []any"},
		{name: "a rename onto a kept field", in: connect.Record{Key: map[string]any{"a": 1, "b": 2}, KeySchema: structSchema("a", int32Schema, "b", int32Schema)},
			err: "Cannot create field because of field name duplication b"},
	})
}

func TestReplaceFieldConfig(t *testing.T) {
	p, _ := registry(t).Lookup("ReplaceField$Value")
	for _, bad := range []string{"a", "a:", ":b", "a:b:c", "a:b,c"} {
		_, errs := p.Config.Parse(connect.Config{"renames": bad})
		if len(errs) != 1 || errs[0].Key != "renames" {
			t.Errorf("renames=%q: errors %v, want one on renames", bad, errs)
		}
	}
	if _, errs := p.Config.Parse(connect.Config{"renames": "a:b, c:d"}); len(errs) != 0 {
		t.Errorf("renames=a:b, c:d: %v", errs)
	}
}
