package server

// AlterPartitionReassignments: versions 0-1. The active controller starts
// (or, for a null replica list, cancels) each partition's reassignment
// (controller.Reassign) in one metadata entry; the new replicas copy the
// log as followers and the controller switches to the target once all of
// them are in the ISR. v1's allow_replication_factor_change=false
// (KIP-860) refuses a target of another size with
// INVALID_REPLICATION_FACTOR. Without a controller within timeout_ms every
// partition gets REQUEST_TIMED_OUT.

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker/internal/controller"
)

func handleAlterPartitionReassignments(c *conn, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.AlterPartitionAssignmentsRequest)
	resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	resp.AllowReplicationFactorChange = req.AllowReplicationFactorChange
	var ask controller.ReassignRequest
	refused := map[tp]error{}
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			t := tp{rt.Topic, rp.Partition}
			if req.Version >= 1 && !req.AllowReplicationFactorChange && rp.Replicas != nil {
				if pm, ok := c.s.partitionMeta(t); ok && len(rp.Replicas) != len(pm.TargetReplicas()) {
					refused[t] = kafkaErr(kerr.InvalidReplicationFactor, "%s-%d has %d replicas, the target %d, and allow_replication_factor_change is false",
						t.topic, t.part, len(pm.TargetReplicas()), len(rp.Replicas))
					continue
				}
			}
			ask.Partitions = append(ask.Partitions, controller.ReassignPartition{Topic: rt.Topic, Partition: rp.Partition, Replicas: rp.Replicas})
		}
	}
	r.later = func() kmsg.Response {
		results := map[tp]controller.PartitionResult{}
		if len(ask.Partitions) > 0 {
			ctx, cancel := context.WithTimeout(c.s.bg, time.Duration(max(req.TimeoutMillis, 1))*time.Millisecond)
			defer cancel()
			answer, err := c.s.callController(ctx, controller.Request{Reassign: &ask})
			for _, p := range ask.Partitions {
				res := controller.PartitionResult{Topic: p.Topic, Partition: p.Partition}
				if err != nil {
					res.ErrorCode, res.ErrorMessage = kerr.RequestTimedOut.Code, fmt.Sprintf("no answer from the controller: %v", err)
				}
				results[tp{p.Topic, p.Partition}] = res
			}
			if err == nil {
				for _, res := range answer.Reassign.Results {
					results[tp{res.Topic, res.Partition}] = res
				}
			}
		}
		for _, rt := range req.Topics {
			st := kmsg.NewAlterPartitionAssignmentsResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
				sp.Partition = rp.Partition
				if err := refused[tp{rt.Topic, rp.Partition}]; err != nil {
					sp.ErrorCode, sp.ErrorMessage = errCode(err), errMessage(err)
				} else if res := results[tp{rt.Topic, rp.Partition}]; res.ErrorCode != 0 {
					msg := res.ErrorMessage
					sp.ErrorCode, sp.ErrorMessage = res.ErrorCode, &msg
				}
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp
	}
	return nil
}
