package connect

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/runnel-io/runnel/broker/brokertest"
	"github.com/runnel-io/runnel/connect/connecttest"
	"github.com/runnel-io/runnel/internal/pgtest"
)

// The pipeline's topic and table.
const (
	itemsTopic      = "items"
	itemsPartitions = 4
	itemsTable      = "items"
)

// TestFileToPostgresUnderKill is the acceptance test of issue 7: a
// JSON-lines file flows through FileStreamSource (format json, keyed by id
// with the ValueToKey transform) into a 4-partition topic and through
// PostgresSink (upsert, pk.mode=record_value, pk.fields=id, two tasks)
// into a table of a private PostgreSQL, with the worker run as users run
// it: `runnel connect standalone worker.properties source.yaml sink.yaml`,
// a child process with its offsets file in a temp directory, against a
// `runnel broker` process.
//
// The worker is SIGKILLed mid-way and started again; then more lines are
// appended to the file (new ids and updates of old ones). The table must
// end with exactly one row per distinct id holding the fields of the last
// line of that id: nothing lost, the appended lines arrived, and what was
// read or produced twice after the kill changed nothing (upserts of the
// same values, in file order per id since the key picks the partition).
// It waits on the table, never for fixed times, and logs each phase's
// time.
//
// Knobs, from the environment: RUNNEL_CONNECT_LINES (lines written first,
// 200,000 by default), RUNNEL_CONNECT_IDS (distinct ids among them,
// 50,000). Files: pipeline_test.go (the test), worker_test.go (the worker
// process and its config files), data_test.go (the lines and the expected
// rows).
func TestFileToPostgresUnderKill(t *testing.T) {
	lines, ids := envCount(t, "RUNNEL_CONNECT_LINES", 200_000), envCount(t, "RUNNEL_CONNECT_IDS", 50_000)
	bin := brokertest.BuildRunnel(t)
	ps := brokertest.StartProcesses(t, brokertest.ProcessOptions{Binary: bin,
		Settings: map[string]string{"group.initial.rebalance.delay.ms": "0"}})
	seeds := ps.Seeds()
	pg := pgtest.Start(t)
	db := pg.Connect(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	connecttest.CreateTopic(t, seeds, itemsTopic, itemsPartitions, nil)

	dir := t.TempDir()
	in := newInput(filepath.Join(dir, "items.jsonl"), uint64(time.Now().UnixNano()))
	in.appendLines(t, lines, func(r *rand.Rand) int64 { return r.Int64N(int64(ids)) })
	files := pipelineConfigs(t, dir, seeds, in.path, pg.DSN())
	logPath := filepath.Join(dir, "worker.log")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the worker's log, last 60 lines:\n%s", logTail(logPath, 60))
		}
	})

	start := time.Now()
	w := startStandalone(t, bin, logPath, files...)
	// Mid-way: 40% of the file is in the table (by line number).
	waitItems(t, ctx, db, w, "40% of the lines written", func(_, maxSeq int64, _ int64) bool { return maxSeq >= int64(lines)*4/10 })
	killedAt := time.Since(start)
	w.kill()
	var rows, maxSeq int64
	scanItems(t, ctx, db, &rows, &maxSeq, new(int64))
	t.Logf("SIGKILLed the worker after %.1fs, with %d rows written up to line %d", killedAt.Seconds(), rows, maxSeq)

	w = startStandalone(t, bin, logPath, files...)
	wantRows, wantSum := in.want()
	waitItems(t, ctx, db, w, "every id's last line", func(n, _ int64, sum int64) bool { return n == int64(wantRows) && sum == wantSum })
	firstDone := time.Since(start)
	t.Logf("%d lines (%d ids) in the table %.1fs after the first start (restart included): %.0f lines/s",
		lines, wantRows, firstDone.Seconds(), float64(lines)/firstDone.Seconds())

	// Appended lines: new ids and updates of old ones.
	appended := max(lines/10, 1)
	appendStart := time.Now()
	in.appendLines(t, appended, func(r *rand.Rand) int64 {
		if r.IntN(2) == 0 {
			return int64(ids) + r.Int64N(int64(ids)/5+1) // new
		}
		return r.Int64N(int64(ids))
	})
	wantRows, wantSum = in.want()
	waitItems(t, ctx, db, w, "the appended lines", func(n, _ int64, sum int64) bool { return n == int64(wantRows) && sum == wantSum })
	t.Logf("%d appended lines in the table after %.1fs; %d rows; %.1fs in all",
		appended, time.Since(appendStart).Seconds(), wantRows, time.Since(start).Seconds())

	if err := w.stop(t); err != nil {
		t.Errorf("the worker's exit after SIGTERM: %v", err)
	}
	checkItems(t, ctx, db, in)
}

// scanItems reads the table's row count, largest line number and sum of line
// numbers; zeros while the table does not exist.
func scanItems(t *testing.T, ctx context.Context, db *pgx.Conn, rows, maxSeq, seqSum *int64) {
	t.Helper()
	var exists bool
	if err := db.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, itemsTable).Scan(&exists); err != nil {
		t.Fatal(err)
	}
	if !exists {
		*rows, *maxSeq, *seqSum = 0, 0, 0
		return
	}
	err := db.QueryRow(ctx, `SELECT count(*), coalesce(max(seq), 0), coalesce(sum(seq), 0)::bigint FROM `+itemsTable).Scan(rows, maxSeq, seqSum)
	if err != nil {
		t.Fatal(err)
	}
}

// waitItems polls the table until cond holds, failing if the worker
// exits or the time is up.
func waitItems(t *testing.T, ctx context.Context, db *pgx.Conn, w *standalone, what string, cond func(rows, maxSeq, seqSum int64) bool) {
	t.Helper()
	var rows, maxSeq, seqSum int64
	for {
		scanItems(t, ctx, db, &rows, &maxSeq, &seqSum)
		if cond(rows, maxSeq, seqSum) {
			return
		}
		if done, err := w.exited(); done {
			t.Fatalf("waiting for %s: the worker exited (%v); table: %d rows, last line %d", what, err, rows, maxSeq)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v; table: %d rows, last line %d, line sum %d", what, ctx.Err(), rows, maxSeq, seqSum)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// checkItems compares every row with the last line of its id.
func checkItems(t *testing.T, ctx context.Context, db *pgx.Conn, in *input) {
	t.Helper()
	rows, err := db.Query(ctx, `SELECT id, seq, name, qty, price, active, note FROM `+itemsTable)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int64]bool{}
	var got item
	_, err = pgx.ForEachRow(rows, []any{&got.ID, &got.Seq, &got.Name, &got.Qty, &got.Price, &got.Active, &got.Note}, func() error {
		want, ok := in.last[got.ID]
		switch {
		case !ok:
			t.Errorf("row of id %d, which no line has: %v", got.ID, got)
		case seen[got.ID]:
			t.Errorf("a second row of id %d: %v", got.ID, got)
		case got != want:
			t.Errorf("id %d:\nrow       %v\nlast line %v", got.ID, got, want)
		}
		seen[got.ID] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for id := range in.last {
		if !seen[id] {
			t.Errorf("no row of id %d", id)
		}
	}
	if t.Failed() {
		return
	}
	t.Logf("every one of the %d rows holds the last line of its id", len(seen))
}
