package demo

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/retail-demo/retail"
)

//go:embed dashboard.html
var page []byte

// Links are the metrics pages the dashboard links to.
type Links struct {
	Broker     string `json:"broker,omitempty"`  // the embedded broker's /metrics
	Connect    string `json:"connect,omitempty"` // the Connect worker's REST API (and /metrics)
	AppMetrics bool   `json:"app_metrics"`       // the app runs here: /metrics serves its metrics
}

// feedLen is how many reorders and price changes the feeds keep.
const feedLen = 40

// Snapshot is what the page shows, sent as JSON on every update.
type Snapshot struct {
	Version  int64                `json:"version"`
	SimTime  int64                `json:"sim_time"` // the latest stock update's event time
	Stores   []string             `json:"stores"`
	Products []string             `json:"products"`
	Stock    []retail.Stock       `json:"stock"`    // the latest per store and product
	Reorders []retail.Reorder     `json:"reorders"` // newest first
	Prices   []retail.PriceChange `json:"prices"`   // newest first
	Totals   struct {
		Stock    int64 `json:"stock"`
		Reorders int64 `json:"reorders"`
		Prices   int64 `json:"prices"`
	} `json:"totals"`
	RateIn  float64 `json:"rate_in"`  // input records a second (sales, shipments, watermarks)
	RateOut float64 `json:"rate_out"` // output records a second
	Lag     int64   `json:"lag"`      // the app's consumer lag, records
	LagErr  string  `json:"lag_err,omitempty"`
	Links   Links   `json:"links"`
}

type dashboard struct {
	cfg   retail.Config
	log   *slog.Logger
	cl    *kgo.Client
	adm   *kadm.Client
	srv   *http.Server
	ln    net.Listener
	url   string
	links Links

	mu struct {
		sync.Mutex
		snap    Snapshot
		stock   map[string]retail.Stock
		changed chan struct{} // closed and replaced at every change
	}
}

func startDashboard(ctx context.Context, cfg retail.Config, seeds []string, appMetrics *prometheus.Registry, links Links, log *slog.Logger) (*dashboard, error) {
	t := cfg.Topics
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(t.Stock, t.Reorders, t.Prices),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		return nil, err
	}
	d := &dashboard{cfg: cfg, log: log.With("part", "dashboard"), cl: cl, adm: kadm.NewClient(cl), links: links}
	d.mu.stock = map[string]retail.Stock{}
	d.mu.changed = make(chan struct{})
	d.mu.snap.Links = links
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(page)
	})
	mux.HandleFunc("GET /api/snapshot", d.serveSnapshot)
	mux.HandleFunc("GET /events", d.serveEvents)
	if links.AppMetrics {
		mux.Handle("GET /metrics", promhttp.HandlerFor(appMetrics, promhttp.HandlerOpts{}))
	}
	d.ln, err = net.Listen("tcp", cfg.Dashboard.Listen)
	if err != nil {
		cl.Close()
		return nil, fmt.Errorf("dashboard.listen: %w", err)
	}
	d.url = "http://" + d.ln.Addr().String() + "/"
	d.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
	go d.srv.Serve(d.ln)
	return d, nil
}

func (d *dashboard) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = d.srv.Shutdown(ctx)
	d.cl.Close()
}

// run follows the output topics and samples rates and lag until ctx ends.
func (d *dashboard) run(ctx context.Context) error {
	go d.sample(ctx)
	for {
		fs := d.cl.PollFetches(ctx)
		if ctx.Err() != nil || fs.IsClientClosed() {
			return nil
		}
		fs.EachError(func(topic string, p int32, err error) {
			d.log.Warn("dashboard: fetch", "topic", topic, "partition", p, "err", err)
		})
		d.apply(fs)
	}
}

