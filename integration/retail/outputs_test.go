package retail

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/pgtest"
	"github.com/runnel-io/runnel/retail-demo/demo"
	"github.com/runnel-io/runnel/retail-demo/retail"
	"github.com/runnel-io/runnel/retail-demo/retail/retailtest"
)

// The whole demo (embedded broker, generator, app, Connect) on a finite
// seeded run, with postgres_url set: the connectors write exactly the
// reference's reorders and price adjustments to the output files and to
// PostgreSQL tables.
func TestDemoOutputsReachFilesAndPostgres(t *testing.T) {
	pg := pgtest.Start(t)
	cfg := retailtest.Config(5000)
	cfg.DataDir = filepath.Join(t.TempDir(), "retail")
	cfg.Embedded = retail.EmbeddedParams{Listen: "127.0.0.1:0", HTTPListen: "127.0.0.1:0"}
	cfg.Dashboard.Listen = "127.0.0.1:0"
	cfg.Connect.POSListen, cfg.Connect.RESTListen = "127.0.0.1:0", "127.0.0.1:0"
	cfg.Connect.PostgresURL = pg.DSN()
	wantR, wantP := retailtest.Reference(cfg, retailtest.Events(t, cfg))
	t.Logf("the reference: %d reorders, %d price adjustments", len(wantR), len(wantP))

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- demo.Run(runCtx, demo.Options{Config: cfg}) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("the demo: %v", err)
		}
	}()

	out := filepath.Join(cfg.DataDir, "out")
	db := pg.Connect(t)
	count := func(table string) int {
		var n int
		if err := db.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&n); err != nil {
			return -1 // not created yet
		}
		return n
	}
	for {
		r, p := lines(filepath.Join(out, "reorders.jsonl")), lines(filepath.Join(out, "price-adjustments.jsonl"))
		if len(r) >= len(wantR) && len(p) >= len(wantP) && count("retail_reorders") >= len(wantR) && count("retail_price_adjustments") >= len(wantP) {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("the demo stopped: %v", err)
		case <-ctx.Done():
			t.Fatalf("outputs incomplete: files %d/%d reorders, %d/%d price adjustments; tables %d, %d",
				len(r), len(wantR), len(p), len(wantP), count("retail_reorders"), count("retail_price_adjustments"))
		case <-time.After(100 * time.Millisecond): // polling the files and tables
		}
	}

	gotR := decodeLines[retail.Reorder](t, lines(filepath.Join(out, "reorders.jsonl")))
	gotP := decodeLines[retail.PriceChange](t, lines(filepath.Join(out, "price-adjustments.jsonl")))
	retailtest.Diff(t, gotR, wantR, gotP, wantP)

	rows, err := db.Query(ctx, `SELECT reorder_id, ts, store_id, product_id, quantity, stock, reorder_point, velocity FROM retail_reorders`)
	if err != nil {
		t.Fatal(err)
	}
	var tableR []retail.Reorder
	for rows.Next() {
		var r retail.Reorder
		if err := rows.Scan(&r.ReorderID, &r.TS, &r.StoreID, &r.ProductID, &r.Quantity, &r.Stock, &r.ReorderPoint, &r.Velocity); err != nil {
			t.Fatal(err)
		}
		tableR = append(tableR, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows, err = db.Query(ctx, `SELECT ts, store_id, product_id, old_cents, new_cents, list_cents, reason, stock, velocity FROM retail_price_adjustments`)
	if err != nil {
		t.Fatal(err)
	}
	var tableP []retail.PriceChange
	for rows.Next() {
		var p retail.PriceChange
		if err := rows.Scan(&p.TS, &p.StoreID, &p.ProductID, &p.OldCents, &p.NewCents, &p.ListCents, &p.Reason, &p.Stock, &p.Velocity); err != nil {
			t.Fatal(err)
		}
		tableP = append(tableP, p)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	retailtest.Diff(t, tableR, wantR, tableP, wantP)
}

// lines reads the complete lines of a file (none if it is missing).
func lines(path string) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

func decodeLines[T any](t *testing.T, ls []string) []T {
	t.Helper()
	out := make([]T, 0, len(ls))
	for _, l := range ls {
		var v T
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		out = append(out, v)
	}
	return out
}
