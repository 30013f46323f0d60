package bench_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/bench/internal/harness"
	"github.com/runnel-io/runnel/connect"
	"github.com/runnel-io/runnel/connect/connectors"
	"github.com/runnel-io/runnel/internal/pgtest"
)

// Connect benchmarks (issue 7): the full Connect runtime — a standalone
// worker in the benchmark process, its converters, consumer group and
// offset commits — between one `runnel broker` process and a private
// PostgreSQL (internal/pgtest: fsync off), with JSON records of about
// 200 bytes (connectRecord).
//
// BenchmarkConnectPostgresSink/{insert,upsert}: topic → PostgresSink →
// table. An 8-partition topic holds the records, written once before the
// timer; each op starts a worker with a new sink connector (a new group:
// it reads from the start) into a new table (auto.create, primary key id)
// and ends when the group has committed the end offset of every
// partition, which the runtime does only after the task flushed: every
// row is in the table then (the op checks the count, untimed). insert:
// unique ids, COPY. upsert: ids drawn from connectUpsertKeys, so most
// records update a row (INSERT ... ON CONFLICT DO UPDATE; the last of a
// key in a batch wins). Defaults but offset.flush.interval.ms (500 ms,
// instead of 10 s, which would add up to 10 s of tail to an op).
//
// BenchmarkConnectPostgresSink/raw-copy, the peer of insert: the same
// rows, decoded beforehand, COPYed into a new table by one pgx
// connection in one statement — what PostgreSQL takes here with no
// Kafka, JSON or runtime in the way.
//
// BenchmarkConnectFileSource/connect: file → FileStreamSource (format
// json) → topic. A JSON-lines file of the same records, written once;
// each op starts a worker with a new source connector and ends when the
// new 8-partition topic's end offsets hold every line. Its peer,
// BenchmarkConnectFileSource/kgo-producer: one franz-go producer sends
// the file's lines as they are (no converter, offsets or task).
//
// records/s is records over the op (the worker's start and group join
// included); MB/s counts the JSON values; cpu-% is this process (the
// worker: 100 = one core), others-cpu-% the rest of the machine (the
// broker, PostgreSQL and any neighbour).
const connectPartitions = 8

// connectRecords is the records per op: RUNNEL_BENCH_CONNECT_RECORDS,
// default 200,000 (issue 7's file).
func connectRecords(tb testing.TB) int {
	if s := os.Getenv("RUNNEL_BENCH_CONNECT_RECORDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			tb.Fatalf("RUNNEL_BENCH_CONNECT_RECORDS=%q: want a positive count", s)
		}
		return n
	}
	return 200_000
}

// connectUpsertKeys is the number of distinct ids of the upsert input.
const connectUpsertKeys = 50_000

// connectRecord is the JSON of record i with id: about 200 bytes.
func connectRecord(rng *rand.Rand, i int, id int64) []byte {
	note := make([]byte, 90)
	for j := range note {
		note[j] = 'a' + byte(rng.IntN(26))
	}
	b, _ := json.Marshal(map[string]any{
		"id": id, "seq": i, "name": "item-" + strconv.FormatInt(id, 10), "qty": rng.IntN(1000),
		"price": float64(2*rng.IntN(1_000_000)+1) / 200, "active": rng.IntN(2) == 0, "note": string(note),
	})
	return b
}

// connectInput returns n records: unique ids, or (keys > 0) ids drawn
// from keys, and their total size.
func connectInput(n, keys int) ([][]byte, int64) {
	rng := rand.New(rand.NewPCG(7, uint64(keys)))
	out := make([][]byte, n)
	var size int64
	for i := range out {
		id := int64(i)
		if keys > 0 {
			id = rng.Int64N(int64(keys))
		}
		out[i] = connectRecord(rng, i, id)
		size += int64(len(out[i]))
	}
	return out, size
}

func BenchmarkConnectPostgresSink(b *testing.B) {
	srv := startStreamsBroker(b)
	pg := pgtest.Start(b)
	n := connectRecords(b)
	for _, mode := range []struct {
		name string
		keys int
	}{{"insert", 0}, {"upsert", connectUpsertKeys}} {
		in := writeSinkInput(b, srv, mode.name, n, mode.keys)
		if mode.keys == 0 {
			// The peer: the same rows COPYed straight into a table,
			// decoded beforehand (PostgreSQL's own limit here).
			rows := decodeRows(b, in.recs)
			b.Run("raw-copy", func(b *testing.B) {
				for range b.N {
					reportConnect(b, rawCopyOnce(b, pg, in, rows))
				}
				b.ReportMetric(0, "ns/op")
			})
		}
		b.Run(mode.name, func(b *testing.B) {
			for range b.N {
				reportConnect(b, sinkOnce(b, srv, pg, in, mode.name))
			}
			b.ReportMetric(0, "ns/op")
		})
	}
}

