package connect

// Reading JSON into Connect values and schemas. encoding/json decodes the
// bytes into a tree (with json.Number for numbers); the functions here
// turn that tree, in place, into Record's representation, checking it
// against a schema when there is one.

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"encoding/json/jsontext"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"sync"
)

// decodeJSON parses one JSON value, keeping numbers as json.Number (the
// schema decides what they become).
func decodeJSON(data []byte) (any, error) { return parseTree(data, false) }

// ParseJSON parses one JSON value into Record's representation, as the
// json converter without schemas does: integers are int64 (float64 beyond
// its range), other numbers float64, objects map[string]any, arrays
// []any. Connectors that read JSON themselves (JSON lines, HTTP bodies)
// use it, so their values look like converted ones.
func ParseJSON(data []byte) (any, error) { return parseTree(data, true) }

// parseTree reads one JSON value with the standard library's tokenizer
// (encoding/json/jsontext) and builds the tree itself: about three times
// faster than json.Decoder with UseNumber, which goes through reflection.
// Duplicate names (the last wins) and invalid UTF-8 are accepted, as
// encoding/json and Kafka's Jackson accept them.
func parseTree(data []byte, plain bool) (any, error) {
	if isJSONSpace(data) {
		return nil, nil
	}
	pd := treeDecoders.Get().(*treeDecoder)
	defer treeDecoders.Put(pd)
	pd.r.Reset(data)
	pd.d.Reset(&pd.r, jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	v, err := pd.value(plain)
	if err == nil {
		if _, err = pd.d.ReadToken(); err == io.EOF {
			return v, nil
		}
		if err == nil {
			err = errors.New("more than one top-level value")
		}
	}
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		err = errors.New("unexpected end of JSON input")
	}
	return nil, serializationError(err)
}

type treeDecoder struct {
	r bytes.Reader
	d *jsontext.Decoder
}

var treeDecoders = sync.Pool{New: func() any {
	pd := &treeDecoder{}
	pd.d = jsontext.NewDecoder(&pd.r)
	return pd
}}

func (pd *treeDecoder) value(plain bool) (any, error) {
	tok, err := pd.d.ReadToken()
	if err != nil {
		return nil, err
	}
	switch tok.Kind() {
	case 'n':
		return nil, nil
	case 't', 'f':
		return tok.Bool(), nil
	case '"':
		return tok.String(), nil
	case '0':
		if plain {
			return plainNumber(json.Number(tok.String()))
		}
		return json.Number(tok.String()), nil
	case '{':
		m := map[string]any{}
		for pd.d.PeekKind() != '}' {
			kt, err := pd.d.ReadToken()
			if err != nil {
				return nil, err
			}
			k := kt.String() // before the next read voids the token
			v, err := pd.value(plain)
			if err != nil {
				return nil, err
			}
			m[k] = v
		}
		_, err := pd.d.ReadToken()
		return m, err
	case '[':
		a := []any{}
		for pd.d.PeekKind() != ']' {
			v, err := pd.value(plain)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
		_, err := pd.d.ReadToken()
		return a, err
	}
	return nil, fmt.Errorf("unexpected %v", tok)
}

func isJSONSpace(b []byte) bool { return firstNonSpace(b) == len(b) }

func firstNonSpace(b []byte) int {
	for i, c := range b {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return i
		}
	}
	return len(b)
}

// plainValue turns a decoded tree without a schema into Record's
// representation, in place.
func plainValue(node any) (any, error) {
	switch x := node.(type) {
	case json.Number:
		return plainNumber(x)
	case []any:
		for i, el := range x {
			v, err := plainValue(el)
			if err != nil {
				return nil, err
			}
			x[i] = v
		}
	case map[string]any:
		for k, el := range x {
			switch el.(type) {
			case json.Number, []any, map[string]any:
				v, err := plainValue(el)
				if err != nil {
					return nil, err
				}
				x[k] = v
			}
		}
	}
	return node, nil
}

// plainNumber reads an integer as int64 (as float64 beyond its range) and
// any other number as float64.
func plainNumber(n json.Number) (any, error) {
	s := string(n)
	if !strings.ContainsAny(s, ".eE") {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return i, nil
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return nil, fmt.Errorf("number %s is out of range", s)
	}
	return f, nil
}

type decoder struct{ replaceNull bool }

