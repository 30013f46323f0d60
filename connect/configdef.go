package connect

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// ConfigType is the type of a config key, with Kafka's names.
type ConfigType string

// The config types.
const (
	TypeString   ConfigType = "STRING"
	TypeInt      ConfigType = "INT"
	TypeLong     ConfigType = "LONG"
	TypeDouble   ConfigType = "DOUBLE"
	TypeBoolean  ConfigType = "BOOLEAN"
	TypeList     ConfigType = "LIST"
	TypePassword ConfigType = "PASSWORD"
	TypeClass    ConfigType = "CLASS"
)

// Importance ranks a config key for documentation, as Kafka does.
type Importance string

// The importances.
const (
	High   Importance = "HIGH"
	Medium Importance = "MEDIUM"
	Low    Importance = "LOW"
)

// ConfigKey defines one config key.
type ConfigKey struct {
	Name string
	Type ConfigType
	// Default is the value of a key left out. Required keys have none.
	Default  string
	Required bool
	// Doc says what the key does; it is returned by the validate endpoint
	// and should name the unit (ms, bytes) and the allowed values.
	Doc         string
	Importance  Importance
	Group       string
	DisplayName string
	// Check validates a set value beyond its type; its message is reported
	// as "Invalid value X for configuration NAME: message".
	Check func(v string) error
	// Recommended lists the values a user would pick from (an enum).
	Recommended []string
}

// ConfigDef is an ordered set of config keys.
type ConfigDef struct {
	keys   []ConfigKey
	byName map[string]int
}

// NewConfigDef defines the keys, in the order given. It panics on a key
// defined twice or a default that fails its own checks: both are
// programming errors.
func NewConfigDef(keys ...ConfigKey) *ConfigDef {
	d := &ConfigDef{byName: map[string]int{}}
	d.add(keys...)
	return d
}

func (d *ConfigDef) add(keys ...ConfigKey) {
	for _, k := range keys {
		if _, dup := d.byName[k.Name]; dup {
			panic(fmt.Sprintf("connect: config key %s defined twice", k.Name))
		}
		if !k.Required && k.Default != "" {
			if err := k.check(k.Default); err != nil {
				panic(fmt.Sprintf("connect: default of %s: %v", k.Name, err))
			}
		}
		d.byName[k.Name] = len(d.keys)
		d.keys = append(d.keys, k)
	}
}

// With returns a new definition with the keys of d and then of others
// (which must not define the same keys).
func (d *ConfigDef) With(others ...*ConfigDef) *ConfigDef {
	out := NewConfigDef(d.Keys()...)
	for _, o := range others {
		if o != nil {
			out.add(o.keys...)
		}
	}
	return out
}

// Keys returns the keys in definition order.
func (d *ConfigDef) Keys() []ConfigKey {
	if d == nil {
		return nil
	}
	return append([]ConfigKey(nil), d.keys...)
}

// Key returns the definition of name.
func (d *ConfigDef) Key(name string) (ConfigKey, bool) {
	if d == nil {
		return ConfigKey{}, false
	}
	i, ok := d.byName[name]
	if !ok {
		return ConfigKey{}, false
	}
	return d.keys[i], true
}

// KeyError is a problem with one config key.
type KeyError struct {
	Key     string
	Message string
}

func (e KeyError) Error() string { return e.Key + ": " + e.Message }

// Parse checks raw settings against the definition: required keys are
// set, values have their types and pass their checks. It returns the
// settings with defaults filled in for keys left out (keys it does not
// define pass through unchanged) and every problem found, in definition
// order.
func (d *ConfigDef) Parse(raw map[string]string) (Config, []KeyError) {
	out := make(Config, len(raw)+len(d.keys))
	for k, v := range raw {
		out[k] = v
	}
	var errs []KeyError
	for _, k := range d.keys {
		v, set := raw[k.Name]
		if !set {
			if k.Required {
				errs = append(errs, KeyError{k.Name, fmt.Sprintf("Missing required configuration %q which has no default value.", k.Name)})
				continue
			}
			out[k.Name] = k.Default
			continue
		}
		if err := k.check(v); err != nil {
			shown := v
			if k.Type == TypePassword {
				shown = HiddenValue
			}
			errs = append(errs, KeyError{k.Name, fmt.Sprintf("Invalid value %s for configuration %s: %v", shown, k.Name, err)})
		}
	}
	return out, errs
}

