package datagen

import (
	"errors"
	"fmt"
	"time"

	"github.com/runnel-io/runnel/connect"
)

// The schemas a generator knows.
const (
	RetailSales     = "retail.sales"
	RetailShipments = "retail.shipments"
	Users           = "users"
	Pageviews       = "pageviews"
)

// Schemas lists the schemas, the retail ones first.
var Schemas = []string{RetailSales, RetailShipments, Users, Pageviews}

// DefaultStart is where simulated time starts unless told otherwise: a
// Monday, midnight UTC.
var DefaultStart = time.Date(2024, time.January, 1, 0, 0, 0, 0, time.UTC)

// The sizes of the retail universe unless told otherwise.
const (
	DefaultStores   = 10
	DefaultProducts = 100
)

// GeneratorConfig says which records a Generator makes. Two generators
// with equal configs make the same records in the same order.
type GeneratorConfig struct {
	// Schema is one of Schemas.
	Schema string
	Seed   int64
	// Task and Tasks split the retail stores: task i of n generates for
	// the stores whose index modulo n is i (Tasks 0 counts as 1). For
	// users and pageviews each task is an independent stream.
	Task, Tasks int
	// Stores and Products size the retail universe (0: the defaults).
	// The universe depends on Seed, Stores and Products only, so sales
	// and shipments generated with the same three agree on it.
	Stores, Products int
	// Start is the earliest event time (zero: DefaultStart). The data is
	// laid out from midnight UTC of its date, and the sequence begins with
	// the first record at or after Start.
	Start time.Time
}

// Record is one generated record.
type Record struct {
	// Seq is the record's place in its task's sequence, from 0.
	Seq int64
	Key string
	// Time is the event time, in whole milliseconds; the value's ts (or
	// viewtime) field holds it too, but for users.
	Time  time.Time
	Value map[string]any
}

// Generator makes the records of one task: a deterministic function of
// the config and the sequence number, with no clock, IO or goroutines.
// SeekTo jumps to any place in the sequence at no cost beyond making that
// record. A Generator is not safe for concurrent use.
type Generator struct {
	cfg    GeneratorConfig
	kind   kind
	schema *connect.Schema
	first  int64 // grid index of Seq 0: the first record at or after Start
	seq    int64
}

// kind makes the records of one schema. Records are numbered on a grid
// that starts at midnight of the start date (index g); at(g, seq) makes
// the record of grid index g, which is sequence number seq.
type kind interface {
	at(g, seq int64) Record
	// firstAt returns the grid index of the first record at or after
	// start.
	firstAt(start time.Time) int64
}

// ErrConfig is returned by NewGenerator for a config that cannot work.
var ErrConfig = errors.New("datagen: bad generator config")

// NewGenerator returns a generator positioned at the start of its
// sequence.
func NewGenerator(cfg GeneratorConfig) (*Generator, error) {
	if cfg.Tasks == 0 {
		cfg.Tasks = 1
	}
	if cfg.Stores == 0 {
		cfg.Stores = DefaultStores
	}
	if cfg.Products == 0 {
		cfg.Products = DefaultProducts
	}
	if cfg.Start.IsZero() {
		cfg.Start = DefaultStart
	}
	cfg.Start = cfg.Start.UTC()
	switch {
	case cfg.Tasks < 1 || cfg.Task < 0 || cfg.Task >= cfg.Tasks:
		return nil, fmt.Errorf("%w: task %d of %d", ErrConfig, cfg.Task, cfg.Tasks)
	case cfg.Stores < 1 || cfg.Products < 1:
		return nil, fmt.Errorf("%w: %d stores and %d products", ErrConfig, cfg.Stores, cfg.Products)
	}
	g := &Generator{cfg: cfg}
	day0 := cfg.Start.Truncate(24 * time.Hour)
	switch cfg.Schema {
	case RetailSales, RetailShipments:
		if cfg.Task >= cfg.Stores {
			return nil, fmt.Errorf("%w: task %d has no store (%d stores over %d tasks)", ErrConfig, cfg.Task, cfg.Stores, cfg.Tasks)
		}
		u := newUniverse(uint64(cfg.Seed), cfg.Stores, cfg.Products)
		stores := TaskStores(cfg.Task, cfg.Tasks, cfg.Stores)
		if cfg.Schema == RetailSales {
			g.kind, g.schema = newSales(u, cfg, stores, day0), saleSchema
		} else {
			g.kind, g.schema = newShipments(u, cfg, stores, day0), shipmentSchema
		}
	case Users:
		g.kind, g.schema = &users{seed: uint64(cfg.Seed), task: uint64(cfg.Task), start: cfg.Start}, userSchema
	case Pageviews:
		g.kind, g.schema = &pageviews{seed: uint64(cfg.Seed), task: uint64(cfg.Task), start: cfg.Start}, pageviewSchema
	default:
		return nil, fmt.Errorf("%w: unknown schema %q (known: %v)", ErrConfig, cfg.Schema, Schemas)
	}
	g.first = g.kind.firstAt(cfg.Start)
	return g, nil
}

// Next returns the record at Seq and moves past it.
func (g *Generator) Next() Record {
	r := g.kind.at(g.first+g.seq, g.seq)
	g.seq++
	return r
}

// Seq returns the sequence number of the record Next returns.
func (g *Generator) Seq() int64 { return g.seq }

// SeekTo moves to sequence number seq (≥ 0): Next returns that record.
func (g *Generator) SeekTo(seq int64) { g.seq = max(seq, 0) }

// At returns the record with sequence number seq, without moving.
func (g *Generator) At(seq int64) Record { return g.kind.at(g.first+seq, seq) }

// Config returns the config with defaults filled in.
func (g *Generator) Config() GeneratorConfig { return g.cfg }

// ValueSchema describes the values (a struct; timestamps are Kafka
// Connect's Timestamp: int64 milliseconds).
func (g *Generator) ValueSchema() *connect.Schema { return g.schema }

// StoreID and ProductID name the i-th store and product (from 0).
func StoreID(i int) string   { return fmt.Sprintf("S%03d", i+1) }
func ProductID(i int) string { return fmt.Sprintf("P%04d", i+1) }

// TaskStores returns the indexes of the stores that task generates for.
func TaskStores(task, tasks, stores int) []int {
	var out []int
	for s := task; s < stores; s += max(tasks, 1) {
		out = append(out, s)
	}
	return out
}

// Schemas of the values.
var (
	timestampSchema = &connect.Schema{Type: connect.Int64, Name: "org.apache.kafka.connect.data.Timestamp", Version: 1}
	stringSchema    = &connect.Schema{Type: connect.String}
	int64Schema     = &connect.Schema{Type: connect.Int64}
	float64Schema   = &connect.Schema{Type: connect.Float64}
	boolSchema      = &connect.Schema{Type: connect.Boolean}
)

func structSchema(name string, fields ...connect.Field) *connect.Schema {
	return &connect.Schema{Type: connect.Struct, Name: name, Fields: fields}
}

func field(name string, s *connect.Schema) connect.Field { return connect.Field{Name: name, Schema: s} }
