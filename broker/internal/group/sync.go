package group

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func syncError(code *kerr.Error) *kmsg.SyncGroupResponse {
	resp := kmsg.NewPtrSyncGroupResponse()
	resp.ErrorCode = code.Code
	return resp
}

// Sync handles a SyncGroup. The answer goes to w, in this Output or, for
// a follower waiting for the leader's assignment, a later one.
func (c *Coordinator) Sync(now time.Time, w Waiter, req *kmsg.SyncGroupRequest) Output {
	out := c.sync(now, w, req)
	c.seal(now, &out)
	return out
}

func (c *Coordinator) sync(now time.Time, w Waiter, req *kmsg.SyncGroupRequest) Output {
	var out Output
	fail := func(code *kerr.Error) Output {
		out.reply(w, syncError(code))
		return out
	}
	if req.Group == "" {
		return fail(kerr.InvalidGroupID)
	}
	g := c.groups[req.Group]
	if g == nil {
		return fail(kerr.UnknownMemberID)
	}
	m := g.member(req.MemberID)
	switch {
	case g.state == Dead:
		return fail(kerr.CoordinatorNotAvailable)
	case g.staticFenced(req.InstanceID, req.MemberID):
		return fail(kerr.FencedInstanceID)
	case m == nil:
		return fail(kerr.UnknownMemberID)
	case req.Generation != g.generation:
		return fail(kerr.IllegalGeneration)
	case req.ProtocolType != nil && *req.ProtocolType != g.protocolType,
		req.Protocol != nil && *req.Protocol != g.protocol:
		return fail(kerr.InconsistentGroupProtocol)
	}
	switch g.state {
	case PreparingRebalance:
		return fail(kerr.RebalanceInProgress)
	case Stable:
		m.deadline = now.Add(m.sessionTimeout)
		out.reply(w, c.syncResponse(g, m))
		return out
	case CompletingRebalance:
	default:
		return fail(kerr.UnknownMemberID)
	}
	m.deadline = now.Add(m.sessionTimeout)
	m.syncWaiters = append(m.syncWaiters, w)
	if m.id != g.leader {
		return out // a follower's assignments, if any, are ignored, as Kafka does
	}
	// The leader's assignment: members it does not name get an empty one;
	// entries for ids that are not members are ignored.
	assign := map[string][]byte{}
	for _, a := range req.GroupAssignment {
		if g.member(a.MemberID) != nil {
			assign[a.MemberID] = a.MemberAssignment
		}
	}
	// As Kafka: the group stays CompletingRebalance until the record is
	// durable (Written); only then does it turn Stable and do its members
	// hear their assignments. A record too large for the offsets topic
	// fails in the append, and Written's error answers the members and
	// rebalances, as Kafka's RECORD_TOO_LARGE does.
	out.Records = append(out.Records, groupRecord(g, assign))
	c.stage().sync = &pendingSync{g: g, generation: g.generation, assignment: assign}
	return out
}

func (c *Coordinator) syncResponse(g *group, m *member) *kmsg.SyncGroupResponse {
	resp := kmsg.NewPtrSyncGroupResponse()
	pt, p := g.protocolType, g.protocol
	resp.ProtocolType, resp.Protocol = &pt, &p
	resp.MemberAssignment = m.assignment
	return resp
}

// Heartbeat handles a Heartbeat.
func (c *Coordinator) Heartbeat(now time.Time, req *kmsg.HeartbeatRequest) *kmsg.HeartbeatResponse {
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
	code := c.heartbeat(now, req)
	if code != nil {
		resp.ErrorCode = code.Code
	}
	return resp
}

func (c *Coordinator) heartbeat(now time.Time, req *kmsg.HeartbeatRequest) *kerr.Error {
	if req.Group == "" {
		return kerr.InvalidGroupID
	}
	g := c.groups[req.Group]
	if g == nil {
		return kerr.UnknownMemberID
	}
	m := g.member(req.MemberID)
	switch {
	case g.state == Dead:
		return kerr.CoordinatorNotAvailable
	case g.staticFenced(req.InstanceID, req.MemberID):
		return kerr.FencedInstanceID
	case m == nil:
		return kerr.UnknownMemberID
	case req.Generation != g.generation:
		return kerr.IllegalGeneration
	}
	m.deadline = now.Add(m.sessionTimeout)
	if g.state == PreparingRebalance {
		return kerr.RebalanceInProgress
	}
	return nil
}

// Leave handles a LeaveGroup: one member before v3, a batch after.
func (c *Coordinator) Leave(now time.Time, req *kmsg.LeaveGroupRequest) (*kmsg.LeaveGroupResponse, Output) {
	resp, out := c.leaveGroup(now, req)
	c.seal(now, &out)
	return resp, out
}

func (c *Coordinator) leaveGroup(now time.Time, req *kmsg.LeaveGroupRequest) (*kmsg.LeaveGroupResponse, Output) {
	var out Output
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	type leaving struct {
		id       string
		instance *string
	}
	var ls []leaving
	if req.Version < 3 {
		ls = []leaving{{id: req.MemberID}}
	} else {
		for _, m := range req.Members {
			ls = append(ls, leaving{m.MemberID, m.InstanceID})
		}
	}
	g := c.groups[req.Group]
	switch {
	case req.Group == "":
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return resp, out
	case g != nil && g.state == Dead:
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp, out
	}
	for _, l := range ls {
		code := c.leave(now, g, l.id, l.instance, &out)
		if req.Version < 3 {
			resp.ErrorCode = code
			break
		}
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID, rm.InstanceID, rm.ErrorCode = l.id, l.instance, code
		resp.Members = append(resp.Members, rm)
	}
	return resp, out
}

func (c *Coordinator) leave(now time.Time, g *group, id string, instance *string, out *Output) int16 {
	if g == nil {
		return kerr.UnknownMemberID.Code
	}
	if id == "" && instance != nil {
		cur, ok := g.statics[*instance]
		if !ok {
			return kerr.UnknownMemberID.Code
		}
		id = cur
	}
	if g.staticFenced(instance, id) {
		return kerr.FencedInstanceID.Code
	}
	if _, ok := g.pending[id]; ok {
		delete(g.pending, id)
		c.tryCompleteJoin(now, g, out)
		return 0
	}
	m := g.member(id)
	if m == nil || (instance != nil && g.statics[*instance] != id) {
		return kerr.UnknownMemberID.Code
	}
	c.removeMemberAndUpdateGroup(now, g, m, out)
	return 0
}
