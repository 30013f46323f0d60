package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/runnel-io/runnel/connect"
	"github.com/runnel-io/runnel/connect/connectors/postgres/internal/pgwrite"
)

// The source's keys, with the names of Confluent's JDBC source.
const (
	keyMode           = "mode"
	keyIncColumn      = "incrementing.column.name"
	keyTSColumns      = "timestamp.column.name"
	keyWhitelist      = "table.whitelist"
	keyBlacklist      = "table.blacklist"
	keyQuery          = "query"
	keyTopicPrefix    = "topic.prefix"
	keyPollMs         = "poll.interval.ms"
	keyBatchMaxRows   = "batch.max.rows"
	keyTSDelay        = "timestamp.delay.interval.ms"
	keyTSInitial      = "timestamp.initial"
	keyDBTimezone     = "db.timezone"
	keyNumericMapping = "numeric.mapping"
	// keyTables is set by TaskConfigs: the tables of one task.
	keyTables = "tables"
)

// The modes.
const (
	modeBulk   = "bulk"
	modeInc    = "incrementing"
	modeTS     = "timestamp"
	modeTSInc  = "timestamp+incrementing"
	numNone    = "none"
	numBestFit = "best_fit"
)

func sourcePlugin() connect.Plugin {
	keys := append(connectionKeys(),
		connect.ConfigKey{Name: keyMode, Type: connect.TypeString, Required: true, Importance: connect.High, Group: "Mode", DisplayName: "Table Loading Mode",
			Doc: "bulk: the whole table each poll. incrementing: new rows, by a strictly increasing column (incrementing.column.name). " +
				"timestamp: new and updated rows, by a timestamp column (timestamp.column.name). timestamp+incrementing: both, so rows that share a timestamp are neither lost nor repeated.",
			Check: connect.OneOf(modeBulk, modeInc, modeTS, modeTSInc), Recommended: []string{modeBulk, modeInc, modeTS, modeTSInc}},
		connect.ConfigKey{Name: keyIncColumn, Type: connect.TypeString, Importance: connect.Medium, Group: "Mode", DisplayName: "Incrementing Column Name",
			Doc: "The strictly increasing integer column (an id, a sequence) of incrementing modes."},
		connect.ConfigKey{Name: keyTSColumns, Type: connect.TypeList, Importance: connect.Medium, Group: "Mode", DisplayName: "Timestamp Column Name",
			Doc: "The timestamp (or timestamptz, or date) column of timestamp modes, updated on every change; several: the first that is not null (COALESCE)."},
		connect.ConfigKey{Name: keyWhitelist, Type: connect.TypeList, Importance: connect.Medium, Group: "Database", DisplayName: "Table Whitelist",
			Doc: "The tables to read (name or schema.name). Empty, and no query: every table of the search_path's schemas but table.blacklist, listed when the connector starts."},
		connect.ConfigKey{Name: keyBlacklist, Type: connect.TypeList, Importance: connect.Low, Group: "Database", DisplayName: "Table Blacklist",
			Doc: "Tables not to read when table.whitelist is empty."},
		connect.ConfigKey{Name: keyQuery, Type: connect.TypeString, Importance: connect.Medium, Group: "Mode", DisplayName: "Query",
			Doc: "A SELECT to read instead of tables (one task). Incremental modes filter and order it (it is wrapped: SELECT ... FROM (query) ... WHERE ...)."},
		connect.ConfigKey{Name: keyTopicPrefix, Type: connect.TypeString, Importance: connect.High, Group: "Connector", DisplayName: "Topic Prefix",
			Doc: "Rows of a table go to the topic prefix+table (the name without its schema); rows of a query to the topic prefix itself."},
		connect.ConfigKey{Name: keyPollMs, Type: connect.TypeInt, Default: "5000", Importance: connect.High, Group: "Connector", DisplayName: "Poll Interval (ms)",
			Doc: "How often each table is queried for new data, in ms.", Check: connect.AtLeast(1)},
		connect.ConfigKey{Name: keyBatchMaxRows, Type: connect.TypeInt, Default: "100", Importance: connect.Low, Group: "Connector", DisplayName: "Max Rows Per Batch",
			Doc: "The most rows one poll returns; a query with more rows is read on over the next polls.", Check: connect.AtLeast(1)},
		connect.ConfigKey{Name: keyTSDelay, Type: connect.TypeLong, Default: "0", Importance: connect.High, Group: "Mode", DisplayName: "Delay Interval (ms)",
			Doc: "Timestamp modes read only rows whose timestamp is at least this much older than the database's clock, in ms: time for transactions " +
				"that stamped a row earlier to commit.", Check: connect.AtLeast(0)},
		connect.ConfigKey{Name: keyTSInitial, Type: connect.TypeLong, Importance: connect.Low, Group: "Mode", DisplayName: "Unix time value of initial timestamp",
			Doc: "Where timestamp modes start without a stored offset, in ms since the epoch; -1: now; empty: from the first row."},
		connect.ConfigKey{Name: keyDBTimezone, Type: connect.TypeString, Default: "UTC", Importance: connect.Medium, Group: "Connector", DisplayName: "DB time zone",
			Doc: "The time zone of the session and of timestamp-without-time-zone columns (an IANA name).", Check: checkZone},
		connect.ConfigKey{Name: keyNumericMapping, Type: connect.TypeString, Default: numNone, Importance: connect.Low, Group: "Connector", DisplayName: "Map Numeric Values",
			Doc:   "numeric columns: none gives the exact decimal as a string (\"12.50\"); best_fit an integer when it has no fraction, else a double.",
			Check: connect.OneOf(numNone, numBestFit), Recommended: []string{numNone, numBestFit}},
	)
	return connect.Plugin{
		Class:         "io.runnel.connect.postgres.PostgresSourceConnector",
		Aliases:       []string{"PostgresSource", "PostgresSourceConnector", "postgres-source"},
		Type:          connect.SourcePlugin,
		Version:       connect.Version,
		Doc:           "Polls PostgreSQL tables or a query into topics: bulk, or new and updated rows by an incrementing and/or a timestamp column.",
		Config:        connect.NewConfigDef(keys...),
		Validate:      validateSource,
		TaskConfigs:   sourceTaskConfigs,
		NewSourceTask: func() connect.SourceTask { return &sourceTask{} },
	}
}

