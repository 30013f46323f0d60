package transforms

// MaskField$Key and MaskField$Value: replace fields with an empty value of
// their type, or a given replacement.

import (
	"math"
	"strconv"
	"strings"

	"github.com/runnel-io/runnel/connect"
)

var maskFieldConfig = connect.NewConfigDef(
	connect.ConfigKey{Name: "fields", Type: connect.TypeList, Required: true, Importance: connect.High,
		Doc: "Names of fields to mask."},
	connect.ConfigKey{Name: "replacement", Type: connect.TypeString, Importance: connect.Low,
		Doc: "Custom value replacement, that will be applied to all 'fields' values (numeric or non-empty string values only). " +
			"Empty: each field gets the empty value of its type (0, false, \"\", an empty list or map)."},
)

const purposeMask = "mask fields"

type maskField struct {
	side
	fields      []string
	replacement *string
}

func newMaskField(s side) func(connect.Config) (connect.Transformation, error) {
	return func(cfg connect.Config) (connect.Transformation, error) {
		cfg, err := parseConfig(maskFieldConfig, cfg)
		if err != nil {
			return nil, err
		}
		t := &maskField{side: s, fields: cfg.List("fields")}
		if len(t.fields) == 0 {
			return nil, connect.KeyError{Key: "fields", Message: "Invalid value for configuration fields: Empty list"}
		}
		if repl := cfg.String("replacement"); repl != "" {
			t.replacement = &repl
		}
		return t, nil
	}
}

// Apply masks the fields the value has (others are left out). A nil value
// passes unchanged; the schema does not change.
func (t *maskField) Apply(r *connect.Record) (bool, error) {
	schema, v := t.get(r)
	if v == nil {
		return true, nil
	}
	var m map[string]any
	var err error
	if schema == nil {
		m, err = requireMap(v, purposeMask)
	} else {
		m, err = requireStruct(schema, v, purposeMask)
	}
	if err != nil {
		return false, err
	}
	out := copyMap(m)
	for _, name := range t.fields {
		fv, ok := m[name]
		if !ok {
			continue
		}
		var ftype connect.SchemaType
		if schema != nil {
			f := schema.Field(name)
			if f == nil {
				continue
			}
			ftype = f.Schema.Type
		}
		masked, err := t.mask(fv, ftype)
		if err != nil {
			return false, err
		}
		out[name] = masked
	}
	t.set(r, schema, out)
	return true, nil
}

// mask returns the masked value of v, of the same Go type; ftype (the
// field's schema type, or "") bounds an integer replacement.
func (t *maskField) mask(v any, ftype connect.SchemaType) (any, error) {
	if v == nil {
		return nil, nil
	}
	if t.replacement == nil {
		switch v.(type) {
		case bool:
			return false, nil
		case int64:
			return int64(0), nil
		case int:
			return 0, nil
		case int32:
			return int32(0), nil
		case int16:
			return int16(0), nil
		case int8:
			return int8(0), nil
		case float64:
			return float64(0), nil
		case float32:
			return float32(0), nil
		case string:
			return "", nil
		case []byte:
			return []byte{}, nil
		case []any:
			return []any{}, nil
		case map[string]any:
			return map[string]any{}, nil
		}
		return nil, dataErrorf("Cannot mask value of type: %s", typeName(v))
	}
	repl := *t.replacement
	bits := 64
	switch ftype {
	case connect.Int8:
		bits = 8
	case connect.Int16:
		bits = 16
	case connect.Int32:
		bits = 32
	}
	parseInt := func(bits int) (int64, error) {
		n, err := strconv.ParseInt(strings.TrimSpace(repl), 10, bits)
		if err != nil {
			return 0, dataErrorf("Unable to convert %s (string) to number", repl)
		}
		return n, nil
	}
	switch v.(type) {
	case string:
		return repl, nil
	case int64:
		return parseInt(bits)
	case int:
		return parseInt(strconv.IntSize)
	case int32:
		n, err := parseInt(32)
		return int32(n), err
	case int16:
		n, err := parseInt(16)
		return int16(n), err
	case int8:
		n, err := parseInt(8)
		return int8(n), err
	case float64, float32:
		f, err := strconv.ParseFloat(strings.TrimSpace(repl), 64)
		if err != nil || math.IsNaN(f) {
			return nil, dataErrorf("Unable to convert %s (string) to number", repl)
		}
		if _, ok := v.(float32); ok {
			return float32(f), nil
		}
		if ftype == connect.Float32 {
			f = float64(float32(f))
		}
		return f, nil
	}
	return nil, dataErrorf("Cannot mask value of type %s with custom replacement.", typeName(v))
}
