package connect

import (
	"fmt"
	"strings"
)

// The runtime's connector keys, with Kafka Connect's names.
const (
	KeyName           = "name"
	KeyConnectorClass = "connector.class"
	KeyTasksMax       = "tasks.max"
	KeyKeyConverter   = "key.converter"
	KeyValueConverter = "value.converter"
	KeyTopics         = "topics"
	KeyTopicsRegex    = "topics.regex"
	KeyTransforms     = "transforms"
	KeyPredicates     = "predicates"

	KeyErrorsTolerance     = "errors.tolerance"
	KeyErrorsRetryTimeout  = "errors.retry.timeout"
	KeyErrorsRetryDelayMax = "errors.retry.delay.max.ms"
	KeyErrorsLogEnable     = "errors.log.enable"
	KeyDLQTopic            = "errors.deadletterqueue.topic.name"
	KeyDLQReplication      = "errors.deadletterqueue.topic.replication.factor"
	KeyDLQContextHeaders   = "errors.deadletterqueue.context.headers.enable"

	// Runnel's own: Kafka Connect leaves restarting failed tasks to the
	// operator (or to Strimzi's autoRestart); Runnel does it itself when
	// asked.
	KeyAutoRestart           = "auto.restart.enable"
	KeyAutoRestartBackoff    = "auto.restart.backoff.initial.ms"
	KeyAutoRestartBackoffMax = "auto.restart.backoff.max.ms"
)

// connectorDef holds the keys every connector config has; a plugin's own
// keys are added to it.
var connectorDef = NewConfigDef(
	ConfigKey{Name: KeyName, Type: TypeString, Required: true, Importance: High, Group: "Common", DisplayName: "Connector name",
		Doc: "Globally unique name to use for this connector.", Check: checkConnectorName},
	ConfigKey{Name: KeyConnectorClass, Type: TypeString, Required: true, Importance: High, Group: "Common", DisplayName: "Connector class",
		Doc: "Name or alias of the connector plugin (GET /connector-plugins lists them)."},
	ConfigKey{Name: KeyTasksMax, Type: TypeInt, Default: "1", Importance: High, Group: "Common", DisplayName: "Tasks max",
		Doc: "Maximum number of tasks to use for this connector.", Check: AtLeast(1)},
	ConfigKey{Name: KeyKeyConverter, Type: TypeClass, Importance: Low, Group: "Common", DisplayName: "Key converter class",
		Doc: "Converter for record keys; empty uses the worker's key.converter."},
	ConfigKey{Name: KeyValueConverter, Type: TypeClass, Importance: Low, Group: "Common", DisplayName: "Value converter class",
		Doc: "Converter for record values; empty uses the worker's value.converter."},
	ConfigKey{Name: KeyTransforms, Type: TypeList, Importance: Low, Group: "Transforms", DisplayName: "Transforms",
		Doc: "Aliases of the transformations to apply to records, in order."},
	ConfigKey{Name: KeyPredicates, Type: TypeList, Importance: Low, Group: "Predicates", DisplayName: "Predicates",
		Doc: "Aliases of the predicates used by the transformations."},
	ConfigKey{Name: KeyErrorsTolerance, Type: TypeString, Default: "none", Importance: Medium, Group: "Error Handling", DisplayName: "Error tolerance",
		Doc:   "none: an error in conversion or a transform fails the task; all: the record is skipped (and sent to the dead letter queue of a sink, if one is set).",
		Check: OneOf("none", "all"), Recommended: []string{"none", "all"}},
	ConfigKey{Name: KeyErrorsRetryTimeout, Type: TypeLong, Default: "0", Importance: Medium, Group: "Error Handling", DisplayName: "Retry timeout for errors",
		Doc: "How long to retry an operation that failed with a retriable error, in ms; -1 retries forever, 0 not at all.", Check: AtLeast(-1)},
	ConfigKey{Name: KeyErrorsRetryDelayMax, Type: TypeLong, Default: "60000", Importance: Medium, Group: "Error Handling", DisplayName: "Maximum delay between retries for errors",
		Doc: "The longest wait between two retries, in ms (waits double from 300 ms).", Check: AtLeast(1)},
	ConfigKey{Name: KeyErrorsLogEnable, Type: TypeBoolean, Default: "false", Importance: Medium, Group: "Error Handling", DisplayName: "Log errors",
		Doc: "Log each tolerated error with the record's topic, partition and offset."},
	ConfigKey{Name: KeyAutoRestart, Type: TypeBoolean, Default: "false", Importance: Medium, Group: "Error Handling", DisplayName: "Restart failed tasks",
		Doc: "Restart a failed connector task by itself, after a backoff that doubles with each failure in a row."},
	ConfigKey{Name: KeyAutoRestartBackoff, Type: TypeLong, Default: "1000", Importance: Low, Group: "Error Handling", DisplayName: "First restart backoff",
		Doc: "The wait before the first automatic restart of a failed task, in ms.", Check: AtLeast(1)},
	ConfigKey{Name: KeyAutoRestartBackoffMax, Type: TypeLong, Default: "300000", Importance: Low, Group: "Error Handling", DisplayName: "Longest restart backoff",
		Doc: "The longest wait between automatic restarts of a failed task, in ms.", Check: AtLeast(1)},
)

