package assign

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
)

// Task is the unit of work: one partition of one subtopology. A task owns
// partition P of every source topic of its subtopology.
type Task struct {
	Subtopology int
	Partition   int32
}

// String returns "1_3" for partition 3 of subtopology 1, like Kafka
// Streams' TaskId.
func (t Task) String() string {
	return strconv.Itoa(t.Subtopology) + "_" + strconv.FormatInt(int64(t.Partition), 10)
}

func compareTasks(a, b Task) int {
	if c := cmp.Compare(a.Subtopology, b.Subtopology); c != 0 {
		return c
	}
	return cmp.Compare(a.Partition, b.Partition)
}

func sortTasks(ts []Task) { slices.SortFunc(ts, compareTasks) }

// Errors set in Assignment.Error (as text) or returned by the decoders.
var (
	// ErrCoPartition: the source topics of one subtopology do not have
	// the same partition count.
	ErrCoPartition = errors.New("assign: co-partitioned topics have different partition counts")
	// ErrMissingTopic: a source topic has no known partitions.
	ErrMissingTopic = errors.New("assign: source topic missing")
	// ErrTopology: Config.Subtopologies is unusable (a topic in two
	// subtopologies, a subtopology without topics).
	ErrTopology = errors.New("assign: invalid subtopologies")
	// ErrUserData: a member's or an assignment's UserData cannot be decoded.
	ErrUserData = errors.New("assign: bad user data")
	// ErrMetadata: a member's join metadata cannot be decoded.
	ErrMetadata = errors.New("assign: bad member metadata")
	// ErrAssignment: a sync assignment cannot be decoded.
	ErrAssignment = errors.New("assign: bad assignment")
)

// topology is Config.Subtopologies indexed for lookups.
type topology struct {
	subs    [][]string
	topicOf map[string]int // topic -> subtopology
	topics  []string       // sorted, every source topic
	err     error          // non-nil if subs is invalid
}

func newTopology(subs [][]string) topology {
	t := topology{subs: subs, topicOf: make(map[string]int)}
	for s, topics := range subs {
		if len(topics) == 0 {
			t.err = fmt.Errorf("%w: subtopology %d has no source topics", ErrTopology, s)
		}
		for _, topic := range topics {
			if prev, ok := t.topicOf[topic]; ok {
				if prev != s {
					t.err = fmt.Errorf("%w: topic %q is a source of subtopologies %d and %d", ErrTopology, topic, prev, s)
				}
				continue
			}
			t.topicOf[topic] = s
			t.topics = append(t.topics, topic)
		}
	}
	slices.Sort(t.topics)
	return t
}

// tasks returns every task, sorted, given the partition count of each
// topic; it fails if a topic is missing or co-partitioning is violated.
func (t topology) tasks(counts map[string]int32) ([]Task, error) {
	if t.err != nil {
		return nil, t.err
	}
	var tasks []Task
	var errs []error
	for s, topics := range t.subs {
		n, ok := counts[topics[0]]
		same := true
		for _, topic := range topics {
			c, found := counts[topic]
			if !found || c <= 0 {
				errs = append(errs, fmt.Errorf("%w: %q (subtopology %d)", ErrMissingTopic, topic, s))
				ok = false
				continue
			}
			same = same && c == n
		}
		if !ok {
			continue
		}
		if !same {
			desc := ""
			for i, topic := range topics {
				if i > 0 {
					desc += ", "
				}
				desc += fmt.Sprintf("%s (%d partitions)", topic, counts[topic])
			}
			errs = append(errs, fmt.Errorf("%w: subtopology %d: %s", ErrCoPartition, s, desc))
			continue
		}
		for p := range n {
			tasks = append(tasks, Task{Subtopology: s, Partition: p})
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return tasks, nil
}

// tasksOf returns the tasks having at least one partition in parts
// (topic -> partitions), sorted, without duplicates. Unknown topics are
// skipped.
func (t topology) tasksOf(parts map[string][]int32) []Task {
	var out []Task
	for topic, ps := range parts {
		s, ok := t.topicOf[topic]
		if !ok {
			continue
		}
		for _, p := range ps {
			out = append(out, Task{Subtopology: s, Partition: p})
		}
	}
	sortTasks(out)
	return slices.Compact(out)
}

// partitionsOf appends the partitions of task to dst (topic -> partitions).
func (t topology) partitionsOf(dst map[string][]int32, task Task) {
	for _, topic := range t.subs[task.Subtopology] {
		dst[topic] = append(dst[topic], task.Partition)
	}
}
