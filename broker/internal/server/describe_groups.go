package server

// DescribeGroups: versions 0-5. An unknown group is answered as Dead with
// no error, as Kafka does before v6. Authorized operations (v3+) are not
// computed (no ACLs yet): the field says "not requested" (INT32_MIN).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker/internal/group"
)

func handleDescribeGroups(c *conn, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.DescribeGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	for _, id := range req.Groups {
		if id == "" {
			d := kmsg.NewDescribeGroupsResponseGroup()
			d.ErrorCode = kerr.InvalidGroupID.Code
			resp.Groups = append(resp.Groups, d)
			continue
		}
		sh, err := c.s.groups.peek(id)
		if err != nil {
			d := kmsg.NewDescribeGroupsResponseGroup()
			d.Group, d.ErrorCode = id, c.s.metrics.code(kmsg.DescribeGroups, err)
			resp.Groups = append(resp.Groups, d)
			continue
		}
		var d kmsg.DescribeGroupsResponseGroup
		p, _ := sh.step(0, func(core *group.Coordinator) group.Output {
			d = core.Describe(id)
			return group.Output{}
		})
		p.finish()
		d.AuthorizedOperations = -2147483648
		resp.Groups = append(resp.Groups, d)
	}
	return resp
}
