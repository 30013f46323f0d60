package retail

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// retail-demo/retail.yaml documents the defaults: loading it gives
// DefaultConfig, key for key.
func TestConfigFileHoldsTheDefaults(t *testing.T) {
	got, err := LoadConfig(filepath.Join("..", "retail.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultConfig()
	want.Brokers = []string{}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("retail.yaml differs from DefaultConfig:\nfile     %+v\ndefaults %+v", got, want)
	}
}

// A bad file is refused with the key that is wrong.
func TestConfigErrorsNameTheKey(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{"generator:\n  rate: -1\n", "generator.rate"},
		{"model:\n  velocity_window: 90m\n", "model.velocity_window"},
		{"topics:\n  partitions: 0\n", "topics.partitions"},
		{"generator:\n  start: yesterday\n", "generator.start"},
		{"genrator:\n  rate: 5\n", "genrator"},
		{"app:\n  application_id: \"\"\n", "app.application_id"},
	} {
		path := filepath.Join(t.TempDir(), "retail.yaml")
		if err := os.WriteFile(path, []byte(c.yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := LoadConfig(path)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want one naming %s", c.yaml, err, c.want)
		}
	}
}
