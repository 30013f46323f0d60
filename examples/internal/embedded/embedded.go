// Package embedded gives the examples a broker to talk to: the brokers
// the user named, or else a single-node Runnel broker started in-process
// on a free loopback port with its data in a temporary directory.
package embedded

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/broker"
)

// Brokers returns the seed brokers of the comma-separated list given, or
// starts an embedded broker when it is empty. stop closes what was
// started; call it when done.
func Brokers(list string) (seeds []string, stop func(), err error) {
	if list != "" {
		return strings.Split(list, ","), func() {}, nil
	}
	dir, err := os.MkdirTemp("", "runnel-example-")
	if err != nil {
		return nil, nil, err
	}
	b, err := broker.New(broker.Config{Settings: map[string]string{
		"log.dirs":                         dir,
		"listeners":                        "PLAINTEXT://127.0.0.1:0",
		"group.initial.rebalance.delay.ms": "0",
		"runnel.http.listener":             "", // no metrics endpoint: a fixed port would clash
	}})
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, fmt.Errorf("start the embedded broker: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- b.Run(context.Background()) }()
	return []string{b.Addr()}, func() {
		_ = b.Close()
		<-done
		os.RemoveAll(dir)
	}, nil
}

// CreateTopics creates topics with partitions each (replication factor
// the broker's default), leaving those that exist as they are.
func CreateTopics(ctx context.Context, seeds []string, partitions int32, topics ...string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return err
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).CreateTopics(ctx, partitions, -1, nil, topics...)
	if err != nil {
		return err
	}
	for _, r := range resp.Sorted() {
		if r.Err != nil && !errors.Is(r.Err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("create topic %s: %w", r.Topic, r.Err)
		}
	}
	return nil
}
