package configs

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// null marks a row without a default (Kafka's null default).
const null = "\x00null"

// maxLong is Kafka's Long.MAX_VALUE, its spelling of "no limit".
const maxLong = "9223372036854775807"

// newDef builds one table row; the chained helpers below set the rest.
func newDef(name string, typ Type, dflt string, c check, doc string) *Def {
	d := &Def{Name: name, Type: typ, Doc: doc, Valid: c.valid, Validate: c.fn}
	if dflt != null {
		d.Default, d.HasDefault = dflt, true
	}
	return d
}

// dynamic marks a broker key changeable at runtime.
func (d *Def) dynamic() *Def { d.Dynamic = true; return d }

// synonyms sets a topic config's broker keys, in precedence order.
func (d *Def) synonyms(names ...string) *Def { d.BrokerSynonyms = names; return d }

// scaled says the broker key's unit is ms milliseconds (60000 for minutes).
func (d *Def) scaled(ms int64) *Def { d.toMs = ms; return d }

// table is one resource's rows, by name and sorted.
type table struct {
	byName map[string]*Def
	sorted []*Def
}

func newTable(broker bool, defs []*Def) table {
	t := table{byName: make(map[string]*Def, len(defs))}
	for _, d := range defs {
		if _, dup := t.byName[d.Name]; dup {
			panic("configs: duplicate row " + d.Name)
		}
		if d.HasDefault {
			if n, reason := d.normalize(d.Default); reason != "" || n != d.Default {
				panic(fmt.Sprintf("configs: default %q of %s is not canonical (%s)", d.Default, d.Name, reason))
			}
		}
		d.isBroker = broker
		t.byName[d.Name] = d
		t.sorted = append(t.sorted, d)
	}
	slices.SortFunc(t.sorted, func(a, b *Def) int { return strings.Compare(a.Name, b.Name) })
	return t
}

// TopicDef returns the row of a topic config.
func TopicDef(name string) (*Def, bool) { d, ok := topicTable.byName[name]; return d, ok }

// BrokerDef returns the row of a broker config.
func BrokerDef(name string) (*Def, bool) { d, ok := brokerTable.byName[name]; return d, ok }

// TopicDefs returns every topic config, sorted by name.
func TopicDefs() []*Def { return slices.Clone(topicTable.sorted) }

// BrokerDefs returns every broker config, sorted by name.
func BrokerDefs() []*Def { return slices.Clone(brokerTable.sorted) }

// brokerChain returns the names whose values stand for the same setting as
// the broker key name, in precedence order (Kafka's brokerConfigSynonyms):
// log.retention.ms, log.retention.minutes, log.retention.hours for any of
// the three; just the name for most keys.
func brokerChain(name string) []string {
	if chain, ok := chains[name]; ok {
		return chain
	}
	return []string{name}
}

// chains maps each broker key of a multi-key synonym list to the list.
var chains = func() map[string][]string {
	m := map[string][]string{}
	for _, d := range topicTable.sorted {
		if len(d.BrokerSynonyms) > 1 {
			for _, n := range d.BrokerSynonyms {
				m[n] = d.BrokerSynonyms
			}
		}
	}
	return m
}()

// scaleToMs converts a broker synonym's canonical value to its topic
// config's unit. Negative retention values mean "unlimited", which Kafka
// spells -1 in milliseconds, so a negative scaled value becomes -1.
func scaleToMs(d *Def, v string) string {
	if d.toMs <= 1 {
		return v
	}
	i, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return v
	}
	if i < 0 {
		return "-1"
	}
	return strconv.FormatInt(i*d.toMs, 10)
}

// suggest returns a " (did you mean ...?)" hint for an unknown key, or "".
// It looks through t for a key equal after folding case and separators, or
// within a small edit distance.
func (t table) suggest(name string) string {
	fold := func(s string) string {
		return strings.NewReplacer("_", ".", "-", ".").Replace(strings.ToLower(s))
	}
	f := fold(name)
	best, bestDist := "", 3
	for _, d := range t.sorted {
		if fold(d.Name) == f {
			return fmt.Sprintf(" (did you mean %s?)", d.Name)
		}
		if dist := editDistance(f, d.Name); dist < bestDist {
			best, bestDist = d.Name, dist
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %s?)", best)
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