// check validates one value of the key: its type, then Check.
func (k ConfigKey) check(v string) error {
	if k.Required && strings.TrimSpace(v) == "" && k.Type != TypePassword {
		return fmt.Errorf("must not be empty")
	}
	var err error
	switch k.Type {
	case TypeInt:
		_, err = strconv.ParseInt(strings.TrimSpace(v), 10, 32)
		if err != nil {
			err = fmt.Errorf("Not a number of type INT")
		}
	case TypeLong:
		_, err = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			err = fmt.Errorf("Not a number of type LONG")
		}
	case TypeDouble:
		var f float64
		f, err = strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || math.IsNaN(f) {
			err = fmt.Errorf("Not a number of type DOUBLE")
		}
	case TypeBoolean:
		if b := strings.ToLower(strings.TrimSpace(v)); b != "true" && b != "false" {
			err = fmt.Errorf("Expected value to be either true or false")
		}
	}
	if err != nil {
		return err
	}
	if k.Check != nil {
		return k.Check(v)
	}
	return nil
}

// HiddenValue stands for the value of a PASSWORD key in every response.
const HiddenValue = "[hidden]"

// Checks for ConfigKey.Check.

// AtLeast accepts numbers ≥ min.
func AtLeast(min float64) func(string) error {
	return func(v string) error {
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || f < min {
			return fmt.Errorf("Value must be at least %v", min)
		}
		return nil
	}
}

// OneOf accepts the listed values (case-insensitively).
func OneOf(values ...string) func(string) error {
	return func(v string) error {
		for _, ok := range values {
			if strings.EqualFold(strings.TrimSpace(v), ok) {
				return nil
			}
		}
		return fmt.Errorf("String must be one of: %s", strings.Join(values, ", "))
	}
}

// NonEmpty accepts any value but the empty string.
func NonEmpty(v string) error {
	if strings.TrimSpace(v) == "" {
		return fmt.Errorf("String may not be empty")
	}
	return nil
}

// ValidRegexp accepts a Go regular expression (RE2 syntax).
func ValidRegexp(v string) error {
	if _, err := regexp.Compile(v); err != nil {
		return fmt.Errorf("not a valid regular expression: %v", err)
	}
	return nil
}

// Config holds the settings of a connector, task or plugin: raw strings by
// key, checked by a ConfigDef. Its getters parse values already checked,
// so they return the zero value only for keys that were not defined.
type Config map[string]string

// String returns the value of key.
func (c Config) String(key string) string { return c[key] }

// Int returns the value of an INT or LONG key.
func (c Config) Int(key string) int {
	n, _ := strconv.ParseInt(strings.TrimSpace(c[key]), 10, 64)
	return int(n)
}

// Long returns the value of a LONG key.
func (c Config) Long(key string) int64 {
	n, _ := strconv.ParseInt(strings.TrimSpace(c[key]), 10, 64)
	return n
}

// Double returns the value of a DOUBLE key.
func (c Config) Double(key string) float64 {
	f, _ := strconv.ParseFloat(strings.TrimSpace(c[key]), 64)
	return f
}

// Bool returns the value of a BOOLEAN key.
func (c Config) Bool(key string) bool { return strings.EqualFold(strings.TrimSpace(c[key]), "true") }

// Millis returns the value of a key in milliseconds as a duration.
func (c Config) Millis(key string) time.Duration {
	return time.Duration(c.Long(key)) * time.Millisecond
}

// List returns the items of a LIST key: split at commas, trimmed, empty
// items left out.
func (c Config) List(key string) []string { return SplitList(c[key]) }

// SplitList splits a comma-separated list, trimming items and leaving out
// empty ones.
func SplitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// Sub returns the keys that start with prefix, with the prefix removed
// (transforms.route.regex → regex for prefix "transforms.route.").
func (c Config) Sub(prefix string) Config {
	out := Config{}
	for k, v := range c {
		if rest, ok := strings.CutPrefix(k, prefix); ok {
			out[rest] = v
		}
	}
	return out
}

// Clone returns a copy.
func (c Config) Clone() Config {
	out := make(Config, len(c))
	for k, v := range c {
		out[k] = v
	}
	return out
}

// Keys returns the keys, sorted.
func (c Config) Keys() []string {
	out := make([]string, 0, len(c))
	for k := range c {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
