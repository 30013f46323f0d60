package connect_test

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/runnel-io/runnel/connect"
	"github.com/runnel-io/runnel/connect/transforms"
)

// chainRegistry holds the built-in transforms and a few test plugins:
// "trace" appends its tag to the value (a []string), "boom" fails or
// panics, "picky" has a Validate rule and a constructor error.
func chainRegistry(t testing.TB) *connect.Registry {
	t.Helper()
	reg := connect.NewRegistry()
	if err := transforms.Register(reg); err != nil {
		t.Fatal(err)
	}
	reg.MustRegister(connect.Plugin{
		Class: "test.Trace", Type: connect.TransformationPlugin,
		Config: connect.NewConfigDef(connect.ConfigKey{Name: "tag", Type: connect.TypeString, Required: true}),
		NewTransformation: func(cfg connect.Config) (connect.Transformation, error) {
			return traceTransform(cfg.String("tag")), nil
		},
	})
	reg.MustRegister(connect.Plugin{
		Class: "test.Boom", Type: connect.TransformationPlugin,
		NewTransformation: func(cfg connect.Config) (connect.Transformation, error) {
			return boomTransform(cfg.Bool("panic")), nil
		},
	})
	reg.MustRegister(connect.Plugin{
		Class: "test.Picky", Type: connect.TransformationPlugin,
		Config: connect.NewConfigDef(
			connect.ConfigKey{Name: "min", Type: connect.TypeInt, Default: "0"},
			connect.ConfigKey{Name: "max", Type: connect.TypeInt, Default: "10"},
		),
		Validate: func(cfg connect.Config) []connect.KeyError {
			if cfg.Int("min") > cfg.Int("max") {
				return []connect.KeyError{{Key: "min", Message: "min must not exceed max"}}
			}
			return nil
		},
		NewTransformation: func(cfg connect.Config) (connect.Transformation, error) {
			switch cfg.Int("max") {
			case 7:
				return nil, connect.KeyError{Key: "max", Message: "seven is unlucky"}
			case 8:
				return nil, errors.New("cannot start")
			}
			return traceTransform("picky"), nil
		},
	})
	return reg
}

type traceTransform string

func (tr traceTransform) Apply(r *connect.Record) (bool, error) {
	trace, _ := r.Value.([]string)
	r.Value = append(trace, string(tr))
	return true, nil
}

type boomTransform bool

func (panics boomTransform) Apply(r *connect.Record) (bool, error) {
	if panics {
		var m map[string]int
		m["x"] = 1 // a nil map write
	}
	return false, errors.New("boom")
}

func mustChain(t testing.TB, reg *connect.Registry, cfg connect.Config) *connect.TransformChain {
	t.Helper()
	chain, errs := connect.NewTransformChain(reg, cfg)
	if len(errs) > 0 {
		t.Fatalf("NewTransformChain: %v", errs)
	}
	return chain
}

func TestTransformChainRunsInOrderAndStopsAtADrop(t *testing.T) {
	reg := chainRegistry(t)
	chain := mustChain(t, reg, connect.Config{
		"transforms":                "a, b,drop ,c",
		"transforms.a.type":         "test.Trace",
		"transforms.a.tag":          "A",
		"transforms.b.type":         "test.Trace",
		"transforms.b.tag":          "B",
		"transforms.drop.type":      "Filter",
		"transforms.drop.predicate": "onB",
		"transforms.c.type":         "test.Trace",
		"transforms.c.tag":          "C",
		"predicates":                "onB",
		"predicates.onB.type":       "TopicNameMatches",
		"predicates.onB.pattern":    "b",
	})
	r := &connect.Record{Topic: "a"}
	keep, err := chain.Apply(r)
	if !keep || err != nil || !reflect.DeepEqual(r.Value, []string{"A", "B", "C"}) {
		t.Errorf("topic a: Apply = %v, %v, value %v; want kept after A, B, C", keep, err, r.Value)
	}
	r = &connect.Record{Topic: "b"}
	keep, err = chain.Apply(r)
	if keep || err != nil || !reflect.DeepEqual(r.Value, []string{"A", "B"}) {
		t.Errorf("topic b: Apply = %v, %v, value %v; want dropped after A, B", keep, err, r.Value)
	}

	for _, cfg := range []connect.Config{nil, {"transforms": ""}, {"transforms": " , "}} {
		chain := mustChain(t, reg, cfg)
		if keep, err := chain.Apply(&connect.Record{}); !keep || err != nil {
			t.Errorf("%v: Apply = %v, %v; want kept", cfg, keep, err)
		}
	}
	var none *connect.TransformChain
	if keep, err := none.Apply(&connect.Record{}); !keep || err != nil {
		t.Errorf("nil chain: Apply = %v, %v; want kept", keep, err)
	}
}