func BenchmarkConnectFileSource(b *testing.B) {
	srv := startStreamsBroker(b)
	in := writeFileInput(b, connectRecords(b))
	// The peer: a franz-go producer that sends the file's lines as they
	// are, with no converter, offsets or task around it.
	b.Run("kgo-producer", func(b *testing.B) {
		for range b.N {
			reportConnect(b, produceFileOnce(b, srv, in))
		}
		b.ReportMetric(0, "ns/op")
	})
	b.Run("connect", func(b *testing.B) {
		for range b.N {
			reportConnect(b, fileOnce(b, srv, in))
		}
		b.ReportMetric(0, "ns/op")
	})
}

// connectInputSet is an op's input: n records of size bytes in all, and
// the rows they leave.
type connectInputSet struct {
	topic, path string
	recs        [][]byte // the JSON values
	n, rows     int
	size        int64
}

// writeSinkInput writes the sink's input topic once: n records, unique
// ids or ids drawn from keys.
func writeSinkInput(tb testing.TB, srv server, mode string, n, keys int) connectInputSet {
	recs, size := connectInput(n, keys)
	in := connectInputSet{topic: harness.TopicName("connect-" + mode), recs: recs, n: n, rows: n, size: size}
	writeTopic(tb, srv.addr, in.topic, nil, n, func(i int) *kgo.Record { return &kgo.Record{Value: recs[i]} })
	if keys > 0 {
		in.rows = distinctIDs(recs)
	}
	return in
}

// writeFileInput writes the source's JSON-lines file once.
func writeFileInput(tb testing.TB, n int) connectInputSet {
	recs, size := connectInput(n, 0)
	in := connectInputSet{path: filepath.Join(tb.TempDir(), "records.jsonl"), recs: recs, n: n, rows: n, size: size}
	var file []byte
	for _, r := range recs {
		file = append(append(file, r...), '\n')
	}
	if err := os.WriteFile(in.path, file, 0o644); err != nil {
		tb.Fatal(err)
	}
	return in
}

// connectOp is what one op measured.
type connectOp struct {
	in      connectInputSet
	elapsed time.Duration
	self    time.Duration // this process's CPU
	others  time.Duration // the rest of the machine's
}

// sinkOnce copies the input topic into a new table with a new sink
// connector and returns once the group committed every record.
func sinkOnce(tb testing.TB, srv server, pg *pgtest.Server, in connectInputSet, mode string) connectOp {
	name := harness.TopicName("pg-" + mode)
	table := strings.ReplaceAll(name, "-", "_")
	sink := connect.Config{
		"name": name, "connector.class": "PostgresSink", "topics": in.topic, "connection.url": pg.DSN(),
		"table.name.format": table, "insert.mode": mode, "pk.mode": "record_value", "pk.fields": "id",
		"auto.create": "true",
	}
	op := measureConnect(tb, srv, in, sink, func() { waitCommitted(tb, srv, "connect-"+name, in.topic, int64(in.n)) })
	if got := tableCount(tb, pg, table); got != in.rows {
		tb.Fatalf("%s: %d rows, want %d", table, got, in.rows)
	}
	return op
}

// fileOnce reads the file into a new topic with a new source connector
// and returns once the topic holds every line.
func fileOnce(tb testing.TB, srv server, in connectInputSet) connectOp {
	topic := harness.TopicName("connect-file")
	createTopic(tb, srv.addr, topic)
	source := connect.Config{"name": topic, "connector.class": "FileStreamSource", "file": in.path, "format": "json", "topic": topic}
	in.topic = topic
	return measureConnect(tb, srv, in, source, func() { waitEndOffsets(tb, srv, topic, int64(in.n)) })
}

// connectColumns are the columns of connectRecord, in the types the
// sink's auto.create gives them.
var connectColumns = []struct{ name, typ string }{
	{"id", "bigint PRIMARY KEY"}, {"seq", "bigint"}, {"name", "text"}, {"qty", "bigint"},
	{"price", "double precision"}, {"active", "boolean"}, {"note", "text"},
}

