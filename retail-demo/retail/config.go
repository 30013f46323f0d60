package retail

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Config is every parameter of the demo, read from one YAML file
// (retail-demo/retail.yaml holds the defaults with their meaning).
type Config struct {
	// Brokers: seed brokers of the cluster to use; empty: an embedded
	// single-node broker with its data in DataDir.
	Brokers []string `yaml:"brokers"`
	// DataDir holds what the demo keeps on disk: the embedded broker's
	// log, the app's state, Connect's offsets and the output files. The
	// demo empties it at every start.
	DataDir  string         `yaml:"data_dir"`
	Embedded EmbeddedParams `yaml:"embedded"`

	Topics    Topics          `yaml:"topics"`
	Generator GeneratorParams `yaml:"generator"`
	Model     Model           `yaml:"model"`
	App       AppParams       `yaml:"app"`
	Dashboard DashboardParams `yaml:"dashboard"`
	Connect   ConnectParams   `yaml:"connect"`
}

// EmbeddedParams configure the embedded broker.
type EmbeddedParams struct {
	// Listen is its Kafka listener (host:port).
	Listen string `yaml:"listen"`
	// HTTPListen serves its /metrics and /readyz.
	HTTPListen string `yaml:"http_listen"`
}

// Topics names the demo's topics.
type Topics struct {
	Sales      string `yaml:"sales"`
	Shipments  string `yaml:"shipments"`
	Stock      string `yaml:"stock"`
	Reorders   string `yaml:"reorders"`
	Prices     string `yaml:"prices"`
	Partitions int32  `yaml:"partitions"`
}

// GeneratorParams drive the generator of sales and shipments.
type GeneratorParams struct {
	Seed     int64 `yaml:"seed"`
	Stores   int   `yaml:"stores"`
	Products int   `yaml:"products"`
	// Start is the simulated time of the first record (RFC 3339), or
	// "now".
	Start string `yaml:"start"`
	// Rate is sales a second (wall clock); 0: as fast as possible.
	Rate float64 `yaml:"rate"`
	// Sales ends a run after so many sales (0: never).
	Sales int64 `yaml:"sales"`
	// Watermark is how much simulated time passes between two
	// watermarks.
	Watermark time.Duration `yaml:"watermark"`
}

// Model holds the parameters of stock, reorders and prices (see doc.go
// for how they are used).
type Model struct {
	InitialStock   int64         `yaml:"initial_stock"`
	VelocityWindow time.Duration `yaml:"velocity_window"`
	VelocityHop    time.Duration `yaml:"velocity_hop"`
	LeadTime       time.Duration `yaml:"lead_time"`
	SafetyStock    int64         `yaml:"safety_stock"`
	OrderUpTo      time.Duration `yaml:"order_up_to"`
	ReorderExpiry  time.Duration `yaml:"reorder_expiry"`

	MarkdownCover     time.Duration `yaml:"markdown_cover"`
	MarkdownPct       int64         `yaml:"markdown_pct"`
	FloorPct          int64         `yaml:"floor_pct"`
	RaiseCover        time.Duration `yaml:"raise_cover"`
	RaiseDemandPct    int64         `yaml:"raise_demand_pct"`
	RaisePct          int64         `yaml:"raise_pct"`
	CapPct            int64         `yaml:"cap_pct"`
	PriceCooldown     time.Duration `yaml:"price_cooldown"`
	BaselineWeightPct int64         `yaml:"baseline_weight_pct"`
}

// AppParams configure the Streams app.
type AppParams struct {
	ApplicationID  string        `yaml:"application_id"`
	ExactlyOnce    bool          `yaml:"exactly_once"`
	StateDir       string        `yaml:"state_dir"`
	CommitInterval time.Duration `yaml:"commit_interval"`
}

// DashboardParams configure the web page.
type DashboardParams struct {
	Listen string `yaml:"listen"`
}

// ConnectParams configure the connectors around the app.
type ConnectParams struct {
	// POSListen is the point-of-sale endpoint (the HTTP source): POST
	// sales to http://<listen>/sales. Empty: none.
	POSListen string `yaml:"pos_listen"`
	// OutDir receives reorders.jsonl and price-adjustments.jsonl (file
	// sinks); a relative path is under DataDir. Empty: none.
	OutDir string `yaml:"out_dir"`
	// PostgresURL, when set, also writes reorders and price changes to
	// PostgreSQL tables (upsert).
	PostgresURL string `yaml:"postgres_url"`
	// RESTListen is the Connect worker's REST API.
	RESTListen string `yaml:"rest_listen"`
}

