package transforms

import (
	"testing"
	"time"

	"github.com/runnel-io/runnel/connect"
)

// BenchmarkTransforms measures one record through each of a few common
// transforms.
func BenchmarkTransforms(b *testing.B) {
	value := map[string]any{"id": int64(1234567), "sku": "W-42", "price": 19.99, "qty": int64(3), "store": "oslo-7"}
	schema := structSchema("id", &connect.Schema{Type: connect.Int64}, "sku", strSchema,
		"price", &connect.Schema{Type: connect.Float64}, "qty", int32Schema, "store", strSchema)
	ts := time.UnixMilli(1714564800000)
	for _, bc := range []struct {
		name   string
		class  string
		cfg    connect.Config
		schema *connect.Schema
	}{
		{"InsertField", "InsertField$Value", connect.Config{"topic.field": "topic", "offset.field": "offset"}, nil},
		{"InsertField/schema", "InsertField$Value", connect.Config{"topic.field": "topic", "offset.field": "offset"}, schema},
		{"ReplaceField", "ReplaceField$Value", connect.Config{"exclude": "store", "renames": "sku:code"}, nil},
		{"Cast/schema", "Cast$Value", connect.Config{"spec": "qty:int16,price:string"}, schema},
		{"RegexRouter", "RegexRouter", connect.Config{"regex": "(.*)-raw", "replacement": "$1"}, nil},
		{"TimestampRouter", "TimestampRouter", nil, nil},
		{"Filter (baseline)", "Filter", nil, nil},
	} {
		tr := newTransform(b, bc.class, bc.cfg)
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r := connect.Record{Topic: "orders-raw", Offset: 1 << 20, Timestamp: ts, Value: value, ValueSchema: bc.schema}
				if _, err := tr.Apply(&r); err != nil { // r escapes: one allocation
					b.Fatal(err)
				}
			}
		})
	}
}
