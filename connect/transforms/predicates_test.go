package transforms

import (
	"strings"
	"testing"

	"github.com/runnel-io/runnel/connect"
)

func newPredicate(t *testing.T, class string, cfg connect.Config) connect.Predicate {
	t.Helper()
	p, err := registry(t).Lookup(class)
	if err != nil {
		t.Fatal(err)
	}
	pred, err := p.NewPredicate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return pred
}

func TestPredicates(t *testing.T) {
	topic := newPredicate(t, "TopicNameMatches", connect.Config{"pattern": "orders|sales-.+"})
	header := newPredicate(t, "HasHeaderKey", connect.Config{"name": "trace"})
	tomb := newPredicate(t, "RecordIsTombstone", nil)
	for _, tc := range []struct {
		pred connect.Predicate
		r    connect.Record
		want bool
	}{
		{topic, connect.Record{Topic: "orders"}, true},
		{topic, connect.Record{Topic: "sales-eu"}, true},
		{topic, connect.Record{Topic: "orders-eu"}, false},
		{topic, connect.Record{Topic: "sales-"}, false},
		{topic, connect.Record{Topic: "orders"}, true}, // cached
		{header, connect.Record{Headers: []connect.Header{{Key: "a"}, {Key: "trace", Value: nil}}}, true},
		{header, connect.Record{Headers: []connect.Header{{Key: "Trace"}}}, false},
		{header, connect.Record{}, false},
		{tomb, connect.Record{Key: "k"}, true},
		{tomb, connect.Record{Value: ""}, false},
	} {
		if got := tc.pred.Test(&tc.r); got != tc.want {
			t.Errorf("%T.Test(%+v) = %v, want %v", tc.pred, tc.r, got, tc.want)
		}
	}

	reg := registry(t)
	for _, tc := range []struct {
		class string
		cfg   connect.Config
		key   string
		msg   string
	}{
		{"TopicNameMatches", nil, "pattern", `Missing required configuration "pattern"`},
		{"TopicNameMatches", connect.Config{"pattern": "a(?!b)"}, "pattern", "not a valid regular expression"},
		{"HasHeaderKey", connect.Config{"name": ""}, "name", "must not be empty"},
	} {
		p, _ := reg.Lookup(tc.class)
		_, errs := p.Config.Parse(tc.cfg)
		if len(errs) != 1 || errs[0].Key != tc.key || !strings.Contains(errs[0].Message, tc.msg) {
			t.Errorf("%s %v: errors %v, want %s: %s", tc.class, tc.cfg, errs, tc.key, tc.msg)
		}
		if _, err := p.NewPredicate(tc.cfg); err == nil {
			t.Errorf("%s %v: NewPredicate accepted it", tc.class, tc.cfg)
		}
	}
}
