package server

// DeleteTopics: versions 1-6 (1 is Kafka 4.0's floor); by name, or by topic
// id from v6. Refused with TOPIC_DELETION_DISABLED when
// delete.topic.enable=false. A deleted topic's partitions are closed and
// their directories removed before the response.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker/internal/metadata"
)

func handleDeleteTopics(c *conn, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.DeleteTopicsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	s := c.s
	type target struct {
		name *string
		id   [16]byte
	}
	var targets []target
	if req.Version >= 6 {
		for _, t := range req.Topics {
			targets = append(targets, target{t.Topic, t.TopicID})
		}
	} else {
		for _, n := range req.TopicNames {
			targets = append(targets, target{name: &n})
		}
	}
	for _, tg := range targets {
		st := kmsg.NewDeleteTopicsResponseTopic()
		st.Topic, st.TopicID = tg.name, tg.id
		im := s.meta.Image()
		var t *metadata.Topic
		if tg.name != nil {
			t = im.Topic(*tg.name)
		} else {
			t = im.TopicsByID[tg.id]
		}
		var err error
		switch {
		case !s.cfg.DeleteTopicEnable:
			err = kafkaErr(kerr.TopicDeletionDisabled, "delete.topic.enable is false")
		case t == nil && tg.name == nil:
			err = kerr.UnknownTopicID
		case t == nil:
			err = kerr.UnknownTopicOrPartition
		case t.Internal:
			err = kafkaErr(kerr.TopicAuthorizationFailed, "internal topic %s cannot be deleted", t.Name)
		default:
			name := t.Name
			st.Topic, st.TopicID = &name, t.ID
			err = s.meta.Propose(context.Background(), metadata.Record{DeleteTopic: &metadata.DeleteTopic{Name: t.Name}})
		}
		if err != nil {
			st.ErrorCode = s.metrics.code(kmsg.DeleteTopics, err)
			st.ErrorMessage = errMessage(err)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}
