package connect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// restAPI serves Kafka Connect's REST API over a Herder: the same paths,
// status codes and JSON shapes, so existing tools work against it.
type restAPI struct {
	h         Herder
	clusterID string
	ready     func() bool
}

// Version is what GET / reports.
const Version = "4.0.0-runnel"

// newRESTHandler returns the REST API's handler; /metrics serves reg.
func newRESTHandler(h Herder, reg *prometheus.Registry, clusterID string, ready func() bool) http.Handler {
	a := &restAPI{h: h, clusterID: clusterID, ready: ready}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", a.root)
	mux.HandleFunc("GET /health", a.health)
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /connectors", a.list)
	mux.HandleFunc("POST /connectors", a.create)
	mux.HandleFunc("GET /connectors/{name}", a.info)
	mux.HandleFunc("DELETE /connectors/{name}", a.delete)
	mux.HandleFunc("GET /connectors/{name}/config", a.getConfig)
	mux.HandleFunc("PUT /connectors/{name}/config", a.putConfig)
	mux.HandleFunc("PATCH /connectors/{name}/config", a.patchConfig)
	mux.HandleFunc("GET /connectors/{name}/status", a.status)
	mux.HandleFunc("POST /connectors/{name}/restart", a.restart)
	mux.HandleFunc("PUT /connectors/{name}/pause", a.target(TargetPaused, http.StatusAccepted))
	mux.HandleFunc("PUT /connectors/{name}/resume", a.target(TargetStarted, http.StatusAccepted))
	mux.HandleFunc("PUT /connectors/{name}/stop", a.target(TargetStopped, http.StatusNoContent))
	mux.HandleFunc("GET /connectors/{name}/tasks", a.tasks)
	mux.HandleFunc("GET /connectors/{name}/tasks/{task}/status", a.taskStatus)
	mux.HandleFunc("POST /connectors/{name}/tasks/{task}/restart", a.taskRestart)
	mux.HandleFunc("GET /connectors/{name}/offsets", a.offsets)
	mux.HandleFunc("PATCH /connectors/{name}/offsets", a.alterOffsets)
	mux.HandleFunc("DELETE /connectors/{name}/offsets", a.resetOffsets)
	mux.HandleFunc("GET /connector-plugins", a.plugins)
	mux.HandleFunc("GET /connector-plugins/{plugin}/config", a.pluginConfig)
	mux.HandleFunc("PUT /connector-plugins/{plugin}/config/validate", a.validate)
	return errorsAsJSON(mux)
}

// restError is Kafka Connect's error body.
type restError struct {
	ErrorCode int    `json:"error_code"`
	Message   string `json:"message"`
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	if v != nil {
		_ = json.NewEncoder(w).Encode(v)
	}
}

func writeError(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	switch {
	case errors.Is(err, ErrNotFound):
		code = http.StatusNotFound
	case errors.Is(err, ErrConflict), errors.Is(err, ErrRebalance):
		code = http.StatusConflict
	case errors.Is(err, ErrBadRequest), errors.Is(err, ErrInvalidConfig):
		code = http.StatusBadRequest
	case errors.Is(err, context.DeadlineExceeded):
		code = http.StatusInternalServerError
	}
	writeJSON(w, code, restError{ErrorCode: code, Message: err.Error()})
}

// errorsAsJSON turns the mux's plain-text 404 and 405 answers into Kafka
// Connect's JSON errors.
func errorsAsJSON(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(&jsonErrorWriter{ResponseWriter: w}, r)
	})
}

type jsonErrorWriter struct {
	http.ResponseWriter
	swallow bool
}

func (j *jsonErrorWriter) WriteHeader(code int) {
	if (code == http.StatusNotFound || code == http.StatusMethodNotAllowed) && j.Header().Get("Content-Type") != "application/json" {
		j.swallow = true
		j.Header().Set("Content-Type", "application/json")
		j.Header().Del("X-Content-Type-Options")
		j.ResponseWriter.WriteHeader(code)
		_ = json.NewEncoder(j.ResponseWriter).Encode(restError{ErrorCode: code, Message: fmt.Sprintf("HTTP %d %s", code, http.StatusText(code))})
		return
	}
	j.ResponseWriter.WriteHeader(code)
}

