package configs

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/runnel-io/runnel/internal/configfile"
)

var wantExample = map[string]string{
	"node.id":                          "2",
	"process.roles":                    "broker,controller",
	"controller.quorum.voters":         "1@node1:9094,2@node2:9094,3@node3:9094",
	"listeners":                        "PLAINTEXT://:9092",
	"advertised.listeners":             "PLAINTEXT://node2:9092",
	"log.dirs":                         "/var/lib/runnel",
	"log.flush":                        "always",
	"log.retention.hours":              "72",
	"log.cleaner.min.cleanable.ratio":  "0.25",
	"num.partitions":                   "6",
	"auto.create.topics.enable":        "false",
	"offsets.topic.replication.factor": "3",
	"runnel.http.listener":             ":9099",
}

func TestLoadFileExamples(t *testing.T) {
	for _, path := range []string{"testdata/broker.yaml", "testdata/broker.properties"} {
		t.Run(path, func(t *testing.T) {
			got, err := LoadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, wantExample) {
				t.Errorf("\n got %v\nwant %v", got, wantExample)
			}
			b, err := ParseBroker(got)
			if err != nil {
				t.Fatal(err)
			}
			if b.NodeID != 2 || b.TopicDefaults.RetentionMs != 72*3600000 || len(b.ControllerQuorumVoters) != 3 {
				t.Errorf("%+v", b)
			}
		})
	}
}

// write puts content in a temp file named name and returns its path.
func write(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoadFileYAML(t *testing.T) {
	for _, tc := range []struct {
		name, content string
		want          map[string]string
	}{
		{"empty", "", map[string]string{}},
		{"comments only", "# nothing\n", map[string]string{}},
		{"scalars as written", "num.partitions: 3\nlog.cleaner.min.cleanable.ratio: 0.50\nauto.create.topics.enable: true\nbroker.rack: 'a:b'\n",
			map[string]string{"num.partitions": "3", "log.cleaner.min.cleanable.ratio": "0.50", "auto.create.topics.enable": "true", "broker.rack": "a:b"}},
		{"deep nesting", "log:\n  retention:\n    ms: 1000\n    bytes: -1\n",
			map[string]string{"log.retention.ms": "1000", "log.retention.bytes": "-1"}},
		{"flow list", "log.cleanup.policy: [compact, delete]\n", map[string]string{"log.cleanup.policy": "compact,delete"}},
		{"empty string is a value", "broker.rack: \"\"\n", map[string]string{"broker.rack": ""}},
		{"anchors", "num.partitions: &p 5\ndefault.replication.factor: *p\n",
			map[string]string{"num.partitions": "5", "default.replication.factor": "5"}},
		{"json", `{"num.partitions": 4, "log": {"retention.ms": 5}}`, map[string]string{"num.partitions": "4", "log.retention.ms": "5"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ext := ".yaml"
			if tc.name == "json" {
				ext = ".json"
			}
			got, err := LoadFile(write(t, "c"+ext, tc.content))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("\n got %v\nwant %v", got, tc.want)
			}
		})
	}
}

func TestLoadFileErrors(t *testing.T) {
	for _, tc := range []struct {
		name, file, content string
		want                []string // lines after "<path>:"
		kind                error
	}{
		{"unknown key with hint", "c.yaml", "num.partitions: 3\nnum.partition: 3\n",
			[]string{`2: unknown broker config "num.partition" (did you mean num.partitions?)`}, ErrUnknownConfig},
		{"topic key in broker file", "c.yaml", "retention.ms: 5\n",
			[]string{`1: unknown broker config "retention.ms" (retention.ms is a topic config; its broker-wide default is log.retention.ms / log.retention.minutes / log.retention.hours)`}, ErrUnknownConfig},
		{"bad type", "c.yaml", "num.partitions: three\nlog:\n  retention.ms: [1, 2]\n",
			[]string{
				`1: invalid value "three" for config num.partitions: must be a 32-bit integer`,
				`3: invalid value "1,2" for config log.retention.ms: must be a 64-bit integer`,
			}, ErrInvalidConfig},
		{"set twice via nesting", "c.yaml", "log.retention.ms: 1\nlog:\n  retention.ms: 2\n",
			[]string{`3: log.retention.ms is set twice (first on line 1)`}, ErrInvalidConfig},
		{"list of maps", "c.yaml", "listeners:\n  - a: b\n",
			[]string{`1: listeners: list items must be plain values`}, ErrInvalidConfig},
		{"not a mapping", "c.yaml", "- a\n- b\n",
			[]string{`1: the file must be a mapping of config names to values`}, ErrInvalidConfig},
		{"syntax", "c.yaml", "num.partitions: 1\na: b: c\n",
			[]string{` yaml: line 2: mapping values are not allowed in this context`}, ErrInvalidConfig},
		{"two documents", "c.yaml", "num.partitions: 1\n---\nnum.partitions: 2\n",
			[]string{`2: only one YAML document is allowed`}, ErrInvalidConfig},
		{"merge key", "c.yaml", "base: &b {num.partitions: 1}\n<<: *b\n",
			[]string{`2: keys must be plain names (no merge keys or complex keys)`}, ErrInvalidConfig},
		{"unknown null key", "c.yaml", "nope: ~\n",
			[]string{`1: unknown broker config "nope"`}, ErrUnknownConfig},
		{"properties unknown and bad", "c.properties", "# c\nnum.partitions=0\n\nfoo.bar=1\n",
			[]string{
				`2: invalid value "0" for config num.partitions: must be at least 1`,
				`4: unknown broker config "foo.bar"`,
			}, ErrInvalidConfig},
		{"properties duplicate", "c.properties", "num.partitions=1\nnum.partitions=2\n",
			[]string{`2: num.partitions is set twice (first on line 1)`}, ErrInvalidConfig},
		{"properties bad escape", "c.properties", "broker.rack=\\u12\n",
			[]string{`1: malformed \uXXXX escape`}, ErrInvalidConfig},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := write(t, tc.file, tc.content)
			_, err := LoadFile(path)
			if err == nil {
				t.Fatal("no error")
			}
			var want []string
			for _, w := range tc.want {
				want = append(want, path+":"+w)
			}
			if got := strings.Split(err.Error(), "\n"); !reflect.DeepEqual(got, want) {
				t.Errorf("\n got %q\nwant %q", got, want)
			}
			if !errors.Is(err, tc.kind) {
				t.Errorf("error does not wrap %v", tc.kind)
			}
		})
	}
}

func TestLoadFileMissingOrUnknownType(t *testing.T) {
	_, err := LoadFile(filepath.Join(t.TempDir(), "none.yaml"))
	if !errors.Is(err, os.ErrNotExist) || !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("missing file: %v", err)
	}
	_, err = LoadFile(write(t, "c.toml", "a=1"))
	if err == nil || !strings.Contains(err.Error(), "unknown config file type; use .yaml, .yml, .json or .properties") {
		t.Errorf("unknown type: %v", err)
	}
}

// Whatever the properties parser accepts, ParseBroker handles.
func FuzzParseProperties(f *testing.F) {
	f.Add([]byte("a=1\nb\\\n c:2\n#x\nd \\u00e9\\"))
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, err := configfile.ParseProperties(data)
		if err == nil {
			settings := map[string]string{}
			for _, e := range entries {
				settings[e.Key] = e.Value
			}
			_, _ = ParseBroker(settings)
		}
	})
}
