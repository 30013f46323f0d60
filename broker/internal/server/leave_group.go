package server

// LeaveGroup: versions 0-5; a batch of members (by member id or
// group.instance.id) from v3, each with its own error code.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker/internal/group"
)

func handleLeaveGroup(c *conn, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.LeaveGroupRequest)
	sh, err := c.s.groups.peek(req.Group)
	if err != nil {
		resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
		resp.ErrorCode = c.s.metrics.code(kmsg.LeaveGroup, err)
		return resp
	}
	now := c.s.now()
	var resp *kmsg.LeaveGroupResponse
	p, _ := sh.step(0, func(core *group.Coordinator) group.Output {
		var out group.Output
		resp, out = core.Leave(now, req)
		return out
	})
	if len(p.out.Records) == 0 && len(p.out.Replies) == 0 {
		return resp
	}
	r.later = func() kmsg.Response {
		p.finish()
		return resp
	}
	return nil
}
