package connect

// Writing Connect values and schemas as JSON. The types a Record holds
// (nil, bool, the integer and float types, string, []byte, []any,
// map[string]any) are written without reflection; other slices and maps
// through reflect, anything else through encoding/json.

import (
	"bytes"
	"cmp"
	"encoding"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"
)

// maxJSONDepth bounds the nesting of values and schemas, so a value that
// contains itself is an error instead of a stack overflow.
const maxJSONDepth = 1000

var errTooDeep = fmt.Errorf("value nested more than %d levels deep (does it contain itself?)", maxJSONDepth)

type jsonEncoder struct {
	buf         []byte
	keys        []string // sorted map keys, used as a stack by nested maps
	depth       int
	replaceNull bool
}

var encoderPool = sync.Pool{New: func() any { return new(jsonEncoder) }}

func getEncoder(replaceNull bool) *jsonEncoder {
	e := encoderPool.Get().(*jsonEncoder)
	e.replaceNull = replaceNull
	return e
}

func putEncoder(e *jsonEncoder) {
	if cap(e.buf) > 64<<10 || cap(e.keys) > 1024 {
		return // let big buffers go
	}
	e.buf = e.buf[:0]
	clear(e.keys[:cap(e.keys)]) // keep no user strings alive
	e.keys = e.keys[:0]
	e.depth = 0
	encoderPool.Put(e)
}

// encodeJSON writes v as plain JSON.
func encodeJSON(v any) ([]byte, error) {
	e := getEncoder(true)
	defer putEncoder(e)
	if err := e.plain(v); err != nil {
		return nil, err
	}
	return bytes.Clone(e.buf), nil
}

func (e *jsonEncoder) enter() error {
	e.depth++
	if e.depth > maxJSONDepth {
		return errTooDeep
	}
	return nil
}

// plain writes a value that has no schema.
func (e *jsonEncoder) plain(v any) error {
	switch x := v.(type) {
	case nil:
		e.buf = append(e.buf, "null"...)
	case string:
		e.buf = appendJSONString(e.buf, x)
	case bool:
		e.buf = strconv.AppendBool(e.buf, x)
	case int64:
		e.buf = strconv.AppendInt(e.buf, x, 10)
	case int:
		e.buf = strconv.AppendInt(e.buf, int64(x), 10)
	case int32:
		e.buf = strconv.AppendInt(e.buf, int64(x), 10)
	case int16:
		e.buf = strconv.AppendInt(e.buf, int64(x), 10)
	case int8:
		e.buf = strconv.AppendInt(e.buf, int64(x), 10)
	case uint64:
		e.buf = strconv.AppendUint(e.buf, x, 10)
	case uint:
		e.buf = strconv.AppendUint(e.buf, uint64(x), 10)
	case uint32:
		e.buf = strconv.AppendUint(e.buf, uint64(x), 10)
	case uint16:
		e.buf = strconv.AppendUint(e.buf, uint64(x), 10)
	case uint8:
		e.buf = strconv.AppendUint(e.buf, uint64(x), 10)
	case float64:
		return e.float(x, 64)
	case float32:
		return e.float(float64(x), 32)
	case json.Number:
		return e.number(x)
	case []byte:
		e.bytes(x)
	case []any:
		if err := e.enter(); err != nil {
			return err
		}
		e.buf = append(e.buf, '[')
		for i, el := range x {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			if err := e.plain(el); err != nil {
				return fmt.Errorf("element %d: %w", i, err)
			}
		}
		e.buf = append(e.buf, ']')
		e.depth--
	case map[string]any:
		if err := e.enter(); err != nil {
			return err
		}
		start := len(e.keys)
		for k := range x {
			e.keys = append(e.keys, k)
		}
		keys := e.keys[start:] // stays valid when nested maps grow e.keys
		slices.Sort(keys)
		e.buf = append(e.buf, '{')
		for i, k := range keys {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			e.buf = appendJSONString(e.buf, k)
			e.buf = append(e.buf, ':')
			if err := e.plain(x[k]); err != nil {
				return fmt.Errorf("field %q: %w", k, err)
			}
		}
		e.buf = append(e.buf, '}')
		e.keys = e.keys[:start]
		e.depth--
	case []string:
		e.buf = append(e.buf, '[')
		for i, s := range x {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			e.buf = appendJSONString(e.buf, s)
		}
		e.buf = append(e.buf, ']')
	default:
		return e.plainReflect(v)
	}
	return nil
}

