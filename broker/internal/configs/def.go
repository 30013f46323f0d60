package configs

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Type is a config's data type, numbered as Kafka's DescribeConfigs
// ConfigType (KIP-569). It is kmsg's type, so a DescribeConfigs handler
// copies it into the response unchanged.
type Type = kmsg.ConfigType

// The config types Runnel uses.
const (
	Boolean  = kmsg.ConfigTypeBoolean  // "true" or "false", any case
	String   = kmsg.ConfigTypeString   // any text, trimmed
	Int      = kmsg.ConfigTypeInt      // 32-bit signed integer
	Short    = kmsg.ConfigTypeShort    // 16-bit signed integer
	Long     = kmsg.ConfigTypeLong     // 64-bit signed integer
	Double   = kmsg.ConfigTypeDouble   // 64-bit float, finite
	List     = kmsg.ConfigTypeList     // comma-separated, items trimmed
	Class    = kmsg.ConfigTypeClass    // a Java class name; Runnel has none yet
	Password = kmsg.ConfigTypePassword // sensitive text, never trimmed or shown
)

// Sentinel errors. Every error this package returns wraps at least one of
// them; test with errors.Is.
var (
	// ErrUnknownConfig: a key that is not in the table for its resource.
	ErrUnknownConfig = errors.New("configs: unknown config")
	// ErrInvalidConfig: a value that does not parse or is out of range, a
	// conflict between keys, or a file that cannot be read.
	ErrInvalidConfig = errors.New("configs: invalid config")
	// ErrReadOnlyConfig: a broker key that cannot change at runtime. Errors
	// with it also wrap ErrInvalidConfig.
	ErrReadOnlyConfig = errors.New("configs: config cannot be changed dynamically")
	// ErrInvalidTopicName: see TopicNameError.
	ErrInvalidTopicName = errors.New("configs: invalid topic name")
)

// configError is an error whose message reads well on its own (it is sent
// to clients as an error message) and which wraps one or more sentinels.
type configError struct {
	msg   string
	kinds []error
}

func (e *configError) Error() string   { return e.msg }
func (e *configError) Unwrap() []error { return e.kinds }

func newError(kind error, format string, args ...any) error {
	return &configError{msg: fmt.Sprintf(format, args...), kinds: []error{kind}}
}

// Def is one row of the config table: everything Runnel knows about a key.
// Defs are shared; never modify one.
type Def struct {
	Name string
	Type Type
	// Default is the value used when no layer sets the key, as Kafka
	// would print it. HasDefault false means "no default" (Kafka's null):
	// the key is then unset, and for topic configs a broker synonym or a
	// later synonym supplies the value.
	Default    string
	HasDefault bool
	Doc        string
	// Valid describes the allowed values in Kafka's notation ("[1,...]",
	// "[delete, compact]"); empty when any value of Type is allowed.
	Valid string
	// Validate checks a value already normalized for Type (so it parses)
	// and returns an error that says what is allowed; nil allows any value
	// of Type.
	Validate func(v string) error
	// BrokerSynonyms, for a topic config, are the broker keys that supply
	// its default, in precedence order: retention.ms <- log.retention.ms,
	// log.retention.minutes, log.retention.hours. Empty for broker configs
	// and for topic configs without a broker-wide default.
	BrokerSynonyms []string
	// Dynamic, for a broker config, means it may be changed at runtime
	// with AlterConfigs / IncrementalAlterConfigs, per broker or as the
	// cluster-wide default. Kafka's rule: every topic default whose name
	// is first in its synonym list. All other broker keys are read-only.
	Dynamic   bool
	Sensitive bool

	isBroker bool // the row is in the broker table

	// toMs scales a broker synonym's value to its topic config's unit:
	// log.retention.hours is hours, retention.ms is milliseconds. 0 means 1.
	toMs int64
}

// ReadOnly reports whether DescribeConfigs marks the key read-only: broker
// keys that are not Dynamic. Topic configs can all be altered.
func (d *Def) ReadOnly() bool { return d.isBroker && !d.Dynamic }

// Normalize checks v against the key's type and range and returns the
// canonical form stored in metadata and shown by DescribeConfigs: trimmed,
// numbers in plain decimal, booleans lower case, list items trimmed and
// joined with ",". The error says what is allowed and wraps
// ErrInvalidConfig.
func (d *Def) Normalize(v string) (string, error) {
	n, reason := d.normalize(v)
	if reason != "" {
		if d.Sensitive {
			v = "[hidden]"
		}
		return "", newError(ErrInvalidConfig, "invalid value %q for config %s: %s", v, d.Name, reason)
	}
	return n, nil
}

