package connect

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
)

// SourceTask reads records from an outside system. The runtime calls
// Start once, then Poll in a loop from one goroutine, then Stop (also from
// another goroutine, to interrupt a blocked Poll: it should make Poll
// return soon).
type SourceTask interface {
	// Start prepares the task with its (validated) config. Where it
	// resumes comes from tc.Offset.
	Start(ctx context.Context, cfg Config, tc SourceTaskContext) error
	// Poll returns the next records, blocking until there are some or ctx
	// is done (then it returns nil, nil or ctx's error). A RetriableError
	// is retried with backoff; any other error fails the task.
	Poll(ctx context.Context) ([]Record, error)
	// Stop releases what Start took.
	Stop() error
}

// RecordAcker is implemented by source tasks that want to know when each
// record is stored (the HTTP source answers its client then). Ack is
// called once per polled record: err is nil once the broker acknowledged
// it, or why it was dropped (a transform filtered it: ErrFiltered) or
// failed. Ack may be called from another goroutine than Poll.
type RecordAcker interface {
	Ack(r *Record, err error)
}

// ErrFiltered is passed to RecordAcker.Ack for a record that a transform
// or errors.tolerance=all dropped: it is done with, not stored.
var ErrFiltered = errors.New("connect: record dropped by a transform or the error policy")

// SourceTaskContext is what a source task can ask of the runtime.
type SourceTaskContext interface {
	// Offset returns the last stored offset of a source partition, or nil
	// if there is none.
	Offset(partition map[string]any) (map[string]any, error)
	// Logger logs with the connector and task as attributes.
	Logger() *slog.Logger
}

// SinkTask writes records to an outside system. The runtime calls Start,
// then Put for each batch read from the topics and Flush before it commits
// consumer offsets, then Stop; all from one goroutine.
type SinkTask interface {
	Start(ctx context.Context, cfg Config, tc SinkTaskContext) error
	// Put hands over a batch. The task may write it at once or buffer it
	// until Flush. A RetriableError is retried (the same batch again) with
	// backoff; any other error fails the task.
	Put(ctx context.Context, records []Record) error
	// Flush makes every record put so far durable. The runtime then
	// commits the offsets after them.
	Flush(ctx context.Context) error
	Stop() error
}

// OffsetStorer is implemented by sink tasks that store consumer offsets
// with the data, in the same transaction (exactly-once sinks). When
// partitions are assigned, the runtime asks for their stored offsets and
// starts reading there, whatever the group has committed.
type OffsetStorer interface {
	// StoredOffsets returns the next offset to read of each partition the
	// sink has stored; partitions it knows nothing of are left out.
	StoredOffsets(ctx context.Context, partitions []TopicPartition) (map[TopicPartition]int64, error)
}

// SinkTaskContext is what a sink task can ask of the runtime.
type SinkTaskContext interface {
	Logger() *slog.Logger
}

// Transformation changes one record in place (a single message
// transform). It returns false to drop the record.
type Transformation interface {
	Apply(r *Record) (keep bool, err error)
}

// Predicate decides whether a transform applies to a record.
type Predicate interface {
	Test(r *Record) bool
}

// Converter turns record keys or values into bytes and back.
type Converter interface {
	// FromConnect encodes a key or value for topic.
	FromConnect(topic string, schema *Schema, v any) ([]byte, error)
	// ToConnect decodes bytes read from topic; nil data is a null
	// (tombstone) and decodes to a nil value.
	ToConnect(topic string, data []byte) (*Schema, any, error)
}

// RetriableError marks an error worth retrying: the runtime retries the
// operation with backoff (errors.retry.timeout) instead of failing.
type RetriableError struct{ Err error }

func (e *RetriableError) Error() string { return e.Err.Error() }
func (e *RetriableError) Unwrap() error { return e.Err }

// Retriable wraps err as a RetriableError (nil stays nil).
func Retriable(err error) error {
	if err == nil {
		return nil
	}
	return &RetriableError{Err: err}
}

// PluginType says what a plugin is.
type PluginType string

