package streams

import (
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kgo"
)

// engine runs the tasks of one app instance: it routes input records to
// tasks, drives wall-clock punctuation and writes store changes to their
// changelogs. Like a task it is a deterministic core without goroutines:
// the App's loop and the test driver own one each.
type engine struct {
	topo  *Topology
	env   *env
	tasks map[TaskID]*task
	subOf map[string]int // Kafka topic -> the subtopology that reads it
}

func newEngine(topo *Topology, e *env) *engine {
	g := &engine{topo: topo, env: e, tasks: map[TaskID]*task{}, subOf: map[string]int{}}
	for topic, n := range topo.topics {
		g.subOf[e.topicName(n, topic)] = n.sub
	}
	return g
}

// inputTopics returns the Kafka topics the app reads, internal ones
// included, sorted.
func (g *engine) inputTopics() []string {
	out := make([]string, 0, len(g.subOf))
	for topic := range g.subOf {
		out = append(out, topic)
	}
	sort.Strings(out)
	return out
}

// taskOf returns the task id a record of topic and partition belongs to.
func (g *engine) taskOf(topic string, partition int32) (TaskID, bool) {
	sub, ok := g.subOf[topic]
	return TaskID{Subtopology: sub, Partition: partition}, ok
}

// open starts a task. Its stores must be restored before (App) or empty
// (test driver).
func (g *engine) open(id TaskID) (*task, error) {
	if t, ok := g.tasks[id]; ok {
		return t, nil
	}
	if id.Subtopology < 0 || id.Subtopology >= len(g.topo.subs) {
		return nil, fmt.Errorf("streams: no subtopology %d", id.Subtopology)
	}
	t, err := newTask(g.topo, id, g.env)
	if err != nil {
		return nil, err
	}
	g.tasks[id] = t
	return t, nil
}

// closeTask closes a task's processors. Its uncommitted store changes stay
// in the DB's batch: the caller commits or discards them.
func (g *engine) closeTask(id TaskID) error {
	t, ok := g.tasks[id]
	if !ok {
		return nil
	}
	delete(g.tasks, id)
	return t.close()
}

// process hands one input record to its task.
func (g *engine) process(r *kgo.Record) error {
	id, ok := g.taskOf(r.Topic, r.Partition)
	if !ok {
		return fmt.Errorf("streams: record of topic %q, which the topology does not read", r.Topic)
	}
	t, ok := g.tasks[id]
	if !ok {
		return fmt.Errorf("streams: record of %s partition %d, whose task %s is not open here", r.Topic, r.Partition, id)
	}
	return t.process(r)
}

// punctuateWall runs every task's wall-clock punctuations due now.
func (g *engine) punctuateWall() error {
	now := g.env.now()
	for _, id := range g.taskIDs() {
		if err := g.tasks[id].punctuateWall(now); err != nil {
			return err
		}
	}
	return nil
}

// taskIDs returns the open tasks in order, so that runs are repeatable.
func (g *engine) taskIDs() []TaskID {
	ids := make([]TaskID, 0, len(g.tasks))
	for id := range g.tasks {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool {
		if ids[i].Subtopology != ids[j].Subtopology {
			return ids[i].Subtopology < ids[j].Subtopology
		}
		return ids[i].Partition < ids[j].Partition
	})
	return ids
}

// changelogTopic is the Kafka topic a store's changes go to.
func (g *engine) changelogTopic(store string) string {
	return g.env.appID + "-" + store + "-changelog"
}

// sendChanges writes every store change since the last commit to the
// store's changelog partition (the task's partition), the latest value per
// key only. Changes of tasks no longer open here are not sent.
func (g *engine) sendChanges() error {
	if err := g.flushStores(); err != nil {
		return err
	}
	return g.env.db.Changes(func(store string, partition int32, key, value []byte) error {
		def, ok := g.topo.stores[store]
		if !ok || !def.logged {
			return nil
		}
		if _, open := g.tasks[TaskID{Subtopology: def.sub, Partition: partition}]; !open {
			return nil // a task lost to another instance: its changes are not ours to log
		}
		r := &kgo.Record{
			Topic:     g.changelogTopic(store),
			Partition: partition,
			Key:       append([]byte(nil), key...),
		}
		if value != nil {
			r.Value = append([]byte{}, value...)
		}
		return g.env.send(r)
	})
}

// flushStores writes the store caches of every open task to the DB's batch.
func (g *engine) flushStores() error {
	for _, t := range g.tasks {
		for _, f := range t.flushers {
			if err := f(); err != nil {
				return fmt.Errorf("streams: task %s: %w", t.id, err)
			}
		}
	}
	return nil
}

func (g *engine) close() error {
	var first error
	for _, id := range g.taskIDs() {
		if err := g.closeTask(id); err != nil && first == nil {
			first = err
		}
	}
	return first
}
