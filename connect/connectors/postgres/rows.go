package postgres

import (
	"errors"
	"fmt"

	"github.com/runnel-io/runnel/connect"
	"github.com/runnel-io/runnel/connect/connectors/postgres/internal/pgwrite"
)

// toRow turns a sink record into the row pgwrite writes: the value's
// fields (a null value is a tombstone), and the key's fields as pk.mode
// says. The row keeps the record's maps: the runtime does not touch a
// record again once Put has it.
func (s *sinkSettings) toRow(r *connect.Record) (pgwrite.Row, error) {
	var row pgwrite.Row
	switch v := r.Value.(type) {
	case nil:
		row.Tombstone = true
	case map[string]any:
		row.Value = v
	default:
		return row, fmt.Errorf("the value is %s, not an object: the sink writes an object's fields (a JSON object, or a struct) as columns", kindOf(v))
	}
	switch s.pkMode {
	case pkKafka:
		row.Key = map[string]any{s.pkFields[0]: r.Topic, s.pkFields[1]: int64(r.Partition), s.pkFields[2]: r.Offset}
	case pkRecordKey:
		switch k := r.Key.(type) {
		case nil:
			return row, errors.New("pk.mode is record_key but the record has no key")
		case map[string]any:
			if len(s.pkFields) == 0 {
				row.Key = k
				break
			}
			row.Key = make(map[string]any, len(s.pkFields))
			for _, f := range s.pkFields {
				if v, ok := k[f]; ok {
					row.Key[f] = v
				}
			}
		case []any:
			return row, errors.New("the key is an array: with pk.mode=record_key it must be an object or a primitive")
		default:
			if len(s.pkFields) != 1 {
				return row, fmt.Errorf("the key is %s, not an object: pk.fields must name the one column it goes to", kindOf(k))
			}
			row.Key = map[string]any{s.pkFields[0]: k}
		}
	}
	return row, nil
}

// kindOf names the JSON kind of a record's key or value, for messages.
func kindOf(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case int64, float64:
		return "a number"
	case bool:
		return "a boolean"
	case []byte:
		return "bytes"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	case nil:
		return "null"
	}
	return fmt.Sprintf("a %T", v)
}
