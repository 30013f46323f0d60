package connect

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

func newJSON(t testing.TB, schemas bool, extra ...string) Converter {
	t.Helper()
	cfg := Config{"schemas.enable": "false"}
	if schemas {
		cfg = Config{} // the default is true, as Kafka's
	}
	for i := 0; i+1 < len(extra); i += 2 {
		cfg[extra[i]] = extra[i+1]
	}
	return newTestConverter(t, "json", false, cfg)
}

type point struct {
	X, Y int
}

func TestJSONFromConnectSchemaless(t *testing.T) {
	c := newJSON(t, false)
	for _, tc := range []struct {
		name string
		in   any
		want string
	}{
		{"object keys sorted", map[string]any{"b": int64(1), "a": "x", "c": nil}, `{"a":"x","b":1,"c":null}`},
		{"int64", int64(-9007199254740993), `-9007199254740993`},
		{"other int types", []any{1, int8(-8), int16(16), int32(32), uint8(8), uint64(math.MaxUint64)}, `[1,-8,16,32,8,18446744073709551615]`},
		{"float stays a float", 1.0, `1.0`},
		{"float", -1.5, `-1.5`},
		{"float32", float32(0.1), `0.1`},
		{"large float", 1e21, `1e+21`},
		{"small float", 1e-7, `1e-7`},
		{"bool", false, `false`},
		{"string escapes", "a\"b\\c\n\t\x01<>&é", `"a\"b\\c\n\t\u0001<>&é"`},
		{"invalid UTF-8", "a\xffb", `"a\ufffdb"`},
		{"bytes as base64", []byte{1, 2, 3, 250}, `"AQID+g=="`},
		{"nested", map[string]any{"l": []any{map[string]any{"z": true, "y": []any{}}}, "m": map[string]any{}}, `{"l":[{"y":[],"z":true}],"m":{}}`},
		{"[]string", []string{"a", "b"}, `["a","b"]`},
		{"json.Number", json.Number("12.50"), `12.50`},
		{"other map by reflection", map[string]int{"b": 2, "a": 1}, `{"a":1,"b":2}`},
		{"other slice by reflection", []float64{1, 2.5}, `[1.0,2.5]`},
		{"named string", named("n"), `"n"`},
		{"struct through encoding/json", point{1, 2}, `{"X":1,"Y":2}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := c.FromConnect("t", nil, tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("FromConnect(%#v) = %s, want %s", tc.in, got, tc.want)
			}
			if !json.Valid(got) {
				t.Errorf("%s is not valid JSON", got)
			}
		})
	}
}

func TestJSONFromConnectSchemalessErrors(t *testing.T) {
	loop := map[string]any{}
	loop["self"] = loop
	for _, tc := range []struct {
		name string
		in   any
		want string
	}{
		{"NaN", map[string]any{"f": math.NaN()}, `field "f": JSON has no representation for the number NaN`},
		{"infinity", []any{math.Inf(1)}, `element 0: JSON has no representation for the number +Inf`},
		{"bad json.Number", json.Number("0x10"), `invalid number "0x10"`},
		{"a map that holds itself", loop, "nested more than 1000 levels"},
		{"a func", func() {}, "cannot write func() as JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := newJSON(t, false).FromConnect("orders", nil, tc.in)
			if !errors.Is(err, ErrConversion) || !strings.Contains(err.Error(), tc.want) ||
				!strings.HasPrefix(err.Error(), "connect: converting value of topic orders: ") {
				t.Errorf("error = %v, want an ErrConversion for topic orders containing %q", err, tc.want)
			}
		})
	}
}

// orderSchema is a struct schema using most of Kafka's schema features.
func orderSchema() *Schema {
	return &Schema{
		Type: Struct, Name: "com.example.Order", Version: 2, Doc: "An order.",
		Parameters: map[string]string{"b": "2", "a": "1"},
		Fields: []Field{
			{"id", &Schema{Type: Int64}},
			{"qty", &Schema{Type: Int16, Optional: true, Default: int64(1)}},
			{"price", &Schema{Type: Float64}},
			{"rate", &Schema{Type: Float32, Optional: true}},
			{"paid", &Schema{Type: Boolean}},
			{"note", &Schema{Type: String, Optional: true}},
			{"sig", &Schema{Type: Bytes, Optional: true}},
			{"tags", &Schema{Type: Array, Items: &Schema{Type: String}, Optional: true}},
			{"attrs", &Schema{Type: Map, Keys: &Schema{Type: String}, Values: &Schema{Type: Int32}, Optional: true}},
			{"at", &Schema{Type: Int64, Name: "org.apache.kafka.connect.data.Timestamp", Version: 1}},
			{"addr", &Schema{Type: Struct, Optional: true, Fields: []Field{{"city", &Schema{Type: String}}}}},
		},
	}
}

const orderSchemaJSON = `{"type":"struct","fields":[` +
	`{"type":"int64","optional":false,"field":"id"},` +
	`{"type":"int16","optional":true,"default":1,"field":"qty"},` +
	`{"type":"double","optional":false,"field":"price"},` +
	`{"type":"float","optional":true,"field":"rate"},` +
	`{"type":"boolean","optional":false,"field":"paid"},` +
	`{"type":"string","optional":true,"field":"note"},` +
	`{"type":"bytes","optional":true,"field":"sig"},` +
	`{"type":"array","items":{"type":"string","optional":false},"optional":true,"field":"tags"},` +
	`{"type":"map","keys":{"type":"string","optional":false},"values":{"type":"int32","optional":false},"optional":true,"field":"attrs"},` +
	`{"type":"int64","optional":false,"name":"org.apache.kafka.connect.data.Timestamp","version":1,"field":"at"},` +
	`{"type":"struct","fields":[{"type":"string","optional":false,"field":"city"}],"optional":true,"field":"addr"}` +
	`],"optional":false,"name":"com.example.Order","version":2,"doc":"An order.","parameters":{"a":"1","b":"2"}}`

func orderValue() map[string]any {
	return map[string]any{
		"id": int64(7), "qty": nil, "price": 9.5, "rate": 0.25, "paid": true, "note": "n",
		"sig": []byte("hi"), "tags": []any{"a"}, "attrs": map[string]any{"x": int64(1)},
		"at": int64(1714564800000), "addr": map[string]any{"city": "Oslo"},
	}
}

func TestJSONFromConnectWritesKafkasEnvelope(t *testing.T) {
	c := newJSON(t, true)
	got, err := c.FromConnect("t", orderSchema(), orderValue())
	if err != nil {
		t.Fatal(err)
	}
	want := `{"schema":` + orderSchemaJSON + `,"payload":{"id":7,"qty":1,"price":9.5,"rate":0.25,"paid":true,"note":"n",` +
		`"sig":"aGk=","tags":["a"],"attrs":{"x":1},"at":1714564800000,"addr":{"city":"Oslo"}}}`
	if string(got) != want {
		t.Errorf("FromConnect =\n%s\nwant\n%s", got, want)
	}

	// Without schemas only the payload is written, still checked against
	// the schema.
	got, err = newJSON(t, false).FromConnect("t", &Schema{Type: Int8}, 5)
	if err != nil || string(got) != "5" {
		t.Errorf("schemas.enable=false: FromConnect = %s, %v; want 5", got, err)
	}
	// A schemaless value with schemas.enable has a null schema.
	got, err = c.FromConnect("t", nil, map[string]any{"a": int64(1)})
	if err != nil || string(got) != `{"schema":null,"payload":{"a":1}}` {
		t.Errorf("FromConnect(no schema) = %s, %v", got, err)
	}
}

func TestJSONFromConnectChecksTheSchema(t *testing.T) {
	c := newJSON(t, true)
	str := &Schema{Type: String}
	for _, tc := range []struct {
		name   string
		schema *Schema
		v      any
		want   string
	}{
		{"string for an int", &Schema{Type: Int32}, "1", "Invalid type for int32: string"},
		{"float for an int", &Schema{Type: Int64}, 1.0, "Invalid type for int64: float64"},
		{"int8 range", &Schema{Type: Int8}, int64(128), "value 128 out of range for int8"},
		{"int16 range", &Schema{Type: Int16}, -32769, "value -32769 out of range for int16"},
		{"int32 range", &Schema{Type: Int32}, int64(math.MaxInt32) + 1, "value 2147483648 out of range for int32"},
		{"uint64 beyond int64", &Schema{Type: Int64}, uint64(math.MaxUint64), "Invalid type for int64: uint64"},
		{"float range", &Schema{Type: Float32}, 1e39, "value 1e+39 out of range for float"},
		{"string for bytes", &Schema{Type: Bytes}, "aGk=", "Invalid type for bytes: string"},
		{"int for a bool", &Schema{Type: Boolean}, int64(1), "Invalid type for boolean: int64"},
		{"array element", &Schema{Type: Array, Items: str}, []any{"a", 1}, "element 1: Invalid type for string: int"},
		{"array without items", &Schema{Type: Array}, []any{}, "array schema has no items schema"},
		{"map value", &Schema{Type: Map, Keys: str, Values: str}, map[string]any{"k": true}, `key "k": Invalid type for string: bool`},
		{"map of bytes keys", &Schema{Type: Map, Keys: &Schema{Type: Bytes}, Values: str}, map[string]any{}, "maps with keys of type bytes are not supported"},
		{"map key text", &Schema{Type: Map, Keys: &Schema{Type: Int32}, Values: str}, map[string]any{"x": "a"}, `map key "x" is not a valid int32`},
		{"struct of a string", orderSchema(), "x", "Invalid type for struct: string"},
		{"required field missing", &Schema{Type: Struct, Fields: []Field{{"a", str}}}, map[string]any{},
			`field "a": Conversion error: null value for field that is required and has no default value`},
		{"field not in schema", &Schema{Type: Struct, Fields: []Field{{"a", str}}}, map[string]any{"a": "x", "b": "y"},
			`field "b" is not in the struct schema`},
		{"nested field", orderSchema(), func() any { v := orderValue(); v["addr"] = map[string]any{"city": 1}; return v }(),
			`field "addr": field "city": Invalid type for string: int`},
		{"unknown schema type", &Schema{Type: "decimal"}, 1, `Couldn't translate unsupported schema type "decimal"`},
		{"default that does not fit", &Schema{Type: Int8, Default: "x"}, int64(1), "default value: Invalid type for int8: string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.FromConnect("t", tc.schema, tc.v)
			if !errors.Is(err, ErrConversion) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want an ErrConversion containing %q", err, tc.want)
			}
		})
	}
}

