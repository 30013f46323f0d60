package transforms

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/runnel-io/runnel/connect"
)

func TestCastSpec(t *testing.T) {
	for _, tc := range []struct {
		spec   string
		whole  connect.SchemaType
		fields map[string]connect.SchemaType
		err    string
	}{
		{spec: "int8", whole: connect.Int8},
		{spec: " STRING ", whole: connect.String},
		{spec: "a:int16, b:Float32,c:float64,d:boolean,e:int32,f:int64", fields: map[string]connect.SchemaType{
			"a": connect.Int16, "b": connect.Float32, "c": connect.Float64, "d": connect.Boolean, "e": connect.Int32, "f": connect.Int64}},
		{spec: "", err: "Must specify at least one field to cast."},
		{spec: "a:bytes", err: "Cast transformation does not support casting to BYTES; supported types are [INT8, INT16, INT32, INT64, FLOAT32, FLOAT64, BOOLEAN, STRING]"},
		{spec: "struct", err: "Cast transformation does not support casting to STRUCT"},
		{spec: "a:double", err: "Invalid type found in casting spec: double"},
		{spec: "a:int8:x", err: "Invalid cast mapping: a:int8:x"},
		{spec: ":int8", err: "Invalid cast mapping: :int8"},
		{spec: "int8,a:int16", err: "Cast transformations that specify a type to cast the entire value to may only specify a single cast in their spec"},
	} {
		whole, fields, err := parseCastSpec(connect.SplitList(tc.spec))
		if tc.err != "" {
			if err == nil || !strings.HasPrefix(err.Error(), tc.err) {
				t.Errorf("%q: err = %v, want %s", tc.spec, err, tc.err)
			}
			continue
		}
		if err != nil || whole != tc.whole || (tc.fields != nil && !reflect.DeepEqual(fields, tc.fields)) {
			t.Errorf("%q = %q, %v, %v; want %q, %v", tc.spec, whole, fields, err, tc.whole, tc.fields)
		}
	}
}

func TestCastValue(t *testing.T) {
	for _, tc := range []struct {
		v    any
		from connect.SchemaType
		to   connect.SchemaType
		want any
		err  string
	}{
		{int64(300), "", connect.Int8, int64(44), ""}, // Java narrowing wraps
		{int64(-129), "", connect.Int8, int64(127), ""},
		{int64(70000), "", connect.Int16, int64(4464), ""},
		{int64(1 << 40), "", connect.Int32, int64(0), ""},
		{int64(5), "", connect.Int64, int64(5), ""},
		{int64(5), "", connect.Float32, 5.0, ""},
		{int64(5), "", connect.Float64, 5.0, ""},
		{int64(0), "", connect.Boolean, false, ""},
		{int64(-2), "", connect.Boolean, true, ""},
		{int64(-2), "", connect.String, "-2", ""},
		{3, "", connect.Int64, int64(3), ""},
		{2.9, "", connect.Int32, int64(2), ""},
		{-2.9, "", connect.Int64, int64(-2), ""},
		{1e20, "", connect.Int64, int64(math.MaxInt64), ""},
		{1e20, "", connect.Int32, int64(math.MaxInt32), ""},
		{1e20, "", connect.Int8, int64(-1), ""}, // (byte)(int)1e20
		{math.NaN(), "", connect.Int32, int64(0), ""},
		{0.5, "", connect.Boolean, false, ""}, // Java: longValue() != 0
		{1.5, "", connect.Boolean, true, ""},
		{0.1, "", connect.Float32, float64(float32(0.1)), ""},
		{1.0, "", connect.String, "1.0", ""},
		{1e7, "", connect.String, "1.0E7", ""},
		{1.5e-4, "", connect.String, "1.5E-4", ""},
		{float64(float32(0.1)), connect.Float32, connect.String, "0.1", ""},
		{float32(0.1), "", connect.String, "0.1", ""},
		{true, "", connect.Int8, int64(1), ""},
		{true, "", connect.Float64, 1.0, ""},
		{false, "", connect.String, "false", ""},
		{true, "", connect.Boolean, true, ""},
		{"42", "", connect.Int8, int64(42), ""},
		{"-7", "", connect.Int64, int64(-7), ""},
		{"128", "", connect.Int8, nil, "Value (128) was out of range for requested data type int8"},
		{"x", "", connect.Int32, nil, "Value (x) was out of range for requested data type int32"},
		{" 2.5 ", "", connect.Float64, 2.5, ""},
		{"TRUE", "", connect.Boolean, true, ""},
		{"yes", "", connect.Boolean, false, ""},
		{"s", "", connect.String, "s", ""},
		{[]byte{1, 2, 3}, "", connect.String, "AQID", ""},
		{[]byte{1}, "", connect.Int8, nil, "[]byte can only be cast to string"},
		{map[string]any{}, "", connect.String, nil, "Cast transformation was passed a value of type map[string]any which is not supported"},
		{nil, "", connect.Int8, nil, ""},
	} {
		got, err := castValue(tc.v, tc.from, tc.to)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("castValue(%#v, %s) err = %v, want %q", tc.v, tc.to, err, tc.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("castValue(%#v, %q, %s) = %#v, %v; want %#v", tc.v, tc.from, tc.to, got, err, tc.want)
		}
	}
}

