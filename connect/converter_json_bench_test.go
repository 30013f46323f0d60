package connect

import (
	"encoding/json"
	"testing"
)

// benchObject is a ~200-byte JSON object, as a source connector might
// produce.
var benchObject = []byte(`{"id":1234567,"sku":"WIDGET-0042","name":"Blue widget, large","price":19.99,"qty":3,` +
	`"in_stock":true,"tags":["sale","outdoor"],"dims":{"w":10.5,"h":20,"d":3},"store":"oslo-7","updated":"2024-05-01T12:00:00Z"}`)

// BenchmarkJSONSchemaless measures the JSON converter without schemas:
// reading the object, writing it, and the round trip of both.
func BenchmarkJSONSchemaless(b *testing.B) {
	c := newTestConverter(b, "json", false, Config{"schemas.enable": "false"})
	_, v, err := c.ToConnect("t", benchObject)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("RoundTrip", func(b *testing.B) {
		b.SetBytes(int64(len(benchObject)))
		b.ReportAllocs()
		for b.Loop() {
			_, v, err := c.ToConnect("t", benchObject)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := c.FromConnect("t", nil, v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ToConnect", func(b *testing.B) {
		b.SetBytes(int64(len(benchObject)))
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := c.ToConnect("t", benchObject); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("FromConnect", func(b *testing.B) {
		b.SetBytes(int64(len(benchObject)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.FromConnect("t", nil, v); err != nil {
				b.Fatal(err)
			}
		}
	})
	// encoding/json's Marshal of the same value, for comparison.
	b.Run("FromConnect/encoding-json", func(b *testing.B) {
		b.SetBytes(int64(len(benchObject)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(v); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkJSONWithSchema measures writing and reading Kafka's envelope
// for a struct (the schema comes from the converter's caches).
func BenchmarkJSONWithSchema(b *testing.B) {
	c := newTestConverter(b, "json", false, nil)
	schema, v := orderSchema(), orderValue()
	data, err := c.FromConnect("t", schema, v)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("FromConnect", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.FromConnect("t", schema, v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ToConnect", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := c.ToConnect("t", data); err != nil {
				b.Fatal(err)
			}
		}
	})
}
