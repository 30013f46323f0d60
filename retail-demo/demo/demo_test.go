package demo

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runnel-io/runnel/retail-demo/retail"
)

// A full disk stops the demo before it starts, saying how much is free,
// how much it needs and what to do.
func TestNoDiskSpaceSaysWhatToDo(t *testing.T) {
	defer func(v uint64) { minFreeBytes = v }(minFreeBytes)
	minFreeBytes = 1 << 62 // more than any disk has
	cfg := retail.DefaultConfig()
	cfg.DataDir = filepath.Join(t.TempDir(), "retail")
	err := Run(context.Background(), Options{Config: portsZero(cfg)})
	if err == nil || !strings.Contains(err.Error(), "MB free") || !strings.Contains(err.Error(), "point data_dir at another disk") {
		t.Fatalf("error %v, want one saying the disk is full and what to do", err)
	}
}

// A taken port stops the demo before anything starts, naming the config
// key and how to find who holds it.
func TestPortInUseSaysWhatToDo(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cfg := portsZero(retail.DefaultConfig())
	cfg.DataDir = filepath.Join(t.TempDir(), "retail")
	cfg.Dashboard.Listen = ln.Addr().String()
	err = Run(context.Background(), Options{Config: cfg})
	for _, want := range []string{ln.Addr().String() + " is taken", "dashboard.listen", "ss -ltnp"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("error %v, want one containing %q", err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(cfg.DataDir, "broker")); err == nil {
		t.Errorf("the broker started although a port was taken")
	}
}

// The demo empties a data directory it made, and refuses to touch one it
// did not make.
func TestDataDirIsEmptiedOnlyIfTheDemoMadeIt(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if err := prepareDataDir(dir, false); err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(dir, "old-run")
	if err := os.WriteFile(old, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := prepareDataDir(dir, false); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Errorf("a previous run's file survived the start: %v", err)
	}
	mine := t.TempDir()
	precious := filepath.Join(mine, "precious")
	if err := os.WriteFile(precious, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := prepareDataDir(mine, false)
	if err == nil || !strings.Contains(err.Error(), "was not made by the demo") {
		t.Fatalf("error %v, want a refusal", err)
	}
	if _, err := os.Stat(precious); err != nil {
		t.Fatalf("a file the demo did not make is gone: %v", err)
	}
}

// Roles: all is every part; an unknown one is refused with the list; a
// part on its own needs brokers.
func TestRoles(t *testing.T) {
	if set, err := roleSet(nil); err != nil || len(set) != len(Roles) {
		t.Errorf("no roles: %v %v, want all", set, err)
	}
	if _, err := roleSet([]string{"app", "generater"}); err == nil || !strings.Contains(err.Error(), "generator") {
		t.Errorf("unknown role: %v", err)
	}
	cfg := portsZero(retail.DefaultConfig())
	cfg.DataDir = filepath.Join(t.TempDir(), "retail")
	err := Run(context.Background(), Options{Config: cfg, Roles: []string{RoleApp}})
	if err == nil || !strings.Contains(err.Error(), "--brokers") {
		t.Errorf("--role app without brokers: %v, want a request for --brokers", err)
	}
}

func portsZero(cfg retail.Config) retail.Config {
	cfg.Embedded = retail.EmbeddedParams{Listen: "127.0.0.1:0", HTTPListen: "127.0.0.1:0"}
	cfg.Dashboard.Listen = "127.0.0.1:0"
	cfg.Connect.POSListen, cfg.Connect.RESTListen = "127.0.0.1:0", "127.0.0.1:0"
	return cfg
}
