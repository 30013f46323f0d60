package retail

import (
	"math"
	"time"
)

// item is the state of one store's product: what the app keeps per key.
type item struct {
	Stock int64 `json:"stock"`
	Lost  int64 `json:"lost"` // units asked for with none on hand
	// Hop is the newest hop seen (event time / velocity_hop); Counts the
	// units sold per hop of the window, a ring indexed by hop.
	Hop    int64   `json:"hop"`
	Counts []int64 `json:"counts"`
	// BaselineM is the moving average of the window's velocity, ×1000;
	// -1 until the first hop closed.
	BaselineM    int64 `json:"baseline_m"`
	OnOrder      bool  `json:"on_order"`
	OnOrderSince int64 `json:"on_order_since"`
	ListCents    int64 `json:"list_cents"` // 0: not known yet
	FactorBP     int64 `json:"factor_bp"`  // the price is ListCents × FactorBP / 10000
	PriceChanged bool  `json:"price_changed"`
	PriceAt      int64 `json:"price_at"`
}

// model applies sales and shipments to items (doc.go states the rules).
// Everything is integer arithmetic, so that any implementation of the
// rules gets the same decisions.
type model struct {
	m                                                           Model
	hop, win, n, lead, upTo, expiry, mdCover, rsCover, cooldown int64 // ms; n = hops per window
}

func newModel(m Model) *model {
	ms := func(d time.Duration) int64 { return d.Milliseconds() }
	return &model{m: m, hop: ms(m.VelocityHop), win: ms(m.VelocityWindow), n: int64(m.VelocityWindow / m.VelocityHop),
		lead: ms(m.LeadTime), upTo: ms(m.OrderUpTo), expiry: ms(m.ReorderExpiry), mdCover: ms(m.MarkdownCover),
		rsCover: ms(m.RaiseCover), cooldown: ms(m.PriceCooldown)}
}

// newItem is an item before its first event.
func (md *model) newItem(ts int64) *item {
	return &item{Stock: md.m.InitialStock, Hop: floorDiv(ts, md.hop), Counts: make([]int64, md.n), BaselineM: -1, FactorBP: 10000}
}

// roll moves the window to the hop of ts: when a new hop begins, the
// baseline takes in the velocity of the window that just closed, and
// the hops that fell out of the window are emptied.
func (md *model) roll(it *item, ts int64) {
	h := floorDiv(ts, md.hop)
	if h <= it.Hop {
		return
	}
	v := it.velocity()
	if it.BaselineM < 0 {
		it.BaselineM = v * 1000
	} else {
		w := md.m.BaselineWeightPct
		it.BaselineM = (w*v*1000 + (100-w)*it.BaselineM) / 100
	}
	for k := it.Hop + 1; k <= h && k <= it.Hop+md.n; k++ {
		it.Counts[floorMod(k, md.n)] = 0
	}
	it.Hop = h
}

func (it *item) velocity() int64 {
	var v int64
	for _, c := range it.Counts {
		v += c
	}
	return v
}

// sale applies a sale at ts.
func (md *model) sale(it *item, ts int64, s Sale) {
	md.roll(it, ts)
	if h := floorDiv(ts, md.hop); h > it.Hop-md.n { // a late sale counts only within the window
		it.Counts[floorMod(h, md.n)] += s.Quantity
	}
	sold := min(s.Quantity, it.Stock)
	it.Stock -= sold
	it.Lost += s.Quantity - sold
	if s.ListPrice > 0 {
		it.ListCents = int64(math.Round(s.ListPrice * 100))
	}
}

// shipment applies a delivery at ts: stock grows, the reorder in flight
// is done.
func (md *model) shipment(it *item, ts int64, sh Shipment) {
	md.roll(it, ts)
	it.Stock += sh.Quantity
	it.OnOrder = false
}

// decide runs after every event: a reorder when stock is at or below the
// reorder point and none is in flight; a price change when stock cover
// is long (markdown) or short with demand above its baseline (raise),
// at most once per cooldown.
func (md *model) decide(it *item, ts int64, store, product string) (*Reorder, *PriceChange) {
	m, v := md.m, it.velocity()
	var ro *Reorder
	if it.OnOrder && ts-it.OnOrderSince >= md.expiry {
		it.OnOrder = false // never delivered: order again if needed
	}
	// stock ≤ v × lead / win + safety, without division.
	if !it.OnOrder && it.Stock*md.win <= v*md.lead+m.SafetyStock*md.win {
		target := ceilDiv(v*md.upTo+m.SafetyStock*md.win, md.win)
		ro = &Reorder{TS: ts, StoreID: store, ProductID: product, Quantity: max(target-it.Stock, 1), Stock: it.Stock,
			ReorderPoint: ceilDiv(v*md.lead+m.SafetyStock*md.win, md.win), Velocity: v}
		ro.ReorderID = store + ":" + product + "@" + itoa(ts)
		it.OnOrder, it.OnOrderSince = true, ts
	}
	var pc *PriceChange
	if it.ListCents > 0 && (!it.PriceChanged || ts-it.PriceAt >= md.cooldown) {
		f, reason := it.FactorBP, ""
		switch {
		case it.Stock*md.win > v*md.mdCover && f > m.FloorPct*100: // cover above markdown_cover
			f, reason = max(m.FloorPct*100, f*(100-m.MarkdownPct)/100), ReasonMarkdown
		case it.Stock*md.win < v*md.rsCover && it.BaselineM >= 0 && v*1000*100 > m.RaiseDemandPct*it.BaselineM && f < m.CapPct*100:
			f, reason = min(m.CapPct*100, f*(100+m.RaisePct)/100), ReasonRaise
		}
		if reason != "" && f != it.FactorBP {
			pc = &PriceChange{TS: ts, StoreID: store, ProductID: product, OldCents: it.price(), ListCents: it.ListCents,
				Reason: reason, Stock: it.Stock, Velocity: v}
			it.FactorBP, it.PriceChanged, it.PriceAt = f, true, ts
			pc.NewCents = it.price()
		}
	}
	return ro, pc
}

func (it *item) price() int64 { return it.ListCents * it.FactorBP / 10000 }

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func floorMod(a, b int64) int64 { return a - floorDiv(a, b)*b }

func ceilDiv(a, b int64) int64 { return -floorDiv(-a, b) }
