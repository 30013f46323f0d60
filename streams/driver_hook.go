package streams

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/streams/internal/hook"
	"github.com/runnel-io/runnel/streams/state"
)

// The test driver (streamstest) reaches the engine through hook.Open, so
// that the engine stays unexported.
func init() { hook.Open = openDriverEngine }

type driverEngine struct {
	*engine
	db      *state.DB
	plan    *topicPlan
	globals map[string]func(*kgo.Record) error // global topic -> its store's update
}

func openDriverEngine(topology any, cfg hook.Config) (hook.Engine, error) {
	topo, ok := topology.(*Topology)
	if !ok || topo == nil {
		return nil, fmt.Errorf("streams: test driver needs a *streams.Topology, got %T", topology)
	}
	plan, err := driverPlan(topo, cfg)
	if err != nil {
		return nil, err
	}
	db, err := state.OpenInMemory()
	if err != nil {
		return nil, err
	}
	e := &env{
		appID:      cfg.AppID,
		db:         db,
		send:       cfg.Send,
		partitions: cfg.Partitions,
		now:        cfg.Now,
		dropped:    func(string) {},
		// A tiny store cache: tests go through its hits, misses and
		// evictions all the time, so a bug in it shows in any test.
		cacheEntries: 4,
	}
	if cfg.Dropped != nil {
		e.dropped = cfg.Dropped
	}
	if h, ok := cfg.OnBadRecord.(BadRecordHandler); ok {
		e.onBadRecord = h
	}
	e.partitions = func(topic string) (int32, error) {
		if n, ok := plan.partitions[topic]; ok {
			return n, nil // internal topics as an App would create them
		}
		return cfg.Partitions(topic)
	}
	d := &driverEngine{engine: newEngine(topo, e), db: db, plan: plan, globals: map[string]func(*kgo.Record) error{}}
	for _, g := range topo.globals {
		d.globals[g.topic] = g.open(db)
	}
	return d, nil
}

// driverPlan sizes the internal topics as an App would, from the driver's
// partition counts: a topology whose joined topics are not co-partitioned
// fails here as it would at Run.
func driverPlan(topo *Topology, cfg hook.Config) (*topicPlan, error) {
	counts := map[string]int32{}
	for _, topic := range topo.SourceTopics() {
		n, err := cfg.Partitions(topic)
		if err != nil {
			return nil, err
		}
		counts[topic] = n
	}
	return planTopics(topo, cfg.AppID, counts)
}

// Partitions returns the partition count the topology plans for one of
// its internal topics.
func (d *driverEngine) Partitions(topic string) (int32, bool) {
	n, ok := d.plan.partitions[topic]
	return n, ok
}

func (d *driverEngine) Process(r *kgo.Record) error {
	if apply, ok := d.globals[r.Topic]; ok {
		return apply(r)
	}
	id, ok := d.taskOf(r.Topic, r.Partition)
	if !ok {
		return fmt.Errorf("streams: the topology does not read topic %q", r.Topic)
	}
	if _, err := d.open(id); err != nil {
		return err
	}
	return d.process(r)
}

func (d *driverEngine) PunctuateWall() error { return d.punctuateWall() }

func (d *driverEngine) Commit() error {
	if err := d.sendChanges(); err != nil {
		return err
	}
	return d.db.Commit()
}

func (d *driverEngine) Store(name string, partition int32) (any, error) {
	for _, g := range d.topo.globals {
		if g.store == name {
			return g.handle(d.db), nil
		}
	}
	def, ok := d.topo.stores[name]
	if !ok {
		return nil, fmt.Errorf("streams: no store %q", name)
	}
	t, err := d.open(TaskID{Subtopology: def.sub, Partition: partition})
	if err != nil {
		return nil, err
	}
	return t.stores[name], nil
}

func (d *driverEngine) Stores() map[string]int {
	out := map[string]int{}
	for name, def := range d.topo.stores {
		out[name] = def.sub
	}
	for _, g := range d.topo.globals {
		out[g.store] = -1 // not a subtopology's: one partition
	}
	return out
}

func (d *driverEngine) InputTopics() []string {
	return append(d.inputTopics(), d.topo.GlobalTopics()...)
}

func (d *driverEngine) SubtopologyOf(topic string) (int, bool) {
	sub, ok := d.subOf[topic]
	return sub, ok
}

func (d *driverEngine) Close() error {
	err := d.close()
	if cerr := d.db.Close(); err == nil {
		err = cerr
	}
	return err
}
