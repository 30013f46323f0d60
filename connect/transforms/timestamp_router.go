package transforms

// TimestampRouter: rename the topic after the record's timestamp
// (orders → orders-20240501).

import (
	"strings"
	"time"

	"github.com/runnel-io/runnel/connect"
)

var timestampRouterConfig = connect.NewConfigDef(
	connect.ConfigKey{Name: "topic.format", Type: connect.TypeString, Default: "${topic}-${timestamp}", Importance: connect.High,
		Doc: "Format string which can contain ${topic} and ${timestamp} as placeholders for the topic and timestamp, respectively."},
	connect.ConfigKey{Name: "timestamp.format", Type: connect.TypeString, Default: "yyyyMMdd", Importance: connect.High,
		Doc: "Format string for the timestamp that is compatible with java.text.SimpleDateFormat, in UTC. " +
			"Supported pattern letters: " + supportedDateLetters + "; text in single quotes is literal.",
		Check: func(v string) error {
			_, err := compileDateFormat(v)
			return err
		}},
)

type timestampRouter struct {
	parts  []topicPart
	format dateFormat
}

// topicPart is a piece of topic.format: literal text, or a placeholder.
type topicPart struct {
	lit         string
	placeholder string // "${topic}", "${timestamp}" or ""
}

func newTimestampRouter(cfg connect.Config) (connect.Transformation, error) {
	cfg, err := parseConfig(timestampRouterConfig, cfg)
	if err != nil {
		return nil, err
	}
	format, err := compileDateFormat(cfg.String("timestamp.format"))
	if err != nil {
		return nil, connect.KeyError{Key: "timestamp.format", Message: err.Error()}
	}
	return &timestampRouter{parts: parseTopicFormat(cfg.String("topic.format")), format: format}, nil
}

func parseTopicFormat(s string) []topicPart {
	var parts []topicPart
	for s != "" {
		i, ph := -1, ""
		for _, p := range []string{"${topic}", "${timestamp}"} {
			if j := strings.Index(s, p); j >= 0 && (i < 0 || j < i) {
				i, ph = j, p
			}
		}
		if i < 0 {
			parts = append(parts, topicPart{lit: s})
			break
		}
		if i > 0 {
			parts = append(parts, topicPart{lit: s[:i]})
		}
		parts = append(parts, topicPart{placeholder: ph})
		s = s[i+len(ph):]
	}
	return parts
}

// Apply renames the topic; a record without a timestamp is an error.
func (t *timestampRouter) Apply(r *connect.Record) (bool, error) {
	if r.Timestamp.IsZero() {
		return false, dataErrorf("Timestamp missing on record: topic %s, partition %d, offset %d", r.Topic, r.Partition, r.Offset)
	}
	var buf [128]byte
	b := buf[:0]
	ts := r.Timestamp.In(time.UTC)
	for _, p := range t.parts {
		switch p.placeholder {
		case "${topic}":
			b = append(b, r.Topic...)
		case "${timestamp}":
			b = t.format.append(b, ts)
		default:
			b = append(b, p.lit...)
		}
	}
	r.Topic = string(b)
	return true, nil
}
