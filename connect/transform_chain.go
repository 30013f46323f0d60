package connect

// The transformation chain of a connector: the transforms and predicates
// its config names, built from the Registry and applied to each record in
// order.
//
//	transforms=route,drop
//	transforms.route.type=org.apache.kafka.connect.transforms.RegexRouter
//	transforms.route.regex=(.*)-raw
//	transforms.route.replacement=$1
//	transforms.drop.type=org.apache.kafka.connect.transforms.Filter
//	transforms.drop.predicate=isTombstone
//	predicates=isTombstone
//	predicates.isTombstone.type=org.apache.kafka.connect.transforms.predicates.RecordIsTombstone

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// ErrTransform matches (errors.Is) every error TransformChain.Apply
// returns: a transform failed on a record. The runtime treats it as a
// record error (errors.tolerance, dead letter queue), not a task failure.
var ErrTransform = errors.New("connect: transform failed")

// TransformChain applies a connector's transforms to records. It is built
// once per task and used from the task's goroutine; the built-in
// transforms and predicates are also safe for concurrent use.
type TransformChain struct {
	stages []transformStage
}

type transformStage struct {
	alias  string
	class  string
	t      Transformation
	pred   Predicate // nil: always applies
	negate bool
}

const (
	transformsKey = "transforms"
	predicatesKey = "predicates"
)