func (j *jsonErrorWriter) Write(b []byte) (int, error) {
	if j.swallow {
		return len(b), nil
	}
	return j.ResponseWriter.Write(b)
}

func (a *restAPI) root(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"version": Version, "commit": "runnel", "kafka_cluster_id": a.clusterID})
}

func (a *restAPI) health(w http.ResponseWriter, _ *http.Request) {
	if a.ready != nil && !a.ready() {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "starting", "message": "Worker is still starting up."})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "healthy", "message": "Worker has completed startup and is ready to handle requests."})
}

func (a *restAPI) list(w http.ResponseWriter, r *http.Request) {
	names, err := a.h.Connectors(r.Context())
	if err != nil {
		writeError(w, err)
		return
	}
	expand := r.URL.Query()["expand"]
	if len(expand) == 0 {
		writeJSON(w, http.StatusOK, names)
		return
	}
	out := map[string]map[string]any{}
	for _, n := range names {
		m := map[string]any{}
		for _, e := range expand {
			switch e {
			case "status":
				if st, err := a.h.ConnectorStatus(r.Context(), n); err == nil {
					m["status"] = st
				}
			case "info":
				if info, err := a.h.ConnectorInfo(r.Context(), n); err == nil {
					m["info"] = info
				}
			}
		}
		out[n] = m
	}
	writeJSON(w, http.StatusOK, out)
}

// readConfig decodes a JSON object of config values; values may be
// strings, numbers or booleans (Kafka Connect takes them as text), and
// with allowNull a null (PATCH: remove the key).
func readConfig(r io.Reader, allowNull bool) (map[string]*string, error) {
	d := json.NewDecoder(io.LimitReader(r, 16<<20))
	d.UseNumber()
	var raw map[string]any
	if err := d.Decode(&raw); err != nil {
		return nil, newHerderError(ErrBadRequest, "Request body is not a JSON object of config values: %v", err)
	}
	out := make(map[string]*string, len(raw))
	for k, v := range raw {
		var s string
		switch t := v.(type) {
		case string:
			s = t
		case json.Number:
			s = t.String()
		case bool:
			s = strconv.FormatBool(t)
		case nil:
			if !allowNull {
				return nil, newHerderError(ErrBadRequest, "Config %s is null; give a value or leave it out", k)
			}
			out[k] = nil
			continue
		default:
			return nil, newHerderError(ErrBadRequest, "Config %s must be a string, number or boolean", k)
		}
		out[k] = &s
	}
	return out, nil
}

func toConfig(m map[string]*string) Config {
	cfg := make(Config, len(m))
	for k, v := range m {
		if v != nil {
			cfg[k] = *v
		}
	}
	return cfg
}

