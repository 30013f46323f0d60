package server

// Metadata: versions 0-12. Topic ids from v10 (and lookup by id from v12),
// auto-creation per allow_auto_topic_creation (v4+) and
// auto.create.topics.enable; authorized operations are not computed (no
// ACLs yet) and reported as "not provided".

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker/internal/metadata"
)

// authorizedOperationsOmitted is Kafka's "not provided" value for the
// authorized operations fields.
const authorizedOperationsOmitted = -2147483648

// controllerID is the active controller's node id as this node knows it
// (the quorum's leader), or -1 while there is none.
func (s *Server) controllerID() int32 {
	id, _, ok := s.meta.Leader()
	if !ok {
		return -1
	}
	return id
}

func handleMetadata(c *conn, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.MetadataRequest)
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	s := c.s
	im := s.meta.Image()

	createCodes := map[string]int16{}
	if req.Topics != nil && s.cfg.AutoCreateTopics && (req.Version < 4 || req.AllowAutoTopicCreation) {
		var missing []string
		for _, rt := range req.Topics {
			if rt.Topic != nil && im.Topic(*rt.Topic) == nil {
				missing = append(missing, *rt.Topic)
			}
		}
		if len(missing) > 0 {
			createCodes = s.autoCreate(context.Background(), missing)
			im = s.meta.Image()
		}
	}

	for _, id := range im.BrokerIDs() {
		b := im.Brokers[id]
		if b.Fenced {
			continue // as Kafka: a fenced broker is not offered to clients
		}
		rb := kmsg.NewMetadataResponseBroker()
		rb.NodeID, rb.Host, rb.Port = b.ID, b.Host, b.Port
		if b.Rack != "" {
			rack := b.Rack
			rb.Rack = &rack
		}
		resp.Brokers = append(resp.Brokers, rb)
	}
	cluster := im.ClusterID
	resp.ClusterID = &cluster
	resp.ControllerID = s.controllerID()
	resp.AuthorizedOperations = authorizedOperationsOmitted

	// All topics: a null list, or in v0 an empty one.
	if req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0) {
		for _, name := range im.TopicNames() {
			resp.Topics = append(resp.Topics, metadataTopic(im, im.Topics[name], req.Version))
		}
		return resp
	}
	for _, rt := range req.Topics {
		var t *metadata.Topic
		if rt.Topic != nil {
			t = im.Topic(*rt.Topic)
		} else {
			t = im.TopicsByID[rt.TopicID]
		}
		if t != nil {
			resp.Topics = append(resp.Topics, metadataTopic(im, t, req.Version))
			continue
		}
		st := kmsg.NewMetadataResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		st.AuthorizedOperations = authorizedOperationsOmitted
		st.ErrorCode = kerr.UnknownTopicOrPartition.Code
		if rt.Topic == nil {
			st.ErrorCode = kerr.UnknownTopicID.Code
		} else if code, ok := createCodes[*rt.Topic]; ok {
			st.ErrorCode = code
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

func metadataTopic(im *metadata.Image, t *metadata.Topic, version int16) kmsg.MetadataResponseTopic {
	st := kmsg.NewMetadataResponseTopic()
	name := t.Name
	st.Topic = &name
	st.TopicID = t.ID
	st.IsInternal = t.Internal
	st.AuthorizedOperations = authorizedOperationsOmitted
	for i, p := range t.Partitions {
		sp := kmsg.NewMetadataResponseTopicPartition()
		sp.Partition = int32(i)
		sp.Leader = p.Leader
		sp.LeaderEpoch = p.LeaderEpoch
		sp.Replicas = p.Replicas
		sp.ISR = p.ISR
		for _, r := range p.Replicas {
			if b, ok := im.Brokers[r]; !ok || b.Fenced {
				sp.OfflineReplicas = append(sp.OfflineReplicas, r)
			}
		}
		if p.Leader < 0 {
			sp.ErrorCode = kerr.LeaderNotAvailable.Code
		}
		st.Partitions = append(st.Partitions, sp)
	}
	return st
}
