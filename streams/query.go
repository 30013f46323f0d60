package streams

import (
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"math"
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/streams/internal/assign"
)

// Interactive queries read an instance's local stores while it runs, as
// Kafka Streams' IQ: QueryKey for the store partition that holds one key,
// QueryStore for every partition hosted here. The app's loop stops between
// two polls for the time fn runs, so fn sees a store between records, its
// uncommitted writes included — keep fn short and never block in it.
//
// A key lives in the partition Kafka's default partitioner gives its
// encoded bytes (the partitioner of every repartition topic, and of
// Kafka's clients); a key written to an input topic by another partitioner
// is looked up in the wrong partition, as in Kafka Streams.

// ErrNotRunning is returned by queries of an App that is not running.
var ErrNotRunning = errors.New("streams: app is not running")

// ErrUnknownStore is returned by queries of a store the topology lacks.
var ErrUnknownStore = errors.New("streams: no such store")

// NotLocalError says that a key's store partition is not served by this
// instance: Owner is the Endpoint of the instance that is, or "" while none
// is (during a rebalance, or when the owner set no Endpoint).
type NotLocalError struct {
	Store string
	Task  TaskID
	Owner string
}

func (e *NotLocalError) Error() string {
	if e.Owner == "" {
		return fmt.Sprintf("streams: store %s task %s is not hosted by this instance and its owner is not known yet", e.Store, e.Task)
	}
	return fmt.Sprintf("streams: store %s task %s is hosted by %s", e.Store, e.Task, e.Owner)
}

// ErrRestoring is returned for a key whose task is assigned here but still
// restoring its state: ask again shortly.
var ErrRestoring = errors.New("streams: store partition is restoring")

// QueryKey calls fn with this instance's handle of store for the partition
// holding key: a *KeyValueStore[K, V] for key-value stores (S must be the
// handle's exact type). It returns a *NotLocalError naming the owner when
// another instance holds the key.
func QueryKey[K, S any](a *App, store string, key K, fn func(S) error) error {
	r, def, err := a.queryTarget(store)
	if err != nil {
		return err
	}
	kb, err := def.encodeKey(key)
	if err != nil {
		return fmt.Errorf("streams: query %s: %w", store, err)
	}
	return r.withTaskStore(def, r.keyTask(def, kb), func(h any) error { return callWith(h, store, fn) })
}

// QueryStore calls fn with this instance's handle of store for each
// partition it hosts, in partition order.
func QueryStore[S any](a *App, store string, fn func(partition int32, s S) error) error {
	r, def, err := a.queryTarget(store)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, id := range r.eng.taskIDs() {
		if id.Subtopology != def.sub {
			continue
		}
		if err := callWith(r.eng.tasks[id].stores[store], store, func(s S) error { return fn(id.Partition, s) }); err != nil {
			return err
		}
	}
	return nil
}

// Get reads key from the key-value store named store, wherever in this
// instance it is; see QueryKey for keys held elsewhere.
func Get[K, V any](a *App, store string, key K) (v V, ok bool, err error) {
	err = QueryKey(a, store, key, func(s *KeyValueStore[K, V]) error {
		v, ok, err = s.Get(key)
		return err
	})
	return v, ok, err
}

func callWith[S any](h any, store string, fn func(S) error) error {
	s, ok := h.(S)
	if !ok {
		var zero S
		return fmt.Errorf("%w: store %q is a %T, not a %T", ErrTopology, store, h, zero)
	}
	return fn(s)
}

func (a *App) queryTarget(store string) (*run, *storeDef, error) {
	def, ok := a.topo.stores[store]
	if !ok {
		return nil, nil, fmt.Errorf("%w: %q", ErrUnknownStore, store)
	}
	if def.encodeKey == nil {
		return nil, nil, fmt.Errorf("%w: store %q is internal to an operator and cannot be queried", ErrTopology, store)
	}
	a.mu.Lock()
	r := a.mu.run
	a.mu.Unlock()
	if r == nil {
		return nil, nil, ErrNotRunning
	}
	return r, def, nil
}

// keyTask is the task whose store partition holds the encoded key kb.
func (r *run) keyTask(def *storeDef, kb []byte) TaskID {
	n := r.plan.subs[def.sub]
	p := keyPartitioner.ForTopic("").Partition(&kgo.Record{Key: kb}, int(n))
	return TaskID{Subtopology: def.sub, Partition: int32(p)}
}

// withTaskStore runs fn on task id's handle of def, or says who has it.
func (r *run) withTaskStore(def *storeDef, id TaskID, fn func(h any) error) error {
	r.mu.Lock()
	if t, ok := r.eng.tasks[id]; ok {
		defer r.mu.Unlock()
		return fn(t.stores[def.name])
	}
	restoring := r.mu.pending[id]
	r.mu.Unlock()
	if restoring {
		return fmt.Errorf("%w: store %s task %s", ErrRestoring, def.name, id)
	}
	return &NotLocalError{Store: def.name, Task: id, Owner: r.ownerOf(id)}
}

// onAssign keeps the group's view of who hosts which task, for queries,
// and the leader's assignment error, which stops the app.
func (r *run) onAssign(a assign.Assignment) {
	r.app.metrics.rebalances.Inc()
	r.q.Lock()
	defer r.q.Unlock()
	r.q.hosts = a.Hosts
	r.q.standby = a.Standby
	if a.Error != "" && r.q.err == nil {
		r.q.err = fmt.Errorf("streams: the group could not assign tasks: %s", a.Error)
	}
}

