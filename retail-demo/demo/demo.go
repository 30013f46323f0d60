// Package demo runs the retail reorder demo: an embedded single-node
// broker (unless brokers are given), the generator of sales and
// shipments, the Streams app, the connectors around it (a point-of-sale
// HTTP endpoint in, files and PostgreSQL out) and the live dashboard, all
// in one process or each part in its own (Options.Roles).
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sync/errgroup"

	"github.com/runnel-io/runnel/broker"
	"github.com/runnel-io/runnel/connect"
	"github.com/runnel-io/runnel/connect/connectors"
	"github.com/runnel-io/runnel/retail-demo/retail"
	"github.com/runnel-io/runnel/streams"
)

// The parts of the demo, for Options.Roles.
const (
	RoleGenerator = "generator"
	RoleApp       = "app"
	RoleConnect   = "connect"
	RoleDashboard = "dashboard"
	RoleAll       = "all"
)

// Roles are the parts RoleAll runs.
var Roles = []string{RoleGenerator, RoleApp, RoleConnect, RoleDashboard}

// Options say what to run.
type Options struct {
	Config retail.Config
	// Roles to run; empty or RoleAll: every part, with an embedded broker
	// when Config.Brokers is empty.
	Roles []string
	// Out gets the lines a person reads: where to look, how to stop.
	Out    io.Writer
	Logger *slog.Logger
	// Ready, when set, is called with the dashboard's URL (empty without
	// that role) once every part runs.
	Ready func(dashboardURL string)
}

// minFreeBytes is the disk space the embedded broker wants to start (a
// variable for the test of the message).
var minFreeBytes uint64 = 500 << 20

// marker marks a data directory the demo made, which it may empty.
const marker = ".runnel-retail-demo"

// Run runs the parts of the demo until ctx ends (nil) or one fails.
func Run(ctx context.Context, o Options) error {
	cfg := o.Config
	if err := cfg.Validate(); err != nil {
		return err
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	roles, err := roleSet(o.Roles)
	if err != nil {
		return err
	}
	embedded := len(cfg.Brokers) == 0
	if embedded && len(roles) < len(Roles) {
		return fmt.Errorf("--role %s needs the brokers of a running cluster (--brokers or brokers: in the config); only --role all starts an embedded broker", strings.Join(o.Roles, ","))
	}
	if err := checkPorts(cfg, roles, embedded); err != nil {
		return err
	}
	if !embedded { // a process of its own: files of its own
		cfg.DataDir = filepath.Join(cfg.DataDir, strings.Join(sortedRoles(roles), "+"))
	}
	if d := cfg.Connect.OutDir; d != "" && !filepath.IsAbs(d) {
		cfg.Connect.OutDir = filepath.Join(cfg.DataDir, d)
	}
	if embedded || roles[RoleApp] || roles[RoleConnect] {
		if err := prepareDataDir(cfg.DataDir, embedded); err != nil {
			return err
		}
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	seeds := cfg.Brokers
	var stops []func() // in reverse order of start
	defer func() {
		for _, stop := range slices.Backward(stops) {
			stop()
		}
	}()
	links := Links{AppMetrics: roles[RoleApp]}
	if embedded {
		b, err := startBroker(cfg, o.Logger)
		if err != nil {
			return err
		}
		stops = append(stops, b.stop)
		seeds = []string{b.addr}
		links.Broker = "http://" + b.httpAddr + "/metrics"
	}

	admCl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return err
	}
	stops = append(stops, admCl.Close)
	adm := kadm.NewClient(admCl)
	if err := retail.EnsureTopics(ctx, adm, cfg); err != nil {
		return fmt.Errorf("%w (are the brokers %s up?)", err, strings.Join(seeds, ","))
	}

	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { <-gctx.Done(); return nil }) // parts without a goroutine here (Connect) run until then
	appMetrics := prometheus.NewRegistry()
	stats := &retail.GenStats{}
	if roles[RoleConnect] {
		w, err := startConnect(gctx, cfg, seeds, o.Logger)
		if err != nil {
			return err
		}
		stops = append(stops, w.Close)
		links.Connect = strings.TrimSuffix(w.URL(), "/")
	}
	if roles[RoleApp] {
		topo, err := retail.Topology(cfg)
		if err != nil {
			return err
		}
		scfg := cfg.StreamsConfig(seeds, o.Logger.With("part", "app"))
		if scfg.StateDir == "" {
			scfg.StateDir = filepath.Join(cfg.DataDir, "state")
		}
		scfg.Metrics = appMetrics
		app, err := streams.NewApp(topo, scfg)
		if err != nil {
			return err
		}
		g.Go(func() error {
			if err := app.Run(gctx); err != nil {
				return fmt.Errorf("the Streams app: %w", err)
			}
			return nil
		})
	}
	if roles[RoleGenerator] {
		cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RecordPartitioner(retail.Partitioner()))
		if err != nil {
			return err
		}
		g.Go(func() error {
			defer cl.Close()
			err := retail.Generate(gctx, cl, cfg, stats)
			if err != nil && gctx.Err() == nil {
				return fmt.Errorf("the generator: %w", err)
			}
			if err == nil && cfg.Generator.Sales > 0 {
				fmt.Fprintf(o.Out, "The generator wrote its %d sales; the rest keeps running until Ctrl-C.\n", cfg.Generator.Sales)
			}
			return nil
		})
	}
	url := ""
	if roles[RoleDashboard] {
		d, err := startDashboard(gctx, cfg, seeds, appMetrics, links, o.Logger)
		if err != nil {
			return err
		}
		stops = append(stops, d.stop)
		url = d.url
		g.Go(func() error { return d.run(gctx) })
	}
	printWelcome(o.Out, cfg, roles, seeds, url, links)
	if o.Ready != nil {
		o.Ready(url)
	}
	err = g.Wait()
	if err == nil || errors.Is(err, context.Canceled) {
		fmt.Fprintln(o.Out, "Stopping...")
		return nil
	}
	return err
}

