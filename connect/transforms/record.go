package transforms

// What every transform needs: the part of the record it works on, the
// checks of the value's type, and the error they return.

import (
	"errors"
	"fmt"
	"maps"

	"github.com/runnel-io/runnel/connect"
)

// ErrData matches (errors.Is) the errors of a transform that cannot
// handle a record: a value of the wrong type, a field its schema lacks, a
// cast that fails. The chain wraps them in connect.ErrTransform, which
// sends the record to the dead letter queue under errors.tolerance=all.
var ErrData = errors.New("transforms: record not supported")

type dataError struct{ msg string }

func (e *dataError) Error() string        { return e.msg }
func (e *dataError) Is(target error) bool { return target == ErrData }

func dataErrorf(format string, args ...any) error {
	return &dataError{fmt.Sprintf(format, args...)}
}

// side is the part of a record that a $Key or $Value transform works on.
type side bool

const (
	keySide   side = true
	valueSide side = false
)

func (s side) get(r *connect.Record) (*connect.Schema, any) {
	if s == keySide {
		return r.KeySchema, r.Key
	}
	return r.ValueSchema, r.Value
}

func (s side) set(r *connect.Record, schema *connect.Schema, v any) {
	if s == keySide {
		r.KeySchema, r.Key = schema, v
		return
	}
	r.ValueSchema, r.Value = schema, v
}

// requireMap is Kafka's Requirements.requireMap: a schemaless value a
// transform works on by field must be a map[string]any.
func requireMap(v any, purpose string) (map[string]any, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, dataErrorf("Only Map objects supported in absence of schema for [%s], found: %s", purpose, typeName(v))
	}
	return m, nil
}

// requireStruct is Kafka's Requirements.requireStruct: a value with a
// schema must be a struct, held as a map[string]any.
func requireStruct(s *connect.Schema, v any, purpose string) (map[string]any, error) {
	if s.Type != connect.Struct {
		return nil, dataErrorf("Only Struct objects supported for [%s], found a value of schema type %s", purpose, s.Type)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, dataErrorf("Only Struct objects supported for [%s], found: %s", purpose, typeName(v))
	}
	return m, nil
}

// copyMap returns a copy of m: a transform never changes a map that the
// source connector may still hold. (maps.Clone copies the table as it is,
// which beats inserting key by key even when fields are added after.)
func copyMap(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return maps.Clone(m)
}

// typeName names the Go type of v for error messages.
func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case []byte:
		return "[]byte"
	case map[string]any:
		return "map[string]any"
	case []any:
		return "[]any"
	}
	return fmt.Sprintf("%T", v)
}

// parseConfig checks cfg against def again, so that a plugin built from
// raw settings gets its defaults too. The error is the first problem, a
// connect.KeyError (the chain reports it on the key's full name).
func parseConfig(def *connect.ConfigDef, cfg connect.Config) (connect.Config, error) {
	parsed, errs := def.Parse(cfg)
	if len(errs) > 0 {
		return nil, errs[0]
	}
	return parsed, nil
}
