package connect

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Herder manages the connectors of a Connect cluster: the REST API is a
// thin layer over it. Standalone mode has one herder per worker; in
// distributed mode each worker has one, and they agree through Kafka.
type Herder interface {
	Connectors(ctx context.Context) ([]string, error)
	ConnectorInfo(ctx context.Context, name string) (ConnectorInfo, error)
	ConnectorStatus(ctx context.Context, name string) (ConnectorStatus, error)
	// PutConnectorConfig creates or (when allowReplace) replaces a
	// connector's config; created says which.
	PutConnectorConfig(ctx context.Context, name string, cfg Config, allowReplace bool) (info ConnectorInfo, created bool, err error)
	DeleteConnector(ctx context.Context, name string) error
	TaskConfigs(ctx context.Context, name string) ([]TaskInfo, error)
	TaskStatus(ctx context.Context, id TaskID) (TaskStatus, error)
	RestartTask(ctx context.Context, id TaskID) error
	// RestartConnector restarts the connector and, as asked, its tasks;
	// it returns the status with the states they restart from.
	RestartConnector(ctx context.Context, name string, includeTasks, onlyFailed bool) (ConnectorStatus, error)
	SetTargetState(ctx context.Context, name string, target TargetState) error
	Offsets(ctx context.Context, name string) (ConnectorOffsets, error)
	// AlterOffsets and ResetOffsets need the connector stopped.
	AlterOffsets(ctx context.Context, name string, offsets ConnectorOffsets) error
	ResetOffsets(ctx context.Context, name string) error
	Validate(ctx context.Context, cfg Config) (ConfigInfos, error)
	Plugins() []*Plugin
	WorkerID() string
}

// The herder's errors; the REST API maps them to status codes.
var (
	ErrNotFound   = errors.New("not found")             // 404
	ErrConflict   = errors.New("conflict")              // 409
	ErrBadRequest = errors.New("bad request")           // 400
	ErrRebalance  = errors.New("rebalance in progress") // 409 in Kafka
)

// herderError carries a message for the response and the kind.
type herderError struct {
	kind error
	msg  string
}

func (e *herderError) Error() string { return e.msg }
func (e *herderError) Unwrap() error { return e.kind }

func newHerderError(kind error, format string, args ...any) error {
	return &herderError{kind: kind, msg: fmt.Sprintf(format, args...)}
}

func notFound(name string) error {
	return newHerderError(ErrNotFound, "Connector %s not found", name)
}

// ConnectorOffsets is GET /connectors/{name}/offsets: source offsets as
// their connector wrote them; sink offsets as
// {"kafka_topic","kafka_partition"} → {"kafka_offset"}.
type ConnectorOffsets struct {
	Offsets []SourceOffset `json:"offsets"`
}

// ConfigInfos is the validate endpoint's answer, in Kafka Connect's shape.
type ConfigInfos struct {
	Name       string       `json:"name"`
	ErrorCount int          `json:"error_count"`
	Groups     []string     `json:"groups"`
	Configs    []ConfigInfo `json:"configs"`
}

// ConfigInfo is one key's definition and value.
type ConfigInfo struct {
	Definition ConfigKeyInfo   `json:"definition"`
	Value      ConfigValueInfo `json:"value"`
}

// ConfigKeyInfo is a key's definition.
type ConfigKeyInfo struct {
	Name          string   `json:"name"`
	Type          string   `json:"type"`
	Required      bool     `json:"required"`
	DefaultValue  *string  `json:"default_value"`
	Importance    string   `json:"importance"`
	Documentation string   `json:"documentation"`
	Group         string   `json:"group"`
	Width         string   `json:"width"`
	DisplayName   string   `json:"display_name"`
	Dependents    []string `json:"dependents"`
	Order         int      `json:"order"`
}

// ConfigValueInfo is a key's value and its problems.
type ConfigValueInfo struct {
	Name              string   `json:"name"`
	Value             *string  `json:"value"`
	RecommendedValues []string `json:"recommended_values"`
	Errors            []string `json:"errors"`
	Visible           bool     `json:"visible"`
}

