package cluster

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// runnelBin is the broker binary every node of every test runs.
var runnelBin string

// TestMain builds `runnel` once. Copied from integration/crash's TestMain
// (test code cannot be imported); its process start is procs_test.go's spawn.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "runnel-cluster")
	if err != nil {
		panic(err)
	}
	runnelBin = filepath.Join(dir, "runnel")
	build := exec.Command("go", "build", "-o", runnelBin, "github.com/runnel-io/runnel/cmd/runnel")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building runnel:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
