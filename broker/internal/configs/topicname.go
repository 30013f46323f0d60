package configs

import (
	"strconv"
	"strings"
)

// MaxTopicNameLen is Kafka's limit on topic name length: 249, so that
// "<topic>-<partition>" directory names stay within 255 bytes.
const MaxTopicNameLen = 249

// TopicNameError returns nil if name is a legal topic name, else an error
// saying why (wrapping ErrInvalidTopicName; the broker answers
// INVALID_TOPIC_EXCEPTION). Kafka's rules: not empty, not "." or "..", at
// most 249 characters, only ASCII letters, digits, '.', '_' and '-'.
func TopicNameError(name string) error {
	switch {
	case name == "":
		return newError(ErrInvalidTopicName, "topic name is illegal: it is empty")
	case name == "." || name == "..":
		return newError(ErrInvalidTopicName, "topic name cannot be %q", name)
	case len(name) > MaxTopicNameLen:
		return newError(ErrInvalidTopicName, "topic name is illegal: it is %d characters long, the limit is %d",
			len(name), MaxTopicNameLen)
	}
	for i, r := range name {
		if r >= 0x80 || !legalTopicChar(byte(r)) {
			return newError(ErrInvalidTopicName,
				"topic name %s is illegal: it contains %s at byte %d; only ASCII letters, digits, '.', '_' and '-' are allowed",
				strconv.Quote(name), strconv.QuoteRune(r), i)
		}
	}
	return nil
}

func legalTopicChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
}

// TopicCollisionName maps '.' to '_': two topics whose collision names are
// equal would get the same metric names, which is why Kafka refuses to
// create a topic that collides with an existing one (and warns about names
// with either character).
func TopicCollisionName(name string) string { return strings.ReplaceAll(name, ".", "_") }