// plainReflect writes the types plain has no case for: other slices and
// maps with string keys through reflect, the rest with encoding/json.
func (e *jsonEncoder) plainReflect(v any) error {
	switch v.(type) {
	case json.Marshaler, encoding.TextMarshaler:
		return e.marshal(v)
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		if rv.Kind() == reflect.Slice && rv.IsNil() {
			e.buf = append(e.buf, "null"...)
			return nil
		}
		if err := e.enter(); err != nil {
			return err
		}
		e.buf = append(e.buf, '[')
		for i := range rv.Len() {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			if err := e.plain(rv.Index(i).Interface()); err != nil {
				return fmt.Errorf("element %d: %w", i, err)
			}
		}
		e.buf = append(e.buf, ']')
		e.depth--
		return nil
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String {
			return e.marshal(v)
		}
		if rv.IsNil() {
			e.buf = append(e.buf, "null"...)
			return nil
		}
		if err := e.enter(); err != nil {
			return err
		}
		keys := rv.MapKeys()
		slices.SortFunc(keys, func(a, b reflect.Value) int { return cmp.Compare(a.String(), b.String()) })
		e.buf = append(e.buf, '{')
		for i, k := range keys {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			e.buf = appendJSONString(e.buf, k.String())
			e.buf = append(e.buf, ':')
			if err := e.plain(rv.MapIndex(k).Interface()); err != nil {
				return fmt.Errorf("field %q: %w", k.String(), err)
			}
		}
		e.buf = append(e.buf, '}')
		e.depth--
		return nil
	case reflect.String:
		e.buf = appendJSONString(e.buf, rv.String())
		return nil
	case reflect.Bool:
		e.buf = strconv.AppendBool(e.buf, rv.Bool())
		return nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		e.buf = strconv.AppendInt(e.buf, rv.Int(), 10)
		return nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		e.buf = strconv.AppendUint(e.buf, rv.Uint(), 10)
		return nil
	case reflect.Float32:
		return e.float(rv.Float(), 32)
	case reflect.Float64:
		return e.float(rv.Float(), 64)
	}
	return e.marshal(v)
}

// marshal writes v with encoding/json, without its HTML escaping.
func (e *jsonEncoder) marshal(v any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("cannot write %s as JSON: %w", typeName(v), err)
	}
	e.buf = append(e.buf, bytes.TrimRight(b.Bytes(), "\n")...)
	return nil
}

func (e *jsonEncoder) float(f float64, bits int) error {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Errorf("JSON has no representation for the number %v", f)
	}
	e.buf = appendJSONFloat(e.buf, f, bits)
	return nil
}

// appendJSONFloat writes f as encoding/json does, but always as a float
// (1.0, not 1) so that it reads back as a float64, as Kafka writes doubles.
func appendJSONFloat(b []byte, f float64, bits int) []byte {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	start := len(b)
	b = strconv.AppendFloat(b, f, format, -1, bits)
	if format == 'e' {
		// 1e-07 → 1e-7, as encoding/json.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
		return b
	}
	if bytes.IndexByte(b[start:], '.') < 0 {
		b = append(b, '.', '0')
	}
	return b
}

func (e *jsonEncoder) number(n json.Number) error {
	if !isJSONNumber(string(n)) {
		return fmt.Errorf("invalid number %q", string(n))
	}
	e.buf = append(e.buf, n...)
	return nil
}

func (e *jsonEncoder) bytes(b []byte) {
	e.buf = append(e.buf, '"')
	e.buf = base64.StdEncoding.AppendEncode(e.buf, b)
	e.buf = append(e.buf, '"')
}

