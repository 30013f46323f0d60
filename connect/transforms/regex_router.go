package transforms

// RegexRouter: rename the topic with a regular expression.

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/runnel-io/runnel/connect"
)

var regexRouterConfig = connect.NewConfigDef(
	connect.ConfigKey{Name: "regex", Type: connect.TypeString, Required: true, Importance: connect.High,
		Doc:   "Regular expression to use for matching: Go's RE2 syntax, which reads most Java patterns the same (not lookarounds or backreferences). It must match the whole topic.",
		Check: connect.ValidRegexp},
	connect.ConfigKey{Name: "replacement", Type: connect.TypeString, Required: true, Importance: connect.High,
		Doc: "Replacement string, in Java's syntax: $1 or ${name} for a group, \\$ for a dollar sign.",
		Check: func(v string) error {
			_, err := javaReplacement(v, nil)
			return err
		}},
)

type regexRouter struct {
	re     *regexp.Regexp
	tmpl   string // replacement in regexp.Expand's syntax
	topics topicCache[string]
}

func newRegexRouter(cfg connect.Config) (connect.Transformation, error) {
	cfg, err := parseConfig(regexRouterConfig, cfg)
	if err != nil {
		return nil, err
	}
	re, err := anchored(cfg.String("regex"))
	if err != nil {
		return nil, connect.KeyError{Key: "regex", Message: fmt.Sprintf("Invalid value %s for configuration regex: %v", cfg.String("regex"), err)}
	}
	tmpl, err := javaReplacement(cfg.String("replacement"), re)
	if err != nil {
		return nil, connect.KeyError{Key: "replacement", Message: fmt.Sprintf("Invalid value %s for configuration replacement: %v", cfg.String("replacement"), err)}
	}
	return &regexRouter{re: re, tmpl: tmpl}, nil
}

// anchored compiles a pattern that must match a whole topic, as Java's
// Matcher.matches.
func anchored(pattern string) (*regexp.Regexp, error) {
	if _, err := regexp.Compile(pattern); err != nil {
		return nil, err
	}
	return regexp.Compile(`^(?:` + pattern + `)$`)
}

// Apply replaces the topic when the regex matches all of it, and leaves
// it alone otherwise.
func (t *regexRouter) Apply(r *connect.Record) (bool, error) {
	r.Topic = t.topics.get(r.Topic, t.route)
	return true, nil
}

func (t *regexRouter) route(topic string) string {
	m := t.re.FindStringSubmatchIndex(topic)
	if m == nil {
		return topic
	}
	return string(t.re.ExpandString(nil, t.tmpl, topic, m))
}

// javaReplacement translates a replacement in Java's syntax
// (Matcher.appendReplacement) into regexp.Expand's: $n takes the longest
// run of digits that names a group of re, ${name} a named group, and a
// backslash makes the next character literal. With re nil only the
// syntax is checked.
func javaReplacement(repl string, re *regexp.Regexp) (string, error) {
	var b strings.Builder
	for i := 0; i < len(repl); i++ {
		c := repl[i]
		switch c {
		case '\\':
			i++
			if i == len(repl) {
				return "", fmt.Errorf("character to be escaped is missing")
			}
			if repl[i] == '$' {
				b.WriteString("$$")
			} else {
				b.WriteByte(repl[i])
			}
		case '$':
			i++
			if i == len(repl) {
				return "", fmt.Errorf("Illegal group reference: group index is missing")
			}
			if repl[i] == '{' {
				end := strings.IndexByte(repl[i:], '}')
				if end < 0 {
					return "", fmt.Errorf("named capturing group is missing trailing '}'")
				}
				name := repl[i+1 : i+end]
				if !validGroupName(name) {
					return "", fmt.Errorf("named capturing group has 0 length name or an invalid name: %q", name)
				}
				if re != nil && re.SubexpIndex(name) < 0 {
					return "", fmt.Errorf("No group with name {%s}", name)
				}
				b.WriteString("${" + name + "}")
				i += end
				continue
			}
			if repl[i] < '0' || repl[i] > '9' {
				return "", fmt.Errorf("Illegal group reference")
			}
			n := int(repl[i] - '0')
			if re != nil && n > re.NumSubexp() {
				return "", fmt.Errorf("No group %d", n)
			}
			for i+1 < len(repl) && repl[i+1] >= '0' && repl[i+1] <= '9' {
				next := n*10 + int(repl[i+1]-'0')
				if re == nil || next > re.NumSubexp() {
					break
				}
				n = next
				i++
			}
			fmt.Fprintf(&b, "${%d}", n)
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

func validGroupName(name string) bool {
	if name == "" {
		return false
	}
	for i, c := range name {
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !letter && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return true
}
