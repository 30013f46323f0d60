package configs

import (
	"errors"
	"strings"
	"testing"
)

func TestTopicNameError(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"orders", ""},
		{"retail.sales-v2_EU", ""},
		{"__consumer_offsets", ""},
		{"..a", ""},
		{strings.Repeat("a", 249), ""},
		{"", "topic name is illegal: it is empty"},
		{".", `topic name cannot be "."`},
		{"..", `topic name cannot be ".."`},
		{strings.Repeat("a", 250), "topic name is illegal: it is 250 characters long, the limit is 249"},
		{"a b", `topic name "a b" is illegal: it contains ' ' at byte 1; only ASCII letters, digits, '.', '_' and '-' are allowed`},
		{"a/b", `topic name "a/b" is illegal: it contains '/' at byte 1; only ASCII letters, digits, '.', '_' and '-' are allowed`},
		{"café", `topic name "café" is illegal: it contains 'é' at byte 3; only ASCII letters, digits, '.', '_' and '-' are allowed`},
		{"a\x00", `topic name "a\x00" is illegal: it contains '\x00' at byte 1; only ASCII letters, digits, '.', '_' and '-' are allowed`},
	} {
		err := TopicNameError(tc.name)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%q: %v", tc.name, err)
			}
			continue
		}
		if err == nil || err.Error() != tc.want {
			t.Errorf("%q:\n got %v\nwant %s", tc.name, err, tc.want)
		}
		if !errors.Is(err, ErrInvalidTopicName) {
			t.Errorf("%q: error does not wrap ErrInvalidTopicName", tc.name)
		}
	}
}

func TestTopicCollisionName(t *testing.T) {
	if TopicCollisionName("a.b_c") != TopicCollisionName("a_b.c") {
		t.Error("a.b_c and a_b.c should collide")
	}
	if TopicCollisionName("a.b") == TopicCollisionName("a-b") {
		t.Error("a.b and a-b should not collide")
	}
}
