package streams_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/streams"
)

// ordersTopology joins orders (key: customer id, value: product id) with
// the customers table into "by-customer" and with the products global
// table into "by-product".
func ordersTopology(t *testing.T) *streams.Topology {
	t.Helper()
	b := streams.NewBuilder()
	customers := streams.TableFrom[string, string](b, "customers", streams.Materialized("customers"))
	products := streams.GlobalTableFrom[string, string](b, "products", streams.Materialized("products"))
	orders := streams.From[string, string](b, "orders")
	orders.JoinTable(customers, func(_, product, name string) string { return name + " bought " + product }).To("by-customer")
	orders.JoinGlobal(products, func(_, product string) string { return product },
		func(customer, _, product string) string { return customer + " bought " + product }).To("by-product")
	return build(t, b)
}

func produce(ctx context.Context, t *testing.T, cl *kgo.Client, topic, key, value string) {
	t.Helper()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: []byte(key), Value: []byte(value)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// pollUntil reads topics from the start into got (topic -> values) until
// done says so; it asks done at least every 200 ms.
func pollUntil(ctx context.Context, t *testing.T, seeds []string, done func(got map[string][]string) bool, topics ...string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topics...),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	got := map[string][]string{}
	for !done(got) {
		pollCtx, cancel := context.WithTimeout(ctx, 200*time.Millisecond) // so that done runs again
		fs := cl.PollFetches(pollCtx)
		cancel()
		if ctx.Err() != nil {
			t.Fatalf("%v not reached: got %v", topics, got)
		}
		fs.EachRecord(func(r *kgo.Record) { got[r.Topic] = append(got[r.Topic], string(r.Value)) })
	}
}

func TestAppJoinsAStreamWithATableAndAGlobalTableKfake(t *testing.T) {
	for _, g := range []streams.Guarantee{streams.AtLeastOnce, streams.ExactlyOnce} {
		t.Run(g.String(), func(t *testing.T) { runOrdersApp(t, g) })
	}
}

func runOrdersApp(t *testing.T, g streams.Guarantee) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	seeds := c.ListenAddrs()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopics(ctx, 2, 1, nil, "orders", "customers", "by-customer", "by-product"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopics(ctx, 3, 1, nil, "products"); err != nil { // a global table's topic need not be co-partitioned
		t.Fatal(err)
	}
	for i := range 10 {
		produce(ctx, t, cl, "customers", fmt.Sprintf("c%d", i), fmt.Sprintf("name%d", i))
	}
	for i := range 5 {
		produce(ctx, t, cl, "products", fmt.Sprintf("p%d", i), fmt.Sprintf("product%d", i))
	}

	app, err := streams.NewApp(ordersTopology(t), streams.Config{
		ApplicationID: "orders", Brokers: seeds, Guarantee: g, CommitInterval: 100 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- app.Run(runCtx) }()

	// The customers are in the table once their changelog has them: only
	// then do orders find them.
	pollUntil(ctx, t, seeds, func(got map[string][]string) bool { return len(got["orders-customers-changelog"]) >= 10 }, "orders-customers-changelog")
	for i := range 10 {
		produce(ctx, t, cl, "orders", fmt.Sprintf("c%d", i), fmt.Sprintf("p%d", i%5))
	}
	pollUntil(ctx, t, seeds, func(got map[string][]string) bool {
		return len(got["by-customer"]) == 10 && len(got["by-product"]) == 10
	}, "by-customer", "by-product")

	// A product added while the app runs reaches its global table.
	produce(ctx, t, cl, "products", "p9", "product9")
	pollUntil(ctx, t, seeds, func(got map[string][]string) bool {
		for _, v := range got["by-product"] {
			if v == "c0 bought product9" {
				return true
			}
		}
		produce(ctx, t, cl, "orders", "c0", "p9") // until the table has p9
		return false
	}, "by-product")

	stop()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	// Every output is a join of a known customer or product.
	pollUntil(ctx, t, seeds, func(got map[string][]string) bool {
		for _, v := range got["by-customer"] {
			if !strings.HasPrefix(v, "name") {
				t.Errorf("by-customer: %q", v)
			}
		}
		return len(got["by-customer"]) >= 10
	}, "by-customer")
}

func TestAppRefusesToStartWhenJoinedTopicsAreNotCoPartitionedKfake(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopics(ctx, 2, 1, nil, "orders", "products"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopics(ctx, 3, 1, nil, "customers"); err != nil {
		t.Fatal(err)
	}
	app, err := streams.NewApp(ordersTopology(t), streams.Config{ApplicationID: "orders", Brokers: c.ListenAddrs()})
	if err != nil {
		t.Fatal(err)
	}
	err = app.Run(ctx)
	if !errors.Is(err, streams.ErrTopology) {
		t.Fatalf("Run = %v, want ErrTopology", err)
	}
	for _, want := range []string{"customers: 3 partitions", "orders: 2 partitions"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}
