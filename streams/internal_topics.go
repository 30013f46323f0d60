package streams

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// ErrMissingSourceTopic is returned by Run when an input topic does not
// exist: Kafka Streams' MissingSourceTopicException. Apps do not create
// their input topics, so that a typo does not become an empty topic.
var ErrMissingSourceTopic = errors.New("streams: source topic does not exist")

// topicPlan is the partition count of every topic the app reads or
// writes internally, and of each subtopology.
type topicPlan struct {
	partitions map[string]int32 // Kafka topic name -> count
	subs       []int32          // subtopology -> its task count
}

// planTopics reads the source topics' partition counts and derives those of
// the internal topics. The topics one subtopology reads form a
// co-partition group (a join, or a table looked up by a stream, puts both
// sides in one subtopology): its user topics, and repartition topics given
// a count with Partitions, must agree, and its other repartition topics
// take their count. A group of such repartition topics only takes the
// largest count of the subtopologies that write them. A changelog gets its
// store's subtopology's count.
func planTopics(topo *Topology, appID string, source map[string]int32) (*topicPlan, error) {
	p := &topicPlan{partitions: map[string]int32{}, subs: make([]int32, len(topo.subs))}
	for topic, n := range source {
		p.partitions[topic] = n
	}
	repart := map[string]*repartitionTopic{}
	for _, r := range topo.repartition {
		repart[r.name] = r
	}
	// Subtopologies that read only repartition topics wait for their
	// writers: at most len(subs) rounds, since repartition links form no
	// cycle.
	for round := 0; round <= len(topo.subs); round++ {
		progress := false
		for _, sub := range topo.subs {
			if p.subs[sub.id] != 0 {
				continue
			}
			n, err := p.sizeGroup(sub, source, repart)
			if err != nil {
				return nil, err
			}
			if n == 0 {
				continue // a writer is not sized yet
			}
			p.subs[sub.id] = n
			for _, src := range sub.sources {
				for _, topic := range src.topics {
					if src.internal {
						p.partitions[appID+"-"+topic] = n
					}
				}
			}
			progress = true
		}
		if !progress {
			break
		}
	}
	for _, sub := range topo.subs {
		if p.subs[sub.id] == 0 {
			return nil, fmt.Errorf("%w: cannot size the repartition topics read by sub-topology %d", ErrTopology, sub.id)
		}
		for _, s := range sub.stores {
			if s.logged {
				p.partitions[appID+"-"+s.name+"-changelog"] = p.subs[sub.id]
			}
		}
	}
	return p, nil
}

// sizeGroup returns the partition count of the topics sub reads, or 0 when
// it depends on a writer not sized yet.
func (p *topicPlan) sizeGroup(sub *subtopology, source map[string]int32, repart map[string]*repartitionTopic) (int32, error) {
	fixed := map[string]int32{} // user topics, and repartition topics with a set count
	var flexible int32          // the largest writer count of the other repartition topics
	ready := true
	for _, src := range sub.sources {
		for _, topic := range src.topics {
			if !src.internal {
				fixed[topic] = source[topic]
				continue
			}
			r := repart[topic]
			if r.partitions != 0 {
				fixed[topic] = r.partitions
				continue
			}
			w := p.subs[r.writer.sub]
			if w == 0 {
				ready = false
			}
			flexible = max(flexible, w)
		}
	}
	if len(fixed) > 0 {
		return copartitioned(sub.id, fixed)
	}
	if !ready {
		return 0, nil
	}
	return flexible, nil
}

// copartitioned checks that the topics one task reads have one partition
// count: a task owns partition P of each, so keys must be spread alike.
func copartitioned(sub int, counts map[string]int32) (int32, error) {
	var n int32
	topics := make([]string, 0, len(counts))
	for t := range counts {
		topics = append(topics, t)
	}
	sort.Strings(topics)
	for _, t := range topics {
		if n == 0 {
			n = counts[t]
		} else if counts[t] != n {
			var desc []string
			for _, t := range topics {
				desc = append(desc, fmt.Sprintf("%s: %d partitions", t, counts[t]))
			}
			return 0, fmt.Errorf("%w: sub-topology %d reads topics that are not co-partitioned (%s): records of one key must meet in one task, so give them the same partition count, or Repartition one side", ErrTopology, sub, strings.Join(desc, ", "))
		}
	}
	return n, nil
}

// ensureTopics reads the source topics, plans the internal ones and
// creates those missing. Existing internal topics must have the planned
// partition count.
func ensureTopics(ctx context.Context, adm *kadm.Client, topo *Topology, appID string, rf int16) (*topicPlan, error) {
	sources := topo.SourceTopics()
	md, err := adm.ListTopics(ctx, sources...)
	if err != nil {
		return nil, fmt.Errorf("streams: list source topics: %w", err)
	}
	counts := map[string]int32{}
	for _, topic := range sources {
		d, ok := md[topic]
		if !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
			return nil, fmt.Errorf("%w: %q (create it first, e.g. runnel topic create %s)", ErrMissingSourceTopic, topic, topic)
		}
		if d.Err != nil {
			return nil, fmt.Errorf("streams: source topic %q: %w", topic, d.Err)
		}
		counts[topic] = int32(len(d.Partitions))
	}
	plan, err := planTopics(topo, appID, counts)
	if err != nil {
		return nil, err
	}
	var internal []string
	for topic := range plan.partitions {
		if _, src := counts[topic]; !src {
			internal = append(internal, topic)
		}
	}
	sort.Strings(internal)
	existing, err := adm.ListTopics(ctx, internal...)
	if err != nil {
		return nil, fmt.Errorf("streams: list internal topics: %w", err)
	}
	for _, topic := range internal {
		want := plan.partitions[topic]
		if d, ok := existing[topic]; ok && d.Err == nil {
			if got := int32(len(d.Partitions)); got != want {
				return nil, fmt.Errorf("streams: internal topic %q has %d partitions, the topology needs %d (delete it, or reset the app: its state and offsets belong to the old layout)", topic, got, want)
			}
			continue
		}
		resp, err := adm.CreateTopic(ctx, want, rf, internalTopicConfigs(topo, appID, topic), topic)
		if err == nil {
			err = resp.Err
		}
		if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			return nil, fmt.Errorf("streams: create internal topic %q: %w", topic, err)
		}
	}
	return plan, waitTopics(ctx, adm, internal)
}

// waitTopics waits until metadata shows every topic with its partitions:
// a broker may answer CreateTopics before all of it knows the topic.
func waitTopics(ctx context.Context, adm *kadm.Client, topics []string) error {
	for {
		md, err := adm.ListTopics(ctx, topics...)
		if err != nil {
			return fmt.Errorf("streams: wait for internal topics: %w", err)
		}
		ready := true
		for _, topic := range topics {
			d, ok := md[topic]
			if !ok || d.Err != nil || len(d.Partitions) == 0 {
				ready = false
				break
			}
			for _, p := range d.Partitions {
				if p.Err != nil || p.Leader < 0 {
					ready = false
				}
			}
		}
		if ready {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("streams: wait for internal topics %v: %w", topics, ctx.Err())
		case <-time.After(50 * time.Millisecond): // metadata has no watch: poll
		}
	}
}

func isChangelog(topic string) bool {
	const suffix = "-changelog"
	return len(topic) > len(suffix) && topic[len(topic)-len(suffix):] == suffix
}