func TestJSONToConnectReadsKafkasEnvelope(t *testing.T) {
	c := newJSON(t, true)
	// As Kafka's JsonConverter writes it, with extra payload fields (left
	// out) and a null for a field with a default.
	data := `{"schema":` + orderSchemaJSON + `,"payload":{"id":7,"qty":null,"price":9.5,"rate":0.1,"paid":true,` +
		`"sig":"aGk=","tags":["a"],"attrs":{"x":1},"at":1714564800000,"addr":{"city":"Oslo"},"extra":1}}`
	s, v, err := c.ToConnect("t", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(s, orderSchema()) {
		t.Errorf("schema = %+v, want %+v", s, orderSchema())
	}
	want := orderValue()
	want["qty"] = int64(1)               // the default
	want["rate"] = float64(float32(0.1)) // a float is a float32
	want["note"] = nil                   // missing optional field
	if !reflect.DeepEqual(v, want) {
		t.Errorf("value = %#v,\nwant %#v", v, want)
	}

	// A null schema reads the payload without one.
	s, v, err = c.ToConnect("t", []byte(`{"schema":null,"payload":{"a":[1,2.5,"x",true,null]}}`))
	if err != nil || s != nil || !reflect.DeepEqual(v, map[string]any{"a": []any{int64(1), 2.5, "x", true, nil}}) {
		t.Errorf("ToConnect(null schema) = %v, %#v, %v", s, v, err)
	}
}

func TestJSONToConnectSchemaless(t *testing.T) {
	c := newJSON(t, false)
	for _, tc := range []struct {
		in   string
		want any
	}{
		{`42`, int64(42)},
		{`-0`, int64(0)},
		{`9223372036854775807`, int64(math.MaxInt64)},
		{`9223372036854775808`, 9223372036854775808.0},
		{`1.0`, 1.0},
		{`1e3`, 1000.0},
		{`"s"`, "s"},
		{`true`, true},
		{`null`, nil},
		{"  \n", nil},
		{`{"a":{"b":[1,{"c":2.5}]},"d":"AQID"}`, map[string]any{"a": map[string]any{"b": []any{int64(1), map[string]any{"c": 2.5}}}, "d": "AQID"}},
		{`{"schema":{"type":"int32"},"payload":1}`, map[string]any{"schema": map[string]any{"type": "int32"}, "payload": int64(1)}},
	} {
		s, v, err := c.ToConnect("t", []byte(tc.in))
		if err != nil || s != nil || !reflect.DeepEqual(v, tc.want) {
			t.Errorf("ToConnect(%s) = %v, %#v, %v; want %#v", tc.in, s, v, err, tc.want)
		}
	}
}

func TestJSONToConnectErrors(t *testing.T) {
	const envelopeErr = `JsonConverter with schemas.enable requires "schema" and "payload" fields and may not contain additional fields. ` +
		"If you are trying to deserialize plain JSON data, set schemas.enable=false in your converter configuration."
	for _, tc := range []struct {
		name    string
		schemas bool
		in      string
		want    string
	}{
		{"plain JSON with schemas", true, `{"a":1}`, envelopeErr},
		{"a number with schemas", true, `1`, envelopeErr},
		{"null with schemas", true, `null`, envelopeErr},
		{"an extra envelope field", true, `{"schema":null,"payload":1,"x":2}`, envelopeErr},
		{"no payload", true, `{"schema":null,"x":2}`, envelopeErr},
		{"bad JSON", true, `{"schema":`, "Converting byte[] to Kafka Connect data failed due to serialization error: "},
		{"bad JSON schemaless", false, `{"a":}`, "serialization error: jsontext: missing value after object name"},
		{"truncated", false, `[1,2`, "serialization error: jsontext: unexpected EOF after offset 4"},
		{"trailing data", false, `{} x`, `serialization error: jsontext: invalid character 'x' at start of value after offset 3`},
		{"huge number", false, `[1e400]`, "number 1e400 is out of range"},
		{"schema without type", true, `{"schema":{},"payload":1}`, "Schema must contain 'type' field"},
		{"schema not an object", true, `{"schema":"int32","payload":1}`, "Schema must contain 'type' field"},
		{"unknown type", true, `{"schema":{"type":"decimal"},"payload":1}`, "Unknown schema type: decimal"},
		{"array without items", true, `{"schema":{"type":"array"},"payload":[]}`, "Array schema did not specify the element type"},
		{"map without keys", true, `{"schema":{"type":"map","values":{"type":"string"}},"payload":{}}`, "Map schema did not specify the key type"},
		{"map without values", true, `{"schema":{"type":"map","keys":{"type":"string"}},"payload":{}}`, "Map schema did not specify the value type"},
		{"struct without fields", true, `{"schema":{"type":"struct"},"payload":{}}`, `Struct schema's "fields" argument is not an array.`},
		{"field without name", true, `{"schema":{"type":"struct","fields":[{"type":"int8"}]},"payload":{}}`, "Struct schema's field name not specified properly"},
		{"duplicate field", true, `{"schema":{"type":"struct","fields":[{"type":"int8","field":"a"},{"type":"int8","field":"a"}]},"payload":{}}`,
			"Cannot create field because of field name duplication a"},
		{"parameter not a string", true, `{"schema":{"type":"int8","parameters":{"a":1}},"payload":1}`, "Schema parameters must have string values."},
		{"bad default", true, `{"schema":{"type":"int8","default":"x"},"payload":1}`, "default value: expected int8, found STRING"},
		{"int8 out of range", true, `{"schema":{"type":"int8"},"payload":200}`, "value 200 out of range for int8"},
		{"int with a fraction", true, `{"schema":{"type":"int64"},"payload":1.5}`, "number 1.5 is not a 64-bit integer"},
		{"float32 out of range", true, `{"schema":{"type":"float"},"payload":1e39}`, "number 1e39 is out of range for float"},
		{"required null", true, `{"schema":{"type":"string"},"payload":null}`, "Invalid null value for required string field"},
		{"string for an int", true, `{"schema":{"type":"int32"},"payload":"1"}`, "expected int32, found STRING"},
		{"bad base64", true, `{"schema":{"type":"bytes"},"payload":"!!"}`, "Invalid bytes field: "},
		{"struct of an array", true, `{"schema":{"type":"struct","fields":[]},"payload":[]}`, "Structs should be encoded as JSON objects, but found ARRAY"},
		{"nested field", true, `{"schema":{"type":"struct","fields":[{"type":"array","items":{"type":"boolean"},"field":"a"}]},"payload":{"a":[true,1]}}`,
			`field "a": element 1: expected boolean, found NUMBER`},
		{"string map of an array", true, `{"schema":{"type":"map","keys":{"type":"string"},"values":{"type":"int8"}},"payload":[]}`,
			"Maps with string fields should be encoded as JSON objects, but found ARRAY"},
		{"int map of an object", true, `{"schema":{"type":"map","keys":{"type":"int8"},"values":{"type":"int8"}},"payload":{}}`,
			"Maps with non-string fields should be encoded as JSON array of tuples, but found OBJECT"},
		{"int map entry not a pair", true, `{"schema":{"type":"map","keys":{"type":"int8"},"values":{"type":"int8"}},"payload":[[1]]}`,
			"Found invalid map entry, expected length 2 but found: 1"},
		{"null map key", true, `{"schema":{"type":"map","keys":{"type":"int8","optional":true},"values":{"type":"int8"}},"payload":[[null,1]]}`,
			"map keys must not be null"},
		{"map of struct keys", true, `{"schema":{"type":"map","keys":{"type":"struct","fields":[]},"values":{"type":"int8"}},"payload":[]}`,
			"maps with keys of type struct are not supported"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := newJSON(t, tc.schemas).ToConnect("orders", []byte(tc.in))
			if !errors.Is(err, ErrConversion) || !strings.Contains(err.Error(), tc.want) ||
				!strings.HasPrefix(err.Error(), "connect: converting value of topic orders: ") {
				t.Errorf("error = %v\nwant an ErrConversion for topic orders containing %q", err, tc.want)
			}
		})
	}
}

