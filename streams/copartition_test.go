package streams

import (
	"errors"
	"strings"
	"testing"
)

// ordersJoinCustomers is orders joined with the customers table; rekey
// writes orders through a repartition topic "by-customer-repartition"
// first, with opts.
func ordersJoinCustomers(t *testing.T, rekey bool, opts ...Option) *Topology {
	t.Helper()
	b := NewBuilder()
	customers := TableFrom[string, string](b, "customers")
	orders := From[string, string](b, "orders")
	if rekey {
		orders = orders.SelectKey(func(_, c string) string { return c })
	}
	orders.JoinTable(customers, func(_, o, c string) string { return o + c }, append([]Option{Named("by-customer")}, opts...)...).To("out")
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

func TestPlanTopicsRejectsJoinedTopicsWithDifferentPartitionCounts(t *testing.T) {
	_, err := planTopics(ordersJoinCustomers(t, false), "app", map[string]int32{"orders": 3, "customers": 2})
	if !errors.Is(err, ErrTopology) {
		t.Fatalf("planTopics = %v, want ErrTopology", err)
	}
	for _, want := range []string{"customers: 2 partitions", "orders: 3 partitions", "not co-partitioned"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

func TestPlanTopicsGivesAJoinRepartitionTopicTheTablesPartitionCount(t *testing.T) {
	p, err := planTopics(ordersJoinCustomers(t, true), "app", map[string]int32{"orders": 3, "customers": 2})
	if err != nil {
		t.Fatal(err)
	}
	if n := p.partitions["app-by-customer-repartition"]; n != 2 {
		t.Errorf("repartition topic: %d partitions, want the table's 2 (plan %v)", n, p.partitions)
	}
	if n := p.partitions["app-customers-STATE-STORE-0000000001-changelog"]; n != 2 {
		t.Errorf("changelog: %d partitions, want 2 (plan %v)", n, p.partitions)
	}
}

func TestPlanTopicsRejectsAJoinRepartitionTopicSetToAnotherCount(t *testing.T) {
	_, err := planTopics(ordersJoinCustomers(t, true, Partitions(4)), "app", map[string]int32{"orders": 3, "customers": 2})
	if !errors.Is(err, ErrTopology) || !strings.Contains(err.Error(), "by-customer-repartition: 4 partitions") {
		t.Fatalf("planTopics = %v, want ErrTopology naming the repartition topic", err)
	}
}
