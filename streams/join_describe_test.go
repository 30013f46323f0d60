package streams_test

import (
	"testing"
	"time"

	"github.com/runnel-io/runnel/streams"
)

// TestDescribeNamesJoinNodesAsKafkaStreams checks the node and store names
// of every join kind and the global store's own sub-topology.
func TestDescribeNamesJoinNodesAsKafkaStreams(t *testing.T) {
	b := streams.NewBuilder()
	products := streams.GlobalTableFrom[string, string](b, "products")
	customers := streams.TableFrom[string, string](b, "customers")
	addresses := streams.TableFrom[string, string](b, "addresses")
	orders := streams.From[string, string](b, "orders")
	payments := streams.From[string, string](b, "payments")
	orders.JoinTable(customers, func(_, o, c string) string { return o + c }).
		LeftJoinGlobal(products, func(_, v string) string { return v }, func(_, v, p string, _ bool) string { return v + p }).
		To("enriched")
	customers.Join(addresses, func(c, a string) string { return c + a }).ToStream().To("customer-addresses")
	orders.LeftJoin(payments, func(_, o, p string, _ bool) string { return o + p }, streams.JoinTimeDifference(time.Minute)).To("paid")
	if got := build(t, b).Describe(); got != wantJoinsDescribed {
		t.Errorf("Describe:\n%s\nwant:\n%s", got, wantJoinsDescribed)
	}
}

const wantJoinsDescribed = `Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000003 (topics: [customers])
      --> KTABLE-SOURCE-0000000004
    Processor: KTABLE-SOURCE-0000000004 (stores: [customers-STATE-STORE-0000000004])
      --> KTABLE-JOINTHIS-0000000014
      <-- KSTREAM-SOURCE-0000000003
    Source: KSTREAM-SOURCE-0000000006 (topics: [addresses])
      --> KTABLE-SOURCE-0000000007
    Processor: KTABLE-SOURCE-0000000007 (stores: [addresses-STATE-STORE-0000000007])
      --> KTABLE-JOINOTHER-0000000015
      <-- KSTREAM-SOURCE-0000000006
    Source: KSTREAM-SOURCE-0000000009 (topics: [orders])
      --> KSTREAM-JOIN-0000000011, KSTREAM-WINDOWED-0000000019
    Source: KSTREAM-SOURCE-0000000010 (topics: [payments])
      --> KSTREAM-WINDOWED-0000000020
    Processor: KSTREAM-JOIN-0000000011 (stores: [customers-STATE-STORE-0000000004])
      --> KSTREAM-LEFTJOIN-0000000012
      <-- KSTREAM-SOURCE-0000000009
    Processor: KSTREAM-LEFTJOIN-0000000012 (stores: [])
      --> KSTREAM-SINK-0000000013
      <-- KSTREAM-JOIN-0000000011
    Sink: KSTREAM-SINK-0000000013 (topic: enriched)
      <-- KSTREAM-LEFTJOIN-0000000012
    Processor: KTABLE-JOINTHIS-0000000014 (stores: [addresses-STATE-STORE-0000000007])
      --> KTABLE-MERGE-0000000016
      <-- KTABLE-SOURCE-0000000004
    Processor: KTABLE-JOINOTHER-0000000015 (stores: [customers-STATE-STORE-0000000004])
      --> KTABLE-MERGE-0000000016
      <-- KTABLE-SOURCE-0000000007
    Processor: KTABLE-MERGE-0000000016 (stores: [])
      --> KTABLE-TOSTREAM-0000000017
      <-- KTABLE-JOINTHIS-0000000014, KTABLE-JOINOTHER-0000000015
    Processor: KTABLE-TOSTREAM-0000000017 (stores: [])
      --> KSTREAM-SINK-0000000018
      <-- KTABLE-MERGE-0000000016
    Sink: KSTREAM-SINK-0000000018 (topic: customer-addresses)
      <-- KTABLE-TOSTREAM-0000000017
    Processor: KSTREAM-WINDOWED-0000000019 (stores: [KSTREAM-JOINTHIS-0000000021-store])
      --> KSTREAM-JOINTHIS-0000000021
      <-- KSTREAM-SOURCE-0000000009
    Processor: KSTREAM-WINDOWED-0000000020 (stores: [KSTREAM-OUTEROTHER-0000000022-store])
      --> KSTREAM-OUTEROTHER-0000000022
      <-- KSTREAM-SOURCE-0000000010
    Processor: KSTREAM-JOINTHIS-0000000021 (stores: [KSTREAM-OUTEROTHER-0000000022-store, KSTREAM-OUTERSHARED-0000000021-store])
      --> KSTREAM-MERGE-0000000023
      <-- KSTREAM-WINDOWED-0000000019
    Processor: KSTREAM-OUTEROTHER-0000000022 (stores: [KSTREAM-JOINTHIS-0000000021-store, KSTREAM-OUTERSHARED-0000000021-store])
      --> KSTREAM-MERGE-0000000023
      <-- KSTREAM-WINDOWED-0000000020
    Processor: KSTREAM-MERGE-0000000023 (stores: [])
      --> KSTREAM-SINK-0000000027
      <-- KSTREAM-JOINTHIS-0000000021, KSTREAM-OUTEROTHER-0000000022
    Sink: KSTREAM-SINK-0000000027 (topic: paid)
      <-- KSTREAM-MERGE-0000000023

   Sub-topology: 1 for global store (will not generate tasks)
    Source: KSTREAM-SOURCE-0000000001 (topics: [products])
      --> KTABLE-SOURCE-0000000002
    Processor: KTABLE-SOURCE-0000000002 (stores: [products-STATE-STORE-0000000000])
      --> none
      <-- KSTREAM-SOURCE-0000000001

`
