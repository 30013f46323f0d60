package server

// ListPartitionReassignments: version 0. The reassignments in progress, as
// this node's metadata image holds them: every partition with adding or
// removing replicas (of the topics and partitions named, or of all for a
// null list), with its replicas, adding and removing replicas.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker/internal/metadata"
)

func handleListPartitionReassignments(c *conn, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.ListPartitionReassignmentsRequest)
	resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	im := c.s.meta.Image()
	add := func(t *metadata.Topic, parts []int32) {
		st := kmsg.NewListPartitionReassignmentsResponseTopic()
		st.Topic = t.Name
		for _, i := range parts {
			if i < 0 || int(i) >= len(t.Partitions) || !t.Partitions[i].Reassigning() {
				continue
			}
			pm := t.Partitions[i]
			sp := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
			sp.Partition, sp.Replicas = i, pm.Replicas
			sp.AddingReplicas, sp.RemovingReplicas = pm.AddingReplicas, pm.RemovingReplicas
			st.Partitions = append(st.Partitions, sp)
		}
		if len(st.Partitions) > 0 {
			resp.Topics = append(resp.Topics, st)
		}
	}
	if req.Topics == nil {
		for _, name := range im.TopicNames() {
			t := im.Topics[name]
			all := make([]int32, len(t.Partitions))
			for i := range all {
				all[i] = int32(i)
			}
			add(t, all)
		}
		return resp
	}
	for _, rt := range req.Topics {
		if t := im.Topic(rt.Topic); t != nil {
			add(t, rt.Partitions)
		}
	}
	return resp
}
