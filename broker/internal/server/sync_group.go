package server

// SyncGroup: versions 0-5 (protocol type and name checked from v5). The
// leader's assignment is made durable in __consumer_offsets before the
// group turns Stable and any member hears of it; followers wait for it.
// If the write fails every waiting SyncGroup gets Kafka's error for it
// (NOT_COORDINATOR for a storage error) and the group rebalances.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker/internal/group"
)

func handleSyncGroup(c *conn, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.SyncGroupRequest)
	sh, err := c.s.groups.peek(req.Group)
	if err != nil {
		resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
		resp.ErrorCode = c.s.metrics.code(kmsg.SyncGroup, err)
		return resp
	}
	now := c.s.now()
	w := c.s.groups.newWaiter()
	p, ch := sh.step(w, func(core *group.Coordinator) group.Output { return core.Sync(now, w, req) })
	c.s.groups.await(c, r, p, w, ch)
	return nil
}
