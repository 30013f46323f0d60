package connect

// Kafka's JsonConverter: the converter, its config and its schema caches.
// Encoding is in converter_json_encode.go, decoding in
// converter_json_decode.go.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
)

var jsonConverterConfig = NewConfigDef(
	ConfigKey{
		Name:       "schemas.enable",
		Type:       TypeBoolean,
		Default:    "true",
		Doc:        `Include schemas within each of the serialized values and keys: {"schema":...,"payload":...}. When false, the data is plain JSON and reads back without a schema.`,
		Importance: High,
	},
	ConfigKey{
		Name:       "schemas.cache.size",
		Type:       TypeInt,
		Default:    "1000",
		Doc:        "The maximum number of schemas that can be cached in this converter instance, in each direction. 0 disables the caches.",
		Importance: High,
		Check:      AtLeast(0),
	},
	ConfigKey{
		Name:       "replace.null.with.default",
		Type:       TypeBoolean,
		Default:    "true",
		Doc:        "Whether to replace fields that have a default value and that are null to the default value. When set to true, the default value is used, otherwise null is used.",
		Importance: Low,
	},
	ConfigKey{
		Name:        "decimal.format",
		Type:        TypeString,
		Default:     "BASE64",
		Doc:         "How Decimal values are written. Only BASE64 is supported: a Decimal is written as its bytes in base64, as Kafka's default.",
		Importance:  Low,
		Recommended: []string{"BASE64"},
		Check: func(v string) error {
			if err := OneOf("BASE64", "NUMERIC")(v); err != nil {
				return err
			}
			if !strings.EqualFold(strings.TrimSpace(v), "BASE64") {
				return errors.New("NUMERIC is not supported: Decimal values are written as base64 bytes")
			}
			return nil
		},
	},
)

// jsonConverter is Kafka's JsonConverter. With schemas.enable (the
// default) it writes {"schema":S,"payload":P} where S is the schema in
// Kafka's JSON schema format, and requires that envelope to read; without,
// it writes and reads plain JSON. It is safe for concurrent use.
//
// Values follow Record's representation: every integer type is an int64,
// both float types a float64, bytes a []byte (base64 in JSON), a struct a
// map[string]any holding each of its fields. Read without a schema,
// integers become int64 (float64 beyond int64's range), other numbers
// float64, objects map[string]any and arrays []any.
//
// A nil value is written as nil data (a tombstone) whatever the schema —
// Kafka writes an envelope with a null payload when there is a schema —
// and nil or empty data reads as a nil value with no schema.
type jsonConverter struct {
	isKey       bool
	schemas     bool
	replaceNull bool

	// Encoded schemas by schema pointer, and parsed schemas by their JSON
	// text. Schemas are read-only once used, so a pointer names one.
	encoded boundedCache[*Schema, []byte]
	parsed  boundedCache[string, *Schema]
}

func newJSONConverter(cfg Config, isKey bool) (Converter, error) {
	cfg, err := parseConverterConfig(JSONConverterClass, jsonConverterConfig, cfg)
	if err != nil {
		return nil, err
	}
	size := cfg.Int("schemas.cache.size")
	return &jsonConverter{
		isKey:       isKey,
		schemas:     cfg.Bool("schemas.enable"),
		replaceNull: cfg.Bool("replace.null.with.default"),
		encoded:     boundedCache[*Schema, []byte]{size: size},
		parsed:      boundedCache[string, *Schema]{size: size},
	}, nil
}

func (c *jsonConverter) FromConnect(topic string, schema *Schema, v any) ([]byte, error) {
	if v == nil {
		return nil, nil
	}
	e := getEncoder(c.replaceNull)
	defer putEncoder(e)
	var err error
	if c.schemas {
		e.buf = append(e.buf, `{"schema":`...)
		if schema == nil {
			e.buf = append(e.buf, "null"...)
		} else {
			var sj []byte
			if sj, err = c.schemaJSON(schema); err != nil {
				return nil, convErr(c.isKey, topic, err)
			}
			e.buf = append(e.buf, sj...)
		}
		e.buf = append(e.buf, `,"payload":`...)
	}
	if schema == nil {
		err = e.plain(v)
	} else {
		err = e.typed(schema, v)
	}
	if err != nil {
		return nil, convErr(c.isKey, topic, err)
	}
	if c.schemas {
		e.buf = append(e.buf, '}')
	}
	return bytes.Clone(e.buf), nil
}

