package streams

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Handler serves the instance's interactive queries and metrics over HTTP,
// as JSON:
//
//	GET /stores                        store names, and the tasks each endpoint of the group hosts
//	GET /stores/{store}/keys/{key}     {"key":…, "value":…}; 404 when absent; a key hosted by
//	                                   another instance: 307 to that instance, {"owner":"host:port"}
//	GET /stores/{store}?limit=N        the entries hosted here (key-value and window stores;
//	                                   default 1,000, at most 10,000 per partition)
//	GET /metrics                       Prometheus metrics
//
// A string key is the path segment itself; any other key type is its JSON
// ("42", "{\"id\":7}"). App.Run serves Handler on Config.Endpoint when set.
func (a *App) Handler() http.Handler {
	mux := http.NewServeMux()
	if g, ok := a.cfg.Metrics.(prometheus.Gatherer); ok {
		mux.Handle("GET /metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
	}
	mux.HandleFunc("GET /stores", a.serveStores)
	mux.HandleFunc("GET /stores/{store}", a.serveEntries)
	mux.HandleFunc("GET /stores/{store}/keys/{key}", a.serveKey)
	return mux
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, err error) {
	writeJSON(w, status, map[string]string{"error": err.Error()})
}

func (a *App) serveStores(w http.ResponseWriter, _ *http.Request) {
	names := make([]string, 0, len(a.topo.stores))
	for name := range a.topo.stores {
		names = append(names, name)
	}
	sort.Strings(names)
	a.mu.Lock()
	r := a.mu.run
	a.mu.Unlock()
	hosts := map[string][]string{}
	if r != nil {
		hosts = r.hosts()
	}
	writeJSON(w, http.StatusOK, map[string]any{"endpoint": a.cfg.Endpoint, "stores": names, "hosts": hosts})
}

func (a *App) serveKey(w http.ResponseWriter, req *http.Request) {
	store, key := req.PathValue("store"), req.PathValue("key")
	r, def, err := a.queryTarget(store)
	if err != nil {
		writeError(w, queryStatus(err), err)
		return
	}
	kb, err := def.encodeText(key)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	var value any
	var found bool
	err = r.withTaskStore(def, r.keyTask(def, kb), func(h any) error {
		js, ok := h.(jsonStore)
		if !ok {
			return fmt.Errorf("%w: store %q cannot be read by key over HTTP", ErrTopology, store)
		}
		value, found, err = js.getJSON(kb)
		return err
	})
	var nl *NotLocalError
	switch {
	case errors.As(err, &nl) && nl.Owner != "":
		u := url.URL{Scheme: "http", Host: nl.Owner, Path: req.URL.Path, RawPath: req.URL.RawPath} // keep an escaped key escaped
		w.Header().Set("Location", u.String())
		writeJSON(w, http.StatusTemporaryRedirect, map[string]string{"owner": nl.Owner, "task": nl.Task.String()})
	case err != nil:
		writeError(w, queryStatus(err), err)
	case !found:
		writeError(w, http.StatusNotFound, errors.New("key not found"))
	default:
		writeJSON(w, http.StatusOK, map[string]any{"key": key, "value": value})
	}
}

func (a *App) serveEntries(w http.ResponseWriter, req *http.Request) {
	// The app's loop waits while the entries are read: bounded.
	const maxLimit = 10_000
	limit := 1000
	if s := req.URL.Query().Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 || n > maxLimit {
			writeError(w, http.StatusBadRequest, fmt.Errorf("limit must be an integer from 1 to %d", maxLimit))
			return
		}
		limit = n
	}
	store := req.PathValue("store")
	var entries []jsonEntry
	var partitions []int32
	err := QueryStore(a, store, func(p int32, js jsonStore) error {
		partitions = append(partitions, p)
		var err error
		entries, err = js.entriesJSON(entries, limit)
		return err
	})
	if err != nil {
		writeError(w, queryStatus(err), err)
		return
	}
	if entries == nil {
		entries = []jsonEntry{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"store": store, "partitions": partitions, "entries": entries})
}

func queryStatus(err error) int {
	var nl *NotLocalError
	switch {
	case errors.Is(err, ErrUnknownStore):
		return http.StatusNotFound
	case errors.Is(err, ErrNotRunning), errors.Is(err, ErrRestoring), errors.As(err, &nl):
		return http.StatusServiceUnavailable
	case errors.Is(err, ErrTopology):
		return http.StatusBadRequest
	default:
		return http.StatusInternalServerError
	}
}
