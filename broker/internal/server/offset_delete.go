package server

// OffsetDelete: version 0. A consumer group may delete the offsets of
// topics its members do not subscribe to (GROUP_SUBSCRIBED_TO_TOPIC for
// the others); any empty group may delete all; a non-empty group of
// another protocol type gets NON_EMPTY_GROUP.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker/internal/group"
)

func handleOffsetDelete(c *conn, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.OffsetDeleteRequest)
	sh, err := c.s.groups.peek(req.Group)
	if err != nil {
		resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
		resp.ErrorCode = c.s.metrics.code(kmsg.OffsetDelete, err)
		return resp
	}
	now := c.s.now()
	var resp *kmsg.OffsetDeleteResponse
	p, _ := sh.step(0, func(core *group.Coordinator) group.Output {
		var out group.Output
		resp, out = core.DeleteOffsets(now, req)
		return out
	})
	r.later = func() kmsg.Response {
		if err := p.finish(); err != nil {
			resp.ErrorCode = c.s.metrics.code(kmsg.OffsetDelete, groupWriteError(err, false))
			resp.Topics = nil
		}
		return resp
	}
	return nil
}
