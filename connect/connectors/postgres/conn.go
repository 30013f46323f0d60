package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/runnel-io/runnel/connect"
)

// The connection keys, shared by the sink and the source, with the names
// of Confluent's JDBC connectors.
const (
	keyURL      = "connection.url"
	keyUser     = "connection.user"
	keyPassword = "connection.password"
	keyAttempts = "connection.attempts"
	keyBackoff  = "connection.backoff.ms"
)

func connectionKeys() []connect.ConfigKey {
	return []connect.ConfigKey{
		{Name: keyURL, Type: connect.TypeString, Required: true, Importance: connect.High, Group: "Connection", DisplayName: "JDBC URL",
			Doc: "The database: postgres://host:port/database?sslmode=... (libpq's URL or key=value form; jdbc:postgresql://... is accepted too). " +
				"Any parameter libpq knows may be given, user and password included.",
			Check: checkURL},
		{Name: keyUser, Type: connect.TypeString, Importance: connect.High, Group: "Connection", DisplayName: "JDBC User",
			Doc: "The user to connect as; empty takes the URL's (or libpq's default)."},
		{Name: keyPassword, Type: connect.TypePassword, Importance: connect.High, Group: "Connection", DisplayName: "JDBC Password",
			Doc: "The password; empty takes the URL's, if any. ${env:NAME} or ${file:path:key} keep it out of the config."},
		{Name: keyAttempts, Type: connect.TypeInt, Default: "3", Importance: connect.Low, Group: "Connection", DisplayName: "JDBC connection attempts",
			Doc:   "How many times a task tries a query that fails for want of a connection before it gives up (then errors.retry.timeout decides).",
			Check: connect.AtLeast(1)},
		{Name: keyBackoff, Type: connect.TypeLong, Default: "10000", Importance: connect.Low, Group: "Connection", DisplayName: "JDBC connection backoff (millis)",
			Doc: "The wait between those attempts, in ms.", Check: connect.AtLeast(0)},
	}
}

func checkURL(v string) error {
	if strings.TrimSpace(v) == "" {
		return errors.New("String may not be empty")
	}
	if _, err := pgx.ParseConfig(trimJDBC(v)); err != nil {
		// pgconn's message shows the URL with its password masked.
		return fmt.Errorf("not a PostgreSQL URL (postgres://user@host:port/database): %v", err)
	}
	return nil
}

// trimJDBC turns a JDBC URL (jdbc:postgresql://...) into libpq's.
func trimJDBC(url string) string { return strings.TrimPrefix(strings.TrimSpace(url), "jdbc:") }

// connConfig returns the connection settings of a task: the URL, with
// connection.user and connection.password over the URL's.
func connConfig(cfg connect.Config) (*pgx.ConnConfig, error) {
	cc, err := pgx.ParseConfig(trimJDBC(cfg.String(keyURL)))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", keyURL, err)
	}
	if u := cfg.String(keyUser); u != "" {
		cc.User = u
	}
	if p := cfg.String(keyPassword); p != "" {
		cc.Password = p
	}
	if _, set := cc.RuntimeParams["application_name"]; !set {
		cc.RuntimeParams["application_name"] = "runnel-connect " + cfg.String(connect.KeyName)
	}
	return cc, nil
}

// dbConn is a task's connection, opened on first use and again after it
// broke. A task needs one at a time: the sink writes one batch at a time,
// the source reads one query at a time. (pgxpool would need
// github.com/jackc/puddle/v2, which the module does not require.)
type dbConn struct {
	cfg *pgx.ConnConfig
	c   *pgx.Conn
}

// get returns the open connection, or opens one.
func (d *dbConn) get(ctx context.Context) (*pgx.Conn, error) {
	if d.c != nil && !d.c.IsClosed() {
		return d.c, nil
	}
	d.close()
	c, err := pgx.ConnectConfig(ctx, d.cfg)
	if err != nil {
		return nil, err
	}
	d.c = c
	return c, nil
}

// failed drops the connection after an error that may have broken it, so
// that the next get opens a new one.
func (d *dbConn) failed(err error) {
	if retriable(err) {
		d.close()
	}
}

func (d *dbConn) close() {
	if d.c == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	d.c.Close(ctx)
	d.c = nil
}

// retriable says whether err is worth trying again on a new connection:
// the connection failed or broke, the server is starting or stopping, or
// the transaction lost a serialization conflict. Anything the server
// rejected for what was sent (a constraint, a type, a permission, a wrong
// password) is not.
func retriable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case strings.HasPrefix(pgErr.Code, "08"): // connection_exception
			return true
		case pgErr.Code == "40001", pgErr.Code == "40P01": // serialization_failure, deadlock_detected
			return true
		case pgErr.Code == "57P01", pgErr.Code == "57P02", pgErr.Code == "57P03": // shutdown, cannot_connect_now
			return true
		case pgErr.Code == "53300": // too_many_connections
			return true
		}
		return false
	}
	var connErr *pgconn.ConnectError
	var netErr net.Error
	switch {
	case errors.As(err, &connErr), errors.As(err, &netErr):
		return true
	case errors.Is(err, pgconn.ErrConnClosed), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return true
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return true
	}
	return pgconn.SafeToRetry(err) || pgconn.Timeout(err)
}

// attempts runs op up to connection.attempts times while it fails for
// want of a connection, waiting connection.backoff.ms between tries. The
// last error is returned as a connect.RetriableError when it is one.
func attempts(ctx context.Context, cfg connect.Config, op func() error) error {
	n, wait := max(cfg.Int(keyAttempts), 1), cfg.Millis(keyBackoff)
	for i := 1; ; i++ {
		err := op()
		if !retriable(err) {
			return err
		}
		if i >= n {
			return connect.Retriable(err)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}
