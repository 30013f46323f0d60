package transforms

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/runnel-io/runnel/connect"
)

func TestJavaReplacement(t *testing.T) {
	re12 := regexp.MustCompile(`(a)(b)(c)(d)(e)(f)(g)(h)(i)(j)(k)(?P<last>l)`)
	re1 := regexp.MustCompile(`(?P<x>a)`)
	for _, tc := range []struct {
		repl string
		re   *regexp.Regexp
		want string
		err  string
	}{
		{"$1", re1, "${1}", ""},
		{"pre-$1-post", re1, "pre-${1}-post", ""},
		{"$1x", re1, "${1}x", ""},
		{"$12", re12, "${12}", ""},
		{"$12", re1, "${1}2", ""},
		{"$0", re1, "${0}", ""},
		{"${x}", re1, "${x}", ""},
		{"${last}$11", re12, "${last}${11}", ""},
		{`\$1`, re1, "$$1", ""},
		{`a\\b`, re1, `a\b`, ""},
		{`cost $$`, re1, "", "Illegal group reference"},
		{"$", re1, "", "Illegal group reference: group index is missing"},
		{"$x", re1, "", "Illegal group reference"},
		{`a\`, re1, "", "character to be escaped is missing"},
		{"$2", re1, "", "No group 2"},
		{"${y}", re1, "", "No group with name {y}"},
		{"${x", re1, "", "named capturing group is missing trailing '}'"},
		{"${1x}", re1, "", "invalid name"},
		{"$9", nil, "${9}", ""}, // syntax only
	} {
		got, err := javaReplacement(tc.repl, tc.re)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("javaReplacement(%q) = %q, %v; want error %q", tc.repl, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("javaReplacement(%q) = %q, %v; want %q", tc.repl, got, err, tc.want)
		}
	}
}

func TestRegexRouter(t *testing.T) {
	tr := newTransform(t, "RegexRouter", connect.Config{"regex": `(\w+)-raw-(?P<region>\w+)`, "replacement": "${region}.$1"})
	for range 2 { // the second time from the cache
		runCases(t, tr, []transformCase{
			{name: "match", in: connect.Record{Topic: "orders-raw-eu", Value: "v"}, want: connect.Record{Topic: "eu.orders", Value: "v"}},
			{name: "no match", in: connect.Record{Topic: "orders"}, want: connect.Record{Topic: "orders"}},
			{name: "the whole topic must match", in: connect.Record{Topic: "x.orders-raw-eu"}, want: connect.Record{Topic: "x.orders-raw-eu"}},
		})
	}
	runCases(t, newTransform(t, "RegexRouter", connect.Config{"regex": ".*", "replacement": `all\$`}), []transformCase{
		{name: "literal dollar", in: connect.Record{Topic: "a"}, want: connect.Record{Topic: "all$"}},
	})

	p, _ := registry(t).Lookup("RegexRouter")
	for _, tc := range []struct {
		cfg connect.Config
		key string
		msg string
	}{
		{connect.Config{"regex": "(?=x)", "replacement": "y"}, "regex", "Invalid value (?=x) for configuration regex: not a valid regular expression"},
		{connect.Config{"regex": "x", "replacement": "$"}, "replacement", "Invalid value $ for configuration replacement: Illegal group reference"},
	} {
		_, errs := p.Config.Parse(tc.cfg)
		if len(errs) != 1 || errs[0].Key != tc.key || !strings.Contains(errs[0].Message, tc.msg) {
			t.Errorf("%v: errors %v, want %s: %s", tc.cfg, errs, tc.key, tc.msg)
		}
	}
}

func TestCompileDateFormat(t *testing.T) {
	ts := time.Date(2024, 3, 5, 7, 8, 9, 12_000_000, time.UTC)
	for _, tc := range []struct {
		pattern string
		want    string
		err     string
	}{
		{"yyyyMMdd", "20240305", ""},
		{"yyyy-MM-dd'T'HH:mm:ss.SSS", "2024-03-05T07:08:09.012", ""},
		{"yy/M/d H:m:s S", "24/3/5 7:8:9 12", ""},
		{"EEE, d MMM yyyy hh a", "Tue, 5 Mar 2024 07 AM", ""},
		{"EEEE MMMM D", "Tuesday March 65", ""},
		{"'week' ''yy''", "week '24'", ""},
		{"'it''s' yyyy", "it's 2024", ""},
		{"'2006-01-02'", "2006-01-02", ""}, // quoted digits stay literal
		{"yyyy_MM", "2024_03", ""},
		{"", "", ""},
		{"yyyyMMddZ", "", "unsupported pattern letter 'Z'"},
		{"YYYY", "", "unsupported pattern letter 'Y'"},
		{"yyyy'", "", "Unterminated quote"},
	} {
		f, err := compileDateFormat(tc.pattern)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("compileDateFormat(%q) err = %v, want %q", tc.pattern, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("compileDateFormat(%q): %v", tc.pattern, err)
			continue
		}
		if got := string(f.append(nil, ts)); got != tc.want {
			t.Errorf("%q formats %s, want %s", tc.pattern, got, tc.want)
		}
	}
	if got := string(mustDateFormat(t, "h a").append(nil, time.Date(2024, 1, 1, 12, 0, 0, 0, time.UTC))); got != "12 PM" {
		t.Errorf("noon = %s", got)
	}
	if got := string(mustDateFormat(t, "h a").append(nil, time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))); got != "12 AM" {
		t.Errorf("midnight = %s", got)
	}
}

func mustDateFormat(t *testing.T, p string) dateFormat {
	f, err := compileDateFormat(p)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestTimestampRouter(t *testing.T) {
	oslo := time.FixedZone("CEST", 2*3600)
	ts := time.Date(2024, 5, 1, 1, 30, 0, 0, oslo) // 2024-04-30 in UTC
	runCases(t, newTransform(t, "TimestampRouter", nil), []transformCase{
		{name: "defaults, in UTC", in: connect.Record{Topic: "orders", Timestamp: ts}, want: connect.Record{Topic: "orders-20240430", Timestamp: ts}},
		{name: "no timestamp", in: connect.Record{Topic: "orders"}, err: "Timestamp missing on record: topic orders"},
	})
	runCases(t, newTransform(t, "org.apache.kafka.connect.transforms.TimestampRouter",
		connect.Config{"topic.format": "${timestamp}/${topic}/${topic}", "timestamp.format": "yyyy-MM"}), []transformCase{
		{name: "custom", in: connect.Record{Topic: "a", Timestamp: ts}, want: connect.Record{Topic: "2024-04/a/a", Timestamp: ts}},
		{name: "a topic holding a placeholder", in: connect.Record{Topic: "${timestamp}", Timestamp: ts},
			want: connect.Record{Topic: "2024-04/${timestamp}/${timestamp}", Timestamp: ts}},
	})
	p, _ := registry(t).Lookup("TimestampRouter")
	_, errs := p.Config.Parse(connect.Config{"timestamp.format": "yyyyMMddX"})
	if len(errs) != 1 || errs[0].Key != "timestamp.format" || !strings.Contains(errs[0].Message, "unsupported pattern letter 'X'") {
		t.Errorf("timestamp.format=yyyyMMddX: %v", errs)
	}
}

func TestParseTopicFormat(t *testing.T) {
	got := parseTopicFormat("x${topic}${timestamp}y${other}")
	want := []topicPart{{lit: "x"}, {placeholder: "${topic}"}, {placeholder: "${timestamp}"}, {lit: "y${other}"}}
	if len(got) != len(want) {
		t.Fatalf("parts = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("part %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}