func roleSet(given []string) (map[string]bool, error) {
	set := map[string]bool{}
	for _, r := range given {
		switch {
		case r == RoleAll:
			for _, r := range Roles {
				set[r] = true
			}
		case slices.Contains(Roles, r):
			set[r] = true
		default:
			return nil, fmt.Errorf("unknown role %q: one of all, %s", r, strings.Join(Roles, ", "))
		}
	}
	if len(set) == 0 {
		return roleSet([]string{RoleAll})
	}
	return set, nil
}

// checkPorts tries every address the parts will listen on, so that a
// taken one stops the demo before anything starts, with the key to change.
func checkPorts(cfg retail.Config, roles map[string]bool, embedded bool) error {
	type addr struct{ key, value string }
	var addrs []addr
	if embedded {
		addrs = append(addrs, addr{"embedded.listen", cfg.Embedded.Listen}, addr{"embedded.http_listen", cfg.Embedded.HTTPListen})
	}
	if roles[RoleDashboard] {
		addrs = append(addrs, addr{"dashboard.listen", cfg.Dashboard.Listen})
	}
	if roles[RoleConnect] {
		addrs = append(addrs, addr{"connect.rest_listen", cfg.Connect.RESTListen})
		if cfg.Connect.POSListen != "" {
			addrs = append(addrs, addr{"connect.pos_listen", cfg.Connect.POSListen})
		}
	}
	for _, a := range addrs {
		ln, err := net.Listen("tcp", a.value)
		if err != nil {
			if errors.Is(err, syscall.EADDRINUSE) {
				return fmt.Errorf("%s is taken (%s): stop what listens there (another demo? `ss -ltnp | grep %s` shows it) or give %s another address in a config file (--config; retail-demo/retail.yaml shows every key)",
					a.value, a.key, portOf(a.value), a.key)
			}
			return fmt.Errorf("%s: cannot listen on %q: %w", a.key, a.value, err)
		}
		ln.Close()
	}
	return nil
}

func portOf(hostport string) string {
	_, port, _ := net.SplitHostPort(hostport)
	return ":" + port
}

// prepareDataDir empties the data directory if the demo made it (every
// run starts from scratch) and checks the disk has room. It never
// empties a directory it did not make.
func prepareDataDir(dir string, broker bool) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return fmt.Errorf("data_dir: %w", err)
	case len(entries) == 0:
	default:
		if _, err := os.Stat(filepath.Join(dir, marker)); err != nil {
			return fmt.Errorf("data_dir %s is not empty and was not made by the demo: choose another (data_dir: in the config) or empty it", dir)
		}
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("data_dir: empty %s: %w", dir, err)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("data_dir: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, marker), []byte("made by the retail demo, emptied at its every start\n"), 0o644); err != nil {
		return fmt.Errorf("data_dir: %w", err)
	}
	var st syscall.Statfs_t
	if broker && syscall.Statfs(dir, &st) == nil {
		if free := st.Bavail * uint64(st.Bsize); free < minFreeBytes {
			return fmt.Errorf("only %d MB free on the disk of %s; the demo needs %d MB: free some space or point data_dir at another disk", free>>20, dir, minFreeBytes>>20)
		}
	}
	return nil
}

type embeddedBroker struct {
	addr, httpAddr string
	stop           func()
}

