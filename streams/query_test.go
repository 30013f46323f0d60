package streams_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/runnel-io/runnel/broker/brokertest"
	"github.com/runnel-io/runnel/streams"
)

// freeAddr returns a loopback address nothing listens on right now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

type instance struct {
	app  *streams.App
	addr string
	stop context.CancelFunc
	done chan error
}

func startInstance(t *testing.T, seeds []string, stateDir string) *instance {
	t.Helper()
	in := &instance{addr: freeAddr(t), done: make(chan error, 1)}
	var err error
	in.app, err = streams.NewApp(wordCount(t), streams.Config{
		ApplicationID:  "wordcount-iq",
		Brokers:        seeds,
		StateDir:       stateDir,
		CommitInterval: 100 * time.Millisecond,
		Endpoint:       in.addr,
	})
	if err != nil {
		t.Fatal(err)
	}
	var ctx context.Context
	ctx, in.stop = context.WithCancel(context.Background())
	go func() { in.done <- in.app.Run(ctx) }()
	return in
}

func (in *instance) close(t *testing.T) {
	t.Helper()
	in.stop()
	if err := <-in.done; err != nil {
		t.Errorf("Run: %v", err)
	}
}

// getCount asks in's HTTP endpoint for a word's count, following a
// redirect to the instance that hosts it. redirected says whether it was.
func getCount(in *instance, word string) (n int64, redirected bool, err error) {
	var hops int
	cl := &http.Client{Timeout: 5 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { hops++; return nil }}
	resp, err := cl.Get("http://" + in.addr + "/stores/counts/keys/" + word)
	if err != nil {
		return 0, false, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return 0, hops > 0, fmt.Errorf("GET %s: %s: %s", word, resp.Status, body)
	}
	var got struct {
		Key   string
		Value int64
	}
	if err := json.Unmarshal(body, &got); err != nil || got.Key != word {
		return 0, hops > 0, fmt.Errorf("GET %s: body %s: %v", word, body, err)
	}
	return got.Value, hops > 0, nil
}

// waitCounts waits until every word's count, asked of in, is want's.
func waitCounts(t *testing.T, in *instance, want map[string]int64) (redirects int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for word, n := range want {
		for {
			got, redirected, err := getCount(in, word)
			if err == nil && got == n {
				if redirected {
					redirects++
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("count of %q: got %d (%v), want %d", word, got, err, n)
			}
			select {
			case err := <-in.done:
				t.Fatalf("app stopped: %v", err)
			case <-time.After(20 * time.Millisecond): // poll interval while the app catches up
			}
		}
	}
	return redirects
}

// TestAppQueriesAndStateRebuild runs the word count in two instances that
// serve queries over HTTP: every word is answered through either instance
// (keys hosted by the other are redirected to it). Then both stop, their
// state directories are deleted, and one instance alone rebuilds every
// store partition from the changelogs and answers the same queries.
func TestAppQueriesAndStateRebuild(t *testing.T) {
	b := brokertest.Start(t)
	seeds := []string{b.Addr()}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, want := writeLines(t, ctx, seeds, 4, 3000, func(i int) string { return fmt.Sprintf("w%d v%d common", i%97, i%13) })

	dir := t.TempDir()
	a := startInstance(t, seeds, filepath.Join(dir, "a"))
	c := startInstance(t, seeds, filepath.Join(dir, "b"))
	redirects := waitCounts(t, a, want) + waitCounts(t, c, want)
	if redirects == 0 {
		t.Errorf("no query was redirected: one instance hosts every key?")
	}

	// The Go API: a key hosted by the other instance names its owner.
	var local, remote int
	for word, n := range want {
		got, ok, err := streams.Get[string, int64](a.app, "counts", word)
		var nl *streams.NotLocalError
		switch {
		case errors.As(err, &nl):
			if nl.Owner != c.addr {
				t.Errorf("owner of %q = %q, want %q", word, nl.Owner, c.addr)
			}
			remote++
		case err != nil || !ok || got != n:
			t.Errorf("Get(%q) = %d, %v, %v; want %d", word, got, ok, err, n)
		default:
			local++
		}
	}
	if local == 0 || remote == 0 {
		t.Errorf("keys local to a: %d, elsewhere: %d; want both", local, remote)
	}
	metrics := httpGet(t, "http://"+a.addr+"/metrics")
	for _, m := range []string{`runnel_streams_records_processed_total{app="wordcount-iq",node="KSTREAM-SOURCE-0000000000"}`,
		`runnel_streams_commit_seconds_count{app="wordcount-iq"}`, `runnel_streams_active_tasks{app="wordcount-iq"}`} {
		if v := metricValue(t, metrics, m); v <= 0 {
			t.Errorf("%s = %v, want > 0", m, v)
		}
	}
	if !strings.Contains(metrics, "runnel_streams_task_lag_records{") {
		t.Error("no task lag reported")
	}

	a.close(t)
	c.close(t)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	alone := startInstance(t, seeds, filepath.Join(dir, "a"))
	defer alone.close(t)
	if r := waitCounts(t, alone, want); r != 0 {
		t.Errorf("%d queries redirected with one instance", r)
	}
	if v := metricValue(t, httpGet(t, "http://"+alone.addr+"/metrics"), `runnel_streams_restored_records_total{app="wordcount-iq",store="counts"}`); v <= 0 {
		t.Errorf("restored records = %v after the state directory was deleted, want > 0", v)
	}
	if _, err := os.Stat(filepath.Join(dir, "a", "wordcount-iq", "db")); err != nil {
		t.Errorf("state not rebuilt on disk: %v", err)
	}
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %v", url, resp.Status, err)
	}
	return string(b)
}

// metricValue is the value of the series (name and labels, as exposed) in
// a Prometheus text exposition; -1 when it is not there.
func metricValue(t *testing.T, text, series string) float64 {
	t.Helper()
	for _, line := range strings.Split(text, "\n") {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return v
		}
	}
	return -1
}
