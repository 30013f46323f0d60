package postgres

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

// The source's values: what a column's value becomes in a record.

func asInteger(v any) (int64, bool) {
	switch n := v.(type) {
	case int16:
		return int64(n), true
	case int32:
		return int64(n), true
	case int64:
		return n, true
	case string: // numeric, read as text
		i, err := strconv.ParseInt(n, 10, 64)
		return i, err == nil
	}
	return 0, false
}

// wallIn reads the wall clock of t (a timestamp or date as pgx decodes
// it, in UTC) in zone.
func wallIn(t time.Time, zone *time.Location) time.Time {
	return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), zone).UTC()
}

// convert turns a value pgx read into a record value: integers int64,
// floats float64 (NaN and infinities as strings, which JSON lacks),
// numeric a string or (best_fit) a number, timestamps RFC 3339 in UTC,
// dates YYYY-MM-DD, arrays slices, json its value, the rest as read.
func (q *querySpec) convert(oid uint32, v any) any {
	switch v := v.(type) {
	case int16:
		return int64(v)
	case int32:
		return int64(v)
	case float32:
		f, _ := strconv.ParseFloat(strconv.FormatFloat(float64(v), 'g', -1, 32), 64)
		return floatValue(f)
	case float64:
		return floatValue(v)
	case string:
		if oid == pgtype.JSONOID || oid == pgtype.JSONBOID {
			if j, err := decodeJSON(v); err == nil {
				return j
			}
			return v
		}
		if oid == pgtype.NumericOID && q.bestFit {
			if i, err := strconv.ParseInt(v, 10, 64); err == nil {
				return i
			}
			if f, err := strconv.ParseFloat(v, 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
				return f
			}
		}
		return v
	case time.Time:
		switch oid {
		case pgtype.TimestamptzOID:
			return v.UTC().Format(time.RFC3339Nano)
		case pgtype.DateOID:
			return v.Format(time.DateOnly)
		}
		return wallIn(v, q.zone).Format(time.RFC3339Nano)
	case pgtype.InfinityModifier:
		return v.String()
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = q.convert(0, x)
		}
		return out
	}
	return v
}

// decodeJSON decodes a json value with integers as int64 and other
// numbers as float64, as the json converter does.
func decodeJSON(s string) (any, error) {
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return jsonNumbers(v), nil
}

func jsonNumbers(v any) any {
	switch t := v.(type) {
	case json.Number:
		if n, err := t.Int64(); err == nil {
			return n
		}
		f, _ := t.Float64()
		return f
	case map[string]any:
		for k, x := range t {
			t[k] = jsonNumbers(x)
		}
	case []any:
		for i, x := range t {
			t[i] = jsonNumbers(x)
		}
	}
	return v
}

func floatValue(f float64) any {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return f
}
