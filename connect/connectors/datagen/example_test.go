package datagen_test

import (
	"fmt"

	"github.com/runnel-io/runnel/connect/connectors/datagen"
)

// A Generator computes what a Datagen task writes: here the first sales
// of task 0 of 2, and a record far into the sequence, reached directly.
func ExampleGenerator() {
	g, err := datagen.NewGenerator(datagen.GeneratorConfig{Schema: datagen.RetailSales, Seed: 42, Task: 0, Tasks: 2})
	if err != nil {
		panic(err)
	}
	for range 3 {
		r := g.Next()
		fmt.Println(r.Seq, r.Key, r.Time.Format("2006-01-02 15:04:05"), r.Value["quantity"], r.Value["unit_price"])
	}
	r := g.At(1_000_000)
	fmt.Println(r.Seq, r.Value["sale_id"], r.Time.Format("2006-01-02"))
	// Output:
	// 0 S005:P0065 2024-01-01 08:00:11 1 5.29
	// 1 S007:P0017 2024-01-01 08:02:15 1 1.18
	// 2 S009:P0022 2024-01-01 08:03:36 2 4.79
	// 1000000 sale-0-1000000 2025-06-09
}