// sinkDef adds the keys of sink connectors.
var sinkDef = NewConfigDef(
	ConfigKey{Name: KeyTopics, Type: TypeList, Importance: High, Group: "Common", DisplayName: "Topics",
		Doc: "The topics to consume from; set this or topics.regex."},
	ConfigKey{Name: KeyTopicsRegex, Type: TypeString, Importance: High, Group: "Common", DisplayName: "Topics regex",
		Doc: "A regular expression (RE2) for the topics to consume from; set this or topics.", Check: func(v string) error {
			if v == "" {
				return nil
			}
			return ValidRegexp(v)
		}},
	ConfigKey{Name: KeyDLQTopic, Type: TypeString, Importance: Medium, Group: "Error Handling", DisplayName: "Dead letter queue topic name",
		Doc: "The topic that records failing conversion or transforms go to when errors.tolerance is all; empty: none."},
	ConfigKey{Name: KeyDLQReplication, Type: TypeInt, Default: "-1", Importance: Low, Group: "Error Handling", DisplayName: "Dead letter queue topic replication factor",
		Doc: "Replication factor of the dead letter queue topic when it is created; -1 takes the broker's default."},
	ConfigKey{Name: KeyDLQContextHeaders, Type: TypeBoolean, Default: "false", Importance: Low, Group: "Error Handling", DisplayName: "Enable error context headers",
		Doc: "Add headers (__connect.errors.*) that say where a dead-lettered record came from and why it failed."},
)

// checkSinkTopics checks the rule that spans sink keys: exactly one of
// topics and topics.regex.
func checkSinkTopics(cfg Config) []KeyError {
	topics, regex := cfg.List(KeyTopics), strings.TrimSpace(cfg[KeyTopicsRegex])
	switch {
	case len(topics) == 0 && regex == "":
		return []KeyError{{KeyTopics, "Must configure one of topics or topics.regex"}}
	case len(topics) > 0 && regex != "":
		return []KeyError{{KeyTopics, "topics and topics.regex are mutually exclusive options, but both are set."}}
	}
	if dlq := strings.TrimSpace(cfg[KeyDLQTopic]); dlq != "" {
		for _, t := range topics {
			if t == dlq {
				return []KeyError{{KeyDLQTopic, fmt.Sprintf("The DLQ topic '%s' may not be included in the list of topics ('topics=%s') consumed by the connector", dlq, cfg[KeyTopics])}}
			}
		}
	}
	return nil
}

func checkConnectorName(v string) error {
	if strings.TrimSpace(v) == "" {
		return fmt.Errorf("connector name must not be empty")
	}
	for _, r := range v {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("connector name must not contain control characters")
		}
	}
	return nil
}