func (a *restAPI) create(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Name   string          `json:"name"`
		Config json.RawMessage `json:"config"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 16<<20)).Decode(&body); err != nil {
		writeError(w, newHerderError(ErrBadRequest, "Request body is not a connector: %v", err))
		return
	}
	if body.Config == nil {
		writeError(w, newHerderError(ErrBadRequest, "Connector config is missing"))
		return
	}
	m, err := readConfig(strings.NewReader(string(body.Config)), false)
	if err != nil {
		writeError(w, err)
		return
	}
	cfg := toConfig(m)
	name := strings.TrimSpace(body.Name)
	if name == "" {
		name = strings.TrimSpace(cfg[KeyName])
	}
	if name == "" {
		writeError(w, newHerderError(ErrBadRequest, "Connector name configuration (name) is missing"))
		return
	}
	if cfg[KeyName] == "" {
		cfg[KeyName] = name
	}
	info, _, err := a.h.PutConnectorConfig(r.Context(), name, cfg, false)
	if err != nil {
		writeError(w, err)
		return
	}
	w.Header().Set("Location", "/connectors/"+name)
	writeJSON(w, http.StatusCreated, info)
}

func (a *restAPI) info(w http.ResponseWriter, r *http.Request) {
	info, err := a.h.ConnectorInfo(r.Context(), r.PathValue("name"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, info)
}

func (a *restAPI) delete(w http.ResponseWriter, r *http.Request) {
	if err := a.h.DeleteConnector(r.Context(), r.PathValue("name")); err != nil {
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (a *restAPI) getConfig(w http.ResponseWriter, r *http.Request) {
	info, err := a.h.ConnectorInfo(r.Context(), r.PathValue("name"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, info.Config)
}

func (a *restAPI) putConfig(w http.ResponseWriter, r *http.Request) {
	m, err := readConfig(r.Body, false)
	if err != nil {
		writeError(w, err)
		return
	}
	info, created, err := a.h.PutConnectorConfig(r.Context(), r.PathValue("name"), toConfig(m), true)
	if err != nil {
		writeError(w, err)
		return
	}
	code := http.StatusOK
	if created {
		code = http.StatusCreated
		w.Header().Set("Location", "/connectors/"+info.Name)
	}
	writeJSON(w, code, info)
}

// patchConfig merges the body into the connector's config (KIP-477): a
// null removes a key.
func (a *restAPI) patchConfig(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	patch, err := readConfig(r.Body, true)
	if err != nil {
		writeError(w, err)
		return
	}
	raw, err := a.rawConfig(r.Context(), name)
	if err != nil {
		writeError(w, err)
		return
	}
	for k, v := range patch {
		if v == nil {
			delete(raw, k)
		} else {
			raw[k] = *v
		}
	}
	info, _, err := a.h.PutConnectorConfig(r.Context(), name, raw, true)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, info)
}

// rawConfig returns a connector's stored config, secrets unmasked, for a
// patch to merge into.
func (a *restAPI) rawConfig(ctx context.Context, name string) (Config, error) {
	if rh, ok := a.h.(interface {
		rawConfig(ctx context.Context, name string) (Config, error)
	}); ok {
		return rh.rawConfig(ctx, name)
	}
	info, err := a.h.ConnectorInfo(ctx, name)
	return info.Config, err
}

func (a *restAPI) status(w http.ResponseWriter, r *http.Request) {
	st, err := a.h.ConnectorStatus(r.Context(), r.PathValue("name"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

func (a *restAPI) restart(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	includeTasks, onlyFailed := q.Get("includeTasks") == "true", q.Get("onlyFailed") == "true"
	st, err := a.h.RestartConnector(r.Context(), r.PathValue("name"), includeTasks, onlyFailed)
	if err != nil {
		writeError(w, err)
		return
	}
	if !includeTasks && !onlyFailed {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	writeJSON(w, http.StatusAccepted, st)
}

func (a *restAPI) target(t TargetState, code int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := a.h.SetTargetState(r.Context(), r.PathValue("name"), t); err != nil {
			writeError(w, err)
			return
		}
		w.WriteHeader(code)
	}
}

func (a *restAPI) tasks(w http.ResponseWriter, r *http.Request) {
	ts, err := a.h.TaskConfigs(r.Context(), r.PathValue("name"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, ts)
}

func (a *restAPI) taskID(r *http.Request) (TaskID, error) {
	n, err := strconv.Atoi(r.PathValue("task"))
	if err != nil {
		return TaskID{}, newHerderError(ErrNotFound, "Task %s-%s not found", r.PathValue("name"), r.PathValue("task"))
	}
	return TaskID{Connector: r.PathValue("name"), Task: n}, nil
}

func (a *restAPI) taskStatus(w http.ResponseWriter, r *http.Request) {
	id, err := a.taskID(r)
	if err == nil {
		var st TaskStatus
		if st, err = a.h.TaskStatus(r.Context(), id); err == nil {
			writeJSON(w, http.StatusOK, st)
			return
		}
	}
	writeError(w, err)
}

func (a *restAPI) taskRestart(w http.ResponseWriter, r *http.Request) {
	id, err := a.taskID(r)
	if err == nil {
		if err = a.h.RestartTask(r.Context(), id); err == nil {
			w.WriteHeader(http.StatusNoContent)
			return
		}
	}
	writeError(w, err)
}

func (a *restAPI) offsets(w http.ResponseWriter, r *http.Request) {
	offs, err := a.h.Offsets(r.Context(), r.PathValue("name"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, offs)
}

func (a *restAPI) alterOffsets(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Offsets []json.RawMessage `json:"offsets"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 16<<20)).Decode(&body); err != nil || body.Offsets == nil {
		writeError(w, newHerderError(ErrBadRequest, "Request body must be {\"offsets\": [{\"partition\": {...}, \"offset\": {...}}, ...]}"))
		return
	}
	var offs ConnectorOffsets
	for _, raw := range body.Offsets {
		var e struct {
			Partition json.RawMessage `json:"partition"`
			Offset    json.RawMessage `json:"offset"`
		}
		if err := json.Unmarshal(raw, &e); err != nil {
			writeError(w, newHerderError(ErrBadRequest, "Bad offset entry %s: %v", raw, err))
			return
		}
		p, err1 := decodeJSONMap(e.Partition)
		o, err2 := decodeJSONMap(e.Offset)
		if err := errors.Join(err1, err2); err != nil {
			writeError(w, newHerderError(ErrBadRequest, "Bad offset entry %s: %v", raw, err))
			return
		}
		offs.Offsets = append(offs.Offsets, SourceOffset{Partition: p, Offset: o})
	}
	if err := a.h.AlterOffsets(r.Context(), r.PathValue("name"), offs); err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"message": "The offsets for this connector have been altered successfully"})
}

