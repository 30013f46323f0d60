package streams_test

import (
	"fmt"
	"maps"
	"testing"

	"github.com/runnel-io/runnel/streams"
	"github.com/runnel-io/runnel/streams/streamstest"
)

// cacheChecker applies each record's command to a store and checks,
// after each, that Get and All agree with a plain map (the driver's store
// cache holds 4 entries, so hits, misses, evictions and write-backs all
// happen).
type cacheChecker struct {
	t     *testing.T
	store *streams.KeyValueStore[string, int64]
	want  map[string]int64
}

func (p *cacheChecker) Init(ctx *streams.ProcessorContext[string, int64]) (err error) {
	p.store, err = streams.GetKeyValueStore[string, int64](ctx, "kv")
	return err
}

func (p *cacheChecker) Process(r streams.Record[string, int64]) error {
	if r.Tombstone {
		delete(p.want, r.Key)
		if err := p.store.Delete(r.Key); err != nil {
			return err
		}
	} else {
		p.want[r.Key] = r.Value
		if err := p.store.Put(r.Key, r.Value); err != nil {
			return err
		}
	}
	for k, v := range p.want {
		got, ok, err := p.store.Get(k)
		if err != nil || !ok || got != v {
			p.t.Errorf("Get(%s) = %d, %v, %v; want %d", k, got, ok, err, v)
		}
	}
	if _, ok, _ := p.store.Get("never"); ok {
		p.t.Error("a key never written is there")
	}
	all := map[string]int64{}
	for kv, err := range p.store.All() {
		if err != nil {
			return err
		}
		all[kv.Key] = kv.Value
	}
	if !maps.Equal(all, p.want) {
		p.t.Errorf("All = %v, want %v", all, p.want)
	}
	return nil
}

func (p *cacheChecker) Close() error { return nil }

func TestKeyValueStoreCacheReadsItsWritesThroughEvictions(t *testing.T) {
	b := streams.NewBuilder()
	b.AddStore(streams.NewKeyValueStore[string, int64](b, "kv"))
	want := map[string]int64{}
	streams.From[string, int64](b, "in").Process(func() streams.Processor[string, int64, string, int64] {
		return &cacheChecker{t: t, want: want}
	}, streams.ConnectStores("kv"))
	d := streamstest.New(t, build(t, b), streamstest.Config{})
	in := streamstest.Input[string, int64](d, "in", nil, nil)
	for i := range 60 {
		k := fmt.Sprintf("k%d", i%9)
		if i%7 == 3 {
			in.PipeTombstone(k)
		} else {
			in.Pipe(k, int64(i))
		}
	}
	if got := streamstest.KeyValueStore[string, int64](d, "kv"); !maps.Equal(got, want) {
		t.Errorf("committed store = %v, want %v", got, want)
	}
	// The changelog's latest record per key is the store's content.
	latest := map[string][]byte{}
	for _, r := range d.Records("test-app-kv-changelog") {
		latest[string(r.Key)] = r.Value
	}
	for k := range latest {
		if _, ok := want[k]; ok != (latest[k] != nil) {
			t.Errorf("changelog's last record of %s = %v, store has it: %v", k, latest[k], ok)
		}
	}
	for k := range want {
		if latest[k] == nil {
			t.Errorf("%s is in the store but its value never reached the changelog", k)
		}
	}
}
