package assign_test

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/streams/internal/assign"
)

func ExampleTask_String() {
	fmt.Println(assign.Task{Subtopology: 1, Partition: 3})
	// Output: 1_3
}

func ExampleNew() {
	b := assign.New(assign.Config{
		// Subtopology 0 joins orders with customers: co-partitioned.
		Subtopologies: [][]string{{"orders", "customers"}, {"clicks"}},
		Endpoint:      "10.0.0.7:8080",
		Standbys:      1,
		OnAssign: func(a assign.Assignment) {
			if a.Error != "" {
				fmt.Println("stop:", a.Error)
			}
		},
	})
	_ = []kgo.Opt{kgo.ConsumerGroup("app"), kgo.Balancers(b)} // the consumer's options
	fmt.Println(b.ProtocolName(), b.IsCooperative())
	// Output: runnel-streams true
}