func TestJSONRoundTripsWithSchemas(t *testing.T) {
	intKeys := &Schema{Type: Map, Keys: &Schema{Type: Int32}, Values: &Schema{Type: String, Optional: true}}
	for _, tc := range []struct {
		name   string
		schema *Schema
		v      any
		json   string // the payload, when checked
	}{
		{"struct", orderSchema(), func() any { v := orderValue(); v["qty"] = int64(3); return v }(), ""},
		{"int map as pairs", intKeys, map[string]any{"2": "b", "10": nil}, `[[10,null],[2,"b"]]`},
		{"bool map as pairs", &Schema{Type: Map, Keys: &Schema{Type: Boolean}, Values: &Schema{Type: Int8}},
			map[string]any{"true": int64(1)}, `[[true,1]]`},
		{"double map as pairs", &Schema{Type: Map, Keys: &Schema{Type: Float64}, Values: &Schema{Type: Int8}},
			map[string]any{"1.5": int64(1)}, `[[1.5,1]]`},
		{"bytes", &Schema{Type: Bytes}, []byte{0, 1, 2}, `"AAEC"`},
		{"optional string with a default", &Schema{Type: String, Optional: true, Default: "d"}, "x", `"x"`},
		{"array of structs", &Schema{Type: Array, Items: &Schema{Type: Struct, Fields: []Field{{"a", &Schema{Type: Int32}}}}},
			[]any{map[string]any{"a": int64(1)}, map[string]any{"a": int64(2)}}, `[{"a":1},{"a":2}]`},
		{"float32", &Schema{Type: Float32}, float64(float32(3.3)), `3.3`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newJSON(t, true)
			data, err := c.FromConnect("t", tc.schema, tc.v)
			if err != nil {
				t.Fatal(err)
			}
			if tc.json != "" && !strings.HasSuffix(string(data), `,"payload":`+tc.json+`}`) {
				t.Errorf("FromConnect = %s, want the payload %s", data, tc.json)
			}
			s, v, err := c.ToConnect("t", data)
			if err != nil {
				t.Fatalf("ToConnect(%s): %v", data, err)
			}
			if !reflect.DeepEqual(s, tc.schema) {
				t.Errorf("schema = %+v, want %+v", s, tc.schema)
			}
			if !reflect.DeepEqual(v, tc.v) {
				t.Errorf("value = %#v, want %#v", v, tc.v)
			}
		})
	}
}

