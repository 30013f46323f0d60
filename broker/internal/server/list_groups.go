package server

// ListGroups: versions 0-5; states filter from v4 (case-insensitive, as
// Kafka), types filter from v5: every Runnel group is "classic".

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker/internal/group"
)

func handleListGroups(c *conn, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.ListGroupsRequest)
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	shards := c.s.groups.loaded() // none yet: no groups
	states := map[group.State]bool{}
	for _, s := range req.StatesFilter {
		if st, ok := group.ParseState(s); ok {
			states[st] = true
		}
	}
	classic := len(req.TypesFilter) == 0
	for _, t := range req.TypesFilter {
		classic = classic || strings.EqualFold(t, "classic")
	}
	if !classic {
		return resp
	}
	for _, sh := range shards {
		var sums []group.Summary
		p, _ := sh.step(0, func(core *group.Coordinator) group.Output {
			sums = core.List()
			return group.Output{}
		})
		p.finish()
		for _, s := range sums {
			if len(req.StatesFilter) > 0 && !states[s.State] {
				continue
			}
			g := kmsg.NewListGroupsResponseGroup()
			g.Group, g.ProtocolType, g.GroupState, g.GroupType = s.Group, s.ProtocolType, s.State.String(), "classic"
			resp.Groups = append(resp.Groups, g)
		}
	}
	return resp
}
