// Package transforms holds Connect's built-in single message transforms
// (SMTs) and predicates: the ones of Kafka Connect, under Kafka's class
// names, so that connector configs written for Kafka work unchanged.
// Register adds them to a connect.Registry; connect.NewTransformChain
// builds a connector's chain from its transforms.* and predicates.* keys.
//
// Transforms, each org.apache.kafka.connect.transforms.<name> (the short
// name is an alias):
//
//	InsertField$Key, InsertField$Value    topic.field, partition.field, offset.field, timestamp.field,
//	                                      static.field + static.value ("name!" required, "name?" optional)
//	ReplaceField$Key, ReplaceField$Value  include, exclude, renames (old:new,...)
//	MaskField$Key, MaskField$Value        fields, replacement
//	Cast$Key, Cast$Value                  spec (field:type,... or one type for the whole key or value)
//	ExtractField$Key, ExtractField$Value  field, field.syntax.version (V2: a.b.c)
//	ValueToKey                            fields
//	RegexRouter                           regex, replacement (Java's $1 syntax)
//	TimestampRouter                       topic.format, timestamp.format (SimpleDateFormat letters)
//	Filter                                drops every record it applies to (use with a predicate)
//
// Predicates, each org.apache.kafka.connect.transforms.predicates.<name>:
// TopicNameMatches (pattern), HasHeaderKey (name), RecordIsTombstone.
//
// # Values
//
// A transform works on the record's key ($Key) or value ($Value), which
// follow connect.Record's representation. Without a schema, the field
// transforms need a map[string]any; with one, a struct schema and a
// map[string]any holding each of its fields, and they build the new
// schema too (once per input schema: schemas are read-only once a record
// carries them, and each transform keeps the last 16 it built). A nil
// value — a tombstone — passes through every field transform unchanged,
// except ValueToKey, which has no fields to take.
//
// Transforms change the record in place but never a map it holds: they
// build a new top-level map (nested maps are shared), since the source
// connector may still hold the old one.
//
// A value a transform cannot handle is an error matching ErrData, worded
// as Kafka's ("Only Map objects supported in absence of schema for [field
// insertion], found: string"); the chain adds the transform's alias and
// class, and the runtime's error policy decides whether the record is
// skipped (and dead-lettered) or fails the task. Transforms never panic on
// a record.
//
// # Differences from Kafka
//
// Regular expressions are Go's (RE2): most Java patterns read the same,
// but lookarounds and backreferences are refused when the config is
// checked. TimestampRouter knows the pattern letters y M d H h m s S D E
// a, always in UTC, and refuses others. Logical types (Timestamp, Date,
// Decimal) keep their underlying Go values: Cast treats them as the
// integers or bytes they are. InsertField's offset.field inserts
// Record.Offset for source records too (Kafka refuses them), and its
// timestamp is milliseconds since the epoch, with Kafka's Timestamp
// logical schema when the value has a schema.
//
// Every transform and predicate is safe for concurrent use.
package transforms
