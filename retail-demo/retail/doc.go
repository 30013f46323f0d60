// Package retail is Runnel's retail reorder demo: a generator of sales
// and shipments, a Streams app that keeps stock per store and product and
// decides reorders and price adjustments, the connectors around it and a
// live dashboard. Every parameter is in one YAML file (Config;
// retail-demo/retail.yaml).
//
// # Inputs
//
// Sales and shipments are datagen's retail.sales and retail.shipments
// (package connect/connectors/datagen): keys "store_id:product_id", JSON
// values with an event time ts in epoch milliseconds. Generate writes
// both in event-time order and, every generator.watermark of simulated
// time, a watermark record (header runnel-watermark) to every partition
// of both topics.
//
// # Order
//
// A store's product is in the same partition of both topics (the same key
// and partition count), so one task sees all its events. The app applies
// them in event-time order whatever order they arrive in: an event waits
// until both inputs of its task have passed its timestamp (by a later
// record or a watermark), then the waiting events apply in (ts,
// shipment before sale, arrival) order. A sale without ts (from the
// point-of-sale endpoint) and a record older than what was already
// applied apply at once. The outputs are thus a function of the input
// records; the tests check them against a reference written from the
// rules below.
//
// # Rules, per store and product (integer arithmetic throughout)
//
//   - Stock starts at model.initial_stock. A shipment adds its quantity
//     and ends the reorder in flight. A sale takes min(quantity, stock);
//     the rest is a lost sale. A sale's list_price (in cents, rounded) is
//     the product's list price.
//   - Velocity v is the units sold in the hopping window of
//     model.velocity_window that ends with the hop (model.velocity_hop) of
//     the latest event: hops are event time / velocity_hop, rounded down.
//     When an event starts a new hop, the baseline (×1000) takes in the
//     velocity of the window that ended with the previous hop: the first
//     time it is v×1000, then (w·v·1000 + (100−w)·baseline) / 100 with w =
//     model.baseline_weight_pct.
//   - After every event, with W the window and all times in ms: a reorder
//     in flight for model.reorder_expiry or longer is forgotten; if none
//     is in flight and stock·W ≤ v·lead_time + safety_stock·W (stock at
//     or below the reorder point), a reorder for max(1, ⌈(v·order_up_to +
//     safety_stock·W) / W⌉ − stock) units is made and is in flight from
//     then (one reorder per breach).
//   - Then, once the list price is known and model.price_cooldown has
//     passed since the last change (or there was none), with f the price
//     factor in basis points (10000 = the list price): if stock·W >
//     v·markdown_cover (stock covers more than markdown_cover of demand)
//     and f > floor_pct·100, f becomes max(floor_pct·100, f·(100 −
//     markdown_pct)/100), a markdown; otherwise, if stock·W <
//     v·raise_cover (scarce), a baseline exists, v·100000 >
//     raise_demand_pct·baseline (demand above its baseline) and f <
//     cap_pct·100, f becomes min(cap_pct·100, f·(100 + raise_pct)/100), a
//     raise. A price in cents is list·f/10000, rounded down.
//
// # Outputs
//
// stock (a record per event, compacted: the latest per key is the stock
// table), reorders and price adjustments, all JSON, keyed by
// store_id:product_id, with the event's time as timestamp.
package retail
