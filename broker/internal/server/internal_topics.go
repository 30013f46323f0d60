package server

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/runnel-io/runnel/broker/internal/metadata"
)

// internalTopic returns the coordinators' internal topic of spec
// (__consumer_offsets, __transaction_state), creating it first if it does
// not exist, as Kafka does on the first FindCoordinator. Its replication
// factor is capped at the brokers registered, so one node runs it.
func (s *Server) internalTopic(ctx context.Context, spec topicSpec) (*metadata.Topic, error) {
	if t := s.meta.Image().Topic(spec.name); t != nil {
		return t, nil
	}
	spec.replicas = min(spec.replicas, int16(len(s.meta.Image().BrokerIDs())))
	nt, err := s.planTopic(s.meta.Image(), spec)
	if err == nil {
		err = s.meta.Propose(ctx, metadata.Record{CreateTopic: nt})
	}
	if err != nil && errCode(err) != kerr.TopicAlreadyExists.Code {
		return nil, fmt.Errorf("create %s: %w", spec.name, err)
	}
	s.logger.Info("created an internal topic", "topic", spec.name, "partitions", spec.partitions, "replicas", spec.replicas)
	t := s.meta.Image().Topic(spec.name)
	if t == nil {
		return nil, kafkaErr(kerr.CoordinatorNotAvailable, "%s is not available", spec.name)
	}
	return t, nil
}
