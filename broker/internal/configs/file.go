package configs

import (
	"errors"
	"fmt"

	"github.com/runnel-io/runnel/internal/configfile"
)

// LoadFile reads a broker config file and returns its settings as raw
// strings keyed by Kafka name, ready to be overlaid with flags and passed
// to ParseBroker. The file is YAML, JSON or .properties, as
// configfile.Read describes (nested YAML keys are joined with dots).
//
// Every key must be a broker config and every value valid for it. All
// problems are reported, joined, each as "file:line: ..." (wrapping
// ErrUnknownConfig or ErrInvalidConfig); a key set twice is an error.
func LoadFile(path string) (map[string]string, error) {
	entries, err := configfile.Read(path)
	if err != nil {
		return nil, &configError{msg: err.Error(), kinds: []error{ErrInvalidConfig, err}}
	}

	out := make(map[string]string, len(entries))
	firstLine := map[string]int{}
	var errs []error
	fail := func(line int, err error) {
		var ce *configError
		if errors.As(err, &ce) {
			errs = append(errs, &configError{msg: fmt.Sprintf("%s:%d: %s", path, line, ce.msg), kinds: ce.kinds})
			return
		}
		errs = append(errs, newError(ErrInvalidConfig, "%s:%d: %v", path, line, err))
	}
	for _, e := range entries {
		if l, dup := firstLine[e.Key]; dup {
			fail(e.Line, fmt.Errorf("%s is set twice (first on line %d)", e.Key, l))
			continue
		}
		firstLine[e.Key] = e.Line
		if e.Err != nil {
			fail(e.Line, e.Err)
			continue
		}
		d, ok := brokerTable.byName[e.Key]
		if !ok {
			fail(e.Line, unknownBrokerConfig(e.Key))
			continue
		}
		if e.Null {
			continue
		}
		if _, err := d.Normalize(e.Value); err != nil {
			fail(e.Line, err)
			continue
		}
		out[e.Key] = e.Value
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}
