package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"
)

// reference enriches the orders with a plain loop over the same input: the
// latest record of each customer, the product of each SKU.
func reference() []string {
	latest := map[string]Customer{}
	for _, c := range customers {
		latest[c.id] = c.c
	}
	var out []string
	for _, o := range orders {
		c, ok := latest[o.customer]
		e := enrich(o.o, c, ok, products[o.o.SKU])
		line := fmt.Sprintf("%s %s %s %s %.2f", e.OrderID, e.Customer, e.Tier, e.Product, e.Total)
		out = append(out, strings.Join(strings.Fields(line), " "))
	}
	sort.Strings(out)
	return out
}

// TestEnrichment runs the example against its embedded broker and checks
// every enriched order against the reference.
func TestEnrichment(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out strings.Builder
	if err := run(ctx, "", &out); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		got = append(got, strings.Join(strings.Fields(line), " "))
	}
	sort.Strings(got)
	want := reference()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("enriched orders:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
