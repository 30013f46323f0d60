package transforms

// Register and the table of built-in plugins.

import (
	"fmt"

	"github.com/runnel-io/runnel/connect"
)

const (
	transformsPackage = "org.apache.kafka.connect.transforms."
	predicatesPackage = "org.apache.kafka.connect.transforms.predicates."
)

// Register adds the built-in transforms and predicates to r, under
// Kafka's class names and short aliases (InsertField$Value, RegexRouter,
// TopicNameMatches ...).
func Register(r *connect.Registry) error {
	for _, p := range plugins() {
		if err := r.Register(p); err != nil {
			return fmt.Errorf("transforms: %w", err)
		}
	}
	return nil
}

func plugins() []connect.Plugin {
	var out []connect.Plugin
	keyValue := func(name, doc string, def *connect.ConfigDef, build func(side) func(connect.Config) (connect.Transformation, error)) {
		for _, sv := range []struct {
			suffix, what string
			side         side
		}{{"$Key", "key", keySide}, {"$Value", "value", valueSide}} {
			out = append(out, connect.Plugin{
				Class:             transformsPackage + name + sv.suffix,
				Aliases:           []string{name + sv.suffix},
				Type:              connect.TransformationPlugin,
				Doc:               doc + " This one works on the record " + sv.what + ".",
				Config:            def,
				NewTransformation: build(sv.side),
			})
		}
	}
	keyValue("InsertField", "Insert field(s) using attributes from the record metadata or a configured static value.",
		insertFieldConfig, newInsertField)
	keyValue("ReplaceField", "Filter or rename fields.", replaceFieldConfig, newReplaceField)
	keyValue("MaskField", "Mask specified fields with a valid null value for the field type (i.e. 0, false, empty string, and so on). "+
		"For numeric and string fields, an optional replacement value can be specified that is converted to the correct type.",
		maskFieldConfig, newMaskField)
	keyValue("Cast", "Cast fields or the entire key or value to a specific type, e.g. to force an integer field to a smaller width. "+
		"Cast from integers, floats, boolean and string to any other type, and cast binary to string (base64 encoded).",
		castConfig, newCast)
	keyValue("ExtractField", "Extract the specified field from a Struct when schema present, or a Map in the case of schemaless data. "+
		"Any null values are passed through unmodified.", extractFieldConfig, newExtractField)

	transform := func(name, doc string, def *connect.ConfigDef, build func(connect.Config) (connect.Transformation, error)) {
		out = append(out, connect.Plugin{
			Class: transformsPackage + name, Aliases: []string{name}, Type: connect.TransformationPlugin,
			Doc: doc, Config: def, NewTransformation: build,
		})
	}
	transform("ValueToKey", "Replace the record key with a new key formed from a subset of fields in the record value.",
		valueToKeyConfig, newValueToKey)
	transform("RegexRouter", "Update the record topic using the configured regular expression and replacement string. "+
		"If the pattern matches the whole topic, the replacement gives the new topic.", regexRouterConfig, newRegexRouter)
	transform("TimestampRouter", "Update the record's topic field as a function of the original topic value and the record timestamp. "+
		"This is mainly useful for sink connectors, since the topic field is often used to determine the equivalent entity name "+
		"in the destination system (e.g. database table or search index name).", timestampRouterConfig, newTimestampRouter)
	transform("Filter", "Drops all records, filtering them from subsequent transformations in the chain. This is intended to be used "+
		"conditionally to filter out records matching (or not matching) a particular Predicate.", nil, newFilter)

	predicate := func(name, doc string, def *connect.ConfigDef, build func(connect.Config) (connect.Predicate, error)) {
		out = append(out, connect.Plugin{
			Class: predicatesPackage + name, Aliases: []string{name}, Type: connect.PredicatePlugin,
			Doc: doc, Config: def, NewPredicate: build,
		})
	}
	predicate("TopicNameMatches", "A predicate which is true for records with a topic name that matches the configured regular expression.",
		topicNameMatchesConfig, newTopicNameMatches)
	predicate("HasHeaderKey", "A predicate which is true for records with at least one header with the configured name.",
		hasHeaderKeyConfig, newHasHeaderKey)
	predicate("RecordIsTombstone", "A predicate which is true for records which are tombstones (i.e. have null value).",
		nil, newRecordIsTombstone)
	return out
}
