package datagen

import (
	"fmt"
	"sort"
	"time"
)

const (
	hourMs = int64(time.Hour / time.Millisecond)
	dayMs  = 24 * hourMs
)

// hourWeight is the demand by hour of day (UTC): stores open from 08:00
// to 22:00, with a lunch peak and a larger one after work.
var hourWeight = [24]float64{8: 0.4, 9: 0.6, 10: 0.8, 11: 1.0, 12: 1.5, 13: 1.4, 14: 0.9,
	15: 0.8, 16: 1.0, 17: 1.4, 18: 1.6, 19: 1.3, 20: 0.9, 21: 0.5}

// weekdayWeight is the demand by day of week: Saturday is busiest.
var weekdayWeight = [7]float64{time.Sunday: 0.8, time.Monday: 0.9, time.Tuesday: 0.9,
	time.Wednesday: 0.95, time.Thursday: 1.0, time.Friday: 1.2, time.Saturday: 1.35}

// Bursts: in about one hour in twenty-five of a task, a rush of ten
// minutes holds 40% of the hour's sales, and most of those are large
// sales of one product in one store.
const (
	burstChance  = 0.04
	burstMinutes = 10
	burstShare   = 0.4
	burstHot     = 0.6
)

var saleSchema = structSchema("io.runnel.datagen.retail.Sale",
	field("sale_id", stringSchema), field("ts", timestampSchema),
	field("store_id", stringSchema), field("product_id", stringSchema),
	field("quantity", int64Schema), field("unit_price", float64Schema),
	field("list_price", float64Schema), field("promotion", boolSchema))

// sales makes retail.sales. Each hour of the week holds a fixed number of
// sales (the task's store sizes times the hour's and the weekday's
// demand), so grid index g maps to its hour with a lookup and the grid
// repeats weekly; within the hour sales are spread evenly with a random
// jitter (or warped into a burst), so time never goes backwards.
type sales struct {
	u           *universe
	seed        uint64
	task, tasks uint64
	stores      []int
	storeCum    []float64 // cumulative store sizes
	day0ms      int64     // midnight UTC of the start date
	slots       [7 * 24]int64
	prefix      [7*24 + 1]int64

	// The product weights of week, which promotions change.
	week     int64
	prodCum  []float64
	discount []float64
}

func newSales(u *universe, cfg GeneratorConfig, stores []int, day0 time.Time) *sales {
	s := &sales{u: u, seed: uint64(cfg.Seed), task: uint64(cfg.Task), tasks: uint64(cfg.Tasks), stores: stores,
		day0ms: day0.UnixMilli(), week: -1}
	var size float64
	for _, st := range stores {
		size += u.stores[st].size
		s.storeCum = append(s.storeCum, size)
	}
	var hours float64
	for _, w := range hourWeight {
		hours += w
	}
	wd0 := day0.Weekday()
	for d := range 7 {
		for h := range 24 {
			n := salesPerStoreDay * size * weekdayWeight[(int(wd0)+d)%7] * hourWeight[h] / hours
			s.slots[d*24+h] = int64(n + 0.5)
		}
	}
	for i, n := range s.slots {
		s.prefix[i+1] = s.prefix[i] + n
	}
	if s.prefix[len(s.slots)] == 0 { // cannot happen with sizes ≥ 0.6, but never divide by zero
		s.slots[12], s.prefix = 1, [7*24 + 1]int64{}
		for i, n := range s.slots {
			s.prefix[i+1] = s.prefix[i] + n
		}
	}
	return s
}

// setWeek computes the product weights of week w.
func (s *sales) setWeek(w int64) {
	if s.week == w {
		return
	}
	n := len(s.u.products)
	if s.prodCum == nil {
		s.prodCum, s.discount = make([]float64, n), make([]float64, n)
	}
	var cum float64
	for p := range n {
		d := s.u.promotion(s.seed, p, w)
		s.discount[p] = d
		cum += s.u.products[p].popularity * promotionLift(d)
		s.prodCum[p] = cum
	}
	s.week = w
}

