package transforms

// Cast$Key and Cast$Value: cast fields, or the whole key or value, to
// another primitive type, as Kafka's Cast (Java's conversions included:
// narrowing an integer wraps, a float truncates toward zero).

import (
	"encoding/base64"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/runnel-io/runnel/connect"
)

var castConfig = connect.NewConfigDef(
	connect.ConfigKey{Name: "spec", Type: connect.TypeList, Required: true, Importance: connect.High,
		Doc: "List of fields and the type to cast them to of the form field1:type,field2:type to cast fields of " +
			"Maps or Structs. A single type to cast the entire value. Valid types are int8, int16, int32, " +
			"int64, float32, float64, boolean, and string. Note that binary fields can only be cast to string.",
		Check: func(v string) error {
			_, _, err := parseCastSpec(connect.SplitList(v))
			return err
		}},
)

const purposeCast = "cast types"

// castTypes are the types Cast casts to, by the names its spec uses.
var castTypes = map[string]connect.SchemaType{
	"int8":    connect.Int8,
	"int16":   connect.Int16,
	"int32":   connect.Int32,
	"int64":   connect.Int64,
	"float32": connect.Float32,
	"float64": connect.Float64,
	"boolean": connect.Boolean,
	"string":  connect.String,
}

const supportedCasts = "[INT8, INT16, INT32, INT64, FLOAT32, FLOAT64, BOOLEAN, STRING]"

// parseCastSpec reads "field:type,..." or a single "type" for the whole
// value.
func parseCastSpec(items []string) (whole connect.SchemaType, fields map[string]connect.SchemaType, err error) {
	if len(items) == 0 {
		return "", nil, fmt.Errorf("Must specify at least one field to cast.")
	}
	fields = map[string]connect.SchemaType{}
	for _, item := range items {
		parts := strings.Split(item, ":")
		if len(parts) > 2 {
			return "", nil, fmt.Errorf("Invalid cast mapping: %s", item)
		}
		name := strings.ToLower(strings.TrimSpace(parts[len(parts)-1]))
		t, ok := castTypes[name]
		if !ok {
			switch name {
			case "bytes", "array", "map", "struct":
				return "", nil, fmt.Errorf("Cast transformation does not support casting to %s; supported types are %s", strings.ToUpper(name), supportedCasts)
			}
			return "", nil, fmt.Errorf("Invalid type found in casting spec: %s", strings.TrimSpace(parts[len(parts)-1]))
		}
		if len(parts) == 1 {
			if len(items) > 1 {
				return "", nil, fmt.Errorf("Cast transformations that specify a type to cast the entire value to may only specify a single cast in their spec")
			}
			return t, nil, nil
		}
		field := strings.TrimSpace(parts[0])
		if field == "" {
			return "", nil, fmt.Errorf("Invalid cast mapping: %s", item)
		}
		fields[field] = t
	}
	return "", fields, nil
}

type cast struct {
	side
	whole   connect.SchemaType // "": cast fields
	fields  map[string]connect.SchemaType
	schemas schemaCache
}

func newCast(s side) func(connect.Config) (connect.Transformation, error) {
	return func(cfg connect.Config) (connect.Transformation, error) {
		cfg, err := parseConfig(castConfig, cfg)
		if err != nil {
			return nil, err
		}
		whole, fields, err := parseCastSpec(cfg.List("spec"))
		if err != nil {
			return nil, connect.KeyError{Key: "spec", Message: err.Error()}
		}
		return &cast{side: s, whole: whole, fields: fields}, nil
	}
}

