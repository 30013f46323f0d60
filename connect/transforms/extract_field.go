package transforms

// ExtractField$Key and ExtractField$Value: replace the key or value with
// one of its fields.

import (
	"fmt"
	"strings"

	"github.com/runnel-io/runnel/connect"
)

var extractFieldConfig = connect.NewConfigDef(
	connect.ConfigKey{Name: "field", Type: connect.TypeString, Required: true, Importance: connect.Medium,
		Doc: "Field name to extract."},
	connect.ConfigKey{Name: "field.syntax.version", Type: connect.TypeString, Default: "V1", Importance: connect.High,
		Doc: "Defines the version of the syntax to access fields. If set to V1, then the field paths are limited to access " +
			"the elements at the root level of the struct or map. If set to V2, the syntax will support accessing nested " +
			"elements. To access nested elements, dotted notation is used. If dots are already included in the field name, " +
			"then backtick pairs can be used to wrap field names containing dots. E.g. to access the subfield baz from a " +
			"field named \"foo.bar\" in a struct/map the following format can be used to access its elements: \"`foo.bar`.baz\".",
		Check: connect.OneOf("V1", "V2"), Recommended: []string{"V1", "V2"}},
)

const purposeExtract = "field extraction"

type extractField struct {
	side
	path []string // one name with V1
}

func newExtractField(s side) func(connect.Config) (connect.Transformation, error) {
	return func(cfg connect.Config) (connect.Transformation, error) {
		cfg, err := parseConfig(extractFieldConfig, cfg)
		if err != nil {
			return nil, err
		}
		field := cfg.String("field")
		path := []string{field}
		if strings.EqualFold(strings.TrimSpace(cfg.String("field.syntax.version")), "V2") {
			if path, err = parseFieldPath(field); err != nil {
				return nil, connect.KeyError{Key: "field", Message: fmt.Sprintf("Invalid value %s for configuration field: %v", field, err)}
			}
		}
		return &extractField{side: s, path: path}, nil
	}
}

// Apply replaces the key or value with the field; a missing field (or a
// nil value) gives nil. With a schema the field must be in it, and its
// schema becomes the key's or value's.
func (t *extractField) Apply(r *connect.Record) (bool, error) {
	schema, v := t.get(r)
	if schema == nil {
		if v == nil {
			return true, nil
		}
		m, err := requireMap(v, purposeExtract)
		if err != nil {
			return false, err
		}
		for _, name := range t.path[:len(t.path)-1] {
			if m, _ = m[name].(map[string]any); m == nil {
				t.set(r, nil, nil)
				return true, nil
			}
		}
		t.set(r, nil, m[t.path[len(t.path)-1]])
		return true, nil
	}

	fs := schema
	for _, name := range t.path {
		if fs.Type != connect.Struct {
			return false, dataErrorf("Only Struct objects supported for [%s], found a value of schema type %s", purposeExtract, fs.Type)
		}
		f := fs.Field(name)
		if f == nil {
			return false, dataErrorf("Unknown field: %s", strings.Join(t.path, "."))
		}
		fs = f.Schema
	}
	for _, name := range t.path {
		if v == nil {
			break
		}
		m, ok := v.(map[string]any)
		if !ok {
			return false, dataErrorf("Only Struct objects supported for [%s], found: %s", purposeExtract, typeName(v))
		}
		v = m[name]
	}
	t.set(r, fs, v)
	return true, nil
}

// parseFieldPath reads a V2 field path: names separated by dots; a name
// in backticks may hold dots, and \` is a backtick inside one.
func parseFieldPath(s string) ([]string, error) {
	var path []string
	var cur strings.Builder
	quoted := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quoted && c == '\\' && i+1 < len(s) && s[i+1] == '`':
			cur.WriteByte('`')
			i++
		case quoted && c == '`' && (i+1 == len(s) || s[i+1] == '.'):
			quoted = false
		case !quoted && c == '`' && cur.Len() == 0:
			quoted = true
		case !quoted && c == '.':
			path = append(path, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(c)
		}
	}
	if quoted {
		return nil, fmt.Errorf("unterminated backtick")
	}
	path = append(path, cur.String())
	for _, p := range path {
		if p == "" {
			return nil, fmt.Errorf("empty field name in path")
		}
	}
	return path, nil
}