func checkZone(v string) error {
	if _, err := time.LoadLocation(strings.TrimSpace(v)); err != nil || strings.TrimSpace(v) == "" {
		return fmt.Errorf("not a time zone name (UTC, Europe/Paris ...)")
	}
	return nil
}

// validateSource checks the rules that span keys.
func validateSource(cfg connect.Config) []connect.KeyError {
	var errs []connect.KeyError
	mode := strings.ToLower(cfg.String(keyMode))
	if (mode == modeInc || mode == modeTSInc) && strings.TrimSpace(cfg.String(keyIncColumn)) == "" {
		errs = append(errs, connect.KeyError{Key: keyIncColumn, Message: "mode=" + mode + " needs incrementing.column.name"})
	}
	if (mode == modeTS || mode == modeTSInc) && len(cfg.List(keyTSColumns)) == 0 {
		errs = append(errs, connect.KeyError{Key: keyTSColumns, Message: "mode=" + mode + " needs timestamp.column.name"})
	}
	query := strings.TrimSpace(cfg.String(keyQuery))
	switch {
	case query != "" && len(cfg.List(keyWhitelist)) > 0:
		errs = append(errs, connect.KeyError{Key: keyQuery, Message: "query and table.whitelist are mutually exclusive: set one"})
	case query != "" && strings.TrimSpace(cfg.String(keyTopicPrefix)) == "":
		errs = append(errs, connect.KeyError{Key: keyTopicPrefix, Message: "with query, topic.prefix is the topic the rows go to: it must be set"})
	}
	if len(cfg.List(keyWhitelist)) > 0 && len(cfg.List(keyBlacklist)) > 0 {
		errs = append(errs, connect.KeyError{Key: keyBlacklist, Message: "table.whitelist and table.blacklist are mutually exclusive: set one"})
	}
	return errs
}

// sourceTaskConfigs spreads the tables over at most maxTasks tasks, in
// runs of neighbours (the key "tables" of each); a query is one task.
func sourceTaskConfigs(cfg connect.Config, maxTasks int) ([]connect.Config, error) {
	if strings.TrimSpace(cfg.String(keyQuery)) != "" {
		return []connect.Config{cfg.Clone()}, nil
	}
	tables := cfg.List(keyWhitelist)
	if len(tables) == 0 {
		var err error
		if tables, err = listTables(cfg); err != nil {
			return nil, err
		}
	}
	if len(tables) == 0 {
		return nil, errors.New("no tables to read: table.whitelist is empty and the search_path's schemas have none")
	}
	n := min(maxTasks, len(tables))
	out := make([]connect.Config, n)
	for i := range n {
		c := cfg.Clone()
		c[keyTables] = strings.Join(tables[i*len(tables)/n:(i+1)*len(tables)/n], ",")
		out[i] = c
	}
	return out, nil
}

// listTables lists the tables of the search_path's schemas, but the
// blacklist and the sink's offsets table.
func listTables(cfg connect.Config) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cc, err := connConfig(cfg)
	if err != nil {
		return nil, err
	}
	conn, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return nil, fmt.Errorf("listing the tables to read: %w", err)
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(ctx, `
		SELECT DISTINCT ON (c.relname) c.relname
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE c.relkind IN ('r', 'p') AND n.nspname = ANY (current_schemas(false))
		ORDER BY c.relname`)
	if err != nil {
		return nil, fmt.Errorf("listing the tables to read: %w", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("listing the tables to read: %w", err)
	}
	black := cfg.List(keyBlacklist)
	return slices.DeleteFunc(names, func(n string) bool { return n == pgwrite.OffsetsTable || slices.Contains(black, n) }), nil
}

