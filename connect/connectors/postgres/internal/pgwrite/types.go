package pgwrite

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/jackc/pgx/v5/pgtype"
)

// kind groups column types by the Go values they take.
type kind int

const (
	kindOther   kind = iota // passed to pgx as is (strings are parsed by the type)
	kindInt                 // smallint, integer, bigint: int64, integral float64
	kindFloat               // real, double precision: int64, float64
	kindNumeric             // numeric: int64, float64, string
	kindBool                // boolean: bool
	kindText                // text, varchar, char, name: string
	kindBytes               // bytea: []byte
	kindJSON                // json, jsonb: any value, marshalled
)

// column is one column of the table.
type column struct {
	name string
	typ  string // as format_type shows it: "bigint", "character varying(20)"
	kind kind
	min  int64 // range of an integer column
	max  int64
}

func newColumn(name string, oid uint32, typ string) *column {
	c := &column{name: name, typ: typ, min: math.MinInt64, max: math.MaxInt64}
	switch oid {
	case pgtype.Int2OID:
		c.kind, c.min, c.max = kindInt, math.MinInt16, math.MaxInt16
	case pgtype.Int4OID:
		c.kind, c.min, c.max = kindInt, math.MinInt32, math.MaxInt32
	case pgtype.Int8OID:
		c.kind = kindInt
	case pgtype.Float4OID, pgtype.Float8OID:
		c.kind = kindFloat
	case pgtype.NumericOID:
		c.kind = kindNumeric
	case pgtype.BoolOID:
		c.kind = kindBool
	case pgtype.TextOID, pgtype.VarcharOID, pgtype.BPCharOID, pgtype.NameOID:
		c.kind = kindText
	case pgtype.ByteaOID:
		c.kind = kindBytes
	case pgtype.JSONOID, pgtype.JSONBOID:
		c.kind = kindJSON
	}
	return c
}

// convert returns v as the value pgx writes into c, or why it cannot.
func (c *column) convert(v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	switch c.kind {
	case kindInt:
		var n int64
		switch v := v.(type) {
		case int64:
			n = v
		case float64:
			if v != math.Trunc(v) || v < -(1<<63) || v >= 1<<63 {
				return nil, fmt.Errorf("%v is not an integer", v)
			}
			n = int64(v)
		default:
			return nil, errNotA("an integer")
		}
		if n < c.min || n > c.max {
			return nil, fmt.Errorf("%d is out of range", n)
		}
		return n, nil
	case kindFloat:
		switch v := v.(type) {
		case int64:
			return float64(v), nil
		case float64:
			return v, nil
		}
		return nil, errNotA("a number")
	case kindNumeric:
		switch v.(type) {
		case int64, float64, string:
			return v, nil
		}
		return nil, errNotA("a number")
	case kindBool:
		if _, ok := v.(bool); ok {
			return v, nil
		}
		return nil, errNotA("a boolean")
	case kindText:
		if _, ok := v.(string); ok {
			return v, nil
		}
		return nil, errNotA("a string")
	case kindBytes:
		if _, ok := v.([]byte); ok {
			return v, nil
		}
		return nil, errNotA("bytes")
	case kindJSON:
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("not JSON: %v", err)
		}
		return b, nil
	}
	switch v.(type) {
	case map[string]any, []any:
		return nil, errNotA("a scalar")
	}
	return v, nil
}

type errNotA string

func (e errNotA) Error() string { return "not " + string(e) }

// inferType returns the type of the column a new field with value v gets,
// "" for nil.
func inferType(v any) (string, error) {
	switch v.(type) {
	case nil:
		return "", nil
	case int64:
		return "bigint", nil
	case float64:
		return "double precision", nil
	case bool:
		return "boolean", nil
	case string:
		return "text", nil
	case []byte:
		return "bytea", nil
	case map[string]any, []any:
		return "jsonb", nil
	}
	return "", fmt.Errorf("unsupported Go type %T", v)
}

// mergeTypes returns the type of a column whose values have types a and b
// ("" for nil values only), "" if none fits both.
func mergeTypes(a, b string) string {
	switch {
	case a == "" || a == b:
		return b
	case b == "":
		return a
	case a == "bigint" && b == "double precision", a == "double precision" && b == "bigint":
		return "double precision"
	}
	return ""
}

// describe shows a value in an error message, shortened.
func describe(v any) string {
	s := fmt.Sprintf("%#v", v)
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return fmt.Sprintf("%s (%T)", s, v)
}