type burst struct {
	on             bool
	from, to       float64 // the rush, as fractions of the hour
	store, product int
}

func (s *sales) burstOf(hour int64) burst {
	h := hash(s.seed, tagBurst, s.task, s.tasks, uint64(hour))
	if unit(h) >= burstChance {
		return burst{}
	}
	from := float64(hash(h, 1)%(60-burstMinutes)) / 60
	return burst{on: true, from: from, to: from + burstMinutes/60.0,
		store:   s.stores[hash(h, 2)%uint64(len(s.stores))],
		product: pick(s.prodCum, unit(hash(h, 3)))}
}

// warp maps x, a sale's even place in [0, 1) within its hour, to its
// time within the hour, so that burstShare of the sales fall in the rush;
// it is monotonic. It also says whether the sale is in the rush.
func (b burst) warp(x float64) (float64, bool) {
	outside := 1 - (b.to - b.from)
	before := (1 - burstShare) * b.from / outside // share of sales before the rush
	switch {
	case x < before:
		return x / before * b.from, false
	case x < before+burstShare:
		return b.from + (x-before)/burstShare*(b.to-b.from), true
	default:
		return b.to + (x-before-burstShare)/(1-before-burstShare)*(1-b.to), false
	}
}

func (s *sales) at(g, seq int64) Record {
	total := s.prefix[len(s.slots)]
	week, rem := g/total, g%total
	slot := sort.Search(len(s.slots), func(i int) bool { return s.prefix[i+1] > rem })
	i, n := rem-s.prefix[slot], s.slots[slot]
	hour := week*int64(len(s.slots)) + int64(slot)
	s.setWeek(week)

	r := rng{hash(s.seed, tagSale, s.task, s.tasks, uint64(g))}
	x := (float64(i) + r.float()) / float64(n)
	b := s.burstOf(hour)
	inRush := false
	if b.on {
		x, inRush = b.warp(x)
	}
	ms := s.day0ms + hour*hourMs + min(int64(x*float64(hourMs)), hourMs-1)

	var st, p int
	hot := inRush && r.float() < burstHot
	if hot {
		st, p = b.store, b.product
	} else {
		st, p = s.stores[pick(s.storeCum, r.float())], pick(s.prodCum, r.float())
	}
	q := saleQuantity(&r)
	d := s.discount[p]
	if d > 0 && r.float() < 0.5 {
		q++ // a multi-buy offer
	}
	if hot {
		q *= int64(2 + r.intn(5))
	}
	list := s.u.products[p].price
	price := list
	if d > 0 {
		price = round2(list * (1 - d))
	}
	storeID, productID := s.u.stores[st].id, s.u.products[p].id
	return Record{Seq: seq, Key: storeID + ":" + productID, Time: time.UnixMilli(ms).UTC(), Value: map[string]any{
		"sale_id":    fmt.Sprintf("sale-%d-%d", s.task, seq),
		"ts":         ms,
		"store_id":   storeID,
		"product_id": productID,
		"quantity":   q,
		"unit_price": price,
		"list_price": list,
		"promotion":  d > 0,
	}}
}

// saleQuantity draws the quantity of a plain sale: mostly one or two.
func saleQuantity(r *rng) int64 {
	switch x := r.float(); {
	case x < 0.62:
		return 1
	case x < 0.87:
		return 2
	case x < 0.96:
		return 3
	default:
		return int64(4 + r.intn(5))
	}
}

func (s *sales) firstAt(start time.Time) int64 {
	hour := (start.UnixMilli() - s.day0ms) / hourMs // within the first day
	lo, n := s.prefix[hour], s.slots[hour]
	return lo + int64(sort.Search(int(n), func(i int) bool { return !s.at(lo+int64(i), 0).Time.Before(start) }))
}
