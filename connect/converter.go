package connect

// The built-in converters (json, string, bytes) and what they share. The
// JSON converter lives in converter_json*.go.
//
// A converter may be shared by the tasks of a connector: every built-in
// one is safe for concurrent use. The schemas converters return are shared
// between records (the JSON converter caches them): treat them as
// read-only and build a new Schema to change one.

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
)

// ErrConversion matches (errors.Is) every error a built-in converter
// returns for data it cannot convert. The runtime treats it as a record
// error (errors.tolerance, dead letter queue), not a task failure.
var ErrConversion = errors.New("connect: conversion failed")

// conversionError says which record part of which topic failed; it reads
// "connect: converting value of topic orders: ...".
type conversionError struct {
	what  string // "key" or "value"
	topic string
	err   error
}

func (e *conversionError) Error() string {
	return "connect: converting " + e.what + " of topic " + e.topic + ": " + e.err.Error()
}

func (e *conversionError) Unwrap() error        { return e.err }
func (e *conversionError) Is(target error) bool { return target == ErrConversion }

func convErr(isKey bool, topic string, err error) error {
	what := "value"
	if isKey {
		what = "key"
	}
	return &conversionError{what: what, topic: topic, err: err}
}

// The class names of the built-in converters, as Kafka Connect spells them.
const (
	JSONConverterClass      = "org.apache.kafka.connect.json.JsonConverter"
	StringConverterClass    = "org.apache.kafka.connect.storage.StringConverter"
	ByteArrayConverterClass = "org.apache.kafka.connect.converters.ByteArrayConverter"
)

func builtinConverters() []Plugin {
	return []Plugin{
		{
			Class:   JSONConverterClass,
			Aliases: []string{"JsonConverter", "json"},
			Type:    ConverterPlugin,
			Doc: "Writes keys or values as JSON, by default in Kafka Connect's envelope " +
				`{"schema":...,"payload":...}; with schemas.enable=false as plain JSON.`,
			Config:       jsonConverterConfig,
			NewConverter: newJSONConverter,
		},
		{
			Class:        StringConverterClass,
			Aliases:      []string{"StringConverter", "string"},
			Type:         ConverterPlugin,
			Doc:          "Writes keys or values as UTF-8 text and reads them back as strings.",
			Config:       stringConverterConfig,
			NewConverter: newStringConverter,
		},
		{
			Class:   ByteArrayConverterClass,
			Aliases: []string{"ByteArrayConverter", "bytes"},
			Type:    ConverterPlugin,
			Doc: "Passes bytes through unchanged. Strings are written as their UTF-8 bytes " +
				"(Kafka accepts only byte arrays); other values are an error.",
			NewConverter: newByteArrayConverter,
		},
	}
}

// parseConverterConfig checks cfg against def again, so a converter built
// from raw settings still gets its defaults.
func parseConverterConfig(class string, def *ConfigDef, cfg Config) (Config, error) {
	parsed, errs := def.Parse(cfg)
	if len(errs) == 0 {
		return parsed, nil
	}
	var all []error
	for _, e := range errs {
		all = append(all, e)
	}
	return nil, fmt.Errorf("connect: %s: %w", class, errors.Join(all...))
}

// Schemas returned by the string and bytes converters, as Kafka's
// Schema.OPTIONAL_STRING_SCHEMA and OPTIONAL_BYTES_SCHEMA. Read-only.
var (
	optionalStringSchema = &Schema{Type: String, Optional: true}
	optionalBytesSchema  = &Schema{Type: Bytes, Optional: true}
)

var stringConverterConfig = NewConfigDef(ConfigKey{
	Name:        "converter.encoding",
	Type:        TypeString,
	Default:     "UTF8",
	Doc:         "The character set of the bytes. Only UTF-8 (UTF8) is supported.",
	Importance:  High,
	Recommended: []string{"UTF8"},
	Check: func(v string) error {
		switch strings.ToUpper(strings.TrimSpace(v)) {
		case "UTF8", "UTF-8":
			return nil
		}
		return fmt.Errorf("only UTF-8 is supported")
	},
})

// stringConverter is Kafka's StringConverter: text in, text out. Values
// that are not strings are written as their text: []byte as is, a
// fmt.Stringer by its String method, anything else as JSON (numbers,
// booleans, maps, slices).
type stringConverter struct{ isKey bool }

func newStringConverter(cfg Config, isKey bool) (Converter, error) {
	if _, err := parseConverterConfig(StringConverterClass, stringConverterConfig, cfg); err != nil {
		return nil, err
	}
	return stringConverter{isKey: isKey}, nil
}

func (c stringConverter) FromConnect(topic string, _ *Schema, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case string:
		return []byte(x), nil
	case []byte:
		return x, nil
	case fmt.Stringer:
		return []byte(x.String()), nil
	}
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.String {
		return []byte(rv.String()), nil
	}
	b, err := encodeJSON(v)
	if err != nil {
		return nil, convErr(c.isKey, topic, err)
	}
	return b, nil
}

// ToConnect returns the text as a string with an optional string schema,
// as Kafka does. The bytes are not checked for valid UTF-8.
func (c stringConverter) ToConnect(_ string, data []byte) (*Schema, any, error) {
	if data == nil {
		return optionalStringSchema, nil, nil
	}
	return optionalStringSchema, string(data), nil
}

// byteArrayConverter is Kafka's ByteArrayConverter: bytes pass through
// without a copy. It also writes a string as its bytes, which Kafka
// rejects: a Go source has no reason to convert first, and the bytes
// read back are the same either way.
type byteArrayConverter struct{ isKey bool }

func newByteArrayConverter(_ Config, isKey bool) (Converter, error) {
	return byteArrayConverter{isKey: isKey}, nil
}

func (c byteArrayConverter) FromConnect(topic string, schema *Schema, v any) ([]byte, error) {
	if schema != nil && schema.Type != Bytes && schema.Type != String {
		return nil, convErr(c.isKey, topic, fmt.Errorf("Invalid schema type for ByteArrayConverter: %s", schema.Type))
	}
	switch x := v.(type) {
	case nil:
		return nil, nil
	case []byte:
		return x, nil
	case string:
		return []byte(x), nil
	}
	return nil, convErr(c.isKey, topic, fmt.Errorf("ByteArrayConverter is not compatible with objects of type %s", typeName(v)))
}

func (c byteArrayConverter) ToConnect(_ string, data []byte) (*Schema, any, error) {
	if data == nil {
		return optionalBytesSchema, nil, nil
	}
	return optionalBytesSchema, data, nil
}

// typeName names the Go type of v for error messages.
func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case []byte:
		return "[]byte"
	case map[string]any:
		return "map[string]any"
	case []any:
		return "[]any"
	}
	return fmt.Sprintf("%T", v)
}
