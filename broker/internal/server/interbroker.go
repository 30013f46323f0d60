package server

import (
	"strconv"
	"strings"
)

// Requests that only brokers may send (WriteTxnMarkers) are told apart by
// their client id: "runnel-broker-<node id>-<incarnation>", where the
// incarnation is the random id the sending node registered with for this
// run. Nodes learn each other's incarnations from the metadata quorum, and
// no Kafka API shows them to clients, so a client cannot pass for a broker
// (Kafka answers such a client CLUSTER_AUTHORIZATION_FAILED, for want of
// the ClusterAction permission). It names a peer, not a secret channel:
// real authentication waits for SASL/TLS listeners.
const interBrokerPrefix = "runnel-broker-"

// interBrokerClientID is the client id of this node's requests to others.
func (s *Server) interBrokerClientID() string {
	return interBrokerPrefix + strconv.Itoa(int(s.cfg.NodeID)) + "-" + s.life.incarnation
}

// fromBroker reports whether r comes from a registered node of this
// cluster, by its client id.
func (s *Server) fromBroker(r *request) bool {
	if r.hdr.ClientID == nil {
		return false
	}
	rest, ok := strings.CutPrefix(*r.hdr.ClientID, interBrokerPrefix)
	if !ok {
		return false
	}
	idStr, inc, ok := strings.Cut(rest, "-")
	if !ok || inc == "" {
		return false
	}
	id, err := strconv.ParseInt(idStr, 10, 32)
	if err != nil {
		return false
	}
	b, ok := s.meta.Image().Brokers[int32(id)]
	return ok && b.Incarnation == inc
}
