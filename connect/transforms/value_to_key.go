package transforms

// ValueToKey: make the key a struct (or map) of some of the value's fields.

import (
	"github.com/runnel-io/runnel/connect"
)

var valueToKeyConfig = connect.NewConfigDef(
	connect.ConfigKey{Name: "fields", Type: connect.TypeList, Required: true, Importance: connect.High,
		Doc: "Field names on the record value to extract as the record key."},
)

const purposeValueToKey = "copying fields from value to key"

type valueToKey struct {
	fields  []string
	schemas schemaCache
}

func newValueToKey(cfg connect.Config) (connect.Transformation, error) {
	cfg, err := parseConfig(valueToKeyConfig, cfg)
	if err != nil {
		return nil, err
	}
	t := &valueToKey{fields: cfg.List("fields")}
	if len(t.fields) == 0 {
		return nil, connect.KeyError{Key: "fields", Message: "Invalid value for configuration fields: Empty list"}
	}
	return t, nil
}

// Apply sets the key to a new map of the fields (nil for those the value
// lacks). A value with a schema gives the key a struct schema of those
// fields, which must be in the value's schema. The value must be a map or
// struct: a tombstone is an error, as in Kafka (skip it with the
// RecordIsTombstone predicate).
func (t *valueToKey) Apply(r *connect.Record) (bool, error) {
	if r.ValueSchema == nil {
		m, err := requireMap(r.Value, purposeValueToKey)
		if err != nil {
			return false, err
		}
		key := make(map[string]any, len(t.fields))
		for _, f := range t.fields {
			key[f] = m[f]
		}
		r.KeySchema, r.Key = nil, key
		return true, nil
	}
	m, err := requireStruct(r.ValueSchema, r.Value, purposeValueToKey)
	if err != nil {
		return false, err
	}
	ks, err := t.schemas.get(r.ValueSchema, t.keySchema)
	if err != nil {
		return false, err
	}
	key := make(map[string]any, len(t.fields))
	for _, f := range t.fields {
		key[f] = m[f]
	}
	r.KeySchema, r.Key = ks, key
	return true, nil
}

func (t *valueToKey) keySchema(vs *connect.Schema) (*connect.Schema, error) {
	ks := &connect.Schema{Type: connect.Struct, Fields: make([]connect.Field, 0, len(t.fields))}
	for _, name := range t.fields {
		f := vs.Field(name)
		if f == nil {
			return nil, dataErrorf("Field does not exist: %s", name)
		}
		if err := addField(ks, name, f.Schema); err != nil {
			return nil, err
		}
	}
	return ks, nil
}