func startBroker(cfg retail.Config, log *slog.Logger) (*embeddedBroker, error) {
	b, err := broker.New(broker.Config{Logger: log.With("part", "broker"), Settings: map[string]string{
		"log.dirs":                         filepath.Join(cfg.DataDir, "broker"),
		"listeners":                        "PLAINTEXT://" + cfg.Embedded.Listen,
		"runnel.http.listener":             cfg.Embedded.HTTPListen,
		"group.initial.rebalance.delay.ms": "0",
	}})
	if err != nil {
		return nil, fmt.Errorf("the embedded broker: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- b.Run(context.Background()) }()
	return &embeddedBroker{addr: b.Addr(), httpAddr: b.HTTPAddr(), stop: func() {
		_ = b.Close()
		<-done
	}}, nil
}

// Connectors are the demo's connector configs: the point-of-sale
// endpoint (HttpSource into the sales topic), file sinks of reorders and
// price adjustments, and, with a PostgreSQL URL, upserts of both into
// tables.
func Connectors(cfg retail.Config) []connect.Config {
	t, c := cfg.Topics, cfg.Connect
	var out []connect.Config
	if c.POSListen != "" {
		out = append(out, connect.Config{
			"name": "retail-pos", "connector.class": "HttpSource", "kafka.topic": t.Sales,
			"http.listener": c.POSListen, "http.listener.file": POSAddrFile(cfg), "http.path": "/sales", "key.field": "store_id,product_id",
			"key.converter": "string", "value.converter": "json", "value.converter.schemas.enable": "false",
		})
	}
	if c.OutDir != "" {
		for name, topic := range map[string]string{"reorders": t.Reorders, "price-adjustments": t.Prices} {
			out = append(out, connect.Config{
				"name": "retail-" + name + "-file", "connector.class": "FileStreamSink", "topics": topic,
				"file": filepath.Join(c.OutDir, name+".jsonl"), "key.converter": "string", "value.converter": "string",
			})
		}
	}
	if c.PostgresURL != "" {
		for name, sink := range map[string]struct{ topic, pk string }{
			"reorders":          {t.Reorders, "reorder_id"},
			"price_adjustments": {t.Prices, "store_id,product_id,ts"},
		} {
			out = append(out, connect.Config{
				"name": "retail-" + name + "-postgres", "connector.class": "PostgresSink", "topics": sink.topic,
				"connection.url": c.PostgresURL, "table.name.format": "retail_" + name, "insert.mode": "upsert",
				"pk.mode": "record_value", "pk.fields": sink.pk, "auto.create": "true",
				"key.converter": "string", "value.converter": "json", "value.converter.schemas.enable": "false",
			})
		}
	}
	return out
}

// POSAddrFile is where the point-of-sale endpoint writes the address it
// listens on (for connect.pos_listen with port 0).
func POSAddrFile(cfg retail.Config) string { return filepath.Join(cfg.DataDir, "pos.addr") }

func startConnect(ctx context.Context, cfg retail.Config, seeds []string, log *slog.Logger) (*connect.Worker, error) {
	if cfg.Connect.OutDir != "" {
		if err := os.MkdirAll(cfg.Connect.OutDir, 0o755); err != nil {
			return nil, fmt.Errorf("connect.out_dir: %w", err)
		}
	}
	wcfg := connect.Config{
		connect.WorkerBootstrapServers: strings.Join(seeds, ","),
		connect.WorkerListeners:        "http://" + cfg.Connect.RESTListen,
		connect.WorkerOffsetsFile:      filepath.Join(cfg.DataDir, "connect.offsets"),
	}
	w, err := connect.StartStandalone(ctx, wcfg, Connectors(cfg), connect.WorkerOptions{Registry: connectors.NewRegistry(), Logger: log.With("part", "connect")})
	if err != nil {
		return nil, fmt.Errorf("Connect: %w", err)
	}
	return w, nil
}

func printWelcome(w io.Writer, cfg retail.Config, roles map[string]bool, seeds []string, url string, links Links) {
	fmt.Fprintf(w, "\nRunnel retail demo: %s on %s\n", strings.Join(sortedRoles(roles), ", "), strings.Join(seeds, ","))
	if url != "" {
		fmt.Fprintf(w, "\n  Dashboard:      %s   <- open this\n", url)
	}
	if roles[RoleConnect] && cfg.Connect.POSListen != "" {
		fmt.Fprintf(w, "  Point of sale:  curl -d '{\"store_id\":\"S001\",\"product_id\":\"P0001\",\"quantity\":3}' http://%s/sales\n", cfg.Connect.POSListen)
	}
	if roles[RoleConnect] {
		fmt.Fprintf(w, "  Connect REST:   %s/connectors?expand=status\n", links.Connect)
		if cfg.Connect.OutDir != "" {
			fmt.Fprintf(w, "  Output files:   %s/{reorders,price-adjustments}.jsonl\n", cfg.Connect.OutDir)
		}
	}
	fmt.Fprintf(w, "  Topics:         kcat -b %s -C -t %s -o end\n", seeds[0], cfg.Topics.Reorders)
	fmt.Fprintf(w, "\nCtrl-C stops everything.\n\n")
}

func sortedRoles(roles map[string]bool) []string {
	var out []string
	for _, r := range Roles {
		if roles[r] {
			out = append(out, r)
		}
	}
	return out
}