// Apply casts. A nil value passes unchanged; a field cast needs a map (or
// struct) value, and casts only the fields it has.
func (t *cast) Apply(r *connect.Record) (bool, error) {
	schema, v := t.get(r)
	if v == nil {
		return true, nil
	}
	if schema == nil {
		if t.whole != "" {
			cv, err := castValue(v, "", t.whole)
			if err != nil {
				return false, err
			}
			t.set(r, nil, cv)
			return true, nil
		}
		m, err := requireMap(v, purposeCast)
		if err != nil {
			return false, err
		}
		out := copyMap(m)
		for name, to := range t.fields {
			fv, ok := m[name]
			if !ok {
				continue
			}
			if out[name], err = castValue(fv, "", to); err != nil {
				return false, fmt.Errorf("field %s: %w", name, err)
			}
		}
		t.set(r, nil, out)
		return true, nil
	}

	updated, err := t.schemas.get(schema, t.updatedSchema)
	if err != nil {
		return false, err
	}
	if t.whole != "" {
		cv, err := castValue(v, schema.Type, t.whole)
		if err != nil {
			return false, err
		}
		t.set(r, updated, cv)
		return true, nil
	}
	m, err := requireStruct(schema, v, purposeCast)
	if err != nil {
		return false, err
	}
	out := copyMap(m)
	for _, f := range schema.Fields {
		to, ok := t.fields[f.Name]
		if !ok {
			continue
		}
		if out[f.Name], err = castValue(m[f.Name], f.Schema.Type, to); err != nil {
			return false, fmt.Errorf("field %s: %w", f.Name, err)
		}
	}
	t.set(r, updated, out)
	return true, nil
}

func (t *cast) updatedSchema(s *connect.Schema) (*connect.Schema, error) {
	if t.whole != "" {
		if err := checkCastInput(s.Type); err != nil {
			return nil, err
		}
		out := copySchemaBasics(s, t.whole)
		if s.Default != nil {
			d, err := castValue(s.Default, s.Type, t.whole)
			if err != nil {
				return nil, fmt.Errorf("default value: %w", err)
			}
			out.Default = d
		}
		return out, nil
	}
	if s.Type != connect.Struct {
		return nil, dataErrorf("Only Struct objects supported for [%s], found a value of schema type %s", purposeCast, s.Type)
	}
	out := copySchemaBasics(s, connect.Struct)
	out.Fields = make([]connect.Field, 0, len(s.Fields))
	for _, f := range s.Fields {
		to, ok := t.fields[f.Name]
		if !ok {
			out.Fields = append(out.Fields, f)
			continue
		}
		if err := checkCastInput(f.Schema.Type); err != nil {
			return nil, fmt.Errorf("field %s: %w", f.Name, err)
		}
		fs := &connect.Schema{Type: to, Optional: f.Schema.Optional}
		if f.Schema.Default != nil {
			d, err := castValue(f.Schema.Default, f.Schema.Type, to)
			if err != nil {
				return nil, fmt.Errorf("field %s: default value: %w", f.Name, err)
			}
			fs.Default = d
		}
		out.Fields = append(out.Fields, connect.Field{Name: f.Name, Schema: fs})
	}
	return out, nil
}

func checkCastInput(t connect.SchemaType) error {
	switch t {
	case connect.Int8, connect.Int16, connect.Int32, connect.Int64, connect.Float32, connect.Float64,
		connect.Boolean, connect.String, connect.Bytes:
		return nil
	}
	return dataErrorf("Cast transformation does not support casting from %s; supported types are %s", strings.ToUpper(string(t)),
		"[INT8, INT16, INT32, INT64, FLOAT32, FLOAT64, BOOLEAN, STRING, BYTES]")
}

