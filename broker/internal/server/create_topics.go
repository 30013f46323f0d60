package server

// CreateTopics: versions 2-7 (2 is Kafka 4.0's floor). validate_only,
// manual replica assignments, topic configs validated with messages that
// say what is wrong; v5+ answers with the partitions, replication factor
// and configs used, v7 with the topic id.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker/internal/configs"
	"github.com/runnel-io/runnel/broker/internal/metadata"
)

func handleCreateTopics(c *conn, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.CreateTopicsRequest)
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	s := c.s
	seen := map[string]int{}
	for _, rt := range req.Topics {
		seen[rt.Topic]++
	}
	for _, rt := range req.Topics {
		st := kmsg.NewCreateTopicsResponseTopic()
		st.Topic = rt.Topic
		st.NumPartitions, st.ReplicationFactor = -1, -1
		spec := topicSpec{name: rt.Topic, partitions: rt.NumPartitions, replicas: rt.ReplicationFactor, configs: map[string]string{}}
		for _, a := range rt.ReplicaAssignment {
			for int(a.Partition) >= len(spec.assignment) {
				spec.assignment = append(spec.assignment, nil)
			}
			spec.assignment[a.Partition] = a.Replicas
		}
		for _, kv := range rt.Configs {
			if kv.Value != nil {
				spec.configs[kv.Name] = *kv.Value
			}
		}
		err := error(nil)
		var t *metadata.Topic
		if seen[rt.Topic] > 1 {
			err = errDuplicateTopic(rt.Topic)
		} else {
			t, err = s.planTopic(s.meta.Image(), spec)
			if err == nil && !req.ValidateOnly {
				err = s.meta.Propose(context.Background(), metadata.Record{CreateTopic: t})
			}
		}
		if err != nil {
			st.ErrorCode = s.metrics.code(kmsg.CreateTopics, err)
			st.ErrorMessage = errMessage(err)
			resp.Topics = append(resp.Topics, st)
			continue
		}
		st.TopicID = t.ID
		st.NumPartitions = int32(len(t.Partitions))
		st.ReplicationFactor = int16(len(t.Partitions[0].Replicas))
		im := s.meta.Image()
		for _, e := range configs.DescribeTopic(t.Configs, s.layers(im)) {
			rc := kmsg.NewCreateTopicsResponseTopicConfig()
			rc.Name, rc.Value, rc.ReadOnly, rc.Source, rc.IsSensitive = e.Name, e.Value, e.ReadOnly, int8(e.Source), e.Sensitive
			st.Configs = append(st.Configs, rc)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

func errDuplicateTopic(name string) error {
	return kafkaErr(kerr.InvalidRequest, "topic %q is named more than once in the request", name)
}
