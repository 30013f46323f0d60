package transforms_test

import (
	"fmt"

	"github.com/runnel-io/runnel/connect"
	"github.com/runnel-io/runnel/connect/transforms"
)

// Register the built-in transforms, then build a connector's chain: keep
// two fields of each order, mask the card number, and key the record by
// its id.
func ExampleRegister() {
	reg := connect.NewRegistry()
	if err := transforms.Register(reg); err != nil {
		panic(err)
	}
	chain, errs := connect.NewTransformChain(reg, connect.Config{
		"transforms":              "keep,mask,key,id",
		"transforms.keep.type":    "org.apache.kafka.connect.transforms.ReplaceField$Value",
		"transforms.keep.include": "id,card",
		"transforms.mask.type":    "org.apache.kafka.connect.transforms.MaskField$Value",
		"transforms.mask.fields":  "card",
		"transforms.key.type":     "org.apache.kafka.connect.transforms.ValueToKey",
		"transforms.key.fields":   "id",
		"transforms.id.type":      "org.apache.kafka.connect.transforms.ExtractField$Key",
		"transforms.id.field":     "id",
	})
	if len(errs) > 0 {
		panic(fmt.Sprint(errs))
	}
	r := &connect.Record{Topic: "orders", Value: map[string]any{"id": int64(7), "card": "4111-1111", "note": "x"}}
	keep, err := chain.Apply(r)
	fmt.Println(keep, err)
	fmt.Println(r.Key, r.Value)
	// Output:
	// true <nil>
	// 7 map[card: id:7]
}
