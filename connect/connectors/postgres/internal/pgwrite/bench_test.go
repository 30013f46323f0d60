package pgwrite

import (
	"strings"
	"testing"

	"github.com/runnel-io/runnel/internal/pgtest"
)

// benchBatch is the rows of one Write in the benchmarks.
const benchBatch = 4000

// benchRows returns a batch of rows of about 200 bytes in six columns; the
// caller sets each row's id.
func benchRows() []Row {
	rows := make([]Row, benchBatch)
	note := strings.Repeat("a note of some length ", 7)[:140]
	for i := range rows {
		rows[i] = Row{
			Key: map[string]any{"id": int64(i)},
			Value: map[string]any{
				"customer": "customer-0000000" + string(rune('a'+i%26)),
				"amount":   float64(i) * 1.25,
				"qty":      int64(i % 17),
				"paid":     i%2 == 0,
				"note":     note,
			},
		}
	}
	return rows
}

// BenchmarkInsertCopy appends batches with COPY.
func BenchmarkInsertCopy(b *testing.B) {
	srv := pgtest.Start(b)
	conn := srv.Connect(b)
	w, err := New(Config{Table: "bench_insert", PKFields: []string{"id"}, AutoCreate: true})
	if err != nil {
		b.Fatal(err)
	}
	rows := benchRows()
	next := int64(0)
	batches := 0
	for b.Loop() {
		for _, r := range rows {
			r.Key["id"] = next
			next++
		}
		if err := w.Write(b.Context(), conn, rows); err != nil {
			b.Fatal(err)
		}
		batches++
	}
	reportRows(b, batches)
}

// BenchmarkUpsert upserts batches to a table of 50,000 keys (updates once
// the keys have been written), by each way of writing an upsert.
func BenchmarkUpsert(b *testing.B) {
	srv := pgtest.Start(b)
	for _, way := range upsertWays {
		b.Run(way.name, func(b *testing.B) {
			conn := srv.Connect(b)
			w, err := New(Config{Table: "bench_upsert_" + way.name, Mode: Upsert, PKFields: []string{"id"}, AutoCreate: true})
			if err != nil {
				b.Fatal(err)
			}
			rows := benchRows()
			next := int64(0)
			batches := 0
			for b.Loop() {
				for _, r := range rows {
					r.Key["id"] = next % 50000
					next++
				}
				if err := w.writeVia(b.Context(), conn, rows, way.fn); err != nil {
					b.Fatal(err)
				}
				batches++
			}
			reportRows(b, batches)
		})
	}
}

func reportRows(b *testing.B, batches int) {
	b.ReportMetric(float64(batches*benchBatch)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(0, "ns/op")
}
