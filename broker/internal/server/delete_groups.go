package server

// DeleteGroups: versions 0-2. Only an empty group may be deleted
// (NON_EMPTY_GROUP otherwise; GROUP_ID_NOT_FOUND for an unknown one); its
// offsets and metadata get tombstones in __consumer_offsets, fsynced
// before the answer.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker/internal/group"
)

func handleDeleteGroups(c *conn, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.DeleteGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	var steps []pending
	for _, id := range req.Groups {
		rg := kmsg.NewDeleteGroupsResponseGroup()
		rg.Group = id
		sh, err := c.s.groups.peek(id)
		if err != nil {
			rg.ErrorCode = c.s.metrics.code(kmsg.DeleteGroups, err)
			steps = append(steps, pending{})
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		now := c.s.now()
		var code *kerr.Error
		p, _ := sh.step(0, func(core *group.Coordinator) group.Output {
			var out group.Output
			code, out = core.DeleteGroup(now, id)
			return out
		})
		if code != nil {
			rg.ErrorCode = code.Code
		}
		steps = append(steps, p)
		resp.Groups = append(resp.Groups, rg)
	}
	r.later = func() kmsg.Response {
		for i, p := range steps {
			if p.sh == nil {
				continue // not coordinated here
			}
			if err := p.finish(); err != nil {
				resp.Groups[i].ErrorCode = c.s.metrics.code(kmsg.DeleteGroups, groupWriteError(err, false))
			}
		}
		return resp
	}
	return nil
}
