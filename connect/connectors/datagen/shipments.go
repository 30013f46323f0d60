package datagen

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"
)

// cycleDays is how often the delivery schedule repeats: the delivery
// periods (1, 2, 3 and 7 days) all divide it.
const cycleDays = 42

// Deliveries arrive between 05:00 and 14:00.
const (
	receivingFrom  = 5 * hourMs
	receivingHours = 9
)

// partialChance is the share of deliveries that bring less than ordered.
const partialChance = 0.15

var shipmentSchema = structSchema("io.runnel.datagen.retail.Shipment",
	field("shipment_id", stringSchema), field("order_id", stringSchema),
	field("ts", timestampSchema), field("ordered_at", timestampSchema),
	field("store_id", stringSchema), field("product_id", stringSchema),
	field("quantity", int64Schema), field("ordered_quantity", int64Schema))

// shipments makes retail.shipments: each store gets each product every
// period days of the product (fast sellers daily, slow ones weekly) on
// days fixed by a random phase, ordered lead days earlier and sized to
// cover the period's expected sales. A day's deliveries are sorted by
// time of arrival; which deliveries happen, and their traits, depend on
// the seed and the (store, product, day) only, so they do not change with
// the number of tasks.
type shipments struct {
	u      *universe
	seed   uint64
	stores []int
	day0ms int64
	counts [cycleDays]int64
	prefix [cycleDays + 1]int64

	day  int64 // of list, -1: none
	list []delivery
}

type delivery struct {
	atMs           int64 // since midnight
	store, product int
}

func newShipments(u *universe, cfg GeneratorConfig, stores []int, day0 time.Time) *shipments {
	sh := &shipments{u: u, seed: uint64(cfg.Seed), stores: stores, day0ms: day0.UnixMilli(), day: -1}
	for _, s := range stores {
		for p := range u.products {
			per, ph := sh.schedule(s, p)
			for d := (per - ph) % per; d < cycleDays; d += per {
				sh.counts[d]++
			}
		}
	}
	for i, n := range sh.counts {
		sh.prefix[i+1] = sh.prefix[i] + n
	}
	return sh
}

// schedule returns the delivery period of (s, p) and its phase: it gets
// deliveries on the days d with (d + phase) % period == 0.
func (sh *shipments) schedule(s, p int) (period, phase int) {
	period = sh.u.products[p].period
	return period, int(hash(sh.seed, tagPhase, uint64(s), uint64(p)) % uint64(period))
}

// setDay lists the deliveries of grid day d by time of arrival.
func (sh *shipments) setDay(d int64) {
	if sh.day == d {
		return
	}
	sh.list = sh.list[:0]
	for _, s := range sh.stores {
		for p := range sh.u.products {
			per, ph := sh.schedule(s, p)
			if (d+int64(ph))%int64(per) != 0 {
				continue
			}
			at := receivingFrom + int64(unit(hash(sh.seed, tagDelivery, uint64(s), uint64(p), uint64(d)))*receivingHours*float64(hourMs))
			sh.list = append(sh.list, delivery{atMs: at, store: s, product: p})
		}
	}
	slices.SortFunc(sh.list, func(a, b delivery) int {
		return cmp.Or(cmp.Compare(a.atMs, b.atMs), cmp.Compare(a.store, b.store), cmp.Compare(a.product, b.product))
	})
	sh.day = d
}

func (sh *shipments) at(g, seq int64) Record {
	total := sh.prefix[cycleDays]
	cycle, rem := g/total, g%total
	dc := sort.Search(cycleDays, func(i int) bool { return sh.prefix[i+1] > rem })
	d := cycle*cycleDays + int64(dc)
	sh.setDay(d)
	del := sh.list[rem-sh.prefix[dc]]
	st, pr := sh.u.stores[del.store], sh.u.products[del.product]

	r := rng{hash(sh.seed, tagDelivery, uint64(del.store), uint64(del.product), uint64(d), 1)}
	want := sh.u.dailyDemand(del.product) * st.size * float64(pr.period) * (0.9 + 0.5*r.float())
	ordered := int64(max(math.Ceil(want/float64(pr.casePack)), 1)) * int64(pr.casePack)
	q := ordered
	if ordered >= 2 && r.float() < partialChance {
		q = min(max(int64(float64(ordered)*(0.4+0.55*r.float())), 1), ordered-1)
	}
	ms := sh.day0ms + d*dayMs + del.atMs
	orderedAt := ms - int64(pr.leadDays)*dayMs - int64(r.float()*12*float64(hourMs))
	return Record{Seq: seq, Key: st.id + ":" + pr.id, Time: time.UnixMilli(ms).UTC(), Value: map[string]any{
		"shipment_id":      fmt.Sprintf("SH-%d-%s-%s", ms/dayMs, st.id, pr.id),
		"order_id":         fmt.Sprintf("PO-%d-%s-%s", ms/dayMs-int64(pr.leadDays), st.id, pr.id),
		"ts":               ms,
		"ordered_at":       orderedAt,
		"store_id":         st.id,
		"product_id":       pr.id,
		"quantity":         q,
		"ordered_quantity": ordered,
	}}
}

func (sh *shipments) firstAt(start time.Time) int64 {
	sh.setDay(0)
	since := start.UnixMilli() - sh.day0ms
	return int64(sort.Search(len(sh.list), func(i int) bool { return sh.list[i].atMs >= since }))
}
