package server

// CreatePartitions: versions 0-3. Grows a topic to a new partition count,
// with an optional assignment for the new partitions; validate_only.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker/internal/metadata"
)

func handleCreatePartitions(c *conn, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.CreatePartitionsRequest)
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	s := c.s
	for _, rt := range req.Topics {
		st := kmsg.NewCreatePartitionsResponseTopic()
		st.Topic = rt.Topic
		rec, err := s.planPartitions(rt)
		if err == nil && !req.ValidateOnly {
			err = s.meta.Propose(context.Background(), metadata.Record{AddPartitions: rec})
		}
		if err != nil {
			st.ErrorCode = s.metrics.code(kmsg.CreatePartitions, err)
			st.ErrorMessage = errMessage(err)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

func (s *Server) planPartitions(rt kmsg.CreatePartitionsRequestTopic) (*metadata.AddPartitions, error) {
	im := s.meta.Image()
	t := im.Topic(rt.Topic)
	if t == nil {
		return nil, kafkaErr(kerr.UnknownTopicOrPartition, "topic %q does not exist", rt.Topic)
	}
	have := int32(len(t.Partitions))
	if rt.Count <= have {
		return nil, kafkaErr(kerr.InvalidPartitions, "topic %q has %d partitions; the new count %d must be larger", rt.Topic, have, rt.Count)
	}
	add := rt.Count - have
	if add > maxPartitionsPerRequest {
		return nil, kafkaErr(kerr.PolicyViolation, "adding %d partitions is more than the %d one request may create", add, maxPartitionsPerRequest)
	}
	brokers := im.BrokerIDs()
	if rt.Assignment != nil {
		if int32(len(rt.Assignment)) != add {
			return nil, kafkaErr(kerr.InvalidReplicaAssignment, "%d assignments for %d new partitions", len(rt.Assignment), add)
		}
		rec := &metadata.AddPartitions{Topic: rt.Topic}
		for i, a := range rt.Assignment {
			if err := checkReplicas(a.Replicas, brokers); err != nil {
				return nil, kafkaErr(kerr.InvalidReplicaAssignment, "new partition %d: %v", i, err)
			}
			rec.Partitions = append(rec.Partitions, newPartition(a.Replicas))
		}
		return rec, nil
	}
	parts, err := s.assign(im, rt.Topic, have, add, int16(len(t.Partitions[0].Replicas)))
	if err != nil {
		return nil, err
	}
	return &metadata.AddPartitions{Topic: rt.Topic, Partitions: parts}, nil
}
