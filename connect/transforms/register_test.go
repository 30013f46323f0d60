package transforms

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/runnel-io/runnel/connect"
)

func registry(t testing.TB) *connect.Registry {
	t.Helper()
	reg := connect.NewRegistry()
	if err := Register(reg); err != nil {
		t.Fatal(err)
	}
	return reg
}

// newTransform builds a registered transform by class or alias.
func newTransform(t testing.TB, class string, cfg connect.Config) connect.Transformation {
	t.Helper()
	p, err := registry(t).Lookup(class)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := p.NewTransformation(cfg)
	if err != nil {
		t.Fatalf("%s %v: %v", class, cfg, err)
	}
	return tr
}

// transformCase is one record through a transform: the record it gives,
// or an error containing err.
type transformCase struct {
	name string
	in   connect.Record
	want connect.Record
	err  string
}

func runCases(t *testing.T, tr connect.Transformation, cases []transformCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := deepCopy(tc.in.Value)
			beforeKey := deepCopy(tc.in.Key)
			r := tc.in
			keep, err := tr.Apply(&r)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, ErrData) {
					t.Fatalf("Apply = %v, %v; want an ErrData containing %q", keep, err, tc.err)
				}
				return
			}
			if err != nil || !keep {
				t.Fatalf("Apply = %v, %v", keep, err)
			}
			if !reflect.DeepEqual(r, tc.want) {
				t.Errorf("record =\n%s\nwant\n%s", dump(r), dump(tc.want))
			}
			if !reflect.DeepEqual(tc.in.Value, before) || !reflect.DeepEqual(tc.in.Key, beforeKey) {
				t.Errorf("the input's maps changed: %#v, %#v", tc.in.Key, tc.in.Value)
			}
		})
	}
}

func dump(r connect.Record) string {
	return fmt.Sprintf("  topic %q key %#v (%s)\n  value %#v (%s)", r.Topic, r.Key, dumpSchema(r.KeySchema), r.Value, dumpSchema(r.ValueSchema))
}

func dumpSchema(s *connect.Schema) string {
	if s == nil {
		return "no schema"
	}
	out := fmt.Sprintf("%s optional=%v name=%q default=%#v", s.Type, s.Optional, s.Name, s.Default)
	for _, f := range s.Fields {
		out += fmt.Sprintf(" [%s: %s]", f.Name, dumpSchema(f.Schema))
	}
	return out
}

func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = deepCopy(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = deepCopy(e)
		}
		return out
	}
	return v
}

// Schemas used across the tests.
var (
	int32Schema = &connect.Schema{Type: connect.Int32}
	strSchema   = &connect.Schema{Type: connect.String}
	optStr      = &connect.Schema{Type: connect.String, Optional: true}
)

func structSchema(fields ...any) *connect.Schema {
	s := &connect.Schema{Type: connect.Struct, Name: "com.example.V", Version: 1}
	for i := 0; i+1 < len(fields); i += 2 {
		s.Fields = append(s.Fields, connect.Field{Name: fields[i].(string), Schema: fields[i+1].(*connect.Schema)})
	}
	return s
}

