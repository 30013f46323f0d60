// Package datagen generates repeatable test data: the Datagen source
// connector (io.runnel.connect.datagen.DatagenConnector, alias Datagen),
// and the Generator behind it, which programs and tests use to compute
// the same records without a broker. Register adds the connector to a
// registry.
//
// # Schemas
//
// retail.sales are the sales of a retailer's stores (stores, default 10)
// of its products (products, default 100). Keys are "store_id:product_id"
// strings (S001:P0042), so that a streams app can partition by store and
// product; with the json key converter they are JSON strings, with the
// string converter raw ones. Values:
//
//	sale_id     string  sale-<task>-<seq>
//	ts          int64   event time, epoch milliseconds (Connect Timestamp)
//	store_id    string  S001 ...
//	product_id  string  P0001 ...
//	quantity    int64   mostly 1 or 2; more in promotions and bursts
//	unit_price  float64 the price paid: list_price less any discount
//	list_price  float64
//	promotion   bool    the product is on promotion this week
//
// Stores differ in size; products follow a Zipf-like popularity. Stores
// open from 08:00 to 22:00 UTC with peaks at lunch and after work, and
// Saturdays are busiest: nights hold no sales, so event time jumps over
// them. About one product in twelve is on promotion in a week (10% to
// 40% off, which lifts its sales up to 3.4 times). About one hour in
// twenty-five of a task has a ten-minute rush holding 40% of the hour's
// sales, most of them large sales of one product in one store.
//
// retail.shipments are deliveries to the same stores, in the same
// universe (the same seed, stores and products give the same stores,
// products, prices and demand). Each store gets each product every 1, 2,
// 3 or 7 days (fast sellers more often), between 05:00 and 14:00, sized to
// cover the period's expected sales in whole cases and ordered the
// product's lead time (1 to 5 days) earlier; 15% of deliveries are partial
// (quantity < ordered_quantity). Values: shipment_id, order_id, ts,
// ordered_at (epoch ms), store_id, product_id, quantity,
// ordered_quantity. Keys as for sales.
//
// users (registertime, userid, regionid, gender; a profile update every
// ten simulated seconds) and pageviews (viewtime, userid, pageid; one a
// simulated second) are small streams in the shape of Confluent's
// quickstarts, keyed by userid; stores and products do not apply.
//
// # Time
//
// Event time is simulated: it starts at start.time (default
// 2024-01-01T00:00:00Z) and advances by the demand model, record by
// record, whatever the wall clock and the rate. A record's timestamp is
// its event time (the value's ts, or viewtime; a user update's time is
// only the record's timestamp). How fast event time passes in wall time
// is the rate divided by the records per simulated hour (for sales, about
// 60 an hour per store at the busiest times; none at night).
//
// Timestamps are in the past by default: a topic with time-based
// retention (retention.ms, seven days by default) deletes its closed
// segments at once. Create the topic with retention.ms=-1, or set
// start.time to a recent time.
//
// # Tasks and offsets
//
// With tasks.max > 1 the retail stores are split: task i of n generates
// for the stores whose index modulo n is i (at most one task per store);
// users and pageviews tasks are independent streams. Each task is a
// sequence numbered from 0: its source partition is {"task": i}, and each
// record's offset is {"seq": k+1}, the count of records up to and
// including it. A restarted task continues at the stored seq, so the
// topic holds the sequence without gaps. Delivery is at least once:
// records produced after the last stored offset (the worker died, or was
// stopped with records in flight) are produced again, the same ones,
// after a restart.
// The sequence depends on the seed, schema, stores, products, start.time
// and the task count: change one and a resumed task continues a
// different sequence (reset the offsets to start over).
//
// rate limits each task to so many records a second (0: as fast as
// possible); max.records ends each task's sequence.
//
// # Generator
//
// NewGenerator(GeneratorConfig{...}) makes a task's sequence in memory:
// Next, At and SeekTo give records by sequence number, in a time that does
// not grow with the number, with no clock or IO. The connector is a thin
// shell around it, so a test can regenerate exactly what a task wrote.
package datagen

import "github.com/runnel-io/runnel/connect"

// Register adds the Datagen connector to r.
func Register(r *connect.Registry) error { return r.Register(sourcePlugin()) }