// typed writes a value that has a schema, checking that it fits.
func (e *jsonEncoder) typed(s *Schema, v any) error {
	if v == nil {
		if s.Default != nil && e.replaceNull {
			return e.typed(s, s.Default)
		}
		if s.Optional {
			e.buf = append(e.buf, "null"...)
			return nil
		}
		return errors.New("Conversion error: null value for field that is required and has no default value")
	}
	switch s.Type {
	case Int8, Int16, Int32, Int64:
		n, ok := toInt64(v)
		if !ok {
			return invalidType(s, v)
		}
		if err := checkIntRange(s.Type, n); err != nil {
			return err
		}
		e.buf = strconv.AppendInt(e.buf, n, 10)
	case Float32, Float64:
		f, ok := toFloat64(v)
		if !ok {
			return invalidType(s, v)
		}
		bits := 64
		if s.Type == Float32 {
			if math.Abs(f) > math.MaxFloat32 && !math.IsInf(f, 0) {
				return fmt.Errorf("value %v out of range for float", f)
			}
			bits = 32
		}
		return e.float(f, bits)
	case Boolean:
		b, ok := v.(bool)
		if !ok {
			return invalidType(s, v)
		}
		e.buf = strconv.AppendBool(e.buf, b)
	case String:
		str, ok := v.(string)
		if !ok {
			return invalidType(s, v)
		}
		e.buf = appendJSONString(e.buf, str)
	case Bytes:
		b, ok := v.([]byte)
		if !ok {
			return invalidType(s, v)
		}
		e.bytes(b)
	case Array:
		return e.typedArray(s, v)
	case Map:
		return e.typedMap(s, v)
	case Struct:
		return e.typedStruct(s, v)
	default:
		return fmt.Errorf("unknown schema type %q", s.Type)
	}
	return nil
}

func invalidType(s *Schema, v any) error {
	return fmt.Errorf("Invalid type for %s: %s", s.Type, typeName(v))
}

func (e *jsonEncoder) typedArray(s *Schema, v any) error {
	if s.Items == nil {
		return errors.New("array schema has no items schema")
	}
	if err := e.enter(); err != nil {
		return err
	}
	e.buf = append(e.buf, '[')
	if x, ok := v.([]any); ok {
		for i, el := range x {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			if err := e.typed(s.Items, el); err != nil {
				return fmt.Errorf("element %d: %w", i, err)
			}
		}
	} else {
		rv := reflect.ValueOf(v)
		if rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
			return invalidType(s, v)
		}
		for i := range rv.Len() {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			if err := e.typed(s.Items, rv.Index(i).Interface()); err != nil {
				return fmt.Errorf("element %d: %w", i, err)
			}
		}
	}
	e.buf = append(e.buf, ']')
	e.depth--
	return nil
}

// typedMap writes a map with string keys as a JSON object, and one with
// other (primitive) keys as Kafka does: an array of [key, value] pairs.
// Such maps are map[string]any in Go too, keyed by the keys' text.
func (e *jsonEncoder) typedMap(s *Schema, v any) error {
	if s.Keys == nil || s.Values == nil {
		return errors.New("map schema needs keys and values schemas")
	}
	if err := checkMapKeys(s.Keys); err != nil {
		return err
	}
	m, ok := v.(map[string]any)
	if !ok {
		if m, ok = reflectStringMap(v); !ok {
			return invalidType(s, v)
		}
	}
	if err := e.enter(); err != nil {
		return err
	}
	start := len(e.keys)
	for k := range m {
		e.keys = append(e.keys, k)
	}
	keys := e.keys[start:]
	slices.Sort(keys)
	object := s.Keys.Type == String
	if object {
		e.buf = append(e.buf, '{')
	} else {
		e.buf = append(e.buf, '[')
	}
	for i, k := range keys {
		if i > 0 {
			e.buf = append(e.buf, ',')
		}
		if object {
			e.buf = appendJSONString(e.buf, k)
			e.buf = append(e.buf, ':')
		} else {
			key, err := parseMapKey(s.Keys.Type, k)
			if err != nil {
				return err
			}
			e.buf = append(e.buf, '[')
			if err := e.typed(s.Keys, key); err != nil {
				return fmt.Errorf("key %q: %w", k, err)
			}
			e.buf = append(e.buf, ',')
		}
		if err := e.typed(s.Values, m[k]); err != nil {
			return fmt.Errorf("key %q: %w", k, err)
		}
		if !object {
			e.buf = append(e.buf, ']')
		}
	}
	if object {
		e.buf = append(e.buf, '}')
	} else {
		e.buf = append(e.buf, ']')
	}
	e.keys = e.keys[:start]
	e.depth--
	return nil
}