// apply takes in a poll's records.
func (d *dashboard) apply(fs kgo.Fetches) {
	t := d.cfg.Topics
	d.mu.Lock()
	defer d.mu.Unlock()
	s := &d.mu.snap
	n := 0
	fs.EachRecord(func(r *kgo.Record) {
		var err error
		switch r.Topic {
		case t.Stock:
			var v retail.Stock
			if err = json.Unmarshal(r.Value, &v); err == nil {
				key := v.StoreID + ":" + v.ProductID
				if _, ok := d.mu.stock[key]; !ok {
					s.Stores = insertSorted(s.Stores, v.StoreID)
					s.Products = insertSorted(s.Products, v.ProductID)
				}
				d.mu.stock[key] = v
				s.SimTime = max(s.SimTime, v.TS)
				s.Totals.Stock++
			}
		case t.Reorders:
			var v retail.Reorder
			if err = json.Unmarshal(r.Value, &v); err == nil {
				s.Reorders = pushFront(s.Reorders, v)
				s.Totals.Reorders++
			}
		case t.Prices:
			var v retail.PriceChange
			if err = json.Unmarshal(r.Value, &v); err == nil {
				s.Prices = pushFront(s.Prices, v)
				s.Totals.Prices++
			}
		}
		if err != nil {
			d.log.Warn("dashboard: a record it cannot read", "topic", r.Topic, "offset", r.Offset, "err", err)
		}
		n++
	})
	if n > 0 {
		d.changedLocked()
	}
}

func (d *dashboard) changedLocked() {
	d.mu.snap.Version++
	close(d.mu.changed)
	d.mu.changed = make(chan struct{})
}

func insertSorted(s []string, v string) []string {
	i, found := slices.BinarySearch(s, v)
	if found {
		return s
	}
	return slices.Insert(s, i, v)
}

func pushFront[T any](s []T, v T) []T {
	s = slices.Insert(s, 0, v)
	return s[:min(len(s), feedLen)]
}

// sample measures the records a second in and out (from the topics' end
// offsets) and the app's lag, every second.
func (d *dashboard) sample(ctx context.Context) {
	t := d.cfg.Topics
	sum := func(topics ...string) (int64, bool) {
		ends, err := d.adm.ListEndOffsets(ctx, topics...)
		if err != nil {
			return 0, false
		}
		var n int64
		ends.Each(func(o kadm.ListedOffset) { n += max(o.Offset, 0) })
		return n, true
	}
	var lastIn, lastOut int64
	var last time.Time
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		in, okIn := sum(t.Sales, t.Shipments)
		out, okOut := sum(t.Stock, t.Reorders, t.Prices)
		now := time.Now()
		var lag int64
		lagErr := ""
		lags, err := d.adm.Lag(ctx, d.cfg.App.ApplicationID)
		if err == nil {
			err = lags.Error()
		}
		if err != nil {
			lagErr = err.Error()
		} else {
			lags.Each(func(l kadm.DescribedGroupLag) { lag += l.Lag.Total() })
		}
		d.mu.Lock()
		s := &d.mu.snap
		if okIn && okOut && !last.IsZero() {
			secs := now.Sub(last).Seconds()
			s.RateIn, s.RateOut = float64(in-lastIn)/secs, float64(out-lastOut)/secs
		}
		s.Lag, s.LagErr = lag, lagErr
		d.changedLocked()
		d.mu.Unlock()
		if okIn && okOut {
			lastIn, lastOut, last = in, out, now
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// snapshot is the current state as JSON, its version, and a channel
// closed at the next change.
func (d *dashboard) snapshot() ([]byte, int64, <-chan struct{}) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.mu.snap
	s.Stock = make([]retail.Stock, 0, len(d.mu.stock))
	for _, v := range d.mu.stock {
		s.Stock = append(s.Stock, v)
	}
	b, err := json.Marshal(s)
	if err != nil { // only plain values: cannot happen
		panic(err)
	}
	return b, s.Version, d.mu.changed
}

func (d *dashboard) serveSnapshot(w http.ResponseWriter, _ *http.Request) {
	b, _, _ := d.snapshot()
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}

// serveEvents streams snapshots as server-sent events, at most four a
// second.
func (d *dashboard) serveEvents(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	for {
		b, _, changed := d.snapshot()
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return
		}
		if err := rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-changed:
		}
		select {
		case <-r.Context().Done():
			return
		case <-time.After(250 * time.Millisecond): // batch the changes of a quarter second
		}
	}
}
