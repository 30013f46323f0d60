package server

// DescribeCluster: versions 0-1. Endpoint type 1 (brokers) only: this node
// is a broker; asking it for controllers (2) gets MISMATCHED_ENDPOINT_TYPE
// and any other type UNSUPPORTED_ENDPOINT_TYPE, as Kafka answers on a broker
// listener.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleDescribeCluster(c *conn, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.DescribeClusterRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.EndpointType = 1
	if req.Version >= 1 {
		switch req.EndpointType {
		case 1:
		case 2:
			resp.ErrorCode = kerr.MismatchedEndpointType.Code
			return resp
		default:
			resp.ErrorCode = kerr.UnsupportedEndpointType.Code
			return resp
		}
	}
	im := c.s.meta.Image()
	resp.ClusterID = im.ClusterID
	resp.ControllerID = c.s.controllerID()
	resp.ClusterAuthorizedOperations = authorizedOperationsOmitted
	for _, id := range im.BrokerIDs() {
		b := im.Brokers[id]
		if b.Fenced {
			continue
		}
		rb := kmsg.NewDescribeClusterResponseBroker()
		rb.NodeID, rb.Host, rb.Port = b.ID, b.Host, b.Port
		if b.Rack != "" {
			rack := b.Rack
			rb.Rack = &rack
		}
		resp.Brokers = append(resp.Brokers, rb)
	}
	return resp
}