// reflectStringMap copies a map with string keys of another type than
// map[string]any.
func reflectStringMap(v any) (map[string]any, bool) {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Map || rv.Type().Key().Kind() != reflect.String {
		return nil, false
	}
	m := make(map[string]any, rv.Len())
	for it := rv.MapRange(); it.Next(); {
		m[it.Key().String()] = it.Value().Interface()
	}
	return m, true
}

func (e *jsonEncoder) typedStruct(s *Schema, v any) error {
	m, ok := v.(map[string]any)
	if !ok {
		if m, ok = reflectStringMap(v); !ok {
			return invalidType(s, v)
		}
	}
	if err := e.enter(); err != nil {
		return err
	}
	e.buf = append(e.buf, '{')
	found := 0
	for i := range s.Fields {
		f := &s.Fields[i]
		if f.Schema == nil {
			return fmt.Errorf("field %q has no schema", f.Name)
		}
		if i > 0 {
			e.buf = append(e.buf, ',')
		}
		e.buf = appendJSONString(e.buf, f.Name)
		e.buf = append(e.buf, ':')
		fv, ok := m[f.Name]
		if ok {
			found++
		}
		if err := e.typed(f.Schema, fv); err != nil {
			return fmt.Errorf("field %q: %w", f.Name, err)
		}
	}
	if found != len(m) {
		for k := range m {
			if s.Field(k) == nil {
				return fmt.Errorf("field %q is not in the struct schema", k)
			}
		}
	}
	e.buf = append(e.buf, '}')
	e.depth--
	return nil
}

