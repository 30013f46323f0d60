package server

import (
	"context"
	"crypto/rand"
	"fmt"
	mathrand "math/rand/v2"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/runnel-io/runnel/broker/internal/configs"
	"github.com/runnel-io/runnel/broker/internal/controller"
	"github.com/runnel-io/runnel/broker/internal/metadata"
)

// maxPartitionsPerRequest bounds the partitions one CreateTopics or
// CreatePartitions may add, as Kafka bounds one operation's records.
const maxPartitionsPerRequest = 10000

// topicSpec is a request to create a topic, from CreateTopics or from
// auto-creation.
type topicSpec struct {
	name       string
	partitions int32 // -1: num.partitions
	replicas   int16 // -1: default.replication.factor
	assignment [][]int32
	configs    map[string]string
}

// planTopic validates spec against the image and returns the topic to
// create. The error is a *kerr.Error wrapped with a message that says what
// is wrong.
func (s *Server) planTopic(im *metadata.Image, spec topicSpec) (*metadata.Topic, error) {
	if err := configs.TopicNameError(spec.name); err != nil {
		return nil, kafkaErr(kerr.InvalidTopicException, "%v", err)
	}
	if im.Topic(spec.name) != nil {
		return nil, kafkaErr(kerr.TopicAlreadyExists, "topic %q already exists", spec.name)
	}
	collides := configs.TopicCollisionName(spec.name)
	for _, other := range im.TopicNames() {
		if configs.TopicCollisionName(other) == collides {
			return nil, kafkaErr(kerr.InvalidTopicException, "topic %q collides with existing topic %q: '.' and '_' are interchangeable in metric names", spec.name, other)
		}
	}
	norm, err := configs.NormalizeTopicConfigs(spec.configs)
	if err != nil {
		return nil, kafkaErr(kerr.InvalidConfig, "%v", err)
	}
	if _, err := configs.ResolveTopic(norm, s.layers(im)); err != nil {
		return nil, kafkaErr(kerr.InvalidConfig, "%v", err)
	}
	brokers := im.BrokerIDs()
	var parts []metadata.Partition
	if len(spec.assignment) > maxPartitionsPerRequest {
		return nil, kafkaErr(kerr.PolicyViolation, "%d partitions is more than the %d one request may create", len(spec.assignment), maxPartitionsPerRequest)
	}
	if len(spec.assignment) > 0 {
		if spec.partitions != -1 || spec.replicas != -1 {
			return nil, kafkaErr(kerr.InvalidRequest, "give either a replica assignment or partitions and replication factor, not both")
		}
		for i, replicas := range spec.assignment {
			if err := checkReplicas(replicas, brokers); err != nil {
				return nil, kafkaErr(kerr.InvalidReplicaAssignment, "partition %d: %v", i, err)
			}
			parts = append(parts, newPartition(replicas))
		}
	} else {
		n, rf := spec.partitions, spec.replicas
		if n == -1 {
			n = s.cfg.NumPartitions
		}
		if rf == -1 {
			rf = s.cfg.DefaultReplicationFactor
		}
		if n <= 0 {
			return nil, kafkaErr(kerr.InvalidPartitions, "partitions must be at least 1, got %d", n)
		}
		if n > maxPartitionsPerRequest {
			return nil, kafkaErr(kerr.PolicyViolation, "%d partitions is more than the %d one request may create", n, maxPartitionsPerRequest)
		}
		if parts, err = s.assign(im, spec.name, 0, n, rf); err != nil {
			return nil, err
		}
	}
	t := &metadata.Topic{Name: spec.name, Partitions: parts, Configs: norm}
	if _, err := rand.Read(t.ID[:]); err != nil {
		return nil, err
	}
	t.Internal = len(spec.name) > 2 && spec.name[:2] == "__"
	return t, nil
}

func checkReplicas(replicas []int32, brokers []int32) error {
	if len(replicas) == 0 {
		return fmt.Errorf("no replicas")
	}
	for i, r := range replicas {
		if !slices.Contains(brokers, r) {
			return fmt.Errorf("broker %d is not registered", r)
		}
		if slices.Contains(replicas[:i], r) {
			return fmt.Errorf("broker %d is listed twice", r)
		}
	}
	return nil
}

func newPartition(replicas []int32) metadata.Partition {
	return metadata.Partition{Leader: replicas[0], Replicas: slices.Clone(replicas), ISR: slices.Clone(replicas)}
}

// assign places partitions [first, first+n) of topic with the
// controller's rack-aware placer (controller.Place): leaders and replicas
// spread evenly over the usable brokers, one replica per rack while racks
// allow. A new topic starts at a random broker, as Kafka's placer does;
// added partitions continue from the broker leading partition 0. The
// error is INVALID_REPLICATION_FACTOR when rf is not between 1 and the
// usable (unfenced, not shutting down) brokers.
func (s *Server) assign(im *metadata.Image, topic string, first, n int32, rf int16) ([]metadata.Partition, error) {
	brokers := make([]metadata.Broker, 0, len(im.Brokers))
	for _, id := range im.BrokerIDs() {
		brokers = append(brokers, im.Brokers[id])
	}
	start := mathrand.IntN(max(1, len(brokers)))
	if t := im.Topic(topic); t != nil && len(t.Partitions) > 0 && len(t.Partitions[0].Replicas) > 0 {
		start = controller.StartOf(brokers, t.Partitions[0].Replicas[0])
	}
	placed, err := controller.Place(brokers, controller.Placement{
		First: int(first), Count: int(n), ReplicationFactor: int(rf), Start: start,
	})
	if err != nil {
		return nil, kafkaErr(kerr.InvalidReplicationFactor, "%v", err)
	}
	parts := make([]metadata.Partition, 0, n)
	for _, replicas := range placed {
		parts = append(parts, newPartition(replicas))
	}
	return parts, nil
}

// autoCreate creates topics named in a Metadata request that do not exist,
// with the broker's defaults, when auto.create.topics.enable is on. It
// returns an error code per topic it could not create.
func (s *Server) autoCreate(ctx context.Context, names []string) map[string]int16 {
	codes := map[string]int16{}
	for _, name := range names {
		im := s.meta.Image()
		if im.Topic(name) != nil {
			continue
		}
		t, err := s.planTopic(im, topicSpec{name: name, partitions: -1, replicas: -1})
		if err == nil {
			err = s.meta.Propose(ctx, metadata.Record{CreateTopic: t})
		}
		if err != nil {
			if errCode(err) == kerr.TopicAlreadyExists.Code {
				continue // created concurrently
			}
			codes[name] = errCode(err)
			s.logger.Info("auto-creating topic failed", "topic", name, "err", err)
			continue
		}
		s.logger.Info("auto-created topic", "topic", name, "partitions", len(t.Partitions))
	}
	return codes
}
