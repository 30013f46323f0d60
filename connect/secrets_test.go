package connect_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runnel-io/runnel/broker/brokertest"
	"github.com/runnel-io/runnel/connect"
	"github.com/runnel-io/runnel/connect/connectors"
	"github.com/runnel-io/runnel/connect/connecttest"
)

// seenConfigs records the configs the secret-test tasks started with.
var seenConfigs struct {
	sync.Mutex
	m map[string]connect.Config
}

// idleSource is a source task that only remembers its config.
type idleSource struct{}

func (idleSource) Start(_ context.Context, cfg connect.Config, _ connect.SourceTaskContext) error {
	seenConfigs.Lock()
	defer seenConfigs.Unlock()
	seenConfigs.m[cfg["name"]] = cfg.Clone()
	return nil
}

func (idleSource) Poll(ctx context.Context) ([]connect.Record, error) {
	<-ctx.Done()
	return nil, nil
}

func (idleSource) Stop() error { return nil }

// Secrets are resolved for tasks only: responses show references as they
// were given and PASSWORD values as [hidden]; a reference that cannot be
// resolved fails the task with a message naming the key.
func TestSecretsAreResolvedForTasksAndNeverShown(t *testing.T) {
	seenConfigs.m = map[string]connect.Config{}
	reg := connectors.NewRegistry()
	reg.MustRegister(connect.Plugin{
		Class: "SecretSource", Type: connect.SourcePlugin,
		Config: connect.NewConfigDef(
			connect.ConfigKey{Name: "user", Type: connect.TypeString},
			connect.ConfigKey{Name: "password", Type: connect.TypePassword},
			connect.ConfigKey{Name: "token", Type: connect.TypePassword},
		),
		NewSourceTask: func() connect.SourceTask { return idleSource{} },
	})
	dir := t.TempDir()
	secrets := filepath.Join(dir, "secrets.properties")
	if err := os.WriteFile(secrets, []byte("db.password=s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("RUNNEL_TEST_USER", "alice")

	b := brokertest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w, err := connect.StartStandalone(ctx, connect.Config{"bootstrap.servers": b.Addr(), "listeners": "http://127.0.0.1:0",
		"offset.storage.file.filename": filepath.Join(dir, "offsets.json")}, nil, connect.WorkerOptions{Registry: reg, Logger: connecttest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()

	cfg := map[string]string{"connector.class": "SecretSource", "user": "${env:RUNNEL_TEST_USER}",
		"password": "${file:" + secrets + ":db.password}", "token": "literal-token"}
	var info struct {
		Config map[string]string `json:"config"`
	}
	if code := connecttest.Call(t, "PUT", w.URL()+"/connectors/s/config", cfg, &info); code != 201 {
		t.Fatalf("create: %d", code)
	}
	connecttest.WaitFor(t, 10*time.Second, "the task started", func() bool {
		seenConfigs.Lock()
		defer seenConfigs.Unlock()
		return seenConfigs.m["s"] != nil
	})
	seenConfigs.Lock()
	seen := seenConfigs.m["s"]
	seenConfigs.Unlock()
	if seen["user"] != "alice" || seen["password"] != "s3cret" || seen["token"] != "literal-token" {
		t.Fatalf("the task saw %v", seen)
	}
	for _, path := range []string{"/connectors/s/config", "/connectors/s", "/connectors/s/tasks", "/connectors?expand=info"} {
		var body strings.Builder
		var raw any
		connecttest.Call(t, "GET", w.URL()+path, nil, &raw)
		body.WriteString(strings.ReplaceAll(strings.ReplaceAll(toJSON(t, raw), `\u003c`, "<"), `\u003e`, ">"))
		s := body.String()
		if strings.Contains(s, "s3cret") || strings.Contains(s, "alice") || strings.Contains(s, "literal-token") {
			t.Errorf("GET %s shows a secret: %s", path, s)
		}
		if !strings.Contains(s, "${env:RUNNEL_TEST_USER}") || !strings.Contains(s, "[hidden]") {
			t.Errorf("GET %s lacks the reference or the mask: %s", path, s)
		}
	}
	var infos struct {
		Configs []struct {
			Value struct {
				Name  string  `json:"name"`
				Value *string `json:"value"`
			} `json:"value"`
		} `json:"configs"`
	}
	connecttest.Call(t, "PUT", w.URL()+"/connector-plugins/SecretSource/config/validate", cfg, &infos)
	for _, c := range infos.Configs {
		if c.Value.Name == "token" && (c.Value.Value == nil || *c.Value.Value != "[hidden]") {
			t.Errorf("validate shows token as %v", c.Value.Value)
		}
	}

	// A reference to a variable that is not set is refused, naming the
	// key and the variable; the connector keeps its config.
	cfg["user"] = "${env:RUNNEL_TEST_UNSET}"
	var rerr struct {
		Message string `json:"message"`
	}
	if code := connecttest.Call(t, "PUT", w.URL()+"/connectors/s/config", cfg, &rerr); code != 400 || !strings.Contains(rerr.Message, "user: ") || !strings.Contains(rerr.Message, "RUNNEL_TEST_UNSET") {
		t.Fatalf("unresolvable reference: %d %q", code, rerr.Message)
	}
	var conf map[string]string
	connecttest.Call(t, "GET", w.URL()+"/connectors/s/config", nil, &conf)
	if conf["user"] != "${env:RUNNEL_TEST_USER}" {
		t.Fatalf("config after a refused update: %v", conf)
	}
}
