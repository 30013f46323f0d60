package transforms

import (
	"testing"

	"github.com/runnel-io/runnel/connect"
)

func TestValueToKey(t *testing.T) {
	s := structSchema("id", int32Schema, "name", optStr, "x", strSchema)
	value := map[string]any{"id": int64(1), "name": "n", "x": "y"}
	tr := newTransform(t, "org.apache.kafka.connect.transforms.ValueToKey", connect.Config{"fields": "id,name"})
	runCases(t, tr, []transformCase{
		{name: "schemaless",
			in:   connect.Record{Key: "old", Value: value},
			want: connect.Record{Key: map[string]any{"id": int64(1), "name": "n"}, Value: value}},
		{name: "missing fields are null",
			in:   connect.Record{Value: map[string]any{"id": int64(1)}},
			want: connect.Record{Key: map[string]any{"id": int64(1), "name": nil}, Value: map[string]any{"id": int64(1)}}},
		{name: "with schema",
			in: connect.Record{Key: "old", KeySchema: strSchema, Value: value, ValueSchema: s},
			want: connect.Record{Key: map[string]any{"id": int64(1), "name": "n"},
				KeySchema: &connect.Schema{Type: connect.Struct, Fields: []connect.Field{{Name: "id", Schema: int32Schema}, {Name: "name", Schema: optStr}}},
				Value:     value, ValueSchema: s}},
		{name: "a field the schema lacks", in: connect.Record{Value: value, ValueSchema: structSchema("id", int32Schema)}, err: "Field does not exist: name"},
		{name: "a tombstone", in: connect.Record{Key: "k"}, err: "Only Map objects supported in absence of schema for [copying fields from value to key], found: null"},
		{name: "not a struct", in: connect.Record{Value: "v", ValueSchema: s}, err: "Only Struct objects supported for [copying fields from value to key], found: string"},
	})
	p, _ := registry(t).Lookup("ValueToKey")
	if _, err := p.NewTransformation(connect.Config{"fields": ","}); err == nil {
		t.Error("fields=, was accepted")
	}
}
