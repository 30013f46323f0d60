package transforms

// ReplaceField$Key and ReplaceField$Value: keep, drop and rename fields.

import (
	"fmt"
	"strings"

	"github.com/runnel-io/runnel/connect"
)

var replaceFieldConfig = connect.NewConfigDef(
	connect.ConfigKey{Name: "exclude", Type: connect.TypeList, Importance: connect.Medium,
		Doc: "Fields to exclude. This takes precedence over the fields to include."},
	connect.ConfigKey{Name: "include", Type: connect.TypeList, Importance: connect.Medium,
		Doc: "Fields to include. If specified, only these fields will be used."},
	connect.ConfigKey{Name: "renames", Type: connect.TypeList, Importance: connect.Medium,
		Doc: "Field rename mappings: old:new, comma-separated.", Check: checkRenames},
	connect.ConfigKey{Name: "blacklist", Type: connect.TypeList, Importance: connect.Low,
		Doc: "Deprecated. Use exclude instead."},
	connect.ConfigKey{Name: "whitelist", Type: connect.TypeList, Importance: connect.Low,
		Doc: "Deprecated. Use include instead."},
)

const purposeReplace = "field replacement"

func checkRenames(v string) error {
	_, err := parseRenames(connect.SplitList(v))
	return err
}

func parseRenames(items []string) (map[string]string, error) {
	out := make(map[string]string, len(items))
	for _, item := range items {
		from, to, ok := strings.Cut(item, ":")
		from, to = strings.TrimSpace(from), strings.TrimSpace(to)
		if !ok || from == "" || to == "" || strings.Contains(to, ":") {
			return nil, fmt.Errorf("Invalid rename mapping: %s", item)
		}
		out[from] = to
	}
	return out, nil
}

type replaceField struct {
	side
	exclude, include map[string]bool
	renames          map[string]string
	schemas          schemaCache
}

func newReplaceField(s side) func(connect.Config) (connect.Transformation, error) {
	return func(cfg connect.Config) (connect.Transformation, error) {
		cfg, err := parseConfig(replaceFieldConfig, cfg)
		if err != nil {
			return nil, err
		}
		set := func(key, deprecated string) map[string]bool {
			list := cfg.List(key)
			if len(list) == 0 {
				list = cfg.List(deprecated)
			}
			m := make(map[string]bool, len(list))
			for _, f := range list {
				m[f] = true
			}
			return m
		}
		renames, err := parseRenames(cfg.List("renames"))
		if err != nil {
			return nil, connect.KeyError{Key: "renames", Message: err.Error()}
		}
		return &replaceField{
			side:    s,
			exclude: set("exclude", "blacklist"),
			include: set("include", "whitelist"),
			renames: renames,
		}, nil
	}
}

func (t *replaceField) keep(name string) bool {
	return !t.exclude[name] && (len(t.include) == 0 || t.include[name])
}

func (t *replaceField) renamed(name string) string {
	if to, ok := t.renames[name]; ok {
		return to
	}
	return name
}

// Apply builds a new map of the kept fields, renamed. A nil value passes
// unchanged.
func (t *replaceField) Apply(r *connect.Record) (bool, error) {
	schema, v := t.get(r)
	if v == nil {
		return true, nil
	}
	if schema == nil {
		m, err := requireMap(v, purposeReplace)
		if err != nil {
			return false, err
		}
		out := make(map[string]any, len(m))
		for k, fv := range m {
			if t.keep(k) {
				out[t.renamed(k)] = fv
			}
		}
		t.set(r, nil, out)
		return true, nil
	}
	m, err := requireStruct(schema, v, purposeReplace)
	if err != nil {
		return false, err
	}
	updated, err := t.schemas.get(schema, t.updatedSchema)
	if err != nil {
		return false, err
	}
	out := make(map[string]any, len(updated.Fields))
	for _, f := range schema.Fields {
		if t.keep(f.Name) {
			out[t.renamed(f.Name)] = m[f.Name]
		}
	}
	t.set(r, updated, out)
	return true, nil
}

func (t *replaceField) updatedSchema(s *connect.Schema) (*connect.Schema, error) {
	out := copySchemaBasics(s, connect.Struct)
	for _, f := range s.Fields {
		if !t.keep(f.Name) {
			continue
		}
		if err := addField(out, t.renamed(f.Name), f.Schema); err != nil {
			return nil, err
		}
	}
	return out, nil
}
