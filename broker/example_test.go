package broker_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/broker"
)

// Embed a broker, create a topic, and make a produce/consume round trip with
// franz-go, as any Kafka client would.
func Example() {
	dir, err := os.MkdirTemp("", "runnel-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)

	b, err := broker.New(broker.Config{Settings: map[string]string{
		"log.dirs":             dir,
		"listeners":            "PLAINTEXT://127.0.0.1:0", // any free port; b.Addr() tells which
		"runnel.http.listener": "",                        // no metrics endpoint
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- b.Run(ctx) }()
	defer func() {
		b.Close()
		<-stopped
	}()

	cl, err := kgo.NewClient(
		kgo.SeedBrokers(b.Addr()),
		kgo.DefaultProduceTopic("greetings"),
		kgo.ConsumeTopics("greetings"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cl.Close()

	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "greetings"); err != nil {
		fmt.Println("create topic:", err)
		return
	}
	r := &kgo.Record{Key: []byte("greeting"), Value: []byte("hello, runnel")}
	if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
		fmt.Println("produce:", err)
		return
	}
	fmt.Printf("produced to %s/%d at offset %d\n", r.Topic, r.Partition, r.Offset)

	fetches := cl.PollFetches(ctx)
	if err := fetches.Err(); err != nil {
		fmt.Println("consume:", err)
		return
	}
	fetches.EachRecord(func(r *kgo.Record) {
		fmt.Printf("consumed %s=%s from offset %d\n", r.Key, r.Value, r.Offset)
	})
	// Output:
	// produced to greetings/0 at offset 0
	// consumed greeting=hello, runnel from offset 0
}

// Settings come from a YAML (or .properties) file with Kafka's key names;
// nested YAML maps are joined with dots.
func ExampleLoadConfigFile() {
	dir, err := os.MkdirTemp("", "runnel-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "broker.yaml")
	err = os.WriteFile(path, []byte(`
num.partitions: 3
auto.create.topics.enable: false
log:
  retention:
    hours: 24
`), 0o644)
	if err != nil {
		fmt.Println(err)
		return
	}

	settings, err := broker.LoadConfigFile(path)
	if err != nil {
		fmt.Println(err)
		return
	}
	var keys []string
	for k := range settings {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Printf("%s=%s\n", k, settings[k])
	}
	// Output:
	// auto.create.topics.enable=false
	// log.retention.hours=24
	// num.partitions=3
}