func TestRegisterNamesEveryPluginAsKafka(t *testing.T) {
	reg := registry(t)
	for _, name := range []string{
		"org.apache.kafka.connect.transforms.InsertField$Key", "org.apache.kafka.connect.transforms.InsertField$Value",
		"org.apache.kafka.connect.transforms.ReplaceField$Key", "org.apache.kafka.connect.transforms.ReplaceField$Value",
		"org.apache.kafka.connect.transforms.MaskField$Key", "org.apache.kafka.connect.transforms.MaskField$Value",
		"org.apache.kafka.connect.transforms.Cast$Key", "org.apache.kafka.connect.transforms.Cast$Value",
		"org.apache.kafka.connect.transforms.ExtractField$Key", "org.apache.kafka.connect.transforms.ExtractField$Value",
		"org.apache.kafka.connect.transforms.ValueToKey", "org.apache.kafka.connect.transforms.RegexRouter",
		"org.apache.kafka.connect.transforms.TimestampRouter", "org.apache.kafka.connect.transforms.Filter",
		"org.apache.kafka.connect.transforms.predicates.TopicNameMatches",
		"org.apache.kafka.connect.transforms.predicates.HasHeaderKey",
		"org.apache.kafka.connect.transforms.predicates.RecordIsTombstone",
	} {
		p, err := reg.Lookup(name)
		if err != nil {
			t.Errorf("Lookup(%s): %v", name, err)
			continue
		}
		short := name[strings.LastIndex(name, ".")+1:]
		if q, err := reg.Lookup(short); err != nil || q != p {
			t.Errorf("alias %s: %v", short, err)
		}
		if p.Doc == "" {
			t.Errorf("%s has no doc", name)
		}
		for _, k := range p.Config.Keys() {
			if k.Doc == "" || k.Type == "" || k.Importance == "" {
				t.Errorf("%s: key %s lacks a doc, type or importance", name, k.Name)
			}
		}
	}
	if err := Register(reg); err == nil || !strings.Contains(err.Error(), "registered twice") {
		t.Errorf("second Register = %v, want a clash", err)
	}
}

// TestTransformsNeverPanic runs every transform on values of every shape;
// errors are fine, panics are not.
func TestTransformsNeverPanic(t *testing.T) {
	configs := map[string]connect.Config{
		"InsertField$Key":    {"topic.field": "t!", "partition.field": "p", "offset.field": "o!", "timestamp.field": "ts!", "static.field": "s", "static.value": "v"},
		"InsertField$Value":  {"topic.field": "t!", "partition.field": "p", "offset.field": "o!", "timestamp.field": "ts!", "static.field": "s", "static.value": "v"},
		"ReplaceField$Key":   {"exclude": "a", "renames": "b:a"},
		"ReplaceField$Value": {"include": "a,b", "renames": "b:c"},
		"MaskField$Key":      {"fields": "a,b"},
		"MaskField$Value":    {"fields": "a,b", "replacement": "7"},
		"Cast$Key":           {"spec": "int8"},
		"Cast$Value":         {"spec": "a:int8,b:string,c:boolean"},
		"ExtractField$Key":   {"field": "a"},
		"ExtractField$Value": {"field": "a.b", "field.syntax.version": "V2"},
		"ValueToKey":         {"fields": "a,b"},
		"RegexRouter":        {"regex": "(.*)", "replacement": "$1-x"},
		"TimestampRouter":    {},
		"Filter":             {},
	}
	weird := []any{
		nil, "s", int64(3), 1.5, true, []byte{1}, []any{1, "x"}, map[string]any{},
		map[string]any{"a": nil, "b": []any{nil}, "c": map[string]any{"b": 1}},
		map[string]any{"a": func() {}, "b": map[int]int{}, "c": []string{"x"}},
		map[string]any{"a": map[string]any{"b": map[string]any{}}, "b": []byte("x"), "c": 1e300},
	}
	schemas := []*connect.Schema{
		nil, int32Schema, {Type: connect.Struct}, structSchema("a", int32Schema, "b", strSchema),
		structSchema("a", structSchema("b", optStr), "c", &connect.Schema{Type: connect.Array, Items: strSchema}),
		{Type: connect.Map, Keys: strSchema, Values: strSchema},
	}
	for class, cfg := range configs {
		tr := newTransform(t, class, cfg)
		for _, s := range schemas {
			for _, v := range weird {
				for _, ts := range []time.Time{{}, time.Unix(1, 0)} {
					r := connect.Record{Topic: "t", Key: v, KeySchema: s, Value: v, ValueSchema: s, Timestamp: ts}
					func() {
						defer func() {
							if p := recover(); p != nil {
								t.Errorf("%s on %#v (%s): panic %v", class, v, dumpSchema(s), p)
							}
						}()
						tr.Apply(&r)
					}()
				}
			}
		}
	}
}