func (r *run) assignmentErr() error {
	r.q.Lock()
	defer r.q.Unlock()
	return r.q.err
}

func (r *run) ownerOf(id TaskID) string {
	r.q.Lock()
	defer r.q.Unlock()
	want := assign.Task{Subtopology: id.Subtopology, Partition: id.Partition}
	for endpoint, tasks := range r.q.hosts {
		if slices.Contains(tasks, want) {
			return endpoint
		}
	}
	return ""
}

// hosts returns the group's endpoints and the tasks of each, sorted.
func (r *run) hosts() map[string][]string {
	r.q.Lock()
	defer r.q.Unlock()
	out := map[string][]string{}
	for endpoint, tasks := range r.q.hosts {
		ids := make([]string, 0, len(tasks))
		for _, t := range tasks {
			ids = append(ids, TaskID{Subtopology: t.Subtopology, Partition: t.Partition}.String())
		}
		sort.Strings(ids)
		out[endpoint] = ids
	}
	return out
}

// jsonStore is what the HTTP query endpoint needs of a store handle.
type jsonStore interface {
	// getJSON reads the encoded key kb: its value, JSON-encodable.
	getJSON(kb []byte) (any, bool, error)
	// entriesJSON appends up to limit entries, in key order.
	entriesJSON(out []jsonEntry, limit int) ([]jsonEntry, error)
}

type jsonEntry struct {
	Key   any `json:"key"`
	Value any `json:"value"`
}

// keyCodec encodes keys of a store's key type for queries: from a Go value
// (QueryKey) and from the text of a URL (the HTTP endpoint: the string
// itself for string keys, else the key's JSON).
type keyCodec struct {
	encodeKey  func(key any) ([]byte, error)
	encodeText func(text string) ([]byte, error)
}

func newKeyCodec[K any](encode func(dst []byte, k K) ([]byte, error)) keyCodec {
	return keyCodec{
		encodeKey: func(key any) ([]byte, error) {
			k, ok := key.(K)
			if !ok {
				var zero K
				return nil, fmt.Errorf("key %T is not the store's key type %T", key, zero)
			}
			return encode(nil, k)
		},
		encodeText: func(text string) ([]byte, error) {
			var k K
			if p, ok := any(&k).(*string); ok {
				*p = text
			} else if err := json.Unmarshal([]byte(text), &k); err != nil {
				return nil, fmt.Errorf("key %q is not a JSON %T: %w", text, k, err)
			}
			return encode(nil, k)
		},
	}
}

func (s *KeyValueStore[K, V]) getJSON(kb []byte) (any, bool, error) {
	b, ok, err := s.getEncoded(kb)
	if err != nil || !ok {
		return nil, ok, err
	}
	v, err := s.vs.Decode(b)
	if err != nil {
		return nil, false, fmt.Errorf("streams: store value: %w", err)
	}
	return v, true, nil
}

func (s *KeyValueStore[K, V]) entriesJSON(out []jsonEntry, limit int) ([]jsonEntry, error) {
	return appendEntries(out, limit, s.All())
}

// appendEntries appends entries to out until it holds limit.
func appendEntries[K, V any](out []jsonEntry, limit int, entries iter.Seq2[KeyValue[K, V], error]) ([]jsonEntry, error) {
	for kv, err := range entries {
		if err != nil {
			return out, err
		}
		if len(out) >= limit {
			break
		}
		out = append(out, jsonEntry{Key: kv.Key, Value: kv.Value})
	}
	return out, nil
}

// jsonWindow is one window of a key, as the HTTP endpoint shows it.
type jsonWindow struct {
	Start int64 `json:"start"`
	End   int64 `json:"end"`
	Value any   `json:"value"`
}

func windowsJSON[K, V any](windows iter.Seq2[KeyValue[Windowed[K], V], error]) ([]jsonWindow, error) {
	out := []jsonWindow{}
	for kv, err := range windows {
		if err != nil {
			return nil, err
		}
		out = append(out, jsonWindow{Start: kv.Key.Start, End: kv.Key.End, Value: kv.Value})
	}
	return out, nil
}

// getJSON of a window store: the key's windows, in start order.
func (s *WindowStore[K, V]) getJSON(kb []byte) (any, bool, error) {
	k, err := s.c.ks.Decode(kb)
	if err != nil {
		return nil, false, err
	}
	ws, err := windowsJSON(s.Fetch(k, math.MinInt64, math.MaxInt64))
	return ws, len(ws) > 0, err
}

func (s *WindowStore[K, V]) entriesJSON(out []jsonEntry, limit int) ([]jsonEntry, error) {
	return appendEntries(out, limit, s.All())
}

// getJSON of a session store: the key's sessions, in start order.
func (s *SessionStore[K, V]) getJSON(kb []byte) (any, bool, error) {
	k, err := s.c.ks.Decode(kb)
	if err != nil {
		return nil, false, err
	}
	ws, err := windowsJSON(s.Fetch(k))
	return ws, len(ws) > 0, err
}

// entriesJSON of a session store: the state layer keeps sessions by key
// only, so there is no listing.
func (s *SessionStore[K, V]) entriesJSON([]jsonEntry, int) ([]jsonEntry, error) {
	return nil, fmt.Errorf("%w: a session store is read by key (/stores/{store}/keys/{key})", ErrTopology)
}