func TestTransformChainPredicates(t *testing.T) {
	reg := chainRegistry(t)
	tombstone := &connect.Record{Topic: "t"}
	withHeader := &connect.Record{Topic: "t", Value: "v", Headers: []connect.Header{{Key: "h", Value: nil}}}
	plain := &connect.Record{Topic: "orders-eu", Value: "v"}
	for _, tc := range []struct {
		pred   string // type, then its config
		key    string
		arg    string
		negate string
		rec    *connect.Record
		drop   bool
	}{
		{"RecordIsTombstone", "", "", "", tombstone, true},
		{"RecordIsTombstone", "", "", "", plain, false},
		{"RecordIsTombstone", "", "", "true", tombstone, false},
		{"RecordIsTombstone", "", "", "true", plain, true},
		{"HasHeaderKey", "name", "h", "false", withHeader, true},
		{"HasHeaderKey", "name", "h", "", plain, false},
		{"HasHeaderKey", "name", "h", "true", plain, true},
		{"TopicNameMatches", "pattern", "orders-.*", "", plain, true},
		{"TopicNameMatches", "pattern", "orders", "", plain, false}, // the whole name must match
		{"TopicNameMatches", "pattern", "orders", "true", plain, true},
		{"org.apache.kafka.connect.transforms.predicates.TopicNameMatches", "pattern", "o.*", "TRUE", plain, false},
	} {
		cfg := connect.Config{
			"transforms": "f", "transforms.f.type": "org.apache.kafka.connect.transforms.Filter",
			"transforms.f.predicate": "p", "predicates": "p", "predicates.p.type": tc.pred,
		}
		if tc.negate != "" {
			cfg["transforms.f.negate"] = tc.negate
		}
		if tc.key != "" {
			cfg["predicates.p."+tc.key] = tc.arg
		}
		r := *tc.rec
		keep, err := mustChain(t, reg, cfg).Apply(&r)
		if err != nil || keep == tc.drop {
			t.Errorf("%s %s=%s negate=%q on %+v: keep = %v, %v; want drop=%v", tc.pred, tc.key, tc.arg, tc.negate, *tc.rec, keep, err, tc.drop)
		}
	}
}

func TestTransformChainErrorsNameTheTransform(t *testing.T) {
	reg := chainRegistry(t)
	chain := mustChain(t, reg, connect.Config{
		"transforms": "insert", "transforms.insert.type": "InsertField$Value", "transforms.insert.topic.field": "topic",
	})
	r := &connect.Record{Topic: "t", Value: "a string"}
	keep, err := chain.Apply(r)
	want := "connect: transform failed: insert (org.apache.kafka.connect.transforms.InsertField$Value): " +
		"Only Map objects supported in absence of schema for [field insertion], found: string"
	if keep || !errors.Is(err, connect.ErrTransform) || !errors.Is(err, transforms.ErrData) || err.Error() != want {
		t.Errorf("Apply = %v, %v\nwant an ErrTransform and ErrData: %s", keep, err, want)
	}

	for _, panics := range []string{"false", "true"} {
		chain := mustChain(t, reg, connect.Config{"transforms": "b", "transforms.b.type": "test.Boom", "transforms.b.panic": panics})
		keep, err := chain.Apply(&connect.Record{})
		if keep || !errors.Is(err, connect.ErrTransform) || !strings.HasPrefix(err.Error(), "connect: transform failed: b (test.Boom): ") {
			t.Errorf("panic=%s: Apply = %v, %v; want an ErrTransform naming b", panics, keep, err)
		}
	}
}