// sourceTask polls its tables (or its query) in turn. A table's query
// stays open over several polls when it has more than batch.max.rows
// rows; the next table is queried once it is read to its end.
type sourceTask struct {
	cfg      connect.Config
	log      *slog.Logger
	db       dbConn
	poll     time.Duration
	maxRows  int
	attempts int
	backoff  time.Duration

	// ctx is the queries' context, from Start to Stop: a query stays
	// open over several polls. Stop cancels it first, which ends a Poll
	// blocked in a query, then takes mu.
	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex // held by Poll but while it waits, and by Stop
	pollers []*poller
	current *poller // the one with an open query
}

func (t *sourceTask) Start(_ context.Context, cfg connect.Config, tc connect.SourceTaskContext) error {
	t.cfg, t.log = cfg, tc.Logger()
	t.poll, t.maxRows = cfg.Millis(keyPollMs), max(cfg.Int(keyBatchMaxRows), 1)
	t.attempts, t.backoff = max(cfg.Int(keyAttempts), 1), cfg.Millis(keyBackoff)
	q := newQuerySpec(cfg)
	var err error
	if q.zone, err = time.LoadLocation(cfg.String(keyDBTimezone)); err != nil {
		return fmt.Errorf("%s: %w", keyDBTimezone, err)
	}
	if query := strings.TrimSpace(cfg.String(keyQuery)); query != "" {
		t.pollers = append(t.pollers, newPoller(q, "", query, cfg.String(keyTopicPrefix)))
	} else {
		tables := connect.SplitList(cfg.String(keyTables))
		if len(tables) == 0 {
			tables = cfg.List(keyWhitelist)
		}
		for _, name := range tables {
			_, table := splitTableName(name)
			t.pollers = append(t.pollers, newPoller(q, name, "", cfg.String(keyTopicPrefix)+table))
		}
	}
	if len(t.pollers) == 0 {
		return errors.New("no table to read (tables, table.whitelist and query are empty)")
	}
	for _, p := range t.pollers {
		if err := p.loadOffset(tc, cfg.String(keyTSInitial)); err != nil {
			return err
		}
	}
	if t.db.cfg, err = connConfig(cfg); err != nil {
		return err
	}
	// Timestamps without a time zone, and now() cast to them, are in
	// db.timezone.
	t.db.cfg.RuntimeParams["timezone"] = cfg.String(keyDBTimezone)
	t.ctx, t.cancel = context.WithCancel(context.Background())
	return nil
}

// Poll returns the next rows of the table being read, or of the next
// table due; it waits until one is due.
func (t *sourceTask) Poll(ctx context.Context) ([]connect.Record, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for {
		if t.ctx.Err() != nil {
			return nil, nil // stopped
		}
		p := t.current
		if p == nil {
			p = t.pollers[0]
			for _, o := range t.pollers[1:] {
				if o.next.Before(p.next) {
					p = o
				}
			}
			if wait := time.Until(p.next); wait > 0 {
				timer := time.NewTimer(wait)
				t.mu.Unlock()
				select {
				case <-ctx.Done():
				case <-t.ctx.Done():
				case <-timer.C:
				}
				timer.Stop()
				t.mu.Lock()
				if ctx.Err() != nil {
					return nil, nil
				}
				continue // Stop may have come
			}
			if err := t.open(p); err != nil {
				if err := t.failed(p, err); err != nil {
					return nil, err
				}
				continue
			}
			t.current = p
		}
		recs, done, err := p.read(t.maxRows)
		if err != nil {
			t.current = nil
			if err := t.failed(p, err); err != nil {
				return recs, err
			}
			if len(recs) > 0 {
				return recs, nil
			}
			continue
		}
		p.failures = 0
		if done {
			t.current = nil
			p.next = time.Now().Add(t.poll)
		}
		if len(recs) > 0 {
			return recs, nil
		}
	}
}

// failed handles a query that failed: one that lost its connection is
// tried again after connection.backoff.ms, up to connection.attempts
// times in a row; then, or for any other error, Poll fails.
func (t *sourceTask) failed(p *poller, err error) error {
	p.close()
	t.db.failed(err)
	err = fmt.Errorf("reading %s: %w", p.describe(), err)
	if !retriable(err) {
		return err
	}
	p.failures++
	if p.failures >= t.attempts {
		p.failures = 0
		return connect.Retriable(err)
	}
	t.log.Warn("query failed; trying again", "err", err, "attempt", p.failures, "backoff", t.backoff)
	p.next = time.Now().Add(t.backoff)
	return nil
}

func (t *sourceTask) Stop() error {
	if t.cancel != nil {
		t.cancel()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, p := range t.pollers {
		p.close()
	}
	t.db.close()
	return nil
}

// open starts p's query on the task's connection.
func (t *sourceTask) open(p *poller) error {
	conn, err := t.db.get(t.ctx)
	if err != nil {
		return err
	}
	return p.open(t.ctx, conn)
}
