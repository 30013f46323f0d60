package http

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"strings"
)

// jsonLinesTypes are the media types of JSON lines bodies: one object a
// line.
var jsonLinesTypes = map[string]bool{
	"application/x-ndjson":     true,
	"application/ndjson":       true,
	"application/jsonl":        true,
	"application/x-jsonlines":  true,
	"application/jsonlines":    true,
	"application/json-lines":   true,
	"application/x-json-lines": true,
}

// errUnsupportedType is a Content-Type the source does not read (415).
var errUnsupportedType = errors.New("unsupported Content-Type")

// decodeBody returns the JSON objects of a request body. contentType
// decides the format: a JSON lines type (application/x-ndjson and the
// like) means one object a line, blank lines skipped; application/json,
// any type ending in +json, or none means one object or an array of
// objects. Integers decode as int64, other numbers as float64. Any other
// type is errUnsupportedType; any bad byte an error that says where.
func decodeBody(contentType string, body []byte) ([]map[string]any, error) {
	mt := "application/json"
	if strings.TrimSpace(contentType) != "" {
		var err error
		if mt, _, err = mime.ParseMediaType(contentType); err != nil {
			return nil, fmt.Errorf("%w %q: %v", errUnsupportedType, contentType, err)
		}
	}
	switch {
	case jsonLinesTypes[mt]:
		return decodeLines(body)
	case mt == "application/json" || strings.HasSuffix(mt, "+json"):
		return decodeJSON(body)
	}
	return nil, fmt.Errorf("%w %q: send application/json (an object or an array of objects) or application/x-ndjson (an object a line)", errUnsupportedType, mt)
}

func decodeJSON(body []byte) ([]map[string]any, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, errors.New("the body is empty: send a JSON object or an array of objects")
	}
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, fmt.Errorf("not valid JSON: %v", jsonError(err, body))
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, errors.New("more than one JSON value: send one object or an array of objects, or JSON lines with Content-Type: application/x-ndjson")
	}
	switch x := v.(type) {
	case map[string]any:
		return []map[string]any{numbers(x).(map[string]any)}, nil
	case []any:
		out := make([]map[string]any, len(x))
		for i, e := range x {
			m, ok := e.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("element %d of the array is %s, not a JSON object", i, kindOf(e))
			}
			out[i] = numbers(m).(map[string]any)
		}
		return out, nil
	}
	return nil, fmt.Errorf("the body is %s: send a JSON object or an array of objects", kindOf(v))
}

func decodeLines(body []byte) ([]map[string]any, error) {
	var out []map[string]any
	for n, line := range bytes.Split(body, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		d := json.NewDecoder(bytes.NewReader(line))
		d.UseNumber()
		var v any
		if err := d.Decode(&v); err != nil {
			return nil, fmt.Errorf("line %d: not valid JSON: %v", n+1, jsonError(err, line))
		}
		if _, err := d.Token(); err != io.EOF {
			return nil, fmt.Errorf("line %d: more than one JSON value on the line", n+1)
		}
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("line %d is %s, not a JSON object", n+1, kindOf(v))
		}
		out = append(out, numbers(m).(map[string]any))
	}
	if len(out) == 0 {
		return nil, errors.New("the body has no JSON lines")
	}
	return out, nil
}

// jsonError adds the line and column of a syntax error.
func jsonError(err error, data []byte) error {
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return err
	}
	before := data[:min(int(se.Offset), len(data))]
	line := bytes.Count(before, []byte("\n")) + 1
	col := max(len(before)-bytes.LastIndexByte(before, '\n')-1, 1) // before ends with the bad byte
	return fmt.Errorf("%v (line %d, column %d)", err, line, col)
}

func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	}
	return "an object"
}

// numbers turns json.Numbers into int64 or float64, as the json
// converter decodes them.
func numbers(v any) any {
	switch t := v.(type) {
	case json.Number:
		if n, err := t.Int64(); err == nil {
			return n
		}
		f, _ := t.Float64()
		return f
	case map[string]any:
		for k, x := range t {
			t[k] = numbers(x)
		}
	case []any:
		for i, x := range t {
			t[i] = numbers(x)
		}
	}
	return v
}
