package transforms

// The predicates: TopicNameMatches, HasHeaderKey, RecordIsTombstone.

import (
	"fmt"
	"regexp"

	"github.com/runnel-io/runnel/connect"
)

var topicNameMatchesConfig = connect.NewConfigDef(
	connect.ConfigKey{Name: "pattern", Type: connect.TypeString, Required: true, Importance: connect.Medium,
		Doc:   "A regular expression for matching against the name of a topic: Go's RE2 syntax, which reads most Java patterns the same. It must match the whole name.",
		Check: connect.ValidRegexp},
)

type topicNameMatches struct {
	re      *regexp.Regexp
	matches topicCache[bool]
}

func newTopicNameMatches(cfg connect.Config) (connect.Predicate, error) {
	cfg, err := parseConfig(topicNameMatchesConfig, cfg)
	if err != nil {
		return nil, err
	}
	re, err := anchored(cfg.String("pattern"))
	if err != nil {
		return nil, connect.KeyError{Key: "pattern", Message: fmt.Sprintf("Invalid value %s for configuration pattern: %v", cfg.String("pattern"), err)}
	}
	return &topicNameMatches{re: re}, nil
}

// Test reports whether the pattern matches the whole topic.
func (p *topicNameMatches) Test(r *connect.Record) bool {
	return p.matches.get(r.Topic, p.re.MatchString)
}

var hasHeaderKeyConfig = connect.NewConfigDef(
	connect.ConfigKey{Name: "name", Type: connect.TypeString, Required: true, Importance: connect.Medium,
		Doc: "The header name."},
)

type hasHeaderKey struct{ name string }

func newHasHeaderKey(cfg connect.Config) (connect.Predicate, error) {
	cfg, err := parseConfig(hasHeaderKeyConfig, cfg)
	if err != nil {
		return nil, err
	}
	return hasHeaderKey{name: cfg.String("name")}, nil
}

// Test reports whether the record has at least one header with the name.
func (p hasHeaderKey) Test(r *connect.Record) bool {
	_, ok := r.Header(p.name)
	return ok
}

type recordIsTombstone struct{}

func newRecordIsTombstone(connect.Config) (connect.Predicate, error) { return recordIsTombstone{}, nil }

// Test reports whether the record's value is nil.
func (recordIsTombstone) Test(r *connect.Record) bool { return r.Value == nil }
