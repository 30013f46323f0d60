package retail

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runnel-io/runnel/broker/brokertest"
)

// `make demo` as a newcomer runs it: it builds runnel, starts the demo
// and prints the dashboard's URL and how to stop within two minutes; the
// dashboard answers and fills in; Ctrl-C (SIGINT to the terminal's
// process group) stops everything cleanly. The ports are the config's
// (all free ones here: a CI machine may run other things). The Go cache
// is warmed first (brokertest.BuildRunnel, as other tests do), as a
// developer's second run finds it: with a cold cache, on two cores, the
// build alone takes one to two minutes, more while other tests run.
func TestMakeDemo(t *testing.T) {
	brokertest.BuildRunnel(t)
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	config := filepath.Join(dir, "retail.yaml")
	if err := os.WriteFile(config, []byte(`data_dir: `+filepath.Join(dir, "data")+`
embedded: {listen: "127.0.0.1:0", http_listen: "127.0.0.1:0"}
dashboard: {listen: "127.0.0.1:0"}
connect: {pos_listen: "127.0.0.1:0", rest_listen: "127.0.0.1:0"}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("make", "--no-print-directory", "-C", root, "demo", "DEMO_ARGS=--config "+config,
		"BIN="+dir, "RUNNEL="+filepath.Join(dir, "runnel"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr syncBuffer
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	lines := make(chan string, 100)
	var out syncBuffer
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			out.Write([]byte(sc.Text() + "\n"))
			lines <- sc.Text()
		}
		io.Copy(io.Discard, stdout)
		close(lines)
		exited <- cmd.Wait()
	}()
	defer func() {
		if cmd.ProcessState == nil {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	}()

	url := ""
	timeout := time.After(2 * time.Minute)
	for url == "" || !strings.Contains(out.String(), "Ctrl-C stops everything") {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("make demo ended before printing the dashboard's URL:\n%s\n%s", out.String(), stderr.String())
			}
			if _, after, found := strings.Cut(l, "Dashboard:"); found {
				url = strings.Fields(after)[0]
			}
		case <-timeout:
			t.Fatalf("make demo did not print the dashboard's URL and how to stop within two minutes:\n%s\n%s", out.String(), stderr.String())
		}
	}
	t.Logf("make demo printed the dashboard's URL %s after %.1fs (build included)", url, time.Since(start).Seconds())

	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(page), "Runnel retail demo") {
		t.Fatalf("GET %s: %s, %d bytes", url, resp.Status, len(page))
	}
	for deadline := time.Now().Add(time.Minute); ; {
		var snap struct {
			Totals struct{ Stock int64 } `json:"totals"`
		}
		if resp, err := http.Get(url + "api/snapshot"); err == nil {
			json.NewDecoder(resp.Body).Decode(&snap)
			resp.Body.Close()
		}
		if snap.Totals.Stock > 0 {
			t.Logf("the dashboard shows %d stock updates after %.1fs", snap.Totals.Stock, time.Since(start).Seconds())
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the dashboard showed no stock update within a minute of coming up")
		}
		time.Sleep(100 * time.Millisecond) // polling the dashboard
	}

	// Ctrl-C: the terminal signals the whole foreground process group.
	stopAt := time.Now()
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	for range lines {
	}
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("the demo did not stop within 30 s of Ctrl-C:\n%s", out.String())
	}
	t.Logf("stopped %.1fs after Ctrl-C", time.Since(stopAt).Seconds())
	if !strings.Contains(out.String(), "Stopping") {
		t.Errorf("the demo did not say it stopped:\n%s", out.String())
	}
	if s := stderr.String(); strings.Contains(s, "panic") || strings.Contains(s, "runnel: ") {
		t.Errorf("errors on the way out:\n%s", s)
	}
}
