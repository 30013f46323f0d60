// Package pgtest starts a private, throwaway PostgreSQL server for a test:
// its own data directory under a new temporary directory, its own free port
// on 127.0.0.1 (no Unix socket, so it never meets a system server), trust
// authentication, and a fresh database named runnel. The test's Cleanup
// stops it as `pg_ctl stop -m immediate` would (SIGQUIT to the postmaster)
// and removes the directory.
//
//	srv := pgtest.Start(t)
//	conn := srv.Connect(t) // or pgx.Connect(ctx, srv.DSN())
//
// The binaries are those of the initdb found in PATH, else of the newest
// /usr/lib/postgresql/*/bin (where Debian puts them); scripts/tools.sh
// installs Debian's postgresql when neither has one. PostgreSQL refuses to
// run as root, so when the test runs as root initdb and the server run as the
// postgres system user, which then owns the temporary directory.
//
// The server trades durability for speed (fsync, synchronous_commit and
// full_page_writes are off): it survives its clients crashing, not its own
// crash. Servers are independent, so tests may start several, in parallel.
// A server is also killed when the test binary dies (the parent-death
// signal), so none outlives its test run.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Database is the database that DSN names, created empty by Start.
const Database = "runnel"

// startTimeout bounds initdb plus the server's start, in case the test's own
// context has no deadline.
const startTimeout = 2 * time.Minute

// Server is a running PostgreSQL server owned by one test.
type Server struct {
	bin    string // directory of initdb and postgres
	dir    string // temporary directory: data/, postgres.log
	cred   *syscall.Credential
	port   int
	cmd    *exec.Cmd
	exited chan struct{} // closed when the postmaster has exited
}

// Start starts a server and registers its stop with tb.Cleanup. It fails the
// test, with initdb's or the server's log, when the server cannot start.
func Start(tb testing.TB) *Server {
	tb.Helper()
	ctx, cancel := context.WithTimeout(tb.Context(), startTimeout)
	defer cancel()
	s := &Server{}
	tb.Cleanup(s.stop)
	if err := s.start(ctx); err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	return s
}

// DSN returns a postgres:// URL of the runnel database, for pgx.
func (s *Server) DSN() string { return s.dsn(Database) }

// Port returns the server's port on 127.0.0.1.
func (s *Server) Port() int { return s.port }

// Connect opens a connection to the runnel database that tb.Cleanup closes.
func (s *Server) Connect(tb testing.TB) *pgx.Conn {
	tb.Helper()
	conn, err := pgx.Connect(tb.Context(), s.DSN())
	if err != nil {
		tb.Fatalf("pgtest: connect to %s: %v", s.DSN(), err)
	}
	tb.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func (s *Server) dsn(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable&connect_timeout=10", s.port, db)
}

func (s *Server) start(ctx context.Context) error {
	var err error
	if s.bin, err = findBin(); err != nil {
		return err
	}
	if s.cred, err = serverUser(); err != nil {
		return err
	}
	if s.dir, err = os.MkdirTemp("", "pgtest-"); err != nil {
		return err
	}
	if s.cred != nil {
		if err := os.Chown(s.dir, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			return err
		}
	}
	if err := s.initdb(ctx); err != nil {
		return err
	}
	// The free port is found by binding and closing it, so another process
	// may take it before the server binds it: then try another.
	for attempt := 1; ; attempt++ {
		err := s.run(ctx)
		if err == nil {
			break
		}
		if !errors.Is(err, errPortTaken) || attempt == 5 {
			return err
		}
	}
	conn, err := pgx.Connect(ctx, s.dsn("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+Database); err != nil {
		return fmt.Errorf("create database %s: %w", Database, err)
	}
	return nil
}

func (s *Server) initdb(ctx context.Context) error {
	cmd := s.command(ctx, "initdb", "-D", s.dataDir(), "--auth=trust", "--username=postgres",
		"--encoding=UTF8", "--no-locale", "--no-sync", "--no-instructions")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %w\n%s%s", cmd, err, out, s.userHint())
	}
	return nil
}

// errPortTaken says the server could not bind its port.
var errPortTaken = errors.New("postgres could not bind its port, five times")

// run starts the postmaster on a free port and waits until it accepts
// connections.
func (s *Server) run(ctx context.Context) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	logFile, err := os.OpenFile(s.logPath(), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close() // the server has its own copy
	// Not s.command(ctx): the server must outlive the start's context.
	cmd := s.command(context.Background(), "postgres", "-D", s.dataDir(),
		"-p", fmt.Sprint(port),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "unix_socket_directories=",
		"-c", "fsync=off",
		"-c", "synchronous_commit=off",
		"-c", "full_page_writes=off")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Immediate shutdown if the test binary dies.
	cmd.SysProcAttr.Pdeathsig = syscall.SIGQUIT
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	s.cmd, s.exited, s.port = cmd, exited, port

	err = s.waitReady(ctx)
	if err == nil {
		return nil
	}
	s.kill()
	log, _ := os.ReadFile(s.logPath())
	if strings.Contains(string(log), "could not bind") {
		return fmt.Errorf("%w: 127.0.0.1:%d", errPortTaken, port)
	}
	return fmt.Errorf("postgres on 127.0.0.1:%d did not start: %w\n%s", port, err, log)
}

// waitReady polls a connection until the server accepts one, the server
// exits or ctx ends.
func (s *Server) waitReady(ctx context.Context) error {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		conn, err := pgx.Connect(ctx, s.dsn("postgres"))
		if err == nil {
			conn.Close(ctx)
			return nil
		}
		select {
		case <-s.exited:
			return fmt.Errorf("server exited: %s", s.cmd.ProcessState)
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		case <-tick.C:
		}
	}
}

// stop shuts the server down as `pg_ctl stop -m immediate` does and removes
// its directory.
func (s *Server) stop() {
	s.kill()
	if s.dir != "" {
		os.RemoveAll(s.dir)
	}
}

func (s *Server) kill() {
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second):
		s.cmd.Process.Kill()
		<-s.exited
	}
	s.cmd = nil
}

// command runs one of the PostgreSQL binaries, as the postgres user when
// the test runs as root.
func (s *Server) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, filepath.Join(s.bin, name), args...)
	cmd.Dir = s.dir
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	return cmd
}

func (s *Server) userHint() string {
	if s.cred == nil {
		return ""
	}
	return fmt.Sprintf("(initdb runs as the postgres user, uid %d: it must be able to reach %s)\n", s.cred.Uid, s.dir)
}

func (s *Server) dataDir() string { return filepath.Join(s.dir, "data") }
func (s *Server) logPath() string { return filepath.Join(s.dir, "postgres.log") }

// freePort returns a port of 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
