package group

import (
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Client names the connection a request came on, for member records and
// DescribeGroups.
type Client struct {
	ID, Host string
}

func joinError(req *kmsg.JoinGroupRequest, code *kerr.Error) *kmsg.JoinGroupResponse {
	resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
	resp.ErrorCode = code.Code
	resp.Generation = -1
	resp.MemberID = req.MemberID
	return resp
}

// Join handles a JoinGroup. The answer goes to w, in this Output or a
// later one.
func (c *Coordinator) Join(now time.Time, w Waiter, cl Client, req *kmsg.JoinGroupRequest) Output {
	out := c.join(now, w, cl, req)
	c.seal(now, &out)
	return out
}

func (c *Coordinator) join(now time.Time, w Waiter, cl Client, req *kmsg.JoinGroupRequest) Output {
	var out Output
	fail := func(code *kerr.Error) Output {
		out.reply(w, joinError(req, code))
		return out
	}
	session := time.Duration(req.SessionTimeoutMillis) * time.Millisecond
	rebalance := time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
	if req.Version == 0 {
		rebalance = session
	}
	switch {
	case req.Group == "":
		return fail(kerr.InvalidGroupID)
	case session < c.cfg.MinSessionTimeout || session > c.cfg.MaxSessionTimeout:
		return fail(kerr.InvalidSessionTimeout)
	case req.InstanceID != nil && *req.InstanceID == "":
		return fail(kerr.InvalidRequest)
	}
	g := c.groups[req.Group]
	if g == nil {
		if req.MemberID != "" {
			return fail(kerr.UnknownMemberID)
		}
		if req.ProtocolType == "" || len(req.Protocols) == 0 {
			return fail(kerr.InconsistentGroupProtocol)
		}
		g = newGroup(req.Group, now)
		c.groups[req.Group] = g
	}
	switch {
	case g.state == Dead:
		return fail(kerr.CoordinatorNotAvailable)
	case !g.supports(req.ProtocolType, req.Protocols):
		return fail(kerr.InconsistentGroupProtocol)
	}
	m := &member{
		instanceID: deref(req.InstanceID), clientID: cl.ID, clientHost: cl.Host,
		sessionTimeout: session, rebalanceTimeout: rebalance, protocols: req.Protocols,
	}
	if req.MemberID == "" {
		c.joinUnknown(now, g, w, m, req, &out)
	} else {
		c.joinKnown(now, g, w, m, req, &out)
	}
	// Any join may have been the last one the join phase waited for (a
	// new member added, a KIP-394 id taken or dropped): check, as Kafka's
	// handleJoinGroup does after every join while PreparingRebalance.
	c.tryCompleteJoin(now, g, &out)
	return out
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// joinUnknown handles a JoinGroup without a member id.
func (c *Coordinator) joinUnknown(now time.Time, g *group, w Waiter, m *member, req *kmsg.JoinGroupRequest, out *Output) {
	if old, ok := g.statics[m.instanceID]; ok && m.instanceID != "" {
		m.id = c.newMemberID(m.instanceID)
		c.replaceStatic(now, g, old, w, m, req, out)
		return
	}
	if g.full(c.cfg.MaxSize) {
		out.reply(w, joinError(req, kerr.GroupMaxSizeReached))
		return
	}
	if m.instanceID != "" {
		m.id = c.newMemberID(m.instanceID)
		c.addMemberAndRebalance(now, g, w, m, req.ProtocolType, out)
		return
	}
	m.id = c.newMemberID(m.clientID)
	if req.Version >= 4 {
		// KIP-394: hand out the id; the member joins with it.
		g.pending[m.id] = now.Add(m.sessionTimeout)
		resp := joinError(req, kerr.MemberIDRequired)
		resp.MemberID = m.id
		out.reply(w, resp)
		return
	}
	c.addMemberAndRebalance(now, g, w, m, req.ProtocolType, out)
}

// joinKnown handles a JoinGroup that names its member id.
func (c *Coordinator) joinKnown(now time.Time, g *group, w Waiter, m *member, req *kmsg.JoinGroupRequest, out *Output) {
	id := req.MemberID
	m.id = id
	if _, ok := g.pending[id]; ok {
		delete(g.pending, id)
		if m.instanceID != "" {
			// A KIP-394 id belongs to a dynamic member.
			out.reply(w, joinError(req, kerr.UnknownMemberID))
			return
		}
		c.addMemberAndRebalance(now, g, w, m, req.ProtocolType, out)
		return
	}
	_, known := g.statics[m.instanceID]
	switch cur := g.member(id); {
	case g.staticFenced(req.InstanceID, id):
		out.reply(w, joinError(req, kerr.FencedInstanceID))
	case cur == nil || (m.instanceID != "" && !known):
		out.reply(w, joinError(req, kerr.UnknownMemberID))
	case g.state == PreparingRebalance && len(cur.joinWaiters) == 0 && c.cfg.MaxSize > 0 && g.numAwaiting() >= c.cfg.MaxSize:
		// As Kafka's acceptJoiningMember: a group loaded over
		// group.max.size (lowered since) keeps only as many members as
		// rejoin first.
		g.remove(id)
		resp := joinError(req, kerr.GroupMaxSizeReached)
		resp.MemberID = ""
		out.reply(w, resp)
		c.tryCompleteJoin(now, g, out)
	default:
		cur.deadline = now.Add(cur.sessionTimeout)
		switch g.state {
		case PreparingRebalance:
			c.updateMemberAndRebalance(now, g, cur, w, m, out)
		case CompletingRebalance:
			if cur.matches(m.protocols) {
				// A resend: the answer of the generation in progress.
				out.reply(w, c.joinResponse(g, cur))
			} else {
				c.updateMemberAndRebalance(now, g, cur, w, m, out)
			}
		case Stable:
			if cur.id == g.leader || !cur.matches(m.protocols) {
				c.updateMemberAndRebalance(now, g, cur, w, m, out)
			} else {
				resp := c.joinResponse(g, cur)
				resp.Members = nil
				out.reply(w, resp)
			}
		default:
			out.reply(w, joinError(req, kerr.UnknownMemberID))
		}
	}
}

// joinResponse is the successful JoinGroup answer of the current generation
// for m; the leader gets the members and their metadata.
func (c *Coordinator) joinResponse(g *group, m *member) *kmsg.JoinGroupResponse {
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.Generation = g.generation
	pt, p := g.protocolType, g.protocol
	resp.ProtocolType, resp.Protocol = &pt, &p
	resp.LeaderID = g.leader
	resp.MemberID = m.id
	if m.id == g.leader {
		for _, o := range g.members {
			rm := kmsg.NewJoinGroupResponseMember()
			rm.MemberID = o.id
			rm.InstanceID = o.instance()
			rm.ProtocolMetadata = o.metadataFor(g.protocol)
			resp.Members = append(resp.Members, rm)
		}
	}
	return resp
}

func (c *Coordinator) addMemberAndRebalance(now time.Time, g *group, w Waiter, m *member, protocolType string, out *Output) {
	if len(g.members) == 0 {
		g.protocolType = protocolType
	}
	m.joinWaiters = []Waiter{w}
	m.deadline = now.Add(m.sessionTimeout)
	g.members = append(g.members, m)
	if g.leader == "" {
		g.leader = m.id
	}
	if m.instanceID != "" {
		g.statics[m.instanceID] = m.id
	}
	if g.state == PreparingRebalance && g.generation == 0 {
		g.newMemberAdded = true
	}
	c.maybePrepareRebalance(now, g, out)
}

// updateMemberAndRebalance takes a known member's new protocols and
// timeouts and (re)starts the join phase.
func (c *Coordinator) updateMemberAndRebalance(now time.Time, g *group, cur *member, w Waiter, m *member, out *Output) {
	cur.protocols = m.protocols
	cur.sessionTimeout, cur.rebalanceTimeout = m.sessionTimeout, m.rebalanceTimeout
	cur.clientID, cur.clientHost = m.clientID, m.clientHost
	cur.joinWaiters = append(cur.joinWaiters, w)
	c.maybePrepareRebalance(now, g, out)
	if g.state == PreparingRebalance {
		c.tryCompleteJoin(now, g, out)
	}
}

// replaceStatic gives a static member's place to a new member id (KIP-345):
// the old id is fenced from now on.
func (c *Coordinator) replaceStatic(now time.Time, g *group, oldID string, w Waiter, m *member, req *kmsg.JoinGroupRequest, out *Output) {
	old := g.member(oldID)
	for _, ow := range old.joinWaiters {
		out.reply(ow, joinError(req, kerr.FencedInstanceID))
	}
	for _, ow := range old.syncWaiters {
		out.reply(ow, syncError(kerr.FencedInstanceID))
	}
	old.joinWaiters, old.syncWaiters = nil, nil
	wasLeader := g.leader == oldID
	was := *old // for a revert if the group record fails (Stable below)
	old.id = m.id
	old.clientID, old.clientHost = m.clientID, m.clientHost
	old.sessionTimeout, old.rebalanceTimeout = m.sessionTimeout, m.rebalanceTimeout
	old.protocols = m.protocols
	old.deadline = now.Add(m.sessionTimeout)
	g.statics[m.instanceID] = m.id
	if wasLeader {
		g.leader = m.id
	}
	switch g.state {
	case Stable:
		// As Kafka (updateStaticMemberThenRebalanceOrCompleteJoin): no
		// rebalance when the next generation's protocol would be the
		// same; the member keeps its assignment and its new metadata is
		// stored. A leader that can be told to skip the assignment
		// (JoinGroup v9+, KIP-814) gets the members; before v9 it is
		// answered with the old member id as leader and no members, so
		// that it does not take itself for the leader and only syncs.
		if g.selectProtocol() == g.protocol {
			// The answer waits for the group record (Written); if it
			// fails the old member id comes back, as in Kafka.
			g.stateTime = now
			out.Records = append(out.Records, groupRecord(g, nil))
			resp := c.joinResponse(g, old)
			skip := wasLeader && req.Version >= 9
			resp.SkipAssignment = skip
			if !skip {
				resp.Members = nil
			}
			if wasLeader && !skip {
				resp.LeaderID = oldID
			}
			c.stage().static = &pendingStatic{g: g, m: old, was: was, wasLeader: wasLeader, w: w, resp: resp}
			return
		}
		old.joinWaiters = []Waiter{w}
		c.prepareRebalance(now, g, out)
	case CompletingRebalance:
		// The old id may already be in the leader's assignment: rebalance.
		old.joinWaiters = []Waiter{w}
		c.prepareRebalance(now, g, out)
	default: // PreparingRebalance
		old.joinWaiters = []Waiter{w}
		c.tryCompleteJoin(now, g, out)
	}
}

func (c *Coordinator) maybePrepareRebalance(now time.Time, g *group, out *Output) {
	switch g.state {
	case Stable, CompletingRebalance, Empty:
		c.prepareRebalance(now, g, out)
	}
}

// prepareRebalance starts a join phase. From Empty it waits
// group.initial.rebalance.delay.ms (KIP-134), extended while members keep
// joining up to the rebalance timeout; otherwise it ends when every member
// has rejoined or the longest rebalance timeout passes.
func (c *Coordinator) prepareRebalance(now time.Time, g *group, out *Output) {
	if g.state == CompletingRebalance {
		for _, m := range g.members {
			for _, sw := range m.syncWaiters {
				out.reply(sw, syncError(kerr.RebalanceInProgress))
			}
			m.syncWaiters = nil
		}
		g.syncDeadline = time.Time{}
	}
	timeout := g.maxRebalanceTimeout()
	if g.state == Empty {
		g.initialDelay = true
		g.joinDeadline = now.Add(c.cfg.InitialRebalanceDelay)
		g.initialRemaining = max(timeout-c.cfg.InitialRebalanceDelay, 0)
	} else {
		g.initialDelay = false
		g.joinDeadline = now.Add(timeout)
	}
	g.setState(PreparingRebalance, now)
	if g.initialDelay && c.cfg.InitialRebalanceDelay <= 0 {
		// A zero delay fires at once, as Kafka's timer does.
		c.expireJoin(now, g, out)
		return
	}
	c.tryCompleteJoin(now, g, out)
}

// tryCompleteJoin ends the join phase early when every member has rejoined
// (not during the initial delay, which only ends by time).
func (c *Coordinator) tryCompleteJoin(now time.Time, g *group, out *Output) {
	if g.state == PreparingRebalance && !g.initialDelay && g.allJoined() {
		c.completeJoin(now, g, out)
	}
}

// expireJoin fires the join phase's timer.
func (c *Coordinator) expireJoin(now time.Time, g *group, out *Output) {
	if g.initialDelay && g.newMemberAdded && g.initialRemaining > 0 {
		g.newMemberAdded = false
		d := min(c.cfg.InitialRebalanceDelay, g.initialRemaining)
		g.initialRemaining = max(g.initialRemaining-c.cfg.InitialRebalanceDelay, 0)
		g.joinDeadline = now.Add(d)
		return
	}
	g.initialDelay = false
	c.completeJoin(now, g, out)
}

// completeJoin removes the dynamic members that did not rejoin (static
// ones stay until their session expires, as Kafka's
// notYetRejoinedDynamicMembers), makes a member that rejoined the leader
// if the leader did not (maybeElectNewJoinedLeader), starts the next
// generation and answers every waiting JoinGroup. If members remain but
// none rejoined, the join phase is extended by the rebalance timeout, as
// Kafka's, until their sessions expire.
func (c *Coordinator) completeJoin(now time.Time, g *group, out *Output) {
	for _, m := range slices.Clone(g.members) {
		if len(m.joinWaiters) == 0 && m.instanceID == "" {
			g.remove(m.id)
		}
	}
	if len(g.members) > 0 && !g.electJoinedLeader() {
		g.joinDeadline = now.Add(g.maxRebalanceTimeout())
		g.initialDelay, g.newMemberAdded = false, false
		return
	}
	g.joinDeadline = time.Time{}
	g.initialDelay, g.newMemberAdded = false, false
	g.generation++
	c.rebalances++
	if len(g.members) == 0 {
		g.protocol = ""
		g.setState(Empty, now)
		out.Records = append(out.Records, groupRecord(g, nil))
		return
	}
	g.protocol = g.selectProtocol()
	g.setState(CompletingRebalance, now)
	for _, m := range g.members {
		m.assignment = nil
		resp := c.joinResponse(g, m)
		for _, w := range m.joinWaiters {
			out.reply(w, resp)
		}
		m.joinWaiters = nil
		m.deadline = now.Add(m.sessionTimeout)
	}
	g.syncDeadline = now.Add(g.maxRebalanceTimeout())
}

// electJoinedLeader makes a member awaiting join the leader if the leader
// is not, and reports whether the leader is now awaiting join.
func (g *group) electJoinedLeader() bool {
	if l := g.member(g.leader); l != nil && len(l.joinWaiters) > 0 {
		return true
	}
	for _, m := range g.members {
		if len(m.joinWaiters) > 0 {
			g.leader = m.id
			return true
		}
	}
	return false
}

// remove drops member id, passing leadership on if it led.
func (g *group) remove(id string) {
	for i, m := range g.members {
		if m.id == id {
			g.members = append(g.members[:i], g.members[i+1:]...)
			if m.instanceID != "" && g.statics[m.instanceID] == id {
				delete(g.statics, m.instanceID)
			}
			break
		}
	}
	if g.leader == id {
		g.leader = ""
		if len(g.members) > 0 {
			g.leader = g.members[0].id
		}
	}
}

// removeMemberAndUpdateGroup removes a member that left or expired and
// moves the group on: a rebalance, or the end of the join phase.
func (c *Coordinator) removeMemberAndUpdateGroup(now time.Time, g *group, m *member, out *Output) {
	for _, w := range m.joinWaiters {
		r := kmsg.NewPtrJoinGroupResponse()
		r.ErrorCode, r.Generation = kerr.UnknownMemberID.Code, -1
		out.reply(w, r)
	}
	for _, w := range m.syncWaiters {
		out.reply(w, syncError(kerr.UnknownMemberID))
	}
	m.joinWaiters, m.syncWaiters = nil, nil
	g.remove(m.id)
	switch g.state {
	case Stable, CompletingRebalance:
		c.prepareRebalance(now, g, out)
	case PreparingRebalance:
		c.tryCompleteJoin(now, g, out)
	}
}