func TestTransformChainConfigErrors(t *testing.T) {
	reg := chainRegistry(t)
	for _, tc := range []struct {
		name string
		cfg  connect.Config
		want []connect.KeyError // messages are matched by substring
	}{
		{"missing type", connect.Config{"transforms": "a"},
			[]connect.KeyError{{Key: "transforms.a.type", Message: `Missing required configuration "transforms.a.type" which has no default value.`}}},
		{"empty type", connect.Config{"transforms": "a", "transforms.a.type": " "},
			[]connect.KeyError{{Key: "transforms.a.type", Message: "must not be empty"}}},
		{"unknown class", connect.Config{"transforms": "a", "transforms.a.type": "com.example.Nope"},
			[]connect.KeyError{{Key: "transforms.a.type", Message: "Invalid value com.example.Nope for configuration transforms.a.type: Class com.example.Nope could not be found (known transformations: org.apache.kafka.connect.transforms.Cast$Key"}}},
		{"a predicate as a transform", connect.Config{"transforms": "a", "transforms.a.type": "RecordIsTombstone"},
			[]connect.KeyError{{Key: "transforms.a.type", Message: "RecordIsTombstone is a predicate plugin, not a transformation"}}},
		{"a converter as a predicate", connect.Config{"predicates": "p", "predicates.p.type": "json"},
			[]connect.KeyError{{Key: "predicates.p.type", Message: "json is a converter plugin, not a predicate"}}},
		{"duplicate alias", connect.Config{"transforms": "a,a", "transforms.a.type": "Filter"},
			[]connect.KeyError{{Key: "transforms", Message: "Invalid value a,a for configuration transforms: Duplicate alias provided."}}},
		{"duplicate predicate", connect.Config{"predicates": "p,p", "predicates.p.type": "RecordIsTombstone"},
			[]connect.KeyError{{Key: "predicates", Message: "Duplicate alias provided."}}},
		{"unlisted predicate", connect.Config{"transforms": "a", "transforms.a.type": "Filter", "transforms.a.predicate": "p"},
			[]connect.KeyError{{Key: "transforms.a.predicate", Message: `no predicate has the alias "p"`}}},
		{"negate without predicate", connect.Config{"transforms": "a", "transforms.a.type": "Filter", "transforms.a.negate": "true"},
			[]connect.KeyError{{Key: "transforms.a.negate", Message: "negate needs a predicate (transforms.a.predicate)"}}},
		{"negate not a boolean", connect.Config{"transforms": "a", "transforms.a.type": "Filter", "transforms.a.negate": "yes"},
			[]connect.KeyError{{Key: "transforms.a.negate", Message: "Invalid value yes for configuration transforms.a.negate: Expected value to be either true or false"}}},
		{"own key invalid", connect.Config{"transforms": "route", "transforms.route.type": "RegexRouter", "transforms.route.regex": "(", "transforms.route.replacement": "x"},
			[]connect.KeyError{{Key: "transforms.route.regex", Message: "Invalid value ( for configuration transforms.route.regex: not a valid regular expression"}}},
		{"own key missing", connect.Config{"transforms": "route", "transforms.route.type": "RegexRouter", "transforms.route.regex": "a"},
			[]connect.KeyError{{Key: "transforms.route.replacement", Message: `Missing required configuration "transforms.route.replacement" which has no default value.`}}},
		{"constructor names a key", connect.Config{"transforms": "route", "transforms.route.type": "RegexRouter", "transforms.route.regex": "(a)", "transforms.route.replacement": "$2"},
			[]connect.KeyError{{Key: "transforms.route.replacement", Message: "Invalid value $2 for configuration transforms.route.replacement: No group 2"}}},
		{"constructor error", connect.Config{"transforms": "p", "transforms.p.type": "test.Picky", "transforms.p.max": "8"},
			[]connect.KeyError{{Key: "transforms.p.type", Message: "Invalid value test.Picky for configuration transforms.p.type: cannot start"}}},
		{"constructor KeyError", connect.Config{"transforms": "p", "transforms.p.type": "test.Picky", "transforms.p.max": "7"},
			[]connect.KeyError{{Key: "transforms.p.max", Message: "seven is unlucky"}}},
		{"Validate", connect.Config{"transforms": "p", "transforms.p.type": "test.Picky", "transforms.p.min": "11"},
			[]connect.KeyError{{Key: "transforms.p.min", Message: "min must not exceed max"}}},
		{"predicate key", connect.Config{"predicates": "p", "predicates.p.type": "TopicNameMatches"},
			[]connect.KeyError{{Key: "predicates.p.pattern", Message: `Missing required configuration "predicates.p.pattern"`}}},
		{"every problem at once", connect.Config{
			"transforms": "a,b,c", "transforms.a.type": "Nope", "transforms.c.type": "Cast$Value", "transforms.c.spec": "x:bytes",
			"predicates": "p", "predicates.p.type": "HasHeaderKey",
		}, []connect.KeyError{
			{Key: "predicates.p.name", Message: "Missing required configuration"},
			{Key: "transforms.a.type", Message: "Class Nope could not be found"},
			{Key: "transforms.b.type", Message: "Missing required configuration"},
			{Key: "transforms.c.spec", Message: "Invalid value x:bytes for configuration transforms.c.spec: Cast transformation does not support casting to BYTES"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			chain, errs := connect.NewTransformChain(reg, tc.cfg)
			if chain != nil {
				t.Errorf("got a chain despite errors %v", errs)
			}
			if len(errs) != len(tc.want) {
				t.Fatalf("errors = %v, want %d: %v", errs, len(tc.want), tc.want)
			}
			for i, want := range tc.want {
				if errs[i].Key != want.Key || !strings.Contains(errs[i].Message, want.Message) {
					t.Errorf("error %d = %q: %q\nwant         %q: %q", i, errs[i].Key, errs[i].Message, want.Key, want.Message)
				}
			}
		})
	}
}

func TestTransformChainKeys(t *testing.T) {
	reg := chainRegistry(t)
	keys := connect.TransformChainKeys(reg, connect.Config{
		"transforms":            "route,x,route",
		"transforms.route.type": "RegexRouter",
		"transforms.x.type":     "com.example.Unknown",
		"predicates":            "p",
		"predicates.p.type":     "HasHeaderKey",
	})
	var got []string
	for _, k := range keys {
		got = append(got, fmt.Sprintf("%s|%s|%s", k.Name, k.Group, k.Type))
	}
	want := []string{
		"transforms.route.type|Transforms: route|CLASS",
		"transforms.route.predicate|Transforms: route|STRING",
		"transforms.route.negate|Transforms: route|BOOLEAN",
		"transforms.route.regex|Transforms: route|STRING",
		"transforms.route.replacement|Transforms: route|STRING",
		"transforms.x.type|Transforms: x|CLASS",
		"transforms.x.predicate|Transforms: x|STRING",
		"transforms.x.negate|Transforms: x|BOOLEAN",
		"predicates.p.type|Predicates: p|CLASS",
		"predicates.p.name|Predicates: p|STRING",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("keys =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if keys[0].Doc != "Class for the 'route' transformation." || !keys[0].Required || keys[4].Doc == "" {
		t.Errorf("type key = %+v; want Kafka's doc, required", keys[0])
	}
	if len(connect.TransformChainKeys(reg, nil)) != 0 {
		t.Error("a config without transforms has chain keys")
	}
}
