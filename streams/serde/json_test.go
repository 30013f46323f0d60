package serde_test

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/runnel-io/runnel/streams/serde"
)

// order is the JSON test type: strings, numbers, a slice, a map, a pointer
// and an untyped field. No omitempty on slices or maps: it would turn an
// empty one into nil, and the fuzz test checks values round-trip.
type order struct {
	ID    string         `json:"id"`
	Qty   int64          `json:"qty"`
	Price float64        `json:"price"`
	Tags  []string       `json:"tags"`
	Stock map[string]int `json:"stock"`
	Note  *string        `json:"note,omitempty"`
	Extra any            `json:"extra,omitempty"`
}

func TestJSONRoundTrip(t *testing.T) {
	note := "fragile <glass> & co"
	in := order{ID: "o-1", Qty: 3, Price: 9.99, Tags: []string{"a", "b"}, Stock: map[string]int{"z": 1, "a": 2}, Note: &note, Extra: []any{1.5, "x", nil}}
	s := serde.JSON[order]()
	out, err := s.Encode([]byte("pre"), in)
	if err != nil {
		t.Fatal(err)
	}
	const want = `pre{"id":"o-1","qty":3,"price":9.99,"tags":["a","b"],"stock":{"a":2,"z":1},"note":"fragile <glass> & co","extra":[1.5,"x",null]}`
	if string(out) != want {
		t.Fatalf("Encode = %s\nwant     %s", out, want)
	}
	back, err := s.Decode(out[3:])
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, in) {
		t.Fatalf("Decode(Encode(v)) = %+v, want %+v", back, in)
	}
}

func TestJSONDecodeErrors(t *testing.T) {
	s := serde.JSON[order]()
	for _, in := range []string{"", "{", `{"qty":"three"}`, `{"id":"a"} {}`, "\xff"} {
		v, err := s.Decode([]byte(in))
		if !errors.Is(err, serde.ErrDecode) {
			t.Errorf("Decode(%q) = %+v, %v; want an error wrapping ErrDecode", in, v, err)
		}
	}
	// The cause stays reachable.
	_, err := s.Decode([]byte("{"))
	var syntax *json.SyntaxError
	if !errors.As(err, &syntax) {
		t.Errorf("Decode({) = %v, want a *json.SyntaxError inside", err)
	}
	_, err = s.Decode([]byte(`{"qty":"three"}`))
	if want := "serde: decode json into serde_test.order: json: cannot unmarshal string into Go struct field order.qty of type int64"; err == nil || err.Error() != want {
		t.Errorf("err = %v\nwant      %s", err, want)
	}
}

func TestJSONDecodeCopies(t *testing.T) {
	in := []byte(`{"id":"abc","tags":["def"]}`)
	v, err := serde.JSON[order]().Decode(in)
	if err != nil {
		t.Fatal(err)
	}
	for i := range in {
		in[i] = 'X'
	}
	if v.ID != "abc" || v.Tags[0] != "def" {
		t.Fatalf("decoded value follows its input: %+v", v)
	}
}

func TestJSONEncodeErrorKeepsDst(t *testing.T) {
	dst := []byte("pre")
	out, err := serde.JSON[float64]().Encode(dst, math.Inf(1))
	if err == nil {
		t.Fatal("Encode(+Inf) succeeded; JSON has no infinity")
	}
	if string(out) != "pre" {
		t.Fatalf("Encode failed but returned %q, want dst unchanged", out)
	}
}
