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
	db *state.DB
}

func openDriverEngine(topology any, cfg hook.Config) (hook.Engine, error) {
	topo, ok := topology.(*Topology)
	if !ok || topo == nil {
		return nil, fmt.Errorf("streams: test driver needs a *streams.Topology, got %T", topology)
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
	}
	if cfg.Dropped != nil {
		e.dropped = cfg.Dropped
	}
	if h, ok := cfg.OnBadRecord.(BadRecordHandler); ok {
		e.onBadRecord = h
	}
	return &driverEngine{engine: newEngine(topo, e), db: db}, nil
}

func (d *driverEngine) Process(r *kgo.Record) error {
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
	return out
}

func (d *driverEngine) InputTopics() []string { return d.inputTopics() }

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