// decodeRows turns the JSON records into COPY rows, in connectColumns'
// order.
func decodeRows(tb testing.TB, recs [][]byte) [][]any {
	rows := make([][]any, len(recs))
	for i, r := range recs {
		var v struct {
			ID, Seq, Qty int64
			Name, Note   string
			Price        float64
			Active       bool
		}
		if err := json.Unmarshal(r, &v); err != nil {
			tb.Fatal(err)
		}
		rows[i] = []any{v.ID, v.Seq, v.Name, v.Qty, v.Price, v.Active, v.Note}
	}
	return rows
}

// rawCopyOnce COPYs rows into a new table in one statement: the time
// from the connection to the commit, with no Kafka, JSON or runtime.
func rawCopyOnce(tb testing.TB, pg *pgtest.Server, in connectInputSet, rows [][]any) connectOp {
	table := strings.ReplaceAll(harness.TopicName("pg-raw"), "-", "_")
	cols := make([]string, len(connectColumns))
	defs := make([]string, len(connectColumns))
	for i, c := range connectColumns {
		cols[i] = c.name
		defs[i] = c.name + " " + c.typ
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	return measure(tb, in, func() {
		conn, err := pgx.Connect(ctx, pg.DSN())
		if err != nil {
			tb.Fatal(err)
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(ctx, "CREATE TABLE "+table+" ("+strings.Join(defs, ", ")+")"); err != nil {
			tb.Fatal(err)
		}
		n, err := conn.CopyFrom(ctx, pgx.Identifier{table}, cols, pgx.CopyFromRows(rows))
		if err != nil || n != int64(len(rows)) {
			tb.Fatalf("COPY into %s: %d of %d rows: %v", table, n, len(rows), err)
		}
	})
}

// produceFileOnce sends the file's lines to a new topic with one franz-go
// producer and returns once every line is acknowledged.
func produceFileOnce(tb testing.TB, srv server, in connectInputSet) connectOp {
	topic := harness.TopicName("kgo-file")
	createTopic(tb, srv.addr, topic)
	op := measure(tb, in, func() {
		f, err := os.Open(in.path)
		if err != nil {
			tb.Fatal(err)
		}
		defer f.Close()
		cl, err := kgo.NewClient(kgo.SeedBrokers(srv.addr), kgo.DefaultProduceTopic(topic))
		if err != nil {
			tb.Fatal(err)
		}
		defer cl.Close()
		var failed atomic.Pointer[error]
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			cl.Produce(context.Background(), &kgo.Record{Value: bytes.Clone(sc.Bytes())}, func(_ *kgo.Record, err error) {
				if err != nil {
					failed.CompareAndSwap(nil, &err)
				}
			})
		}
		if err := sc.Err(); err != nil {
			tb.Fatal(err)
		}
		if err := cl.Flush(context.Background()); err != nil {
			tb.Fatal(err)
		}
		if err := failed.Load(); err != nil {
			tb.Fatal(*err)
		}
	})
	waitEndOffsets(tb, srv, topic, int64(in.n)) // fails if it holds more
	return op
}

// measureConnect starts a worker with the connector conn, waits until
// done returns, and closes the worker; it returns the time from the
// start until done and the CPU used meanwhile.
func measureConnect(tb testing.TB, srv server, in connectInputSet, conn connect.Config, done func()) connectOp {
	var w *connect.Worker
	op := measure(tb, in, func() {
		w = startBenchWorker(tb, srv.addr, conn)
		done()
	})
	w.Close()
	return op
}

// measure runs run and returns its time and the CPU used meanwhile.
func measure(tb testing.TB, in connectInputSet, run func()) connectOp {
	self0 := harness.SelfCPU()
	machine0, err := harness.MachineCPU()
	if err != nil {
		tb.Fatal(err)
	}
	start := time.Now()
	run()
	op := connectOp{in: in, elapsed: time.Since(start)}
	machine, err := harness.MachineCPU()
	if err != nil {
		tb.Fatal(err)
	}
	op.self = harness.SelfCPU() - self0
	op.others = max(0, machine-machine0-op.self)
	return op
}

func reportConnect(b *testing.B, op connectOp) {
	s := op.elapsed.Seconds()
	b.ReportMetric(float64(op.in.n)/s, "records/s")
	b.ReportMetric(float64(op.in.size)/1e6/s, "MB/s")
	b.ReportMetric(100*op.self.Seconds()/s, "cpu-%")
	b.ReportMetric(100*op.others.Seconds()/s, "others-cpu-%")
}

// startBenchWorker starts a standalone worker in this process with conns.
func startBenchWorker(tb testing.TB, addr string, conns ...connect.Config) *connect.Worker {
	cfg := connect.Config{
		"bootstrap.servers":            addr,
		"listeners":                    "http://127.0.0.1:0",
		"offset.storage.file.filename": filepath.Join(tb.TempDir(), "offsets.json"),
		"offset.flush.interval.ms":     "500",
		"key.converter":                "json", "key.converter.schemas.enable": "false",
		"value.converter": "json", "value.converter.schemas.enable": "false",
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w, err := connect.StartStandalone(ctx, cfg, conns, connect.WorkerOptions{Registry: connectors.NewRegistry()})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(w.Close)
	return w
}

// waitCommitted waits until group has committed the end offset of every
// partition of topic, whose end offsets add up to n.
func waitCommitted(b testing.TB, srv server, group, topic string, n int64) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(srv.addr))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for {
		offs, err := adm.FetchOffsets(ctx, group)
		var sum int64
		if err == nil {
			offs.Each(func(o kadm.OffsetResponse) {
				if o.Topic == topic && o.Err == nil {
					sum += o.At
				}
			})
		}
		if sum == n {
			return
		}
		if sum > n {
			b.Fatalf("group %s committed %d offsets of %s, more than its %d records", group, sum, topic, n)
		}
		if err := waitTick(ctx, srv); err != nil {
			b.Fatalf("group %s: %d of %d records committed: %v", group, sum, n, err)
		}
	}
}

