package http

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestDecodeBody(t *testing.T) {
	for _, tc := range []struct {
		name, contentType, body string
		want                    []map[string]any
		wantErr                 string // a part of the error
	}{
		{"object", "application/json", `{"id":"a","n":1,"x":1.5,"tags":["t"],"o":{"k":2}}`,
			[]map[string]any{{"id": "a", "n": int64(1), "x": 1.5, "tags": []any{"t"}, "o": map[string]any{"k": int64(2)}}}, ""},
		{"array", "application/json; charset=utf-8", `[{"n":1}, {"n":2}]`, []map[string]any{{"n": int64(1)}, {"n": int64(2)}}, ""},
		{"empty array", "application/json", ` [] `, []map[string]any{}, ""},
		{"no content type", "", `{"n":1}`, []map[string]any{{"n": int64(1)}}, ""},
		{"+json", "application/vnd.runnel+json", `{"n":1}`, []map[string]any{{"n": int64(1)}}, ""},
		{"json lines", "application/x-ndjson", "{\"n\":1}\r\n\n  {\"n\":2}\n", []map[string]any{{"n": int64(1)}, {"n": int64(2)}}, ""},
		{"jsonl", "application/jsonl", `{"n":1}`, []map[string]any{{"n": int64(1)}}, ""},
		{"big integer", "application/json", `{"n":12345678901234567890}`, []map[string]any{{"n": 12345678901234567890.0}}, ""},

		{"empty", "application/json", "  ", nil, "the body is empty"},
		{"broken", "application/json", "{\n \"n\": 1,\n}", nil, "not valid JSON: invalid character '}' looking for beginning of object key string (line 3, column 1)"},
		{"truncated", "application/json", `[{"n":1}`, nil, "not valid JSON: unexpected EOF"},
		{"number in array", "application/json", `[{"n":1}, 2]`, nil, "element 1 of the array is a number, not a JSON object"},
		{"string", "application/json", `"hello"`, nil, "the body is a string: send a JSON object or an array of objects"},
		{"two values", "application/json", `{"n":1} {"n":2}`, nil, "more than one JSON value"},
		{"bad line", "application/x-ndjson", "{\"n\":1}\n{\"n\":\n", nil, "line 2: not valid JSON"},
		{"array line", "application/x-ndjson", "[1]", nil, "line 1 is an array, not a JSON object"},
		{"two on a line", "application/x-ndjson", `{"n":1}{"n":2}`, nil, "line 1: more than one JSON value"},
		{"no lines", "application/x-ndjson", "\n\n", nil, "the body has no JSON lines"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decodeBody(tc.contentType, []byte(tc.body))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one with %q", err, tc.wantErr)
				}
				if errors.Is(err, errUnsupportedType) {
					t.Fatalf("a bad body is reported as a bad type: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %#v, want %#v", got, tc.want)
			}
		})
	}
}

func TestDecodeBodyRefusesOtherTypes(t *testing.T) {
	for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", "application/json; charset"} {
		if _, err := decodeBody(ct, []byte(`{"n":1}`)); !errors.Is(err, errUnsupportedType) {
			t.Errorf("Content-Type %q: error %v, want errUnsupportedType", ct, err)
		}
	}
}

func FuzzDecodeBody(f *testing.F) {
	f.Add("application/json", []byte(`[{"n":1}]`))
	f.Add("application/x-ndjson", []byte("{\"n\":1}\n{\"s\":\"x\"}"))
	f.Fuzz(func(t *testing.T, ct string, body []byte) {
		objs, err := decodeBody(ct, body)
		for i, o := range objs {
			if err != nil || o == nil {
				t.Fatalf("object %d is %v (error %v)", i, o, err)
			}
		}
	})
}
