package transforms

// Building the schemas of transformed values, and remembering them:
// records of a connector share a few schemas, so each transform builds the
// output schema of an input schema once.

import (
	"maps"
	"sync"

	"github.com/runnel-io/runnel/connect"
)

// schemaCacheSize bounds each transform's cache, as Kafka's LRU of 16.
const schemaCacheSize = 16

// schemaCache maps input schemas (by pointer: schemas are read-only once
// a record carries them) to the schemas a transform built from them. It
// is safe for concurrent use.
type schemaCache struct {
	mu sync.Mutex
	m  map[*connect.Schema]*connect.Schema
}

// get returns the schema built from in, building it on a miss.
func (c *schemaCache) get(in *connect.Schema, build func(*connect.Schema) (*connect.Schema, error)) (*connect.Schema, error) {
	c.mu.Lock()
	out, ok := c.m[in]
	c.mu.Unlock()
	if ok {
		return out, nil
	}
	out, err := build(in)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[*connect.Schema]*connect.Schema)
	}
	if len(c.m) >= schemaCacheSize {
		for k := range c.m { // forget any one
			delete(c.m, k)
			break
		}
	}
	c.m[in] = out
	return out, nil
}

// copySchemaBasics starts a schema of type t with the name, version, doc,
// parameters and optionality of s, as Kafka's SchemaUtil.copySchemaBasics
// (which leaves out optionality; a nil value of an optional schema stays
// valid here).
func copySchemaBasics(s *connect.Schema, t connect.SchemaType) *connect.Schema {
	return &connect.Schema{
		Type:       t,
		Optional:   s.Optional,
		Name:       s.Name,
		Version:    s.Version,
		Doc:        s.Doc,
		Parameters: maps.Clone(s.Parameters),
	}
}

// addField appends a field to a struct schema being built, refusing a
// name it already has, as Kafka's SchemaBuilder does.
func addField(s *connect.Schema, name string, fs *connect.Schema) error {
	if s.Field(name) != nil {
		return dataErrorf("Cannot create field because of field name duplication %s", name)
	}
	s.Fields = append(s.Fields, connect.Field{Name: name, Schema: fs})
	return nil
}

// topicCache remembers a result per topic name (a routed topic, a
// predicate's answer): connectors see few topics, and a map lookup is
// cheaper than a regular expression. It is safe for concurrent use.
type topicCache[V any] struct {
	mu sync.Mutex
	m  map[string]V
}

const topicCacheSize = 1024

func (c *topicCache[V]) get(topic string, compute func(string) V) V {
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.m[topic]; ok {
		return v
	}
	v := compute(topic)
	if c.m == nil || len(c.m) >= topicCacheSize {
		c.m = make(map[string]V)
	}
	c.m[topic] = v
	return v
}