// NewTransformChain builds the chain a connector config describes:
//
//   - transforms: the transform aliases, in the order they apply;
//   - transforms.<alias>.type: the class (or alias) of a Transformation
//     plugin in reg, configured by the keys transforms.<alias>.<key>;
//   - transforms.<alias>.predicate: optionally, the alias of a predicate;
//     the transform then applies only to records it matches, or with
//     transforms.<alias>.negate=true only to those it does not;
//   - predicates, predicates.<alias>.type and predicates.<alias>.<key>:
//     the predicates, likewise.
//
// It returns every problem found, each on the full name of its key
// (transforms.route.regex), and a chain only when there is none. A config
// without transforms gives an empty chain.
func NewTransformChain(reg *Registry, cfg Config) (*TransformChain, []KeyError) {
	var errs []KeyError
	predAliases, aerrs := stageAliases(cfg, predicatesKey)
	errs = append(errs, aerrs...)
	preds := make(map[string]Predicate, len(predAliases))
	for _, alias := range predAliases {
		p, own, perrs := parseStage(reg, cfg, PredicatePlugin, alias)
		errs = append(errs, perrs...)
		if len(perrs) > 0 {
			continue
		}
		pred, err := p.NewPredicate(own)
		if err != nil {
			errs = append(errs, constructionError(PredicatePlugin, alias, p.Class, err))
			continue
		}
		preds[alias] = pred
	}

	aliases, aerrs := stageAliases(cfg, transformsKey)
	errs = append(errs, aerrs...)
	chain := &TransformChain{stages: make([]transformStage, 0, len(aliases))}
	for _, alias := range aliases {
		prefix := stagePrefix(TransformationPlugin, alias)
		p, own, terrs := parseStage(reg, cfg, TransformationPlugin, alias)
		errs = append(errs, terrs...)
		if len(terrs) > 0 {
			continue
		}
		st := transformStage{alias: alias, class: p.Class, negate: own.Bool("negate")}
		predKey, negateKey := prefix+"predicate", prefix+"negate"
		if pa := strings.TrimSpace(own.String("predicate")); pa != "" {
			switch pred, ok := preds[pa]; {
			case ok:
				st.pred = pred
			case !contains(predAliases, pa):
				errs = append(errs, KeyError{predKey, fmt.Sprintf("Invalid value %s for configuration %s: no predicate has the alias %q (predicates=%s)",
					pa, predKey, pa, cfg[predicatesKey])})
			}
			// A listed predicate that failed to build is reported on its
			// own keys.
		} else if st.negate {
			errs = append(errs, KeyError{negateKey, fmt.Sprintf("Invalid value true for configuration %s: negate needs a predicate (%s)", negateKey, predKey)})
		}
		t, err := p.NewTransformation(own)
		if err != nil {
			errs = append(errs, constructionError(TransformationPlugin, alias, p.Class, err))
			continue
		}
		st.t = t
		chain.stages = append(chain.stages, st)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return chain, nil
}

// Apply runs the transforms in order on r, changing it in place. A
// transform whose predicate does not match (after negate) is skipped; one
// that drops the record ends the chain with keep false. An error wraps
// ErrTransform and names the transform; a panicking transform is turned
// into such an error. A nil chain keeps every record.
func (c *TransformChain) Apply(r *Record) (keep bool, err error) {
	if c == nil {
		return true, nil
	}
	for i := range c.stages {
		s := &c.stages[i]
		if s.pred != nil && s.pred.Test(r) == s.negate {
			continue
		}
		keep, err := s.apply(r)
		if err != nil {
			return false, fmt.Errorf("%w: %s (%s): %w", ErrTransform, s.alias, s.class, err)
		}
		if !keep {
			return false, nil
		}
	}
	return true, nil
}

func (s *transformStage) apply(r *Record) (keep bool, err error) {
	defer func() {
		if p := recover(); p != nil {
			keep, err = false, fmt.Errorf("panic: %v", p)
		}
	}()
	return s.t.Apply(r)
}

// TransformChainKeys lists the config keys of the transforms and
// predicates cfg names, with their full names (transforms.route.regex):
// for each alias its type (and for a transform predicate and negate),
// then the plugin's own keys, in the group "Transforms: <alias>" or
// "Predicates: <alias>", as Kafka's validate endpoint shows them. The
// transforms and predicates keys themselves belong to the connector's
// definition. Aliases whose type is missing or unknown list only their
// common keys.
func TransformChainKeys(reg *Registry, cfg Config) []ConfigKey {
	var out []ConfigKey
	for _, kind := range []PluginType{TransformationPlugin, PredicatePlugin} {
		listKey := transformsKey
		if kind == PredicatePlugin {
			listKey = predicatesKey
		}
		aliases, _ := stageAliases(cfg, listKey)
		for _, alias := range aliases {
			p, _ := stagePlugin(reg, kind, "", strings.TrimSpace(cfg[stagePrefix(kind, alias)+"type"]))
			out = append(out, stageDef(kind, alias, p).Keys()...)
		}
	}
	return out
}

// stageAliases reads a list of aliases; a duplicate is an error, and is
// left out.
func stageAliases(cfg Config, key string) ([]string, []KeyError) {
	var out []string
	var errs []KeyError
	for _, a := range cfg.List(key) {
		if contains(out, a) {
			errs = append(errs, KeyError{key, fmt.Sprintf("Invalid value %s for configuration %s: Duplicate alias provided.", cfg[key], key)})
			continue
		}
		out = append(out, a)
	}
	return out, errs
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func stagePrefix(kind PluginType, alias string) string {
	if kind == PredicatePlugin {
		return predicatesKey + "." + alias + "."
	}
	return transformsKey + "." + alias + "."
}

// parseStage finds the plugin of one alias and checks its keys. It
// returns the plugin's own config (the keys under the alias's prefix,
// without it, defaults filled in) only when there is no problem.
func parseStage(reg *Registry, cfg Config, kind PluginType, alias string) (*Plugin, Config, []KeyError) {
	prefix := stagePrefix(kind, alias)
	typeKey := prefix + "type"
	var errs []KeyError
	p, err := stagePlugin(reg, kind, typeKey, strings.TrimSpace(cfg[typeKey]))
	if err != nil {
		errs = append(errs, *err)
	}
	parsed, perrs := stageDef(kind, alias, p).Parse(cfg)
	errs = append(errs, perrs...)
	if p == nil || len(errs) > 0 {
		return nil, nil, errs
	}
	own := parsed.Sub(prefix)
	if p.Validate != nil {
		for _, e := range p.Validate(own) {
			errs = append(errs, KeyError{prefix + e.Key, e.Message})
		}
	}
	if len(errs) > 0 {
		return nil, nil, errs
	}
	return p, own, nil
}

// stagePlugin looks up the plugin a type key names; an empty class is
// left to the key's Required check.
func stagePlugin(reg *Registry, kind PluginType, typeKey, class string) (*Plugin, *KeyError) {
	if class == "" {
		return nil, nil
	}
	what := pluginNoun(kind)
	p, err := reg.Lookup(class)
	if err != nil {
		var known []string
		for _, q := range reg.Plugins() {
			if q.Type == kind {
				known = append(known, q.Class)
			}
		}
		sort.Strings(known)
		return nil, &KeyError{typeKey, fmt.Sprintf("Invalid value %s for configuration %s: Class %s could not be found (known %ss: %s)",
			class, typeKey, class, what, strings.Join(known, ", "))}
	}
	if p.Type != kind {
		return nil, &KeyError{typeKey, fmt.Sprintf("Invalid value %s for configuration %s: %s is a %s plugin, not a %s",
			class, typeKey, class, p.Type, what)}
	}
	return p, nil
}

func pluginNoun(kind PluginType) string {
	if kind == PredicatePlugin {
		return "predicate"
	}
	return "transformation"
}

// stageDef defines the keys of one alias with their full names: its type
// (and for a transform predicate and negate), then the plugin's own keys.
func stageDef(kind PluginType, alias string, p *Plugin) *ConfigDef {
	prefix := stagePrefix(kind, alias)
	what := pluginNoun(kind)
	group := "Transforms: " + alias
	if kind == PredicatePlugin {
		group = "Predicates: " + alias
	}
	keys := []ConfigKey{{
		Name: prefix + "type", Type: TypeClass, Required: true, Importance: High, Group: group,
		DisplayName: fmt.Sprintf("%s type for %s", strings.ToUpper(what[:1])+what[1:], alias),
		Doc:         fmt.Sprintf("Class for the '%s' %s.", alias, what),
	}}
	reserved := map[string]bool{"type": true}
	if kind == TransformationPlugin {
		reserved["predicate"], reserved["negate"] = true, true
		keys = append(keys,
			ConfigKey{Name: prefix + "predicate", Type: TypeString, Importance: Medium, Group: group,
				DisplayName: "Predicate for " + alias,
				Doc:         "The alias of a predicate used to determine whether to apply this transformation."},
			ConfigKey{Name: prefix + "negate", Type: TypeBoolean, Default: "false", Importance: Medium, Group: group,
				DisplayName: "Negate predicate for " + alias,
				Doc:         "Whether the configured predicate should be negated."},
		)
	}
	if p != nil {
		for _, k := range p.Config.Keys() {
			if reserved[k.Name] {
				continue
			}
			k.Name = prefix + k.Name
			k.Group = group
			keys = append(keys, k)
		}
	}
	return NewConfigDef(keys...)
}

// constructionError reports a plugin constructor's error: on the key it
// names when it is a KeyError (relative to the alias), else on the type.
func constructionError(kind PluginType, alias, class string, err error) KeyError {
	prefix := stagePrefix(kind, alias)
	var ke KeyError
	if errors.As(err, &ke) {
		// "Invalid value x for configuration regex: ..." gets the full name.
		msg := strings.Replace(ke.Message, "configuration "+ke.Key+":", "configuration "+prefix+ke.Key+":", 1)
		return KeyError{prefix + ke.Key, msg}
	}
	return KeyError{prefix + "type", fmt.Sprintf("Invalid value %s for configuration %stype: %v", class, prefix, err)}
}
