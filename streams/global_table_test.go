package streams_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/runnel-io/runnel/streams"
	"github.com/runnel-io/runnel/streams/streamstest"
)

func TestGlobalTableJoinLooksUpAKeyComputedFromEachRecord(t *testing.T) {
	b := streams.NewBuilder()
	products := streams.GlobalTableFrom[string, string](b, "products", streams.Materialized("products"))
	// Orders are keyed by order id; the value is a product id.
	streams.From[string, string](b, "orders").
		JoinGlobal(products, func(_, product string) string { return product },
			func(order, _, name string) string { return order + ":" + name }).
		To("out")
	// Not co-partitioned, and need not be.
	d := streamstest.New(t, build(t, b), streamstest.Config{Partitions: map[string]int32{"orders": 3, "products": 2}})
	prod := streamstest.Input[string, string](d, "products", nil, nil)
	orders := streamstest.Input[string, string](d, "orders", nil, nil)
	out := streamstest.Output[string, string](d, "out", nil, nil)

	prod.Pipe("p1", "apple")
	prod.Pipe("p2", "pear")
	orders.PipeAt("o1", "p1", atMs(1))
	orders.PipeAt("o2", "p2", atMs(2))
	orders.PipeAt("o3", "p9", atMs(3)) // unknown product: nothing
	prod.Pipe("p1", "green apple")
	orders.PipeAt("o4", "p1", atMs(4))
	prod.PipeTombstone("p2")
	orders.PipeAt("o5", "p2", atMs(5)) // deleted product: nothing
	checkRecords(t, out.ReadRecords(),
		rec("o1", "o1:apple", 1),
		rec("o2", "o2:pear", 2),
		rec("o4", "o4:green apple", 4))
	if got := streamstest.KeyValueStore[string, string](d, "products"); !reflect.DeepEqual(got, map[string]string{"p1": "green apple"}) {
		t.Errorf("global store = %v", got)
	}
}

func TestGlobalTableLeftJoinKeepsRecordsAndNeedsNoRepartition(t *testing.T) {
	b := streams.NewBuilder()
	products := streams.GlobalTableFrom[string, string](b, "products")
	streams.From[string, string](b, "orders").
		SelectKey(func(_, product string) string { return "by-" + product }).
		LeftJoinGlobal(products, func(_, product string) string { return product },
			func(_, product, name string, ok bool) string { return product + "=" + opt(name, ok) }).
		To("out")
	topo := build(t, b)
	if strings.Contains(topo.Describe(), "repartition") {
		t.Errorf("a global join repartitioned:\n%s", topo.Describe())
	}
	d := streamstest.New(t, topo, streamstest.Config{})
	streamstest.Input[string, string](d, "products", nil, nil).Pipe("p1", "apple")
	orders := streamstest.Input[string, string](d, "orders", nil, nil)
	orders.PipeAt("o1", "p1", atMs(1))
	orders.PipeAt("o2", "p2", atMs(2))
	checkRecords(t, streamstest.Output[string, string](d, "out", nil, nil).ReadRecords(),
		rec("by-p1", "p1=apple", 1),
		rec("by-p2", "p2=-", 2))
}

func TestGlobalTableTopicReadTwiceFailsBuild(t *testing.T) {
	b := streams.NewBuilder()
	streams.GlobalTableFrom[string, string](b, "products")
	streams.From[string, string](b, "products").To("out")
	if _, err := b.Build(); !errors.Is(err, streams.ErrTopology) || !strings.Contains(err.Error(), `"products"`) {
		t.Fatalf("Build = %v, want ErrTopology naming the topic", err)
	}
}