func (a *restAPI) resetOffsets(w http.ResponseWriter, r *http.Request) {
	if err := a.h.ResetOffsets(r.Context(), r.PathValue("name")); err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"message": "The offsets for this connector have been reset successfully"})
}

type pluginInfo struct {
	Class   string     `json:"class"`
	Type    PluginType `json:"type"`
	Version string     `json:"version,omitempty"`
}

func (a *restAPI) plugins(w http.ResponseWriter, r *http.Request) {
	connectorsOnly := r.URL.Query().Get("connectorsOnly") != "false"
	out := []pluginInfo{}
	for _, p := range a.h.Plugins() {
		if connectorsOnly && p.Type != SourcePlugin && p.Type != SinkPlugin {
			continue
		}
		out = append(out, pluginInfo{Class: p.Class, Type: p.Type, Version: p.Version})
	}
	writeJSON(w, http.StatusOK, out)
}

func (a *restAPI) lookupPlugin(name string) (*Plugin, error) {
	for _, p := range a.h.Plugins() {
		if p.Class == name {
			return p, nil
		}
		for _, al := range p.Aliases {
			if al == name {
				return p, nil
			}
		}
	}
	return nil, newHerderError(ErrNotFound, "Unknown plugin %s", name)
}

func (a *restAPI) pluginConfig(w http.ResponseWriter, r *http.Request) {
	p, err := a.lookupPlugin(r.PathValue("plugin"))
	if err != nil {
		writeError(w, err)
		return
	}
	out := []ConfigKeyInfo{}
	order := map[string]int{}
	for _, k := range p.Config.Keys() {
		order[k.Group]++
		ki := ConfigKeyInfo{Name: k.Name, Type: string(k.Type), Required: k.Required, Importance: string(k.Importance), Documentation: k.Doc,
			Group: k.Group, Width: "NONE", DisplayName: k.DisplayName, Dependents: []string{}, Order: order[k.Group]}
		if !k.Required {
			d := k.Default
			ki.DefaultValue = &d
		}
		out = append(out, ki)
	}
	writeJSON(w, http.StatusOK, out)
}

func (a *restAPI) validate(w http.ResponseWriter, r *http.Request) {
	m, err := readConfig(r.Body, false)
	if err != nil {
		writeError(w, err)
		return
	}
	cfg := toConfig(m)
	p, err := a.lookupPlugin(r.PathValue("plugin"))
	if err != nil {
		writeError(w, err)
		return
	}
	if c := strings.TrimSpace(cfg[KeyConnectorClass]); c == "" {
		cfg[KeyConnectorClass] = p.Class
	} else if q, err := a.lookupPlugin(c); err != nil || q != p {
		writeError(w, newHerderError(ErrBadRequest, "Included connector type %s does not match request type %s", c, r.PathValue("plugin")))
		return
	}
	infos, err := a.h.Validate(r.Context(), cfg)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, infos)
}
