package server

// FindCoordinator: versions 0-6; batched keys from v4. Key type 0 (group):
// the leader of the group's __consumer_offsets partition (the topic is
// created on first use, as Kafka does; COORDINATOR_NOT_AVAILABLE while the
// partition has no leader). Key type 1 (transaction): likewise the leader
// of the transactional id's __transaction_state partition (INVALID_REQUEST
// for an empty id). Other key types: INVALID_REQUEST.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker/internal/metadata"
)

func handleFindCoordinator(c *conn, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.FindCoordinatorRequest)
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	keys := req.CoordinatorKeys
	if req.Version < 4 {
		keys = []string{req.CoordinatorKey}
	}
	for _, key := range keys {
		rc := kmsg.NewFindCoordinatorResponseCoordinator()
		rc.Key, rc.NodeID, rc.Port = key, -1, -1
		var err error
		var coord metadata.Broker
		switch req.CoordinatorType {
		case 0:
			coord, err = c.s.groups.coordinator(context.Background(), key)
			if err != nil {
				c.s.logger.Warn("group coordinator not available", "group", key, "err", err)
				err = kafkaErr(kerr.CoordinatorNotAvailable, "the group coordinator is not available: %v", err)
			}
		case 1:
			if key == "" {
				err = kafkaErr(kerr.InvalidRequest, "an empty transactional id has no coordinator")
				break
			}
			coord, err = c.s.txns.coordinator(context.Background(), key)
			if err != nil {
				c.s.logger.Warn("transaction coordinator not available", "transactional_id", key, "err", err)
				err = kafkaErr(kerr.CoordinatorNotAvailable, "the transaction coordinator is not available: %v", err)
			}
		default:
			err = kafkaErr(kerr.InvalidRequest, "unknown coordinator key type %d", req.CoordinatorType)
		}
		if err != nil {
			rc.ErrorCode = c.s.metrics.code(kmsg.FindCoordinator, err)
			rc.ErrorMessage = errMessage(err)
		} else {
			rc.NodeID, rc.Host, rc.Port = coord.ID, coord.Host, coord.Port
		}
		resp.Coordinators = append(resp.Coordinators, rc)
	}
	if req.Version < 4 {
		rc := resp.Coordinators[0]
		resp.ErrorCode, resp.ErrorMessage = rc.ErrorCode, rc.ErrorMessage
		resp.NodeID, resp.Host, resp.Port = rc.NodeID, rc.Host, rc.Port
		resp.Coordinators = nil
	}
	return resp
}
