package configs

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Source says where a described value comes from, numbered as Kafka's
// DescribeConfigs ConfigSource. It is kmsg's type.
type Source = kmsg.ConfigSource

// The sources Runnel reports.
const (
	SourceTopic                = kmsg.ConfigSourceDynamicTopicConfig         // 1: the topic's own config
	SourceDynamicBroker        = kmsg.ConfigSourceDynamicBrokerConfig        // 2: this broker's dynamic config
	SourceDynamicDefaultBroker = kmsg.ConfigSourceDynamicDefaultBrokerConfig // 3: the cluster-wide dynamic default
	SourceStaticBroker         = kmsg.ConfigSourceStaticBrokerConfig         // 4: config file or flag
	SourceDefault              = kmsg.ConfigSourceDefaultConfig              // 5: built-in default
)

func sourceName(s Source) string {
	switch s {
	case SourceTopic:
		return "topic config"
	case SourceDynamicBroker:
		return "dynamic broker config"
	case SourceDynamicDefaultBroker:
		return "dynamic cluster-wide default"
	case SourceStaticBroker:
		return "static broker config"
	case SourceDefault:
		return "default"
	}
	return s.String()
}

// Entry is one config as DescribeConfigs reports it (v1+; v3+ adds Type
// and Doc). Its fields map one to one onto
// kmsg.DescribeConfigsResponseResourceConfig; v0's IsDefault is
// Source == SourceDefault.
type Entry struct {
	Name string
	// Value is the effective value in canonical form; nil when the key is
	// unset and has no default, or is Sensitive.
	Value     *string
	Source    Source
	ReadOnly  bool
	Sensitive bool
	Type      Type
	Doc       string
	// Synonyms are every value set for the config, highest precedence
	// first, as Kafka lists them; send them only when the request asks
	// for synonyms.
	Synonyms []Synonym
}

// Synonym is one value set for a config, under its own name or another:
// for retention.ms, the topic's retention.ms, log.retention.ms,
// log.retention.hours (raw unit, as set) ...
type Synonym struct {
	Name   string
	Value  *string // nil when Sensitive
	Source Source
}

// DescribeTopic describes every topic config of a topic whose own configs
// are topic, in name order. Value is the effective value in the topic's
// unit (retention.ms shows 86400000 when log.retention.hours=24 applies);
// Source is where it came from; Synonyms list the topic's own value, then
// each broker synonym set at each level, then the defaults.
//
// One deliberate difference from Kafka: Kafka drops broker synonyms listed
// before the first one named like the broker key (so with only
// log.retention.hours set, it reports retention.ms as DEFAULT_CONFIG
// without synonyms); Runnel keeps them, so Source is always where the value
// really came from.
func DescribeTopic(topic map[string]string, b BrokerLayers) []Entry {
	out := make([]Entry, 0, len(topicTable.sorted))
	for _, d := range topicTable.sorted {
		e := Entry{Name: d.Name, Source: SourceDefault, Type: d.Type, Doc: d.Doc, Sensitive: d.Sensitive}
		if v, ok := topic[d.Name]; ok {
			e.Synonyms = append(e.Synonyms, Synonym{d.Name, display(d, v), SourceTopic})
		}
		if len(d.BrokerSynonyms) > 0 {
			for _, c := range brokerCandidates(d.BrokerSynonyms, b, true, false) {
				e.Synonyms = append(e.Synonyms, Synonym{c.def.Name, display(c.def, c.raw), c.source})
			}
		}
		if len(e.Synonyms) > 0 {
			e.Source = e.Synonyms[0].Source
		}
		if c, ok := topicSource(d, topic, b); ok && !d.Sensitive {
			v, err := topicValue(d, topic, b)
			if err != nil {
				v = c.raw // show what is stored; ResolveTopic reports the error
			}
			e.Value = &v
		}
		out = append(out, e)
	}
	return out
}

// DescribeBroker describes every broker config of this broker (resource
// name = its node.id), in name order. Value is the key's own effective
// value (nil if unset without default: log.retention.ms is nil while
// log.retention.hours supplies the retention); Source is where it came
// from; Synonyms list, as Kafka does, the values of the key and of the
// names after it in its synonym chain (log.retention.ms, .minutes, .hours),
// level by level. ReadOnly is !Dynamic.
func DescribeBroker(b BrokerLayers) []Entry {
	out := make([]Entry, 0, len(brokerTable.sorted))
	for _, d := range brokerTable.sorted {
		out = append(out, describeBrokerKey(d, b, true))
	}
	return out
}

// DescribeBrokerDefaults describes the cluster-wide dynamic defaults (the
// broker resource with an empty name): only the keys set in
// b.DynamicDefault, with synonyms below the per-broker level.
func DescribeBrokerDefaults(b BrokerLayers) []Entry {
	var out []Entry
	for _, d := range brokerTable.sorted {
		if _, ok := b.DynamicDefault[d.Name]; ok && d.Dynamic {
			out = append(out, describeBrokerKey(d, b, false))
		}
	}
	return out
}

func describeBrokerKey(d *Def, b BrokerLayers, perBroker bool) Entry {
	e := Entry{Name: d.Name, Source: SourceDefault, ReadOnly: d.ReadOnly(), Sensitive: d.Sensitive, Type: d.Type, Doc: d.Doc}
	cs := brokerCandidates(brokerChain(d.Name), b, perBroker, false)
	for len(cs) > 0 && cs[0].def != d {
		cs = cs[1:] // Kafka's dropWhile(name != this key)
	}
	for _, c := range cs {
		e.Synonyms = append(e.Synonyms, Synonym{c.def.Name, display(c.def, c.raw), c.source})
	}
	if len(cs) > 0 {
		e.Source = cs[0].source
		if !d.Sensitive {
			e.Value = e.Synonyms[0].Value
		}
	}
	return e
}

// display returns v in canonical form (or as is if invalid), or nil for a
// sensitive key.
func display(d *Def, v string) *string {
	if d.Sensitive {
		return nil
	}
	if n, reason := d.normalize(v); reason == "" {
		v = n
	}
	return &v
}
