// Package retailtest holds the retail demo's test reference: the
// reorders and price changes of a finite input computed again from the
// rules of package retail's doc, sharing no code with the app, and the
// helpers that compare an app's outputs with it.
package retailtest

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/runnel-io/runnel/retail-demo/retail"
)

// Reference computes the reorders and price changes of a finite input by
// the rules of doc.go, written again from them as plainly as possible and
// sharing no code with the app: one store's product at a time, its events
// sorted by (time, shipment before sale, input order), hops kept in a map.
func Reference(cfg retail.Config, events []retail.Event) ([]retail.Reorder, []retail.PriceChange) {
	m := cfg.Model
	hopMS, winMS := m.VelocityHop.Milliseconds(), m.VelocityWindow.Milliseconds()
	hops := winMS / hopMS
	hopOf := func(ts int64) int64 { return int64(math.Floor(float64(ts) / float64(hopMS))) }

	type ev struct {
		ts   int64
		sale bool
		idx  int
		e    retail.Event
	}
	byKey := map[string][]ev{}
	for i, e := range events {
		byKey[e.Key] = append(byKey[e.Key], ev{e.Time, e.Topic == cfg.Topics.Sales, i, e})
	}
	var reorders []retail.Reorder
	var prices []retail.PriceChange
	for key, evs := range byKey {
		slices.SortStableFunc(evs, func(a, b ev) int {
			if c := cmp.Compare(a.ts, b.ts); c != 0 {
				return c
			}
			if a.sale != b.sale {
				if a.sale {
					return 1
				}
				return -1
			}
			return cmp.Compare(a.idx, b.idx)
		})
		store, product, _ := retail.SplitKey(key)
		stock := m.InitialStock
		sold := map[int64]int64{} // units per hop
		curHop := hopOf(evs[0].ts)
		baseline, haveBaseline := int64(0), false // ×1000
		onOrder, orderedAt := false, int64(0)
		listCents, factor := int64(0), int64(10000)
		changed, changedAt := false, int64(0)
		velocityAt := func(h int64) int64 {
			var v int64
			for k := h - hops + 1; k <= h; k++ {
				v += sold[k]
			}
			return v
		}
		for _, x := range evs {
			h := hopOf(x.ts)
			if h > curHop {
				closed := velocityAt(curHop)
				if !haveBaseline {
					baseline, haveBaseline = closed*1000, true
				} else {
					baseline = (m.BaselineWeightPct*closed*1000 + (100-m.BaselineWeightPct)*baseline) / 100
				}
				curHop = h
			}
			if x.sale {
				var s retail.Sale
				if err := json.Unmarshal(x.e.Value, &s); err != nil {
					panic(err)
				}
				sold[h] += s.Quantity
				stock -= min(stock, s.Quantity)
				listCents = int64(math.Round(s.ListPrice * 100))
			} else {
				var sh retail.Shipment
				if err := json.Unmarshal(x.e.Value, &sh); err != nil {
					panic(err)
				}
				stock += sh.Quantity
				onOrder = false
			}
			v := velocityAt(curHop)
			if onOrder && x.ts-orderedAt >= m.ReorderExpiry.Milliseconds() {
				onOrder = false
			}
			// The reorder point in units: v/window × lead + safety.
			ropTimesWin := v*m.LeadTime.Milliseconds() + m.SafetyStock*winMS
			if !onOrder && stock*winMS <= ropTimesWin {
				upTo := (v*m.OrderUpTo.Milliseconds() + m.SafetyStock*winMS + winMS - 1) / winMS
				reorders = append(reorders, retail.Reorder{
					ReorderID: fmt.Sprintf("%s@%d", key, x.ts), TS: x.ts, StoreID: store, ProductID: product,
					Quantity: max(upTo-stock, 1), Stock: stock, ReorderPoint: (ropTimesWin + winMS - 1) / winMS, Velocity: v,
				})
				onOrder, orderedAt = true, x.ts
			}
			if listCents == 0 || (changed && x.ts-changedAt < m.PriceCooldown.Milliseconds()) {
				continue
			}
			newFactor, reason := factor, ""
			overstocked := stock*winMS > v*m.MarkdownCover.Milliseconds()
			scarce := stock*winMS < v*m.RaiseCover.Milliseconds()
			hot := haveBaseline && v*1000*100 > m.RaiseDemandPct*baseline
			if overstocked && factor > m.FloorPct*100 {
				newFactor, reason = max(m.FloorPct*100, factor*(100-m.MarkdownPct)/100), retail.ReasonMarkdown
			} else if !overstocked && scarce && hot && factor < m.CapPct*100 {
				newFactor, reason = min(m.CapPct*100, factor*(100+m.RaisePct)/100), retail.ReasonRaise
			}
			if reason == "" || newFactor == factor {
				continue
			}
			prices = append(prices, retail.PriceChange{TS: x.ts, StoreID: store, ProductID: product,
				OldCents: listCents * factor / 10000, NewCents: listCents * newFactor / 10000, ListCents: listCents,
				Reason: reason, Stock: stock, Velocity: v})
			factor, changed, changedAt = newFactor, true, x.ts
		}
	}
	SortOutputs(reorders, prices)
	return reorders, prices
}

// SortOutputs sorts reorders and price changes by store, product and time.
func SortOutputs(rs []retail.Reorder, ps []retail.PriceChange) {
	slices.SortFunc(rs, func(a, b retail.Reorder) int {
		return cmp.Or(cmp.Compare(a.StoreID, b.StoreID), cmp.Compare(a.ProductID, b.ProductID), cmp.Compare(a.TS, b.TS))
	})
	slices.SortFunc(ps, func(a, b retail.PriceChange) int {
		return cmp.Or(cmp.Compare(a.StoreID, b.StoreID), cmp.Compare(a.ProductID, b.ProductID), cmp.Compare(a.TS, b.TS))
	})
}

// Config is a small, fast data set: about five simulated days.
func Config(sales int64) retail.Config {
	cfg := retail.DefaultConfig()
	cfg.Generator.Sales = sales
	cfg.Generator.Rate = 0
	return cfg
}

// Events is every event of cfg's finite run.
func Events(t testing.TB, cfg retail.Config) []retail.Event {
	t.Helper()
	start, err := cfg.Generator.StartTime(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var events []retail.Event
	if err := retail.Events(cfg, start, func(e retail.Event) bool { events = append(events, e); return true }); err != nil {
		t.Fatal(err)
	}
	return events
}

// Diff fails the test with the first difference.
func Diff(t testing.TB, gotR, wantR []retail.Reorder, gotP, wantP []retail.PriceChange) {
	t.Helper()
	SortOutputs(gotR, gotP)
	for i := range max(len(gotR), len(wantR)) {
		if i >= len(gotR) || i >= len(wantR) || gotR[i] != wantR[i] {
			t.Fatalf("reorders differ at %d (app %d, reference %d):\napp       %s\nreference %s", i, len(gotR), len(wantR), at(gotR, i), at(wantR, i))
		}
	}
	for i := range max(len(gotP), len(wantP)) {
		if i >= len(gotP) || i >= len(wantP) || gotP[i] != wantP[i] {
			t.Fatalf("price changes differ at %d (app %d, reference %d):\napp       %s\nreference %s", i, len(gotP), len(wantP), at(gotP, i), at(wantP, i))
		}
	}
}

func at[T any](s []T, i int) string {
	if i >= len(s) {
		return "(none)"
	}
	b, _ := json.Marshal(s[i])
	return string(b)
}