// schemaJSON returns the schema in Kafka's JSON format, from the cache
// when it can.
func (c *jsonConverter) schemaJSON(s *Schema) ([]byte, error) {
	if b, ok := c.encoded.get(s); ok {
		return b, nil
	}
	e := getEncoder(c.replaceNull)
	defer putEncoder(e)
	if err := e.schema(s, "", false); err != nil {
		return nil, err
	}
	b := bytes.Clone(e.buf)
	c.encoded.put(s, b)
	return b, nil
}

// errNoEnvelope is Kafka's message for plain JSON read with schemas.enable.
var errNoEnvelope = errors.New(`JsonConverter with schemas.enable requires "schema" and "payload" fields and may not contain additional fields. ` +
	"If you are trying to deserialize plain JSON data, set schemas.enable=false in your converter configuration.")

func (c *jsonConverter) ToConnect(topic string, data []byte) (*Schema, any, error) {
	if isJSONSpace(data) {
		return nil, nil, nil
	}
	if !c.schemas {
		node, err := decodeJSON(data)
		if err != nil {
			return nil, nil, convErr(c.isKey, topic, err)
		}
		v, err := plainValue(node)
		if err != nil {
			return nil, nil, convErr(c.isKey, topic, err)
		}
		return nil, v, nil
	}

	var env map[string]json.RawMessage
	if err := json.Unmarshal(data, &env); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			return nil, nil, convErr(c.isKey, topic, serializationError(err))
		}
		return nil, nil, convErr(c.isKey, topic, errNoEnvelope)
	}
	rawSchema, rawPayload := env["schema"], env["payload"]
	if len(env) != 2 || rawSchema == nil || rawPayload == nil {
		return nil, nil, convErr(c.isKey, topic, errNoEnvelope)
	}
	schema, err := c.schemaOf(rawSchema)
	if err != nil {
		return nil, nil, convErr(c.isKey, topic, err)
	}
	node, err := decodeJSON(rawPayload)
	if err != nil {
		return nil, nil, convErr(c.isKey, topic, err)
	}
	var v any
	if schema == nil {
		v, err = plainValue(node)
	} else {
		v, err = (decoder{replaceNull: c.replaceNull}).typed(schema, node)
	}
	if err != nil {
		return nil, nil, convErr(c.isKey, topic, err)
	}
	return schema, v, nil
}

// schemaOf parses an envelope's schema, from the cache when it can.
func (c *jsonConverter) schemaOf(raw []byte) (*Schema, error) {
	if c.parsed.size > 0 {
		c.parsed.mu.Lock()
		s, ok := c.parsed.m[string(raw)] // no allocation for the lookup
		c.parsed.mu.Unlock()
		if ok {
			return s, nil
		}
	}
	node, err := decodeJSON(raw)
	if err != nil {
		return nil, err
	}
	s, err := (decoder{replaceNull: c.replaceNull}).schema(node)
	if err != nil {
		return nil, err
	}
	c.parsed.put(string(raw), s)
	return s, nil
}

func serializationError(err error) error {
	return fmt.Errorf("Converting byte[] to Kafka Connect data failed due to serialization error: %w", err)
}

// boundedCache is a map of at most size entries, safe for concurrent
// use. When full it forgets an arbitrary entry: the caches hold the few
// schemas a connector uses, so eviction order hardly matters.
type boundedCache[K comparable, V any] struct {
	size int
	mu   sync.Mutex
	m    map[K]V
}

func (c *boundedCache[K, V]) get(k K) (V, bool) {
	if c.size <= 0 {
		var zero V
		return zero, false
	}
	c.mu.Lock()
	v, ok := c.m[k]
	c.mu.Unlock()
	return v, ok
}

func (c *boundedCache[K, V]) put(k K, v V) {
	if c.size <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[K]V)
	}
	if _, ok := c.m[k]; !ok && len(c.m) >= c.size {
		for old := range c.m {
			delete(c.m, old)
			break
		}
	}
	c.m[k] = v
}
