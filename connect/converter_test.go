package connect

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// newTestConverter builds a registered converter by class or alias.
func newTestConverter(t testing.TB, class string, isKey bool, cfg Config) Converter {
	t.Helper()
	p, err := NewRegistry().Lookup(class)
	if err != nil {
		t.Fatal(err)
	}
	if p.Type != ConverterPlugin {
		t.Fatalf("%s is a %s plugin", class, p.Type)
	}
	c, err := p.NewConverter(cfg, isKey)
	if err != nil {
		t.Fatalf("NewConverter(%s, %v): %v", class, cfg, err)
	}
	return c
}

func TestConvertersAreRegisteredByClassAndAlias(t *testing.T) {
	reg := NewRegistry()
	for alias, class := range map[string]string{
		"json":               JSONConverterClass,
		"JsonConverter":      JSONConverterClass,
		JSONConverterClass:   JSONConverterClass,
		"string":             StringConverterClass,
		"StringConverter":    StringConverterClass,
		"bytes":              ByteArrayConverterClass,
		"ByteArrayConverter": ByteArrayConverterClass,
		"org.apache.kafka.connect.converters.ByteArrayConverter": ByteArrayConverterClass,
	} {
		p, err := reg.Lookup(alias)
		if err != nil {
			t.Errorf("Lookup(%s): %v", alias, err)
			continue
		}
		if p.Class != class || p.Type != ConverterPlugin {
			t.Errorf("Lookup(%s) = %s (%s), want %s converter", alias, p.Class, p.Type, class)
		}
	}
}

func TestConverterConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		class string
		cfg   Config
		want  string
	}{
		{"json", Config{"schemas.enable": "maybe"}, "Invalid value maybe for configuration schemas.enable: Expected value to be either true or false"},
		{"json", Config{"schemas.cache.size": "-1"}, "schemas.cache.size: Value must be at least 0"},
		{"json", Config{"decimal.format": "NUMERIC"}, "NUMERIC is not supported"},
		{"json", Config{"decimal.format": "TEXT"}, "String must be one of: BASE64, NUMERIC"},
		{"string", Config{"converter.encoding": "ISO-8859-1"}, "only UTF-8 is supported"},
	} {
		p, err := NewRegistry().Lookup(tc.class)
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.NewConverter(tc.cfg, false)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %v: err = %v, want it to contain %q", tc.class, tc.cfg, err, tc.want)
		}
	}
	for _, cfg := range []Config{{"converter.encoding": "utf-8"}, {"converter.encoding": "UTF8"}, {}} {
		newTestConverter(t, "string", false, cfg)
	}
}

type named string

func TestStringConverter(t *testing.T) {
	c := newTestConverter(t, "string", false, nil)
	for _, tc := range []struct {
		name string
		in   any
		want []byte
	}{
		{"nil is a tombstone", nil, nil},
		{"string", "héllo", []byte("héllo")},
		{"empty string", "", []byte{}},
		{"bytes as they are", []byte{0xff, 0}, []byte{0xff, 0}},
		{"int64", int64(-42), []byte("-42")},
		{"float64", 1.5, []byte("1.5")},
		{"bool", true, []byte("true")},
		{"map as JSON", map[string]any{"b": 1, "a": []any{"x"}}, []byte(`{"a":["x"],"b":1}`)},
		{"Stringer", 1500 * time.Millisecond, []byte("1.5s")},
		{"named string type", named("n"), []byte("n")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := c.FromConnect("t", &Schema{Type: String}, tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(tc.want) || (got == nil) != (tc.want == nil) {
				t.Errorf("FromConnect(%#v) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}

	s, v, err := c.ToConnect("t", []byte("héllo"))
	if err != nil || v != "héllo" || s == nil || s.Type != String || !s.Optional {
		t.Errorf("ToConnect = %v, %#v, %v; want an optional string schema and the text", s, v, err)
	}
	s, v, err = c.ToConnect("t", nil)
	if err != nil || v != nil || s == nil || s.Type != String {
		t.Errorf("ToConnect(nil) = %v, %#v, %v; want an optional string schema and nil", s, v, err)
	}

	_, err = c.FromConnect("orders", nil, map[string]any{"f": func() {}})
	if !errors.Is(err, ErrConversion) || !strings.HasPrefix(err.Error(), "connect: converting value of topic orders: ") {
		t.Errorf("FromConnect(func) error = %v, want an ErrConversion naming the topic", err)
	}
}

func TestByteArrayConverter(t *testing.T) {
	c := newTestConverter(t, "bytes", true, nil)
	in := []byte{1, 2, 3}
	got, err := c.FromConnect("t", nil, in)
	if err != nil || &got[0] != &in[0] {
		t.Errorf("FromConnect([]byte) = %v, %v; want the same slice", got, err)
	}
	if got, err := c.FromConnect("t", &Schema{Type: String}, "abc"); err != nil || string(got) != "abc" {
		t.Errorf(`FromConnect("abc") = %q, %v; want its bytes`, got, err)
	}
	if got, err := c.FromConnect("t", &Schema{Type: Bytes, Optional: true}, nil); err != nil || got != nil {
		t.Errorf("FromConnect(nil) = %v, %v; want nil", got, err)
	}
	for _, tc := range []struct {
		schema *Schema
		v      any
		want   string
	}{
		{nil, int64(1), "connect: converting key of topic t: ByteArrayConverter is not compatible with objects of type int64"},
		{nil, map[string]any{}, "ByteArrayConverter is not compatible with objects of type map[string]any"},
		{&Schema{Type: Int32}, []byte{1}, "Invalid schema type for ByteArrayConverter: int32"},
	} {
		_, err := c.FromConnect("t", tc.schema, tc.v)
		if !errors.Is(err, ErrConversion) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("FromConnect(%v, %#v) error = %v, want %q", tc.schema, tc.v, err, tc.want)
		}
	}
	s, v, err := c.ToConnect("t", in)
	if err != nil || s.Type != Bytes || !s.Optional || &v.([]byte)[0] != &in[0] {
		t.Errorf("ToConnect = %v, %v, %v; want an optional bytes schema and the same slice", s, v, err)
	}
	if s, v, err := c.ToConnect("t", nil); err != nil || v != nil || s.Type != Bytes {
		t.Errorf("ToConnect(nil) = %v, %v, %v", s, v, err)
	}
}
