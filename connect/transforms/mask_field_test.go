package transforms

import (
	"testing"

	"github.com/runnel-io/runnel/connect"
)

func TestMaskField(t *testing.T) {
	value := map[string]any{
		"i": int64(5), "f": 2.5, "b": true, "s": "secret", "y": []byte("x"), "l": []any{1}, "m": map[string]any{"k": 1},
		"n": nil, "keep": "me", "i32": int32(7),
	}
	runCases(t, newTransform(t, "MaskField$Value", connect.Config{"fields": "i,f,b,s,y,l,m,n,i32,absent"}), []transformCase{
		{name: "empty values",
			in: connect.Record{Value: value},
			want: connect.Record{Value: map[string]any{
				"i": int64(0), "f": 0.0, "b": false, "s": "", "y": []byte{}, "l": []any{}, "m": map[string]any{},
				"n": nil, "keep": "me", "i32": int32(0),
			}}},
		{name: "tombstone", in: connect.Record{}, want: connect.Record{}},
		{name: "not a map", in: connect.Record{Value: "s"}, err: "Only Map objects supported in absence of schema for [mask fields], found: string"},
		{name: "unsupported type", in: connect.Record{Value: map[string]any{"i": struct{}{}}}, err: "Cannot mask value of type: struct {}"},
	})

	s := structSchema("i", &connect.Schema{Type: connect.Int8}, "f", &connect.Schema{Type: connect.Float32}, "s", strSchema, "b", &connect.Schema{Type: connect.Boolean})
	runCases(t, newTransform(t, "MaskField$Value", connect.Config{"fields": "i,f,s,zz", "replacement": "100"}), []transformCase{
		{name: "replacement schemaless",
			in:   connect.Record{Value: map[string]any{"i": int64(1), "f": 1.5, "s": "x", "b": true}},
			want: connect.Record{Value: map[string]any{"i": int64(100), "f": 100.0, "s": "100", "b": true}}},
		{name: "replacement with schema",
			in:   connect.Record{Value: map[string]any{"i": int64(1), "f": 1.5, "s": "x", "b": true}, ValueSchema: s},
			want: connect.Record{Value: map[string]any{"i": int64(100), "f": 100.0, "s": "100", "b": true}, ValueSchema: s}},
	})
	runCases(t, newTransform(t, "MaskField$Value", connect.Config{"fields": "i,b", "replacement": "300"}), []transformCase{
		{name: "out of the field's range", in: connect.Record{Value: map[string]any{"i": int64(1)}, ValueSchema: s},
			err: "Unable to convert 300 (string) to number"},
		{name: "a boolean cannot take a replacement", in: connect.Record{Value: map[string]any{"b": true}},
			err: "Cannot mask value of type bool with custom replacement."},
	})
	runCases(t, newTransform(t, "MaskField$Key", connect.Config{"fields": "i", "replacement": "x"}), []transformCase{
		{name: "not a number", in: connect.Record{Key: map[string]any{"i": int64(1)}}, err: "Unable to convert x (string) to number"},
		{name: "key", in: connect.Record{Key: map[string]any{"j": int64(1)}}, want: connect.Record{Key: map[string]any{"j": int64(1)}}},
	})

	p, _ := registry(t).Lookup("MaskField$Value")
	if _, err := p.NewTransformation(connect.Config{"fields": " , "}); err == nil {
		t.Error("fields= , was accepted")
	}
	if _, err := p.NewTransformation(nil); err == nil {
		t.Error("no fields was accepted")
	}
}