// typed turns a decoded tree into a value of schema s, in place.
func (d decoder) typed(s *Schema, node any) (any, error) {
	if node == nil {
		if s.Default != nil && d.replaceNull {
			return s.Default, nil
		}
		if s.Optional {
			return nil, nil
		}
		return nil, fmt.Errorf("Invalid null value for required %s field", s.Type)
	}
	switch s.Type {
	case Boolean:
		if b, ok := node.(bool); ok {
			return b, nil
		}
	case Int8, Int16, Int32, Int64:
		if n, ok := node.(json.Number); ok {
			i, err := jsonInt(n)
			if err != nil {
				return nil, err
			}
			if err := checkIntRange(s.Type, i); err != nil {
				return nil, err
			}
			return i, nil
		}
	case Float32, Float64:
		if n, ok := node.(json.Number); ok {
			f, err := strconv.ParseFloat(string(n), 64)
			if err != nil {
				return nil, fmt.Errorf("number %s is out of range for %s", n, s.Type)
			}
			if s.Type == Float32 {
				if math.Abs(f) > math.MaxFloat32 {
					return nil, fmt.Errorf("number %s is out of range for %s", n, s.Type)
				}
				f = float64(float32(f))
			}
			return f, nil
		}
	case String:
		if str, ok := node.(string); ok {
			return str, nil
		}
	case Bytes:
		if str, ok := node.(string); ok {
			b, err := base64.StdEncoding.DecodeString(str)
			if err != nil {
				if b, err = base64.RawStdEncoding.DecodeString(str); err != nil {
					return nil, fmt.Errorf("Invalid bytes field: %w", err)
				}
			}
			return b, nil
		}
	case Array:
		if arr, ok := node.([]any); ok {
			for i, el := range arr {
				v, err := d.typed(s.Items, el)
				if err != nil {
					return nil, fmt.Errorf("element %d: %w", i, err)
				}
				arr[i] = v
			}
			return arr, nil
		}
	case Map:
		return d.typedMap(s, node)
	case Struct:
		obj, ok := node.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("Structs should be encoded as JSON objects, but found %s", jsonKind(node))
		}
		for i := range s.Fields {
			f := &s.Fields[i]
			v, err := d.typed(f.Schema, obj[f.Name])
			if err != nil {
				return nil, fmt.Errorf("field %q: %w", f.Name, err)
			}
			obj[f.Name] = v
		}
		if len(obj) != len(s.Fields) { // fields the schema does not have
			for k := range obj {
				if s.Field(k) == nil {
					delete(obj, k)
				}
			}
		}
		return obj, nil
	default:
		return nil, fmt.Errorf("Unknown schema type: %s", s.Type)
	}
	return nil, fmt.Errorf("expected %s, found %s", s.Type, jsonKind(node))
}

// jsonInt reads an integer; a number written with a fraction or exponent
// is accepted when it is a whole number.
func jsonInt(n json.Number) (int64, error) {
	if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
		return i, nil
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || f != math.Trunc(f) || f < -(1<<63) || f >= 1<<63 {
		return 0, fmt.Errorf("number %s is not a 64-bit integer", n)
	}
	return int64(f), nil
}

func (d decoder) typedMap(s *Schema, node any) (any, error) {
	if s.Keys.Type == String {
		obj, ok := node.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("Maps with string fields should be encoded as JSON objects, but found %s", jsonKind(node))
		}
		for k, el := range obj {
			v, err := d.typed(s.Values, el)
			if err != nil {
				return nil, fmt.Errorf("key %q: %w", k, err)
			}
			obj[k] = v
		}
		return obj, nil
	}
	arr, ok := node.([]any)
	if !ok {
		return nil, fmt.Errorf("Maps with non-string fields should be encoded as JSON array of tuples, but found %s", jsonKind(node))
	}
	out := make(map[string]any, len(arr))
	for _, entry := range arr {
		pair, ok := entry.([]any)
		if !ok {
			return nil, fmt.Errorf("Found invalid map entry instead of array tuple: %s", jsonKind(entry))
		}
		if len(pair) != 2 {
			return nil, fmt.Errorf("Found invalid map entry, expected length 2 but found: %d", len(pair))
		}
		k, err := d.typed(s.Keys, pair[0])
		if err != nil {
			return nil, fmt.Errorf("map key: %w", err)
		}
		if k == nil {
			return nil, errors.New("map keys must not be null")
		}
		text := mapKeyText(k)
		if out[text], err = d.typed(s.Values, pair[1]); err != nil {
			return nil, fmt.Errorf("key %q: %w", text, err)
		}
	}
	return out, nil
}