// castValue casts v (of schema type from, or "" to go by its Go type) to
// type to, in Record's representation: every integer an int64, every
// float a float64.
func castValue(v any, from, to connect.SchemaType) (any, error) {
	if v == nil {
		return nil, nil
	}
	var (
		i       int64
		f       float64
		isInt   bool
		isFloat bool
		bits    = 64
	)
	switch x := v.(type) {
	case int64:
		i, isInt = x, true
	case int:
		i, isInt = int64(x), true
	case int32:
		i, isInt = int64(x), true
	case int16:
		i, isInt = int64(x), true
	case int8:
		i, isInt = int64(x), true
	case float64:
		f, isFloat = x, true
		if from == connect.Float32 {
			bits = 32
		}
	case float32:
		f, isFloat, bits = float64(x), true, 32
	case bool:
		if x {
			i = 1
		}
		switch to {
		case connect.Boolean:
			return x, nil
		case connect.String:
			return strconv.FormatBool(x), nil
		case connect.Float32, connect.Float64:
			return float64(i), nil
		}
		return i, nil
	case string:
		return castString(x, to)
	case []byte:
		if to != connect.String {
			return nil, dataErrorf("Unexpected type in Cast transformation: []byte can only be cast to string")
		}
		return base64.StdEncoding.EncodeToString(x), nil
	default:
		return nil, dataErrorf("Cast transformation was passed a value of type %s which is not supported by Connect's data API", typeName(v))
	}

	switch to {
	case connect.String:
		if isFloat {
			return javaFloatString(f, bits), nil
		}
		return strconv.FormatInt(i, 10), nil
	case connect.Boolean:
		if isFloat {
			return javaToInt64(f) != 0, nil
		}
		return i != 0, nil
	case connect.Float64:
		if isInt {
			return float64(i), nil
		}
		return f, nil
	case connect.Float32:
		if isInt {
			return float64(float32(i)), nil
		}
		return float64(float32(f)), nil
	case connect.Int64:
		if isFloat {
			return javaToInt64(f), nil
		}
		return i, nil
	}
	// int8, int16, int32: Java narrows a double to int first, then wraps.
	if isFloat {
		i = int64(javaToInt32(f))
	}
	switch to {
	case connect.Int8:
		return int64(int8(i)), nil
	case connect.Int16:
		return int64(int16(i)), nil
	case connect.Int32:
		return int64(int32(i)), nil
	}
	return nil, dataErrorf("%s is not supported in the Cast transformation.", to)
}

// castString parses a string as Java's parseX methods do: integers must
// fit the type, booleans are true when "true" in any case.
func castString(s string, to connect.SchemaType) (any, error) {
	bits := 0
	switch to {
	case connect.String:
		return s, nil
	case connect.Boolean:
		return strings.EqualFold(s, "true"), nil
	case connect.Float32, connect.Float64:
		f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil {
			return nil, dataErrorf("Value (%s) was out of range for requested data type %s", s, to)
		}
		if to == connect.Float32 {
			f = float64(float32(f))
		}
		return f, nil
	case connect.Int8:
		bits = 8
	case connect.Int16:
		bits = 16
	case connect.Int32:
		bits = 32
	case connect.Int64:
		bits = 64
	}
	n, err := strconv.ParseInt(s, 10, bits)
	if err != nil {
		return nil, dataErrorf("Value (%s) was out of range for requested data type %s", s, to)
	}
	return n, nil
}

// javaToInt64 is Java's (long) cast of a double: NaN is 0, out of range
// saturates.
func javaToInt64(f float64) int64 {
	switch {
	case math.IsNaN(f):
		return 0
	case f >= math.MaxInt64:
		return math.MaxInt64
	case f <= math.MinInt64:
		return math.MinInt64
	}
	return int64(f)
}

// javaToInt32 is Java's (int) cast of a double.
func javaToInt32(f float64) int32 {
	switch {
	case math.IsNaN(f):
		return 0
	case f >= math.MaxInt32:
		return math.MaxInt32
	case f <= math.MinInt32:
		return math.MinInt32
	}
	return int32(f)
}

// javaFloatString formats a float as Java's Double.toString (or
// Float.toString for bits 32): 1.0, 0.001, 1.0E7, 1.0E-4.
func javaFloatString(f float64, bits int) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case f == 0:
		if math.Signbit(f) {
			return "-0.0"
		}
		return "0.0"
	}
	if abs := math.Abs(f); abs >= 1e-3 && abs < 1e7 {
		s := strconv.FormatFloat(f, 'f', -1, bits)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	mant, exp, _ := strings.Cut(strconv.FormatFloat(f, 'E', -1, bits), "E")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	e, _ := strconv.Atoi(exp)
	return mant + "E" + strconv.Itoa(e)
}