// validateConfig checks a connector config against the runtime's keys,
// the sink keys (for sinks), the plugin's keys and the transform chain's.
// It returns the validate endpoint's answer; the connector's plugin is
// nil when connector.class names none.
func validateConfig(reg *Registry, cfg Config) (ConfigInfos, *Plugin) {
	def := connectorDef
	var plugin *Plugin
	var extra []KeyError
	class := strings.TrimSpace(cfg[KeyConnectorClass])
	if class != "" {
		p, err := reg.Lookup(class)
		switch {
		case err != nil:
			extra = append(extra, KeyError{KeyConnectorClass, err.Error()})
		case p.Type != SourcePlugin && p.Type != SinkPlugin:
			extra = append(extra, KeyError{KeyConnectorClass, fmt.Sprintf("%s is a %s plugin, not a connector", class, p.Type)})
		default:
			plugin = p
		}
	}
	if plugin != nil {
		if plugin.Type == SinkPlugin {
			def = def.With(sinkDef)
		}
		def = def.With(plugin.Config)
	}
	resolved, err := resolveSecrets(cfg)
	if err != nil {
		resolved = cfg
		extra = append(extra, KeyError{secretKey(err, cfg), err.Error()})
	}
	parsed, errs := def.Parse(resolved)
	errs = append(errs, extra...)
	if len(errs) == 0 && plugin != nil {
		if plugin.Type == SinkPlugin {
			errs = append(errs, checkSinkTopics(parsed)...)
		}
		if plugin.Validate != nil {
			errs = append(errs, plugin.Validate(parsed)...)
		}
	}
	chainKeys := TransformChainKeys(reg, cfg)
	if _, cerrs := NewTransformChain(reg, parsed); len(cerrs) > 0 {
		errs = append(errs, cerrs...)
	}

	byKey := map[string][]string{}
	for _, e := range errs {
		byKey[e.Key] = append(byKey[e.Key], e.Message)
	}
	name := class
	if plugin != nil {
		name = plugin.Class
	}
	out := ConfigInfos{Name: name, Groups: []string{}}
	groups := map[string]bool{}
	order := map[string]int{}
	shown := map[string]bool{}
	add := func(k ConfigKey) {
		if shown[k.Name] {
			return
		}
		shown[k.Name] = true
		if k.Group != "" && !groups[k.Group] {
			groups[k.Group] = true
			out.Groups = append(out.Groups, k.Group)
		}
		order[k.Group]++
		ci := ConfigInfo{
			Definition: ConfigKeyInfo{Name: k.Name, Type: string(k.Type), Required: k.Required, Importance: string(k.Importance),
				Documentation: k.Doc, Group: k.Group, Width: "NONE", DisplayName: k.DisplayName, Dependents: []string{}, Order: order[k.Group]},
			Value: ConfigValueInfo{Name: k.Name, RecommendedValues: append([]string{}, k.Recommended...), Errors: append([]string{}, byKey[k.Name]...), Visible: true},
		}
		if ci.Definition.DisplayName == "" {
			ci.Definition.DisplayName = k.Name
		}
		if !k.Required {
			d := k.Default
			ci.Definition.DefaultValue = &d
		}
		if v, ok := cfg[k.Name]; ok {
			if k.Type == TypePassword && !secretRef.MatchString(v) {
				v = HiddenValue
			}
			ci.Value.Value = &v
		} else if !k.Required {
			d := k.Default
			ci.Value.Value = &d
		}
		out.ErrorCount += len(ci.Value.Errors)
		delete(byKey, k.Name)
		out.Configs = append(out.Configs, ci)
	}
	for _, k := range def.Keys() {
		add(k)
	}
	for _, k := range chainKeys {
		add(k)
	}
	// Problems with keys no definition has (a transform alias without a
	// type, say) are listed too, so that none is lost.
	rest := make([]string, 0, len(byKey))
	for k := range byKey {
		rest = append(rest, k)
	}
	sort.Strings(rest)
	for _, k := range rest {
		add(ConfigKey{Name: k, Type: TypeString, Importance: Low, Group: "Common"})
	}
	return out, plugin
}

// secretKey names the key whose secret reference failed.
func secretKey(err error, cfg Config) string {
	for _, k := range cfg.Keys() {
		if strings.Contains(err.Error(), " for "+k+":") {
			return k
		}
	}
	return KeyName
}

// invalidConfigError is Kafka's message for a create or update with
// errors.
func invalidConfigError(infos ConfigInfos) error {
	var lines []string
	for _, c := range infos.Configs {
		for _, e := range c.Value.Errors {
			lines = append(lines, c.Definition.Name+": "+e)
		}
	}
	return newHerderError(ErrBadRequest, "Connector configuration is invalid and contains the following %d error(s):\n%s\nYou can also find the above list of errors at the endpoint `/connector-plugins/{connectorType}/config/validate`",
		infos.ErrorCount, strings.Join(lines, "\n"))
}

// taskConfigsFor splits a connector's config into task configs. Values
// that came from secret references go back to the references, so stored
// task configs hold no secrets (Kafka's reverse transform).
func taskConfigsFor(plugin *Plugin, cfg Config) ([]Config, error) {
	resolved, err := resolveSecrets(cfg)
	if err != nil {
		return nil, err
	}
	def := connectorDef.With(plugin.Config)
	if plugin.Type == SinkPlugin {
		def = def.With(sinkDef)
	}
	parsed, errs := def.Parse(resolved)
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: %v", ErrInvalidConfig, errors.Join(keyErrs(errs)...))
	}
	var tasks []Config
	if plugin.TaskConfigs == nil {
		tasks = []Config{parsed}
	} else if tasks, err = plugin.TaskConfigs(parsed, parsed.Int(KeyTasksMax)); err != nil {
		return nil, fmt.Errorf("connector %s: generating task configs: %w", cfg[KeyName], err)
	}
	if len(tasks) > parsed.Int(KeyTasksMax) {
		tasks = tasks[:parsed.Int(KeyTasksMax)]
	}
	for i, t := range tasks {
		t = t.Clone()
		for k, raw := range cfg {
			if secretRef.MatchString(raw) && t[k] == resolved[k] {
				t[k] = raw
			}
		}
		tasks[i] = t
	}
	return tasks, nil
}