// The plugin types, as GET /connector-plugins names them.
const (
	SourcePlugin         PluginType = "source"
	SinkPlugin           PluginType = "sink"
	TransformationPlugin PluginType = "transformation"
	PredicatePlugin      PluginType = "predicate"
	ConverterPlugin      PluginType = "converter"
)

// Plugin is a connector, transform, predicate or converter that configs
// name by Class (or one of its Aliases) and the runtime builds. Exactly the
// constructor of its Type is set.
type Plugin struct {
	Class   string
	Aliases []string
	Type    PluginType
	Version string
	Doc     string
	// Config defines the plugin's own keys (not the runtime's: name,
	// connector.class, tasks.max, transforms ...).
	Config *ConfigDef
	// Validate checks rules that span keys, after each key passed its own
	// checks. Optional.
	Validate func(cfg Config) []KeyError

	// TaskConfigs splits a connector's config into at most maxTasks task
	// configs. Nil runs one task with the connector's config.
	TaskConfigs func(cfg Config, maxTasks int) ([]Config, error)
	// NewSourceTask and NewSinkTask build one task of a connector.
	NewSourceTask func() SourceTask
	NewSinkTask   func() SinkTask

	NewTransformation func(cfg Config) (Transformation, error)
	NewPredicate      func(cfg Config) (Predicate, error)
	NewConverter      func(cfg Config, isKey bool) (Converter, error)
}

// Registry holds the plugins a worker can build. Registration is explicit:
// nothing registers itself (connect/connectors.RegisterBuiltins adds the
// built-in ones).
type Registry struct {
	byName  map[string]*Plugin
	plugins []*Plugin
}

// NewRegistry returns a registry holding the converters every worker has:
// json, string and bytes (ByteArray).
func NewRegistry() *Registry {
	r := &Registry{byName: map[string]*Plugin{}}
	for _, p := range builtinConverters() {
		r.MustRegister(p)
	}
	return r
}

// ErrUnknownPlugin is returned for a class that no plugin registered.
var ErrUnknownPlugin = errors.New("connect: unknown plugin class")

// Register adds a plugin. Its class and aliases must be new.
func (r *Registry) Register(p Plugin) error {
	if p.Class == "" {
		return errors.New("connect: a plugin needs a Class")
	}
	ctors := map[PluginType]bool{
		SourcePlugin:         p.NewSourceTask != nil,
		SinkPlugin:           p.NewSinkTask != nil,
		TransformationPlugin: p.NewTransformation != nil,
		PredicatePlugin:      p.NewPredicate != nil,
		ConverterPlugin:      p.NewConverter != nil,
	}
	set, ok := ctors[p.Type]
	if !ok {
		return fmt.Errorf("connect: plugin %s: unknown type %q", p.Class, p.Type)
	}
	n := 0
	for _, s := range ctors {
		if s {
			n++
		}
	}
	if !set || n != 1 {
		return fmt.Errorf("connect: plugin %s of type %s must set exactly its own constructor", p.Class, p.Type)
	}
	if p.Config == nil {
		p.Config = NewConfigDef()
	}
	for _, name := range append([]string{p.Class}, p.Aliases...) {
		if _, dup := r.byName[name]; dup {
			return fmt.Errorf("connect: plugin name %s is registered twice", name)
		}
	}
	pp := &p
	for _, name := range append([]string{p.Class}, p.Aliases...) {
		r.byName[name] = pp
	}
	r.plugins = append(r.plugins, pp)
	return nil
}

// MustRegister is Register for registrations that cannot fail but by a
// programming error.
func (r *Registry) MustRegister(p Plugin) {
	if err := r.Register(p); err != nil {
		panic(err)
	}
}

// Lookup finds a plugin by class or alias.
func (r *Registry) Lookup(class string) (*Plugin, error) {
	if p, ok := r.byName[class]; ok {
		return p, nil
	}
	var names []string
	for _, p := range r.plugins {
		names = append(names, p.Class)
	}
	sort.Strings(names)
	return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknownPlugin, class, strings.Join(names, ", "))
}

// Plugins lists the registered plugins, sorted by class.
func (r *Registry) Plugins() []*Plugin {
	out := append([]*Plugin(nil), r.plugins...)
	sort.Slice(out, func(i, j int) bool { return out[i].Class < out[j].Class })
	return out
}
