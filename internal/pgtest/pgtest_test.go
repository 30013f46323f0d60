package pgtest

import (
	"context"
	"net"
	"os"
	"strconv"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestStartWriteRead(t *testing.T) {
	srv := Start(t)
	ctx := t.Context()
	conn := srv.Connect(t)
	if _, err := conn.Exec(ctx, `CREATE TABLE t (id bigint PRIMARY KEY, name text)`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO t VALUES ($1, $2)`, 7, "seven"); err != nil {
		t.Fatal(err)
	}
	var name, db string
	if err := conn.QueryRow(ctx, `SELECT name, current_database() FROM t WHERE id = 7`).Scan(&name, &db); err != nil {
		t.Fatal(err)
	}
	if name != "seven" || db != Database {
		t.Fatalf("read %q from database %q, want %q from %q", name, db, "seven", Database)
	}
}

func TestStopRemovesEverything(t *testing.T) {
	var srv *Server
	t.Run("server", func(t *testing.T) {
		srv = Start(t)
		srv.Connect(t)
	})
	if _, err := os.Stat(srv.dir); !os.IsNotExist(err) {
		t.Errorf("directory %s still there after the test: %v", srv.dir, err)
	}
	// The port is free again: nothing listens there.
	conn, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(srv.Port()))
	if err == nil {
		conn.Close()
		t.Errorf("port %d still accepts connections after the test", srv.Port())
	}
}

// TestTwoServersAtOnce runs two servers side by side, each holding its own
// data.
func TestTwoServersAtOnce(t *testing.T) {
	var (
		started sync.WaitGroup // both servers have started, or failed to
		ports   [2]int
	)
	started.Add(2)
	t.Run("pair", func(t *testing.T) {
		for i := range ports {
			t.Run(strconv.Itoa(i), func(t *testing.T) {
				t.Parallel()
				var once sync.Once
				defer once.Do(started.Done)
				srv := Start(t)
				ports[i] = srv.Port()
				ctx := t.Context()
				conn := srv.Connect(t)
				if _, err := conn.Exec(ctx, `CREATE TABLE whoami (i int)`); err != nil {
					t.Fatal(err)
				}
				if _, err := conn.Exec(ctx, `INSERT INTO whoami VALUES ($1)`, i); err != nil {
					t.Fatal(err)
				}
				once.Do(started.Done)
				started.Wait()

				other, err := pgx.Connect(ctx, srv.DSN())
				if err != nil {
					t.Fatal(err)
				}
				defer other.Close(context.Background())
				var got int
				if err := other.QueryRow(ctx, `SELECT i FROM whoami`).Scan(&got); err != nil || got != i {
					t.Fatalf("server %d holds %d, %v", i, got, err)
				}
			})
		}
	})
	if !t.Failed() && ports[0] == ports[1] {
		t.Fatalf("both servers on port %d", ports[0])
	}
}