// normalize returns the canonical value, or a reason it is not allowed.
func (d *Def) normalize(v string) (string, string) {
	if d.Type != Password {
		v = strings.TrimSpace(v)
	}
	var n string
	switch d.Type {
	case Boolean:
		switch strings.ToLower(v) {
		case "true", "false":
			n = strings.ToLower(v)
		default:
			return "", "must be true or false"
		}
	case Int, Short, Long:
		bits, what := 64, "a 64-bit integer"
		switch d.Type {
		case Int:
			bits, what = 32, "a 32-bit integer"
		case Short:
			bits, what = 16, "a 16-bit integer"
		}
		i, err := strconv.ParseInt(v, 10, bits)
		if err != nil {
			return "", "must be " + what
		}
		n = strconv.FormatInt(i, 10)
	case Double:
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return "", "must be a finite number"
		}
		n = formatDouble(f)
	case List:
		items := splitList(v)
		for _, it := range items {
			if it == "" {
				return "", "must be a comma-separated list without empty items"
			}
		}
		n = strings.Join(items, ",")
	default:
		n = v
	}
	if d.Validate != nil {
		if err := d.Validate(n); err != nil {
			return "", err.Error()
		}
	}
	return n, ""
}

// formatDouble prints like Java's Double.toString does for ordinary values,
// which is what Kafka shows: 0.5, 1.0.
func formatDouble(f float64) string {
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsAny(s, ".eE") {
		s += ".0"
	}
	return s
}

// splitList splits a comma-separated list, trimming each item. An empty or
// all-blank string is the empty list.
func splitList(v string) []string {
	if strings.TrimSpace(v) == "" {
		return nil
	}
	items := strings.Split(v, ",")
	for i := range items {
		items[i] = strings.TrimSpace(items[i])
	}
	return items
}

// --- validators: each returns the Valid text and the Validate func. ---

type check struct {
	valid string
	fn    func(string) error
}

func atLeast(min int64) check {
	return check{
		valid: fmt.Sprintf("[%d,...]", min),
		fn: func(v string) error {
			if i, _ := strconv.ParseInt(v, 10, 64); i < min {
				return fmt.Errorf("must be at least %d", min)
			}
			return nil
		},
	}
}

func between(min, max int64) check {
	return check{
		valid: fmt.Sprintf("[%d,...,%d]", min, max),
		fn: func(v string) error {
			if i, _ := strconv.ParseInt(v, 10, 64); i < min || i > max {
				return fmt.Errorf("must be between %d and %d", min, max)
			}
			return nil
		},
	}
}

func betweenFloat(min, max float64) check {
	return check{
		valid: fmt.Sprintf("[%s,...,%s]", formatDouble(min), formatDouble(max)),
		fn: func(v string) error {
			if f, _ := strconv.ParseFloat(v, 64); f < min || f > max {
				return fmt.Errorf("must be between %s and %s", formatDouble(min), formatDouble(max))
			}
			return nil
		},
	}
}

// oneOf allows exactly one of the given strings (case-sensitive, as Kafka).
func oneOf(allowed ...string) check {
	return check{
		valid: "[" + strings.Join(allowed, ", ") + "]",
		fn: func(v string) error {
			for _, a := range allowed {
				if v == a {
					return nil
				}
			}
			return fmt.Errorf("must be one of: %s", strings.Join(allowed, ", "))
		},
	}
}

// listOf allows a list whose items are each one of allowed, without
// repeats; an empty list is allowed (as in Kafka 4.0).
func listOf(allowed ...string) check {
	one := oneOf(allowed...)
	return check{
		valid: one.valid,
		fn: func(v string) error {
			seen := map[string]bool{}
			for _, it := range splitList(v) {
				if one.fn(it) != nil {
					return fmt.Errorf("must be a list of: %s", strings.Join(allowed, ", "))
				}
				if seen[it] {
					return fmt.Errorf("lists %s twice", it)
				}
				seen[it] = true
			}
			return nil
		},
	}
}

func custom(valid string, fn func(string) error) check { return check{valid: valid, fn: fn} }

var none = check{}
