package retail

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/runnel-io/runnel/retail-demo/demo"
	"github.com/runnel-io/runnel/retail-demo/retail"
)

// The whole demo in one process, as `make demo` runs it, watched in a
// real browser: headless Chromium opens the dashboard and sees the stock
// heat map and the reorder feed fill in and then change; a sale POSTed
// to the point-of-sale endpoint is taken; the file sinks write reorders;
// and the demo stops cleanly when its context ends. The screenshot is
// saved as an artifact (artifacts/retail-dashboard.png at the repository
// root, or $RUNNEL_ARTIFACTS).
func TestDemoDashboardInBrowser(t *testing.T) {
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium is not installed: run make tools (scripts/tools.sh installs Debian's chromium): %v", err)
	}
	cfg := retail.DefaultConfig()
	cfg.DataDir = filepath.Join(t.TempDir(), "retail")
	cfg.Embedded = retail.EmbeddedParams{Listen: "127.0.0.1:0", HTTPListen: "127.0.0.1:0"}
	cfg.Dashboard.Listen = "127.0.0.1:0"
	cfg.Connect.POSListen, cfg.Connect.RESTListen = "127.0.0.1:0", "127.0.0.1:0"
	cfg.Generator.Rate = 1000

	ctx, stop := context.WithTimeout(context.Background(), 3*time.Minute)
	defer stop()
	runCtx, cancelRun := context.WithCancel(ctx)
	ready := make(chan string, 1)
	done := make(chan error, 1)
	var out syncBuffer
	go func() {
		done <- demo.Run(runCtx, demo.Options{Config: cfg, Out: &out, Ready: func(url string) { ready <- url }})
	}()
	var url string
	select {
	case url = <-ready:
	case err := <-done:
		t.Fatalf("the demo stopped before it was ready: %v\n%s", err, out.String())
	case <-ctx.Done():
		t.Fatal("the demo did not start")
	}
	defer func() {
		cancelRun()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("the demo stopped with %v", err)
			}
			if !strings.Contains(out.String(), "Stopping") {
				t.Errorf("the demo did not say it stopped:\n%s", out.String())
			}
		case <-time.After(30 * time.Second):
			t.Errorf("the demo did not stop within 30 s of its context ending")
		}
	}()
	for _, want := range []string{url, "Ctrl-C stops everything"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the demo's greeting lacks %q:\n%s", want, out.String())
		}
	}

	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(1440, 1000),
		chromedp.Flag("disable-dev-shm-usage", true))...)
	defer cancelAlloc()
	browser, cancelBrowser := chromedp.NewContext(alloc)
	defer cancelBrowser()

	// wait polls a JavaScript predicate on the page; eval reads a value.
	wait := func(what, predicate string) {
		t.Helper()
		if _, err := chromedp.Run(browser, chromedp.Poll[bool](predicate, chromedp.WithPollingTimeout(time.Minute), chromedp.WithPollingInterval(100*time.Millisecond))); err != nil {
			t.Fatalf("the dashboard: %s: %v", what, err)
		}
	}
	eval := func(expr string) string {
		t.Helper()
		v, err := chromedp.Run(browser, chromedp.Evaluate[string](expr))
		if err != nil {
			t.Fatalf("the dashboard: %s: %v", expr, err)
		}
		return v
	}
	start := time.Now()
	if _, err := chromedp.Run(browser, chromedp.Navigate(url)); err != nil {
		t.Fatalf("open %s: %v", url, err)
	}
	cells := `document.querySelectorAll("#stock tbody td[style]").length`
	reorders := `document.querySelectorAll("#reorders li:not(.muted)").length`
	wait("the stock heat map fills in", cells+" >= 100")
	wait("the reorder feed fills in", reorders+" >= 1")
	v1, s1 := eval(`document.body.dataset.version`), eval(`document.getElementById("n-stock").textContent`)
	t.Logf("the page shows %s stock cells and %s reorders after %.1fs (snapshot %s, %s stock updates)",
		eval(`String(`+cells+`)`), eval(`String(`+reorders+`)`), time.Since(start).Seconds(), v1, s1)

	// The page keeps updating: a newer snapshot with more stock updates.
	wait("the page updates", `Number(document.body.dataset.version) > `+v1+` && document.getElementById("n-stock").textContent != `+jsString(s1))
	t.Logf("stock updates went from %s to %s on the page", s1, eval(`document.getElementById("n-stock").textContent`))

	// A sale at the point of sale is stored (200 after the broker acked).
	addr := waitFile(t, ctx, demo.POSAddrFile(cfg))
	resp, err := http.Post("http://"+addr+"/sales", "application/json",
		strings.NewReader(`{"sale_id":"pos-1","store_id":"S001","product_id":"P0001","quantity":2}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("POST /sales: %s, want 200", resp.Status)
	}
	// The reorders reach the file sink.
	reorderFile := filepath.Join(cfg.DataDir, "out", "reorders.jsonl")
	line := strings.SplitN(waitFile(t, ctx, reorderFile), "\n", 2)[0]
	var r retail.Reorder
	if err := json.Unmarshal([]byte(line), &r); err != nil || r.ReorderID == "" || r.Quantity < 1 {
		t.Errorf("%s: first line %q is not a reorder (%v)", reorderFile, line, err)
	}

	png, err := chromedp.Run(browser, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	dir := os.Getenv("RUNNEL_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join("..", "..", "artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(dir, "retail-dashboard.png")
	if err := os.WriteFile(shot, png, 0o644); err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(shot)
	t.Logf("screenshot: %s (%d bytes)", abs, len(png))
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// waitFile waits until path exists with content and returns it.
func waitFile(t *testing.T, ctx context.Context, path string) string {
	t.Helper()
	for {
		b, err := os.ReadFile(path)
		if err == nil && len(bytes.TrimSpace(b)) > 0 {
			return strings.TrimSpace(string(b))
		}
		if ctx.Err() != nil {
			t.Fatalf("%s: nothing written in time", path)
		}
		time.Sleep(50 * time.Millisecond) // polling the file
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and readers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
