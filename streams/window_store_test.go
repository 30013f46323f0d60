package streams_test

import (
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/runnel-io/runnel/streams"
	"github.com/runnel-io/runnel/streams/streamstest"
)

// clickCounter counts each key's records in 10 s windows of the store
// "clicks" and forwards the key's total over the last three windows.
type clickCounter struct {
	ctx   *streams.ProcessorContext[string, int64]
	store *streams.WindowStore[string, int64]
}

func (p *clickCounter) Init(ctx *streams.ProcessorContext[string, int64]) error {
	p.ctx = ctx
	var err error
	p.store, err = streams.GetWindowStore[string, int64](ctx, "clicks")
	return err
}

func (p *clickCounter) Process(r streams.Record[string, string]) error {
	start := r.Timestamp / (10 * sec) * (10 * sec)
	n, _, err := p.store.Get(r.Key, start)
	if err != nil {
		return err
	}
	if err := p.store.Put(r.Key, start, n+1); err != nil {
		return err
	}
	var total int64
	for kv, err := range p.store.Fetch(r.Key, start-20*sec, start) {
		if err != nil {
			return err
		}
		total += kv.Value
	}
	return p.ctx.Forward(streams.Record[string, int64]{Key: r.Key, Value: total, Timestamp: r.Timestamp})
}

func (p *clickCounter) Close() error { return nil }

func TestWindowStoreForTheProcessorAPIExpiresWindowsPastRetention(t *testing.T) {
	b := streams.NewBuilder()
	b.AddStore(streams.NewWindowStore[string, int64](b, "clicks", 10*time.Second, streams.Retention(30*time.Second)))
	streams.From[string, string](b, "clicks").
		Process(func() streams.Processor[string, string, string, int64] { return &clickCounter{} }, streams.ConnectStores("clicks")).
		To("totals")
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	d := streamstest.New(t, topo, streamstest.Config{})
	in := streamstest.Input[string, string](d, "clicks", nil, nil)
	out := streamstest.Output[string, int64](d, "totals", nil, nil)
	in.PipeAt("a", "x", at(0))
	in.PipeAt("a", "x", at(15))
	in.PipeAt("a", "x", at(25))
	in.PipeAt("b", "x", at(45))
	in.PipeAt("a", "x", at(46)) // stream time 46: windows starting before 16 expire
	var totals []int64
	for _, kv := range out.ReadKeyValues() {
		totals = append(totals, kv.Value)
	}
	if want := []int64{1, 2, 3, 1, 2}; !equalInts(totals, want) {
		t.Fatalf("totals %v, want %v", totals, want)
	}
	got := streamstest.WindowStore[string, int64](d, "clicks")
	want := map[win]int64{
		{Key: "a", Start: 20 * sec, End: 30 * sec}: 1,
		{Key: "a", Start: 40 * sec, End: 50 * sec}: 1,
		{Key: "b", Start: 40 * sec, End: 50 * sec}: 1,
	}
	if !maps.Equal(got, want) {
		t.Fatalf("store = %v, want %v", got, want)
	}
	// The changelog has Kafka's window key format: key, start, sequence number.
	cl := d.Records("test-app-clicks-changelog")
	if k := cl[0].Key; string(k[:1]) != "a" || len(k) != 1+8+4 {
		t.Fatalf("changelog key %x, want a + 8-byte start + 4-byte seqnum", k)
	}
}

func equalInts(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// sessionTracker keeps one session per key in "visits": a record within
// 5 s of the key's last session extends it, a value "end" removes it.
type sessionTracker struct {
	ctx   *streams.ProcessorContext[string, int64]
	store *streams.SessionStore[string, int64]
}

func (p *sessionTracker) Init(ctx *streams.ProcessorContext[string, int64]) error {
	p.ctx = ctx
	var err error
	p.store, err = streams.GetSessionStore[string, int64](ctx, "visits")
	return err
}

func (p *sessionTracker) Process(r streams.Record[string, string]) error {
	session := streams.Windowed[string]{Key: r.Key, Start: r.Timestamp, End: r.Timestamp}
	var n int64
	for kv, err := range p.store.FindSessions(r.Key, r.Timestamp-5*sec, r.Timestamp) {
		if err != nil {
			return err
		}
		if err := p.store.Remove(kv.Key); err != nil {
			return err
		}
		session.Start, n = kv.Key.Start, kv.Value
	}
	if r.Value == "end" {
		return nil
	}
	if err := p.store.Put(session, n+1); err != nil {
		return err
	}
	if v, ok, err := p.store.Get(session); err != nil || !ok || v != n+1 {
		return errors.New("Get does not return what Put stored")
	}
	return nil
}

func (p *sessionTracker) Close() error { return nil }

func TestSessionStoreForTheProcessorAPI(t *testing.T) {
	b := streams.NewBuilder()
	b.AddStore(streams.NewSessionStore[string, int64](b, "visits", time.Minute))
	streams.From[string, string](b, "visits").
		Process(func() streams.Processor[string, string, string, int64] { return &sessionTracker{} }, streams.ConnectStores("visits"))
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	d := streamstest.New(t, topo, streamstest.Config{})
	in := streamstest.Input[string, string](d, "visits", nil, nil)
	in.PipeAt("a", "x", at(0))
	in.PipeAt("a", "x", at(3))
	in.PipeAt("a", "x", at(20))
	in.PipeAt("b", "x", at(21))
	in.PipeAt("b", "end", at(22))
	got := streamstest.SessionStore[string, int64](d, "visits", "a", "b")
	want := map[win]int64{
		{Key: "a", Start: 0, End: 3 * sec}:         2,
		{Key: "a", Start: 20 * sec, End: 20 * sec}: 1,
	}
	if !maps.Equal(got, want) {
		t.Fatalf("store = %v, want %v", got, want)
	}
	in.PipeAt("c", "x", at(90)) // stream time 90: sessions that ended before 30 expire
	if got := streamstest.SessionStore[string, int64](d, "visits", "a"); len(got) != 0 {
		t.Fatalf("expired sessions still visible: %v", got)
	}
}

func TestGetWindowStoreOfTheWrongTypeFails(t *testing.T) {
	b := streams.NewBuilder()
	b.AddStore(streams.NewWindowStore[string, string](b, "clicks", time.Second))
	streams.From[string, string](b, "clicks").
		Process(func() streams.Processor[string, string, string, int64] { return &clickCounter{} }, streams.ConnectStores("clicks"))
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	d := streamstest.New(t, topo, streamstest.Config{})
	err = streamstest.Input[string, string](d, "clicks", nil, nil).TryPipe(streams.Record[string, string]{Key: "a", Value: "x"})
	if !errors.Is(err, streams.ErrTopology) {
		t.Fatalf("pipe = %v, want ErrTopology (a window store of string values read as int64)", err)
	}
}
