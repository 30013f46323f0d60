package server

// ElectLeaders: versions 0-2 (v0 is always a preferred election). The
// active controller runs the elections (controller.Elect) in one metadata
// entry, so each partition's answer is its outcome: ELECTION_NOT_NEEDED
// when the asked-for leader leads already, PREFERRED_LEADER_NOT_AVAILABLE,
// ELIGIBLE_LEADERS_NOT_AVAILABLE, UNKNOWN_TOPIC_OR_PARTITION. A null topic
// list elects every partition. Without a controller within timeout_ms
// every partition gets REQUEST_TIMED_OUT.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker/internal/controller"
)

func handleElectLeaders(c *conn, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.ElectLeadersRequest)
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	er := controller.ElectRequest{Type: controller.ElectionType(req.ElectionType)}
	if req.Version == 0 {
		er.Type = controller.Preferred
	}
	if req.Topics != nil {
		er.Partitions = []controller.ElectPartition{}
		for _, rt := range req.Topics {
			for _, p := range rt.Partitions {
				er.Partitions = append(er.Partitions, controller.ElectPartition{Topic: rt.Topic, Partition: p})
			}
		}
	}
	r.later = func() kmsg.Response {
		ctx, cancel := context.WithTimeout(c.s.bg, time.Duration(max(req.TimeoutMillis, 1))*time.Millisecond)
		defer cancel()
		answer, err := c.s.callController(ctx, controller.Request{Elect: &er})
		if err != nil {
			code := c.s.metrics.code(kmsg.ElectLeaders, err)
			if code == kerr.UnknownServerError.Code {
				code = kerr.RequestTimedOut.Code
			}
			for _, p := range er.Partitions {
				addElectResult(resp, controller.PartitionResult{Topic: p.Topic, Partition: p.Partition, ErrorCode: code, ErrorMessage: err.Error()})
			}
			if req.Version >= 1 && er.Partitions == nil {
				resp.ErrorCode = code
			}
			return resp
		}
		for _, res := range answer.Elect.Results {
			addElectResult(resp, res)
		}
		return resp
	}
	return nil
}

// addElectResult adds one partition's outcome under its topic.
func addElectResult(resp *kmsg.ElectLeadersResponse, res controller.PartitionResult) {
	if n := len(resp.Topics); n == 0 || resp.Topics[n-1].Topic != res.Topic {
		rt := kmsg.NewElectLeadersResponseTopic()
		rt.Topic = res.Topic
		resp.Topics = append(resp.Topics, rt)
	}
	rp := kmsg.NewElectLeadersResponseTopicPartition()
	rp.Partition, rp.ErrorCode = res.Partition, res.ErrorCode
	if res.ErrorCode != 0 {
		msg := res.ErrorMessage
		rp.ErrorMessage = &msg
	}
	rt := &resp.Topics[len(resp.Topics)-1]
	rt.Partitions = append(rt.Partitions, rp)
}
