package streams_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/runnel-io/runnel/streams"
	"github.com/runnel-io/runnel/streams/streamstest"
)

// exampleTB lets an Example run the test driver, which reports through a
// testing.TB: failures panic, cleanups are left to Driver.Close.
type exampleTB struct{ testing.TB }

func (exampleTB) Helper()                        {}
func (exampleTB) Cleanup(func())                 {}
func (exampleTB) Fatalf(format string, a ...any) { panic(fmt.Sprintf(format, a...)) }
func (exampleTB) Errorf(format string, a ...any) { panic(fmt.Sprintf(format, a...)) }
func printRecords(out *streamstest.OutputTopic[string, string]) {
	for _, r := range out.ReadRecords() {
		if r.Tombstone {
			fmt.Printf("%s: <deleted> at %d\n", r.Key, r.Timestamp)
			continue
		}
		fmt.Printf("%s: %s at %d\n", r.Key, r.Value, r.Timestamp)
	}
}

// Orders keyed by customer meet the customer's current name.
func ExampleStream_JoinTable() {
	b := streams.NewBuilder()
	customers := streams.TableFrom[string, string](b, "customers")
	streams.From[string, string](b, "orders").
		JoinTable(customers, func(id, order, name string) string { return name + " ordered " + order }).
		To("enriched")
	topo, err := b.Build()
	if err != nil {
		panic(err)
	}
	d := streamstest.New(exampleTB{}, topo, streamstest.Config{})
	defer d.Close()
	orders := streamstest.Input[string, string](d, "orders", nil, nil)
	names := streamstest.Input[string, string](d, "customers", nil, nil)

	orders.PipeAt("c1", "tea", time.UnixMilli(1)) // no customer c1 yet
	names.PipeAt("c1", "Ada", time.UnixMilli(2))
	orders.PipeAt("c1", "cake", time.UnixMilli(3))
	printRecords(streamstest.Output[string, string](d, "enriched", nil, nil))
	// Output:
	// c1: Ada ordered cake at 3
}

// Clicks and views of an ad within a minute of each other; a view without a
// click comes out once no click can match it any more.
func ExampleStream_LeftJoin() {
	b := streams.NewBuilder()
	clicks := streams.From[string, string](b, "clicks")
	streams.From[string, string](b, "views").
		LeftJoin(clicks, func(ad, view, click string, clicked bool) string {
			if !clicked {
				return view + " (no click)"
			}
			return view + " -> " + click
		}, streams.JoinTimeDifference(time.Minute)).
		To("outcomes")
	topo, err := b.Build()
	if err != nil {
		panic(err)
	}
	d := streamstest.New(exampleTB{}, topo, streamstest.Config{})
	defer d.Close()
	views := streamstest.Input[string, string](d, "views", nil, nil)
	clickIn := streamstest.Input[string, string](d, "clicks", nil, nil)
	minute := func(m int64) time.Time { return time.UnixMilli(m * 60_000) }

	views.PipeAt("ad1", "view1", minute(0))
	views.PipeAt("ad2", "view2", minute(1))
	clickIn.PipeAt("ad1", "click1", minute(1))
	views.PipeAt("ad3", "view3", minute(5)) // stream time passes view2's window
	printRecords(streamstest.Output[string, string](d, "outcomes", nil, nil))
	// Output:
	// ad1: view1 -> click1 at 60000
	// ad2: view2 (no click) at 60000
}

// A table of each user's city and team, updated from either side.
func ExampleTable_Join() {
	b := streams.NewBuilder()
	cities := streams.TableFrom[string, string](b, "cities")
	teams := streams.TableFrom[string, string](b, "teams")
	cities.Join(teams, func(city, team string) string { return team + "@" + city }).ToStream().To("profiles")
	topo, err := b.Build()
	if err != nil {
		panic(err)
	}
	d := streamstest.New(exampleTB{}, topo, streamstest.Config{})
	defer d.Close()
	cityIn := streamstest.Input[string, string](d, "cities", nil, nil)
	teamIn := streamstest.Input[string, string](d, "teams", nil, nil)

	cityIn.PipeAt("u1", "Oslo", time.UnixMilli(1))
	teamIn.PipeAt("u1", "infra", time.UnixMilli(2))
	cityIn.PipeAt("u1", "Lima", time.UnixMilli(3))
	if err := teamIn.TryPipe(streams.Record[string, string]{Key: "u1", Tombstone: true, Timestamp: 4}); err != nil {
		panic(err)
	}
	printRecords(streamstest.Output[string, string](d, "profiles", nil, nil))
	// Output:
	// u1: infra@Oslo at 2
	// u1: infra@Lima at 3
	// u1: <deleted> at 4
}

// Each order looks up its product in a global table, whatever the order's key.
func ExampleStream_JoinGlobal() {
	b := streams.NewBuilder()
	products := streams.GlobalTableFrom[string, string](b, "products")
	streams.From[string, string](b, "orders"). // key: order id, value: product id
							JoinGlobal(products, func(order, product string) string { return product },
			func(order, product, name string) string { return name }).
		To("order-products")
	topo, err := b.Build()
	if err != nil {
		panic(err)
	}
	d := streamstest.New(exampleTB{}, topo, streamstest.Config{Partitions: map[string]int32{"orders": 4}})
	defer d.Close()
	streamstest.Input[string, string](d, "products", nil, nil).Pipe("p7", "teapot")
	streamstest.Input[string, string](d, "orders", nil, nil).PipeAt("o1", "p7", time.UnixMilli(5))
	printRecords(streamstest.Output[string, string](d, "order-products", nil, nil))
	// Output:
	// o1: teapot at 5
}

func ExampleJoinTimeDifference() {
	fmt.Println(streams.JoinTimeDifference(5 * time.Second))
	fmt.Println(streams.JoinTimeDifference(0).After(time.Minute).Grace(10 * time.Second))
	// Output:
	// JoinWindows{before=5s, after=5s, grace=0s}
	// JoinWindows{before=0s, after=1m0s, grace=10s}
}
