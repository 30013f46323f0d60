package datagen

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"
)

func mustGenerator(t *testing.T, cfg GeneratorConfig) *Generator {
	t.Helper()
	g, err := NewGenerator(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func take(g *Generator, n int) []Record {
	out := make([]Record, n)
	for i := range out {
		out[i] = g.Next()
	}
	return out
}

func TestGeneratorIsRepeatable(t *testing.T) {
	for _, schema := range Schemas {
		t.Run(schema, func(t *testing.T) {
			cfg := GeneratorConfig{Schema: schema, Seed: 7, Task: 1, Tasks: 3}
			a := take(mustGenerator(t, cfg), 3000)
			b := take(mustGenerator(t, cfg), 3000)
			if !reflect.DeepEqual(a, b) {
				t.Fatal("two generators with the same config differ")
			}
			cfg.Seed = 8
			if c := take(mustGenerator(t, cfg), 100); reflect.DeepEqual(a[:100], c) {
				t.Fatal("another seed gives the same records")
			}
			cfg.Seed = 7
			// Any place of the sequence can be reached directly.
			g := mustGenerator(t, cfg)
			for _, k := range []int64{0, 1, 999, 2999, 1234} {
				if got := g.At(k); !reflect.DeepEqual(got, a[k]) {
					t.Fatalf("At(%d) = %v, want %v", k, got, a[k])
				}
				g.SeekTo(k)
				if got := g.Next(); !reflect.DeepEqual(got, a[k]) || g.Seq() != k+1 {
					t.Fatalf("SeekTo(%d); Next() = %v (then Seq %d), want %v", k, got, g.Seq(), a[k])
				}
			}
			// Far away too, and the same wherever the generator was.
			far := mustGenerator(t, cfg).At(5_000_000)
			g.SeekTo(4_999_999)
			g.Next()
			if got := g.Next(); !reflect.DeepEqual(got, far) {
				t.Fatalf("record 5000000 differs: %v and %v", got, far)
			}
		})
	}
}

func TestGeneratorTimesAdvanceFromStart(t *testing.T) {
	starts := []time.Time{DefaultStart, time.Date(2025, 3, 5, 13, 30, 0, 0, time.UTC), time.Date(2025, 3, 8, 23, 0, 0, 0, time.UTC)}
	for _, schema := range Schemas {
		for _, start := range starts {
			t.Run(fmt.Sprintf("%s/%s", schema, start.Format(time.RFC3339)), func(t *testing.T) {
				recs := take(mustGenerator(t, GeneratorConfig{Schema: schema, Start: start}), 5000)
				for i, r := range recs {
					if r.Time.Before(start) {
						t.Fatalf("record %d at %v is before the start", i, r.Time)
					}
					if i > 0 && r.Time.Before(recs[i-1].Time) {
						t.Fatalf("record %d at %v is before record %d at %v", i, r.Time, i-1, recs[i-1].Time)
					}
					ts, ok := r.Value["ts"]
					if !ok {
						ts, ok = r.Value["viewtime"]
					}
					if ok && ts != r.Time.UnixMilli() {
						t.Fatalf("record %d: ts %v, time %v", i, ts, r.Time.UnixMilli())
					}
					if r.Seq != int64(i) {
						t.Fatalf("record %d has Seq %d", i, r.Seq)
					}
				}
			})
		}
	}
}

// A start in the middle of a day gives the records of the day from then
// on: the data is laid out from midnight, whatever the start.
func TestGeneratorStartMidDayIsASuffix(t *testing.T) {
	for _, schema := range []string{RetailSales, RetailShipments} {
		day := time.Date(2025, 3, 5, 0, 0, 0, 0, time.UTC)
		start := day.Add(13*time.Hour + 30*time.Minute)
		if schema == RetailShipments {
			start = day.Add(9 * time.Hour)
		}
		whole := mustGenerator(t, GeneratorConfig{Schema: schema, Start: day})
		late := mustGenerator(t, GeneratorConfig{Schema: schema, Start: start})
		k := int64(0)
		for whole.At(k).Time.Before(start) {
			k++
		}
		for i := range int64(500) {
			a, b := whole.At(k+i), late.At(i)
			delete(a.Value, "sale_id")
			delete(b.Value, "sale_id")
			if a.Key != b.Key || !a.Time.Equal(b.Time) || !reflect.DeepEqual(a.Value, b.Value) {
				t.Fatalf("%s: record %d from %v differs from record %d from midnight:\n%v\n%v", schema, i, start, k+i, b, a)
			}
		}
	}
}

func TestTasksSplitTheStores(t *testing.T) {
	for _, schema := range []string{RetailSales, RetailShipments} {
		seen := map[string]int{}
		for task := range 3 {
			want := map[string]bool{}
			for _, s := range TaskStores(task, 3, 10) {
				want[StoreID(s)] = true
			}
			for _, r := range take(mustGenerator(t, GeneratorConfig{Schema: schema, Task: task, Tasks: 3}), 3000) {
				store := r.Value["store_id"].(string)
				if !want[store] {
					t.Fatalf("%s: task %d made a record of store %s", schema, task, store)
				}
				if r.Key != store+":"+r.Value["product_id"].(string) {
					t.Fatalf("%s: key %q does not match the value %v", schema, r.Key, r.Value)
				}
				seen[store] = task
			}
		}
		if len(seen) != 10 {
			t.Fatalf("%s: records of %d stores, want 10", schema, len(seen))
		}
	}
	if _, err := NewGenerator(GeneratorConfig{Schema: RetailSales, Task: 3, Tasks: 4, Stores: 3}); err == nil {
		t.Fatal("a task without a store was accepted")
	}
}

func TestGeneratorConfigErrors(t *testing.T) {
	for _, cfg := range []GeneratorConfig{
		{Schema: "nope"},
		{Schema: RetailSales, Task: 2, Tasks: 2},
		{Schema: RetailSales, Task: -1},
		{Schema: RetailSales, Stores: -1},
	} {
		if _, err := NewGenerator(cfg); err == nil {
			t.Errorf("NewGenerator(%+v) accepted a bad config", cfg)
		}
	}
}

// week generates the sales of the first week from DefaultStart.
func week(t *testing.T, cfg GeneratorConfig) []Record {
	g := mustGenerator(t, cfg)
	end := DefaultStart.AddDate(0, 0, 7)
	var out []Record
	for r := g.Next(); r.Time.Before(end); r = g.Next() {
		out = append(out, r)
	}
	return out
}

func TestSalesFollowTheDemandModel(t *testing.T) {
	recs := week(t, GeneratorConfig{Schema: RetailSales, Seed: 3})
	byHour := map[int]int{}
	byDay := map[time.Weekday]int{}
	var promos, units int
	for _, r := range recs {
		h := r.Time.Hour()
		if h < 8 || h >= 22 {
			t.Fatalf("a sale at %v, when stores are closed", r.Time)
		}
		byHour[h]++
		byDay[r.Time.Weekday()]++
		q, unitPrice, list := r.Value["quantity"].(int64), r.Value["unit_price"].(float64), r.Value["list_price"].(float64)
		units += int(q)
		if q < 1 || unitPrice <= 0 {
			t.Fatalf("bad sale %v", r.Value)
		}
		if r.Value["promotion"].(bool) {
			promos++
			if unitPrice >= list {
				t.Fatalf("a promotion without a discount: %v", r.Value)
			}
		} else if unitPrice != list {
			t.Fatalf("a discount without a promotion: %v", r.Value)
		}
	}
	t.Logf("%d sales of %d units in a week; %d on promotion; by hour %v", len(recs), units, promos, byHour)
	if n := len(recs); n < 7*400*10*0.8 || n > 7*400*10*1.4 {
		t.Errorf("%d sales in a week of 10 stores, want about %d", n, 7*400*10)
	}
	if byHour[18] < 3*byHour[8] || byHour[12] < byHour[10]*3/2 || byHour[12] < byHour[15]*3/2 {
		t.Errorf("no peaks at lunch and after work: %v", byHour)
	}
	if byDay[time.Saturday] < byDay[time.Sunday]*3/2 {
		t.Errorf("Saturday (%d sales) is not much busier than Sunday (%d)", byDay[time.Saturday], byDay[time.Sunday])
	}
	if promos == 0 || promos > len(recs)/2 {
		t.Errorf("%d of %d sales on promotion", promos, len(recs))
	}
}

// In a burst, a ten-minute rush holds much of its hour's sales, and one
// store and product sell in bulk.
func TestSalesHaveBursts(t *testing.T) {
	recs := week(t, GeneratorConfig{Schema: RetailSales, Seed: 3})
	byHour := map[int64][]Record{}
	for _, r := range recs {
		h := r.Time.Unix() / 3600
		byHour[h] = append(byHour[h], r)
	}
	bursts := 0
	for h, rs := range byHour {
		var minutes [60]int
		for _, r := range rs {
			minutes[r.Time.Minute()]++
		}
		best := 0
		for m := range 50 {
			n := 0
			for _, c := range minutes[m : m+10] {
				n += c
			}
			best = max(best, n)
		}
		if best*10 < len(rs)*3 {
			continue // no rush: ten minutes hold about a sixth of the hour
		}
		bursts++
		keys := map[string]int64{}
		for _, r := range rs {
			keys[r.Key] += r.Value["quantity"].(int64)
		}
		top := slices.Max(slices.Collect(mapsValues(keys)))
		if top < 20 {
			t.Errorf("hour %d has a rush but no product sold in bulk (top %d units)", h, top)
		}
	}
	t.Logf("%d bursts in a week", bursts)
	if bursts == 0 || bursts > 20 {
		t.Fatalf("%d bursts in a week, want a few", bursts)
	}
}

func mapsValues[K comparable, V any](m map[K]V) func(func(V) bool) {
	return func(yield func(V) bool) {
		for _, v := range m {
			if !yield(v) {
				return
			}
		}
	}
}

// Shipments over six weeks (the schedule's cycle) replace about what the
// same stores sell, arrive in the morning after their lead time, and some
// are partial.
func TestShipmentsReplenishSales(t *testing.T) {
	const days = cycleDays
	end := DefaultStart.AddDate(0, 0, days)
	cfg := GeneratorConfig{Schema: RetailShipments, Seed: 5}
	g := mustGenerator(t, cfg)
	shipped := map[string]int64{}
	var n, partial int
	pairs := map[string]bool{}
	for r := g.Next(); r.Time.Before(end); r = g.Next() {
		n++
		q, ordered := r.Value["quantity"].(int64), r.Value["ordered_quantity"].(int64)
		if q < 1 || q > ordered {
			t.Fatalf("delivered %d of %d", q, ordered)
		}
		if q < ordered {
			partial++
		}
		if h := r.Time.Hour(); h < 5 || h >= 14 {
			t.Fatalf("a delivery at %v", r.Time)
		}
		lead := r.Time.Sub(time.UnixMilli(r.Value["ordered_at"].(int64)))
		if lead < 24*time.Hour || lead > 5*24*time.Hour+12*time.Hour {
			t.Fatalf("lead time %v", lead)
		}
		shipped[r.Value["product_id"].(string)] += q
		pairs[r.Key] = true
	}
	if len(pairs) != DefaultStores*DefaultProducts {
		t.Errorf("%d store-product pairs got deliveries in %d days, want all %d", len(pairs), days, DefaultStores*DefaultProducts)
	}
	if share := float64(partial) / float64(n); share < 0.08 || share > 0.25 {
		t.Errorf("%d of %d deliveries partial", partial, n)
	}

	sg := mustGenerator(t, GeneratorConfig{Schema: RetailSales, Seed: 5})
	var sold, total int64
	for r := sg.Next(); r.Time.Before(end); r = sg.Next() {
		sold += r.Value["quantity"].(int64)
	}
	for _, q := range shipped {
		total += q
	}
	ratio := float64(total) / float64(sold)
	t.Logf("%d deliveries (%d partial) of %d units; %d units sold; ratio %.2f", n, partial, total, sold, ratio)
	if ratio < 0.9 || ratio > 1.6 {
		t.Errorf("shipped %d units for %d sold: ratio %.2f, want about 1.2", total, sold, ratio)
	}
}
