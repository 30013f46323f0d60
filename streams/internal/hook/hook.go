// Package hook lets streamstest drive a topology's tasks without a broker:
// package streams sets Open when it is loaded, and streamstest, which
// imports streams, calls it. Nothing else uses it.
package hook

import "github.com/twmb/franz-go/pkg/kgo"

// Engine is one app instance's tasks, driven by hand.
type Engine interface {
	// Process runs one input record through the task of its partition,
	// opening the task first if needed.
	Process(r *kgo.Record) error
	// PunctuateWall runs the wall-clock punctuations due at Config.Now().
	PunctuateWall() error
	// Commit writes store changes to their changelogs (through Send) and
	// commits the state DB.
	Commit() error
	// Store returns the typed handle of a store in the task that owns
	// partition of it, opening the task if needed.
	Store(name string, partition int32) (any, error)
	// Stores lists the store names and the subtopology each belongs to.
	Stores() map[string]int
	// InputTopics lists every Kafka topic the topology reads, internal
	// ones with their application id prefix.
	InputTopics() []string
	// SubtopologyOf returns the subtopology that reads a Kafka topic.
	SubtopologyOf(topic string) (int, bool)
	// Partitions returns the partition count planned for an internal
	// topic (repartition or changelog), as an App would create it.
	Partitions(topic string) (int32, bool)
	Close() error
}

// Config is what the engine needs from its driver.
type Config struct {
	AppID       string
	Partitions  func(topic string) (int32, error)
	Now         func() int64
	Send        func(r *kgo.Record) error
	OnBadRecord any                 // a streams.BadRecordHandler, or nil for the default
	Dropped     func(reason string) // counts a dropped record; nil: not counted
}

// Open builds an Engine for a *streams.Topology; set by package streams.
var Open func(topology any, cfg Config) (Engine, error)