func TestJSONTombstones(t *testing.T) {
	for _, schemas := range []bool{true, false} {
		c := newJSON(t, schemas)
		for _, schema := range []*Schema{nil, {Type: String, Optional: true}, {Type: String}} {
			if data, err := c.FromConnect("t", schema, nil); data != nil || err != nil {
				t.Errorf("schemas=%v: FromConnect(%v, nil) = %q, %v; want nil", schemas, schema, data, err)
			}
		}
		for _, data := range [][]byte{nil, {}} {
			if s, v, err := c.ToConnect("t", data); s != nil || v != nil || err != nil {
				t.Errorf("schemas=%v: ToConnect(%q) = %v, %v, %v; want nothing", schemas, data, s, v, err)
			}
		}
	}
}

func TestJSONReplaceNullWithDefault(t *testing.T) {
	schema := &Schema{Type: Struct, Fields: []Field{{"a", &Schema{Type: Int32, Optional: true, Default: int64(5)}}}}
	data := []byte(`{"schema":{"type":"struct","fields":[{"type":"int32","optional":true,"default":5,"field":"a"}],"optional":false},"payload":{"a":null}}`)
	for _, tc := range []struct {
		replace string
		want    any
		payload string
	}{
		{"true", int64(5), `{"a":5}`},
		{"false", nil, `{"a":null}`},
	} {
		c := newJSON(t, true, "replace.null.with.default", tc.replace)
		_, v, err := c.ToConnect("t", data)
		if err != nil || !reflect.DeepEqual(v, map[string]any{"a": tc.want}) {
			t.Errorf("replace.null.with.default=%s: ToConnect = %#v, %v; want a=%v", tc.replace, v, err, tc.want)
		}
		out, err := c.FromConnect("t", schema, map[string]any{"a": nil})
		if err != nil || !strings.HasSuffix(string(out), `"payload":`+tc.payload+`}`) {
			t.Errorf("replace.null.with.default=%s: FromConnect = %s, %v; want payload %s", tc.replace, out, err, tc.payload)
		}
	}
}

