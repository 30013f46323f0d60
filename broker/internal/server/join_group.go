package server

// JoinGroup: versions 0-9. Any protocol type and assignor name; required
// member ids from v4 (KIP-394); static membership from v5 (KIP-345);
// SkipAssignment for a rejoining static leader from v9. The answer comes
// when the join phase completes (see package group).

import (
	"errors"

	"net"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker/internal/group"
)

func handleJoinGroup(c *conn, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.JoinGroupRequest)
	sh, err := c.s.groups.shard(req.Group)
	if err != nil {
		resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
		code := kerr.CoordinatorNotAvailable.Code
		if errors.Is(err, kerr.NotCoordinator) {
			code = kerr.NotCoordinator.Code
		}
		resp.ErrorCode, resp.Generation, resp.MemberID = code, -1, req.MemberID
		return resp
	}
	cl := group.Client{ID: deref(r.hdr.ClientID), Host: "/" + remoteIP(c)}
	now := c.s.now()
	w := c.s.groups.newWaiter()
	p, ch := sh.step(w, func(core *group.Coordinator) group.Output { return core.Join(now, w, cl, req) })
	c.s.groups.await(c, r, p, w, ch)
	return nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// remoteIP is the client's address without the port, as Kafka's
// client host (which adds a leading slash).
func remoteIP(c *conn) string {
	host, _, err := net.SplitHostPort(c.remote)
	if err != nil {
		return c.remote
	}
	return host
}
