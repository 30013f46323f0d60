package configfile

import (
	"reflect"
	"testing"
)

func TestParseProperties(t *testing.T) {
	got, err := ParseProperties([]byte("a=1\n  b : 2 \nc 3\nd\\=e=4\nf=five\\\n   six\ng=\\t\\u00e9\\\\\nh=\r\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []Entry{
		{Key: "a", Value: "1", Line: 1},
		{Key: "b", Value: "2 ", Line: 2},
		{Key: "c", Value: "3", Line: 3},
		{Key: "d=e", Value: "4", Line: 4},
		{Key: "f", Value: "fivesix", Line: 5},
		{Key: "g", Value: "\té\\", Line: 7},
		{Key: "h", Value: "", Line: 8},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("\n got %+v\nwant %+v", got, want)
	}
}

// The YAML parser never panics, whatever the bytes (the properties parser
// is fuzzed with the broker's config checks in broker/internal/configs).
func FuzzParseYAML(f *testing.F) {
	f.Add([]byte("a: 1\nb:\n  c: [1, 2]\nd: &x ~\ne: *x\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = ParseYAML(data)
	})
}