// DefaultConfig is the configuration of retail.yaml.
func DefaultConfig() Config {
	return Config{
		DataDir:  ".data/retail",
		Embedded: EmbeddedParams{Listen: "127.0.0.1:9092", HTTPListen: "127.0.0.1:9644"},
		Topics: Topics{Sales: "retail.sales", Shipments: "retail.shipments", Stock: "retail.stock",
			Reorders: "retail.reorders", Prices: "retail.price-adjustments", Partitions: 4},
		Generator: GeneratorParams{Seed: 42, Stores: 10, Products: 40, Start: "2024-01-01T00:00:00Z", Rate: 200, Watermark: 5 * time.Minute},
		Model: Model{
			InitialStock: 30, VelocityWindow: 6 * time.Hour, VelocityHop: time.Hour, LeadTime: 48 * time.Hour,
			SafetyStock: 4, OrderUpTo: 96 * time.Hour, ReorderExpiry: 7 * 24 * time.Hour,
			MarkdownCover: 21 * 24 * time.Hour, MarkdownPct: 10, FloorPct: 60,
			RaiseCover: 24 * time.Hour, RaiseDemandPct: 150, RaisePct: 5, CapPct: 130,
			PriceCooldown: 24 * time.Hour, BaselineWeightPct: 10,
		},
		App:       AppParams{ApplicationID: "retail-reorders", ExactlyOnce: true, CommitInterval: 100 * time.Millisecond},
		Dashboard: DashboardParams{Listen: "127.0.0.1:8080"},
		Connect:   ConnectParams{POSListen: "127.0.0.1:8081", RESTListen: "127.0.0.1:8083", OutDir: "out"},
	}
}

// LoadConfig reads a YAML file over the defaults: keys it does not set
// keep their default; an unknown key is an error naming it.
func LoadConfig(path string) (Config, error) {
	cfg := DefaultConfig()
	data, err := os.ReadFile(path)
	if err != nil {
		return cfg, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil && !errors.Is(err, io.EOF) { // an empty file sets nothing
		return cfg, fmt.Errorf("%s: %w", path, err)
	}
	if err := cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

// StartTime is the generator's first simulated time.
func (g GeneratorParams) StartTime(now time.Time) (time.Time, error) {
	if g.Start == "" || g.Start == "now" {
		return now.UTC().Truncate(time.Millisecond), nil
	}
	t, err := time.Parse(time.RFC3339, g.Start)
	if err != nil {
		return t, fmt.Errorf("generator.start: %q is neither RFC 3339 (2024-01-01T00:00:00Z) nor \"now\"", g.Start)
	}
	return t, nil
}

// Validate reports the first parameter that cannot work, by its key.
func (c Config) Validate() error {
	var errs []string
	bad := func(key, why string, args ...any) { errs = append(errs, key+": "+fmt.Sprintf(why, args...)) }
	t := c.Topics
	for key, name := range map[string]string{"sales": t.Sales, "shipments": t.Shipments, "stock": t.Stock, "reorders": t.Reorders, "prices": t.Prices} {
		if strings.TrimSpace(name) == "" {
			bad("topics."+key, "a topic name is needed")
		}
	}
	if t.Partitions < 1 {
		bad("topics.partitions", "%d: at least 1", t.Partitions)
	}
	g := c.Generator
	if g.Stores < 1 || g.Products < 1 {
		bad("generator.stores/products", "%d stores, %d products: at least one of each", g.Stores, g.Products)
	}
	if g.Rate < 0 {
		bad("generator.rate", "%v: sales a second, 0 or more", g.Rate)
	}
	if g.Watermark <= 0 {
		bad("generator.watermark", "%v: a positive duration", g.Watermark)
	}
	if _, err := g.StartTime(time.Now()); err != nil {
		errs = append(errs, err.Error())
	}
	m := c.Model
	if m.VelocityHop <= 0 || m.VelocityWindow < m.VelocityHop || m.VelocityWindow%m.VelocityHop != 0 {
		bad("model.velocity_window", "%v over hops of %v: the window must be a whole number of positive hops", m.VelocityWindow, m.VelocityHop)
	}
	for key, d := range map[string]time.Duration{"lead_time": m.LeadTime, "order_up_to": m.OrderUpTo, "reorder_expiry": m.ReorderExpiry,
		"markdown_cover": m.MarkdownCover, "raise_cover": m.RaiseCover, "price_cooldown": m.PriceCooldown} {
		if d < 0 {
			bad("model."+key, "%v: not negative", d)
		}
	}
	if m.InitialStock < 0 || m.SafetyStock < 0 {
		bad("model.initial_stock/safety_stock", "not negative")
	}
	if m.MarkdownPct < 0 || m.MarkdownPct >= 100 || m.RaisePct < 0 || m.FloorPct <= 0 || m.FloorPct > 100 || m.CapPct < 100 {
		bad("model prices", "markdown_pct in [0,100), raise_pct ≥ 0, floor_pct in (0,100], cap_pct ≥ 100")
	}
	if m.BaselineWeightPct < 1 || m.BaselineWeightPct > 100 {
		bad("model.baseline_weight_pct", "%d: in [1,100]", m.BaselineWeightPct)
	}
	if c.App.ApplicationID == "" {
		bad("app.application_id", "an id is needed")
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}
