package broker

import "github.com/runnel-io/runnel/broker/internal/configs"

// Setting describes one broker setting, for building command-line flags and
// documentation.
type Setting struct {
	Name    string
	Default string
	Doc     string
	// Dynamic settings can also be changed while the broker runs, with
	// AlterConfigs or IncrementalAlterConfigs.
	Dynamic bool
}

// Settings lists every broker setting, sorted by name.
func Settings() []Setting {
	var out []Setting
	for _, d := range configs.BrokerDefs() {
		out = append(out, Setting{Name: d.Name, Default: d.Default, Doc: d.Doc, Dynamic: d.Dynamic})
	}
	return out
}