func TestJavaFloatString(t *testing.T) {
	for _, tc := range []struct {
		f    float64
		bits int
		want string
	}{
		{0, 64, "0.0"}, {math.Copysign(0, -1), 64, "-0.0"}, {1, 64, "1.0"}, {123.456, 64, "123.456"}, {0.001, 64, "0.001"},
		{9999999, 64, "9999999.0"}, {1e7, 64, "1.0E7"}, {1.2345e10, 64, "1.2345E10"}, {0.0001, 64, "1.0E-4"},
		{-3e-5, 64, "-3.0E-5"}, {math.Inf(1), 64, "Infinity"}, {math.Inf(-1), 64, "-Infinity"}, {math.NaN(), 64, "NaN"},
		{float64(float32(3.3)), 32, "3.3"},
	} {
		if got := javaFloatString(tc.f, tc.bits); got != tc.want {
			t.Errorf("javaFloatString(%v, %d) = %s, want %s", tc.f, tc.bits, got, tc.want)
		}
	}
}

func TestCast(t *testing.T) {
	fields := newTransform(t, "Cast$Value", connect.Config{"spec": "a:int8,b:string,c:float32,d:boolean"})
	in := structSchema(
		"a", &connect.Schema{Type: connect.Int64, Optional: true, Default: int64(300)},
		"b", &connect.Schema{Type: connect.Bytes},
		"c", &connect.Schema{Type: connect.String},
		"d", &connect.Schema{Type: connect.Int32},
		"e", strSchema,
	)
	out := structSchema(
		"a", &connect.Schema{Type: connect.Int8, Optional: true, Default: int64(44)},
		"b", strSchema,
		"c", &connect.Schema{Type: connect.Float32},
		"d", &connect.Schema{Type: connect.Boolean},
		"e", strSchema,
	)
	runCases(t, fields, []transformCase{
		{name: "schemaless",
			in:   connect.Record{Value: map[string]any{"a": int64(1000), "b": []byte("hi"), "c": "0.5", "e": "x"}},
			want: connect.Record{Value: map[string]any{"a": int64(-24), "b": "aGk=", "c": 0.5, "e": "x"}}},
		{name: "with schema",
			in:   connect.Record{Value: map[string]any{"a": nil, "b": []byte("hi"), "c": "0.5", "d": int64(2), "e": "x"}, ValueSchema: in},
			want: connect.Record{Value: map[string]any{"a": nil, "b": "aGk=", "c": 0.5, "d": true, "e": "x"}, ValueSchema: out}},
		{name: "tombstone", in: connect.Record{ValueSchema: in}, want: connect.Record{ValueSchema: in}},
		{name: "not a map", in: connect.Record{Value: int64(1)}, err: "Only Map objects supported in absence of schema for [cast types], found: int64"},
		{name: "a bad string", in: connect.Record{Value: map[string]any{"a": "many"}}, err: "field a: Value (many) was out of range for requested data type int8"},
		{name: "an array field", in: connect.Record{Value: map[string]any{"a": []any{}}, ValueSchema: structSchema("a", &connect.Schema{Type: connect.Array, Items: strSchema})},
			err: "field a: Cast transformation does not support casting from ARRAY"},
	})

	whole := newTransform(t, "Cast$Key", connect.Config{"spec": "int16"})
	runCases(t, whole, []transformCase{
		{name: "schemaless key", in: connect.Record{Key: "12"}, want: connect.Record{Key: int64(12)}},
		{name: "key with schema",
			in:   connect.Record{Key: int64(70000), KeySchema: &connect.Schema{Type: connect.Int64, Optional: true, Name: "n", Default: int64(1)}},
			want: connect.Record{Key: int64(4464), KeySchema: &connect.Schema{Type: connect.Int16, Optional: true, Name: "n", Default: int64(1)}}},
		{name: "a struct key", in: connect.Record{Key: map[string]any{}, KeySchema: structSchema()},
			err: "Cast transformation does not support casting from STRUCT"},
	})
}