func TestJSONSchemaCaches(t *testing.T) {
	data := []byte(`{"schema":{"type":"string","optional":false},"payload":"x"}`)
	for _, tc := range []struct {
		size   string
		shared bool
	}{{"1000", true}, {"0", false}} {
		c := newJSON(t, true, "schemas.cache.size", tc.size)
		s1, _, err1 := c.ToConnect("t", data)
		s2, _, err2 := c.ToConnect("t", data)
		if err1 != nil || err2 != nil || (s1 == s2) != tc.shared || !reflect.DeepEqual(s1, s2) {
			t.Errorf("schemas.cache.size=%s: schemas %p and %p (%v, %v); want shared=%v", tc.size, s1, s2, err1, err2, tc.shared)
		}
		schema := &Schema{Type: String}
		a, _ := c.FromConnect("t", schema, "x")
		b, _ := c.FromConnect("t", schema, "y")
		if string(a) != `{"schema":{"type":"string","optional":false},"payload":"x"}` ||
			string(b) != `{"schema":{"type":"string","optional":false},"payload":"y"}` {
			t.Errorf("schemas.cache.size=%s: FromConnect = %s, %s", tc.size, a, b)
		}
	}
	// The cache stays within its size.
	c := newTestConverter(t, "json", false, Config{"schemas.cache.size": "2"}).(*jsonConverter)
	for i := range 10 {
		if _, err := c.FromConnect("t", &Schema{Type: Int32}, i); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(c.encoded.m); n != 2 {
		t.Errorf("cache holds %d schemas, want 2", n)
	}
}

func TestAppendJSONFloat(t *testing.T) {
	for _, tc := range []struct {
		f    float64
		bits int
		want string
	}{
		{0, 64, "0.0"}, {-0.0, 64, "0.0"}, {1, 64, "1.0"}, {100, 64, "100.0"}, {0.000001, 64, "0.000001"},
		{1e20, 64, "100000000000000000000.0"}, {1e21, 64, "1e+21"}, {1.5e-7, 64, "1.5e-7"}, {-2.5e-10, 64, "-2.5e-10"},
		{float64(float32(0.1)), 32, "0.1"}, {float64(float32(16777216)), 32, "16777216.0"},
	} {
		if got := string(appendJSONFloat(nil, tc.f, tc.bits)); got != tc.want {
			t.Errorf("appendJSONFloat(%v, %d) = %s, want %s", tc.f, tc.bits, got, tc.want)
		}
	}
}

func TestIsJSONNumber(t *testing.T) {
	for s, want := range map[string]bool{
		"0": true, "-0": true, "12": true, "1.5": true, "-1.5e10": true, "1E+2": true, "0.0e-0": true,
		"": false, "-": false, "01": false, "1.": false, ".5": false, "1e": false, "+1": false, "0x1": false,
		"NaN": false, "Inf": false, "1_000": false, " 1": false,
	} {
		if got := isJSONNumber(s); got != want {
			t.Errorf("isJSONNumber(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestJSONFromConnectConvertsGoTypesToTheSchema(t *testing.T) {
	c := newJSON(t, false)
	for _, tc := range []struct {
		schema *Schema
		v      any
		want   string
	}{
		{&Schema{Type: Int8}, int8(-3), "-3"},
		{&Schema{Type: Int16}, uint16(7), "7"},
		{&Schema{Type: Int32}, int32(-5), "-5"},
		{&Schema{Type: Int64}, uint32(9), "9"},
		{&Schema{Type: Int64}, uint(10), "10"},
		{&Schema{Type: Int64}, json.Number("11"), "11"},
		{&Schema{Type: Float64}, int64(2), "2.0"},
		{&Schema{Type: Float64}, float32(0.5), "0.5"},
		{&Schema{Type: Float64}, json.Number("2.5"), "2.5"},
		{&Schema{Type: Float32}, 0.1, "0.1"},
		{&Schema{Type: Array, Items: &Schema{Type: String}}, []string{"a", "b"}, `["a","b"]`},
		{&Schema{Type: Array, Items: &Schema{Type: Int32}}, [2]int{1, 2}, `[1,2]`},
		{&Schema{Type: Map, Keys: &Schema{Type: String}, Values: &Schema{Type: String}}, map[string]string{"b": "2", "a": "1"}, `{"a":"1","b":"2"}`},
		{&Schema{Type: Struct, Fields: []Field{{"a", &Schema{Type: Int32}}}}, map[string]int{"a": 1}, `{"a":1}`},
	} {
		got, err := c.FromConnect("t", tc.schema, tc.v)
		if err != nil || string(got) != tc.want {
			t.Errorf("FromConnect(%s, %#v) = %s, %v; want %s", tc.schema.Type, tc.v, got, err, tc.want)
		}
	}
	for _, tc := range []struct {
		schema *Schema
		v      any
	}{
		{&Schema{Type: Int64}, json.Number("1.5")},
		{&Schema{Type: Float64}, json.Number("0x10")},
		{&Schema{Type: Float64}, "1"},
		{&Schema{Type: Array, Items: &Schema{Type: Int32}}, "ab"},
		{&Schema{Type: Map, Keys: &Schema{Type: String}, Values: &Schema{Type: String}}, map[int]string{}},
	} {
		if got, err := c.FromConnect("t", tc.schema, tc.v); !errors.Is(err, ErrConversion) {
			t.Errorf("FromConnect(%s, %#v) = %s, %v; want an error", tc.schema.Type, tc.v, got, err)
		}
	}
}
