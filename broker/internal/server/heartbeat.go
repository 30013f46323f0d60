package server

// Heartbeat: versions 0-4.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker/internal/group"
)

func handleHeartbeat(c *conn, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.HeartbeatRequest)
	sh, err := c.s.groups.peek(req.Group)
	if err != nil {
		resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
		resp.ErrorCode = c.s.metrics.code(kmsg.Heartbeat, err)
		return resp
	}
	now := c.s.now()
	var resp *kmsg.HeartbeatResponse
	p, _ := sh.step(0, func(core *group.Coordinator) group.Output {
		resp = core.Heartbeat(now, req)
		return group.Output{}
	})
	p.finish()
	return resp
}
