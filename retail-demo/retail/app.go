package retail

import (
	"github.com/runnel-io/runnel/streams"
)

// Topology is the Streams app: sales and shipments in; stock, reorders
// and price adjustments out. One processor (orderer) puts the two inputs
// in event-time order and runs the model; its outputs go to their topics
// by kind.
//
//	sales ─┐                                    ┌─ stock (a table: compacted)
//	       ├─ event-time order ─ stock, velocity ┼─ reorders
//	shipments ┘   (pending store)   (items store)  └─ price adjustments
func Topology(cfg Config) (*streams.Topology, error) {
	b := streams.NewBuilder()
	b.AddStore(streams.NewKeyValueStore[string, item](b, storeItems))
	b.AddStore(streams.NewKeyValueStore[[]byte, []byte](b, storePending))
	b.AddStore(streams.NewKeyValueStore[string, int64](b, storeMarks))
	md := newModel(cfg.Model)
	t := cfg.Topics
	streams.FromTopics[string, []byte](b, []string{t.Sales, t.Shipments}, streams.Named("sales-and-shipments")).
		Process(func() streams.Processor[string, []byte, string, Output] { return &orderer{cfg: cfg, md: md} },
			streams.ConnectStores(storeItems, storePending, storeMarks), streams.Named("event-time-model")).
		ToFunc(func(_ string, o Output) string {
			switch {
			case o.Reorder != nil:
				return t.Reorders
			case o.Price != nil:
				return t.Prices
			default:
				return t.Stock
			}
		}, streams.Named("outputs"))
	return b.Build()
}
