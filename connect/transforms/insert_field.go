package transforms

// InsertField$Key and InsertField$Value: add fields from the record's
// metadata (topic, partition, offset, timestamp) or a static value.

import (
	"strings"

	"github.com/runnel-io/runnel/connect"
)

const optionalityDoc = ` Suffix with "!" to make this a required field, or "?" to keep it optional (the default).`

var insertFieldConfig = connect.NewConfigDef(
	connect.ConfigKey{Name: "topic.field", Type: connect.TypeString, Importance: connect.Medium,
		Doc: "Field name for Kafka topic." + optionalityDoc},
	connect.ConfigKey{Name: "partition.field", Type: connect.TypeString, Importance: connect.Medium,
		Doc: "Field name for Kafka partition (an int32)." + optionalityDoc},
	connect.ConfigKey{Name: "offset.field", Type: connect.TypeString, Importance: connect.Medium,
		Doc: "Field name for Kafka offset (an int64) - only meaningful for sink connectors." + optionalityDoc},
	connect.ConfigKey{Name: "timestamp.field", Type: connect.TypeString, Importance: connect.Medium,
		Doc: "Field name for record timestamp: milliseconds since the epoch, with Kafka's Timestamp logical schema when the value has a schema." + optionalityDoc},
	connect.ConfigKey{Name: "static.field", Type: connect.TypeString, Importance: connect.Medium,
		Doc: "Field name for static data field." + optionalityDoc},
	connect.ConfigKey{Name: "static.value", Type: connect.TypeString, Importance: connect.Medium,
		Doc: "Static field value, if field name configured."},
)

const purposeInsert = "field insertion"

// TimestampSchemaName is the name of Kafka's Timestamp logical type: an
// int64 of milliseconds since the epoch.
const timestampSchemaName = "org.apache.kafka.connect.data.Timestamp"

// insertionSpec is a field to insert: "name", "name?" (optional) or
// "name!" (required).
type insertionSpec struct {
	name     string
	optional bool
	set      bool
}

func parseInsertionSpec(s string) insertionSpec {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return insertionSpec{}
	case strings.HasSuffix(s, "?"):
		return insertionSpec{name: s[:len(s)-1], optional: true, set: true}
	case strings.HasSuffix(s, "!"):
		return insertionSpec{name: s[:len(s)-1], optional: false, set: true}
	}
	return insertionSpec{name: s, optional: true, set: true}
}

type insertField struct {
	side
	topic, partition, offset, timestamp, static insertionSpec
	staticValue                                 string
	schemas                                     schemaCache
}

func newInsertField(s side) func(connect.Config) (connect.Transformation, error) {
	return func(cfg connect.Config) (connect.Transformation, error) {
		cfg, err := parseConfig(insertFieldConfig, cfg)
		if err != nil {
			return nil, err
		}
		return &insertField{
			side:        s,
			topic:       parseInsertionSpec(cfg.String("topic.field")),
			partition:   parseInsertionSpec(cfg.String("partition.field")),
			offset:      parseInsertionSpec(cfg.String("offset.field")),
			timestamp:   parseInsertionSpec(cfg.String("timestamp.field")),
			static:      parseInsertionSpec(cfg.String("static.field")),
			staticValue: cfg.String("static.value"),
		}, nil
	}
}

// Apply inserts the fields. A nil value (a tombstone) passes unchanged; a
// schemaless value must be a map, a value with a schema a struct.
func (t *insertField) Apply(r *connect.Record) (bool, error) {
	if !t.topic.set && !t.partition.set && !t.offset.set && !t.timestamp.set && !t.static.set {
		return true, nil
	}
	schema, v := t.get(r)
	if v == nil {
		return true, nil
	}
	if schema == nil {
		m, err := requireMap(v, purposeInsert)
		if err != nil {
			return false, err
		}
		out := copyMap(m)
		if err := t.insert(r, out, nil); err != nil {
			return false, err
		}
		t.set(r, nil, out)
		return true, nil
	}
	m, err := requireStruct(schema, v, purposeInsert)
	if err != nil {
		return false, err
	}
	updated, err := t.schemas.get(schema, t.updatedSchema)
	if err != nil {
		return false, err
	}
	out := copyMap(m)
	if err := t.insert(r, out, updated); err != nil {
		return false, err
	}
	t.set(r, updated, out)
	return true, nil
}

// insert puts the fields into out. Without a schema a missing timestamp
// is left out, as Kafka does; with one the field is null, which a
// required field refuses.
func (t *insertField) insert(r *connect.Record, out map[string]any, schema *connect.Schema) error {
	if t.topic.set {
		out[t.topic.name] = r.Topic
	}
	if t.partition.set {
		out[t.partition.name] = int64(r.Partition)
	}
	if t.offset.set {
		out[t.offset.name] = r.Offset
	}
	if t.timestamp.set {
		switch {
		case !r.Timestamp.IsZero():
			out[t.timestamp.name] = r.Timestamp.UnixMilli()
		case schema == nil:
		case !t.timestamp.optional:
			return dataErrorf("field %s is required but the record has no timestamp", t.timestamp.name)
		default:
			out[t.timestamp.name] = nil
		}
	}
	if t.static.set {
		out[t.static.name] = t.staticValue
	}
	return nil
}

// updatedSchema adds the inserted fields to a struct schema, in Kafka's
// order.
func (t *insertField) updatedSchema(s *connect.Schema) (*connect.Schema, error) {
	out := copySchemaBasics(s, connect.Struct)
	out.Fields = make([]connect.Field, len(s.Fields), len(s.Fields)+5)
	copy(out.Fields, s.Fields)
	for _, f := range []struct {
		spec insertionSpec
		typ  connect.SchemaType
		name string
	}{
		{t.topic, connect.String, ""},
		{t.partition, connect.Int32, ""},
		{t.offset, connect.Int64, ""},
		{t.timestamp, connect.Int64, timestampSchemaName},
		{t.static, connect.String, ""},
	} {
		if !f.spec.set {
			continue
		}
		fs := &connect.Schema{Type: f.typ, Optional: f.spec.optional, Name: f.name}
		if f.name != "" {
			fs.Version = 1
		}
		if err := addField(out, f.spec.name, fs); err != nil {
			return nil, err
		}
	}
	return out, nil
}