// mapKeyText is the map[string]any key of a non-string map key.
func mapKeyText(k any) string {
	switch x := k.(type) {
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	}
	return fmt.Sprint(k) // a string: checkMapKeys allows no other type
}

// jsonKind names a decoded JSON node as Jackson's node types do.
func jsonKind(node any) string {
	switch node.(type) {
	case nil:
		return "NULL"
	case bool:
		return "BOOLEAN"
	case json.Number:
		return "NUMBER"
	case string:
		return "STRING"
	case []any:
		return "ARRAY"
	case map[string]any:
		return "OBJECT"
	}
	return typeName(node)
}

// schema parses a schema in Kafka's JSON format; null is no schema.
func (d decoder) schema(node any) (*Schema, error) {
	if node == nil {
		return nil, nil
	}
	return d.schemaDepth(node, 0)
}

func (d decoder) schemaDepth(node any, depth int) (*Schema, error) {
	if depth > maxJSONDepth {
		return nil, errTooDeep
	}
	obj, _ := node.(map[string]any)
	typ, ok := obj["type"].(string)
	if !ok {
		return nil, errors.New("Schema must contain 'type' field")
	}
	s := &Schema{Type: SchemaType(typ)}
	var err error
	switch s.Type {
	case Int8, Int16, Int32, Int64, Float32, Float64, Boolean, String, Bytes:
	case Array:
		items := obj["items"]
		if items == nil {
			return nil, errors.New("Array schema did not specify the element type")
		}
		if s.Items, err = d.schemaDepth(items, depth+1); err != nil {
			return nil, err
		}
	case Map:
		keys, values := obj["keys"], obj["values"]
		if keys == nil {
			return nil, errors.New("Map schema did not specify the key type")
		}
		if values == nil {
			return nil, errors.New("Map schema did not specify the value type")
		}
		if s.Keys, err = d.schemaDepth(keys, depth+1); err != nil {
			return nil, err
		}
		if err := checkMapKeys(s.Keys); err != nil {
			return nil, err
		}
		if s.Values, err = d.schemaDepth(values, depth+1); err != nil {
			return nil, err
		}
	case Struct:
		fields, ok := obj["fields"].([]any)
		if !ok {
			return nil, errors.New(`Struct schema's "fields" argument is not an array.`)
		}
		s.Fields = make([]Field, 0, len(fields))
		for _, fnode := range fields {
			fobj, _ := fnode.(map[string]any)
			name, ok := fobj["field"].(string)
			if !ok {
				return nil, errors.New("Struct schema's field name not specified properly")
			}
			if s.Field(name) != nil {
				return nil, fmt.Errorf("Cannot create field because of field name duplication %s", name)
			}
			fs, err := d.schemaDepth(fobj, depth+1)
			if err != nil {
				return nil, fmt.Errorf("field %q: %w", name, err)
			}
			s.Fields = append(s.Fields, Field{Name: name, Schema: fs})
		}
	default:
		return nil, fmt.Errorf("Unknown schema type: %s", typ)
	}
	// As Kafka: optional, name, version and doc of another JSON type are
	// ignored.
	s.Optional, _ = obj["optional"].(bool)
	s.Name, _ = obj["name"].(string)
	s.Doc, _ = obj["doc"].(string)
	if v, ok := obj["version"].(json.Number); ok {
		if n, err := strconv.ParseInt(string(v), 10, 32); err == nil {
			s.Version = int(n)
		}
	}
	if params, ok := obj["parameters"].(map[string]any); ok {
		s.Parameters = make(map[string]string, len(params))
		for k, v := range params {
			str, ok := v.(string)
			if !ok {
				return nil, errors.New("Schema parameters must have string values.")
			}
			s.Parameters[k] = str
		}
	}
	if def := obj["default"]; def != nil {
		if s.Default, err = d.typed(s, def); err != nil {
			return nil, fmt.Errorf("default value: %w", err)
		}
	}
	return s, nil
}