// schema writes s in Kafka's JSON schema format, in Kafka's key order. A
// struct's field is written with its "field" name last.
func (e *jsonEncoder) schema(s *Schema, field string, isField bool) error {
	if s == nil {
		return errors.New("missing schema")
	}
	if !knownSchemaType(s.Type) {
		return fmt.Errorf("Couldn't translate unsupported schema type %q", s.Type)
	}
	if err := e.enter(); err != nil {
		return err
	}
	e.buf = append(e.buf, `{"type":`...)
	e.buf = appendJSONString(e.buf, string(s.Type))
	switch s.Type {
	case Array:
		if s.Items == nil {
			return errors.New("array schema has no items schema")
		}
		e.buf = append(e.buf, `,"items":`...)
		if err := e.schema(s.Items, "", false); err != nil {
			return err
		}
	case Map:
		if s.Keys == nil || s.Values == nil {
			return errors.New("map schema needs keys and values schemas")
		}
		if err := checkMapKeys(s.Keys); err != nil {
			return err
		}
		e.buf = append(e.buf, `,"keys":`...)
		if err := e.schema(s.Keys, "", false); err != nil {
			return err
		}
		e.buf = append(e.buf, `,"values":`...)
		if err := e.schema(s.Values, "", false); err != nil {
			return err
		}
	case Struct:
		e.buf = append(e.buf, `,"fields":[`...)
		for i := range s.Fields {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			f := &s.Fields[i]
			if f.Schema == nil {
				return fmt.Errorf("field %q has no schema", f.Name)
			}
			if err := e.schema(f.Schema, f.Name, true); err != nil {
				return fmt.Errorf("field %q: %w", f.Name, err)
			}
		}
		e.buf = append(e.buf, ']')
	}
	e.buf = append(e.buf, `,"optional":`...)
	e.buf = strconv.AppendBool(e.buf, s.Optional)
	if s.Name != "" {
		e.buf = append(e.buf, `,"name":`...)
		e.buf = appendJSONString(e.buf, s.Name)
	}
	if s.Version != 0 {
		e.buf = append(e.buf, `,"version":`...)
		e.buf = strconv.AppendInt(e.buf, int64(s.Version), 10)
	}
	if s.Doc != "" {
		e.buf = append(e.buf, `,"doc":`...)
		e.buf = appendJSONString(e.buf, s.Doc)
	}
	if s.Parameters != nil {
		keys := make([]string, 0, len(s.Parameters))
		for k := range s.Parameters {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		e.buf = append(e.buf, `,"parameters":{`...)
		for i, k := range keys {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			e.buf = appendJSONString(e.buf, k)
			e.buf = append(e.buf, ':')
			e.buf = appendJSONString(e.buf, s.Parameters[k])
		}
		e.buf = append(e.buf, '}')
	}
	if s.Default != nil {
		e.buf = append(e.buf, `,"default":`...)
		if err := e.typed(s, s.Default); err != nil {
			return fmt.Errorf("default value: %w", err)
		}
	}
	if isField {
		e.buf = append(e.buf, `,"field":`...)
		e.buf = appendJSONString(e.buf, field)
	}
	e.buf = append(e.buf, '}')
	e.depth--
	return nil
}

func knownSchemaType(t SchemaType) bool {
	switch t {
	case Int8, Int16, Int32, Int64, Float32, Float64, Boolean, String, Bytes, Array, Map, Struct:
		return true
	}
	return false
}

// checkMapKeys accepts the key schemas a map[string]any can hold: strings,
// and numbers and booleans by their text.
func checkMapKeys(keys *Schema) error {
	switch keys.Type {
	case String, Int8, Int16, Int32, Int64, Float32, Float64, Boolean:
		return nil
	}
	return fmt.Errorf("maps with keys of type %s are not supported", keys.Type)
}

// parseMapKey turns the text of a map key back into its value.
func parseMapKey(t SchemaType, text string) (any, error) {
	switch t {
	case Int8, Int16, Int32, Int64:
		n, err := strconv.ParseInt(text, 10, 64)
		if err == nil {
			return n, nil
		}
	case Float32, Float64:
		f, err := strconv.ParseFloat(text, 64)
		if err == nil {
			return f, nil
		}
	case Boolean:
		b, err := strconv.ParseBool(text)
		if err == nil {
			return b, nil
		}
	default:
		return text, nil
	}
	return nil, fmt.Errorf("map key %q is not a valid %s", text, t)
}

// toInt64 accepts every Go integer type (and json.Number) for the integer
// schema types.
func toInt64(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case int:
		return int64(x), true
	case int32:
		return int64(x), true
	case int16:
		return int64(x), true
	case int8:
		return int64(x), true
	case uint8:
		return int64(x), true
	case uint16:
		return int64(x), true
	case uint32:
		return int64(x), true
	case uint64:
		return int64(x), x <= math.MaxInt64
	case uint:
		return int64(x), uint64(x) <= math.MaxInt64
	case json.Number:
		n, err := strconv.ParseInt(string(x), 10, 64)
		return n, err == nil
	}
	return 0, false
}

// toFloat64 accepts every Go number type (and json.Number) for the float
// schema types.
func toFloat64(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		return f, err == nil && isJSONNumber(string(x))
	}
	if n, ok := toInt64(v); ok {
		return float64(n), true
	}
	return 0, false
}

func checkIntRange(t SchemaType, n int64) error {
	var lo, hi int64
	switch t {
	case Int8:
		lo, hi = math.MinInt8, math.MaxInt8
	case Int16:
		lo, hi = math.MinInt16, math.MaxInt16
	case Int32:
		lo, hi = math.MinInt32, math.MaxInt32
	default:
		return nil
	}
	if n < lo || n > hi {
		return fmt.Errorf("value %d out of range for %s", n, t)
	}
	return nil
}

// isJSONNumber reports whether s is a number in JSON's grammar.
func isJSONNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		d := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == d {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		d := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == d {
			return false
		}
	}
	return i == len(s)
}

const hexDigits = "0123456789abcdef"

// appendJSONString writes s as a JSON string. Invalid UTF-8 becomes
// U+FFFD, as encoding/json does; <, > and & are left alone, as Kafka does.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