// waitEndOffsets waits until topic holds n records.
func waitEndOffsets(b testing.TB, srv server, topic string, n int64) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(srv.addr))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for {
		ends, err := adm.ListEndOffsets(ctx, topic)
		var sum int64
		if err == nil {
			ends.Each(func(o kadm.ListedOffset) {
				if o.Err == nil {
					sum += o.Offset
				}
			})
		}
		if sum >= n {
			if sum > n {
				b.Fatalf("%s holds %d records, more than the %d lines", topic, sum, n)
			}
			return
		}
		if err := waitTick(ctx, srv); err != nil {
			b.Fatalf("%s: %d of %d records: %v", topic, sum, n, err)
		}
	}
}

func createTopic(tb testing.TB, addr, topic string) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		tb.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, connectPartitions, 1, nil, topic); err != nil {
		tb.Fatal(err)
	}
}

func tableCount(tb testing.TB, pg *pgtest.Server, table string) int {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, pg.DSN())
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{table}.Sanitize()).Scan(&n); err != nil {
		tb.Fatal(err)
	}
	return n
}

func distinctIDs(recs [][]byte) int {
	seen := map[string]bool{}
	for _, r := range recs {
		var v struct {
			ID json.Number `json:"id"`
		}
		json.Unmarshal(r, &v)
		seen[string(v.ID)] = true
	}
	return len(seen)
}

// TestConnectBenchmarks runs each Connect benchmark's op once, small, so a
// broken benchmark shows in `go test`.
func TestConnectBenchmarks(t *testing.T) {
	skipProcessInShort(t, "runnel-proc")
	const n = 2000
	srv := startStreamsBroker(t)
	pg := pgtest.Start(t)
	for _, mode := range []string{"insert", "upsert"} {
		t.Run("sink-"+mode, func(t *testing.T) {
			keys := 0
			if mode == "upsert" {
				keys = 500
			}
			op := sinkOnce(t, srv, pg, writeSinkInput(t, srv, mode, n, keys), mode)
			t.Logf("%d records in %v", n, op.elapsed)
		})
	}
	t.Run("raw-copy", func(t *testing.T) {
		in := writeSinkInput(t, srv, "raw", n, 0)
		op := rawCopyOnce(t, pg, in, decodeRows(t, in.recs))
		t.Logf("%d rows in %v", n, op.elapsed)
	})
	t.Run("file", func(t *testing.T) {
		in := writeFileInput(t, n)
		op := fileOnce(t, srv, in)
		t.Logf("connect: %d lines in %v", n, op.elapsed)
		op = produceFileOnce(t, srv, in)
		t.Logf("kgo producer: %d lines in %v", n, op.elapsed)
	})
}
