// Enrichment: orders joined with a customers table and a global table of
// products. Orders (key: customer id) arrive on "orders"; customers (key:
// customer id) on "customers", read as a table — the latest record per
// customer, kept in a local store; products (key: SKU) on "products", read
// as a global table that every instance holds whole, so an order can look
// up its product by a field of its value without repartitioning. Each
// order goes out on "enriched-orders" with the customer's name and tier,
// the product's name and the order's total; an order from a customer the
// table does not know goes out as "unknown customer" (a left join).
//
// "orders" and "customers" must have the same partition count (they are
// co-partitioned: a customer's orders and record meet in one task).
//
//	go run ./examples/enrichment [-brokers host:9092]
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/examples/internal/embedded"
	"github.com/runnel-io/runnel/streams"
)

// Customer is a record of the customers table.
type Customer struct {
	Name string `json:"name"`
	Tier string `json:"tier"`
}

// Product is a record of the products global table.
type Product struct {
	Name  string  `json:"name"`
	Price float64 `json:"price"`
}

// Order is an order as it arrives.
type Order struct {
	ID  string `json:"id"`
	SKU string `json:"sku"`
	Qty int    `json:"qty"`
}

// Enriched is an order with what the tables know.
type Enriched struct {
	OrderID  string  `json:"order_id"`
	Customer string  `json:"customer"`
	Tier     string  `json:"tier"`
	Product  string  `json:"product"`
	Total    float64 `json:"total"`
}

// enrich is the joins' logic, also used by the test's reference.
func enrich(o Order, c Customer, known bool, p Product) Enriched {
	e := Enriched{OrderID: o.ID, Customer: "unknown customer", Product: p.Name, Total: float64(o.Qty) * p.Price}
	if known {
		e.Customer, e.Tier = c.Name, c.Tier
		if c.Tier == "gold" {
			e.Total *= 0.9 // gold customers get 10% off
		}
	}
	return e
}

// withCustomer is an order with its customer, between the two joins.
type withCustomer struct {
	Order    Order
	Customer Customer
	Known    bool
}

// Topology wires orders ⋈ customers ⋈ products -> enriched-orders.
func Topology() (*streams.Topology, error) {
	b := streams.NewBuilder()
	customers := streams.TableFrom[string, Customer](b, "customers", streams.Materialized("customers-store"))
	products := streams.GlobalTableFrom[string, Product](b, "products", streams.Materialized("products-store"))
	streams.Stream[string, withCustomer].JoinGlobal(
		streams.From[string, Order](b, "orders").
			LeftJoinTable(customers, func(_ string, o Order, c Customer, ok bool) withCustomer {
				return withCustomer{o, c, ok}
			}, streams.Named("orders-with-customers")),
		products,
		func(_ string, oc withCustomer) string { return oc.Order.SKU },
		func(_ string, oc withCustomer, p Product) Enriched { return enrich(oc.Order, oc.Customer, oc.Known, p) },
		streams.Named("orders-with-products")).
		To("enriched-orders")
	return b.Build()
}

var (
	products = map[string]Product{"sku-1": {"kettle", 30}, "sku-2": {"teapot", 25}, "sku-3": {"mug", 8}}
	// The customers' records, in order: bob's second record upgrades him.
	customers = []struct {
		id string
		c  Customer
	}{{"c1", Customer{"alice", "gold"}}, {"c2", Customer{"bob", "silver"}}, {"c2", Customer{"bob", "gold"}}}
	orders = []struct {
		customer string
		o        Order
	}{
		{"c1", Order{"o1", "sku-1", 1}},
		{"c2", Order{"o2", "sku-3", 4}},
		{"c3", Order{"o3", "sku-2", 2}}, // no such customer
		{"c1", Order{"o4", "sku-3", 10}},
	}
)

func main() {
	brokers := flag.String("brokers", "", "comma-separated seed brokers (default: start an embedded broker)")
	flag.Parse()
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	if err := run(ctx, *brokers, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "enrichment:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, brokerList string, w io.Writer) error {
	seeds, stop, err := embedded.Brokers(brokerList)
	if err != nil {
		return err
	}
	defer stop()
	if err := embedded.CreateTopics(ctx, seeds, 2, "orders", "customers", "products", "enriched-orders"); err != nil {
		return err
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics("enriched-orders"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return err
	}
	defer cl.Close()
	send := func(topic, key string, v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		return cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: []byte(key), Value: b}).FirstErr()
	}
	for sku, p := range products {
		if err := send("products", sku, p); err != nil {
			return err
		}
	}
	for _, c := range customers {
		if err := send("customers", c.id, c.c); err != nil {
			return err
		}
	}

	topo, err := Topology()
	if err != nil {
		return err
	}
	app, err := streams.NewApp(topo, streams.Config{ApplicationID: "enrichment-example", Brokers: seeds, CommitInterval: 200 * time.Millisecond})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- app.Run(ctx) }()

	// Orders and customers are read side by side; send the orders once the
	// table holds every customer's latest record, so that what they meet
	// is certain. (The global table is loaded in full before the app
	// processes anything.)
	latest := map[string]Customer{}
	for _, c := range customers {
		latest[c.id] = c.c
	}
	for id, c := range latest {
		if err := waitForCustomer(ctx, app, id, c, done); err != nil {
			return err
		}
	}
	for _, o := range orders {
		if err := send("orders", o.customer, o.o); err != nil {
			return err
		}
	}
	for printed := 0; printed < len(orders); {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var derr error
		fetches.EachRecord(func(r *kgo.Record) {
			var e Enriched
			if err := json.Unmarshal(r.Value, &e); err != nil {
				derr = err
				return
			}
			fmt.Fprintf(w, "%s %-16s %-6s %-7s %7.2f\n", e.OrderID, e.Customer, e.Tier, e.Product, e.Total)
			printed++
		})
		if derr != nil {
			return derr
		}
	}
	cancel()
	return <-done
}

// waitForCustomer asks the app's customers store (an interactive query)
// until it holds want for customer id.
func waitForCustomer(ctx context.Context, app *streams.App, id string, want Customer, done <-chan error) error {
	for {
		c, ok, err := streams.Get[string, Customer](app, "customers-store", id)
		if err == nil && ok && c == want {
			return nil
		}
		if err != nil && !errors.Is(err, streams.ErrNotRunning) && !errors.Is(err, streams.ErrRestoring) {
			var nl *streams.NotLocalError
			if !errors.As(err, &nl) { // not assigned yet
				return err
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-done:
			return fmt.Errorf("the app stopped: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
