package controller

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/runnel-io/runnel/broker/internal/metadata"
)

// Request is one call a broker makes to the active controller, carried as
// the opaque payload of quorum.Quorum.CallLeader (JSON, like the metadata
// records). Exactly one field is set.
type Request struct {
	Register       *Registration          `json:"register,omitempty"`
	Heartbeat      *Heartbeat             `json:"heartbeat,omitempty"`
	AlterPartition *AlterPartitionRequest `json:"alter_partition,omitempty"`
	Elect          *ElectRequest          `json:"elect,omitempty"`
	Reassign       *ReassignRequest       `json:"reassign,omitempty"`
}

// Response is the controller's answer to a Request: the reply of the
// request's kind, or a Kafka error code (and message) when it was
// refused. An AlterPartition's reply is the partition's state after it.
type Response struct {
	Register       *RegistrationReply  `json:"register,omitempty"`
	Heartbeat      *HeartbeatReply     `json:"heartbeat,omitempty"`
	AlterPartition *metadata.Partition `json:"alter_partition,omitempty"`
	Elect          *ElectReply         `json:"elect,omitempty"`
	Reassign       *ReassignReply      `json:"reassign,omitempty"`
	ErrorCode      int16               `json:"error_code,omitempty"`
	ErrorMessage   string              `json:"error_message,omitempty"`
}

// maxWireFrame bounds a request or response: a partition's state is a few
// hundred bytes.
const maxWireFrame = 1 << 20

// ErrBadMessage: a request or response that does not decode, or has not
// exactly one field set.
var ErrBadMessage = newError("controller: malformed controller request or response", kerr.InvalidRequest)

// DecodeRequest parses a Request and checks exactly one field is set.
func DecodeRequest(b []byte) (Request, error) {
	var r Request
	if len(b) > maxWireFrame {
		return r, fmt.Errorf("%w: %d bytes", ErrBadMessage, len(b))
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return Request{}, fmt.Errorf("%w: %v", ErrBadMessage, err)
	}
	n := 0
	for _, set := range []bool{r.Register != nil, r.Heartbeat != nil, r.AlterPartition != nil, r.Elect != nil, r.Reassign != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return Request{}, fmt.Errorf("%w: %d kinds set, want 1", ErrBadMessage, n)
	}
	return r, nil
}

// Encode returns the request's JSON.
func (r Request) Encode() []byte {
	b, _ := json.Marshal(r) // plain structs: cannot fail
	return b
}

// ResponseFor builds the response to a request from its reply or error.
// An error that maps to no Kafka code is UNKNOWN_SERVER_ERROR.
func ResponseFor(reply any, err error) Response {
	if err != nil {
		code := kerr.UnknownServerError.Code
		var ke *kerr.Error
		if errors.As(err, &ke) {
			code = ke.Code
		}
		return Response{ErrorCode: code, ErrorMessage: err.Error()}
	}
	var r Response
	switch v := reply.(type) {
	case RegistrationReply:
		r.Register = &v
	case HeartbeatReply:
		r.Heartbeat = &v
	case metadata.Partition:
		r.AlterPartition = &v
	case ElectReply:
		r.Elect = &v
	case ReassignReply:
		r.Reassign = &v
	}
	return r
}

// Encode returns the response's JSON.
func (r Response) Encode() []byte {
	b, _ := json.Marshal(r)
	return b
}

// DecodeResponse parses a Response. Its Err gives the refusal, if any.
func DecodeResponse(b []byte) (Response, error) {
	var r Response
	if len(b) > maxWireFrame {
		return r, fmt.Errorf("%w: %d bytes", ErrBadMessage, len(b))
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return Response{}, fmt.Errorf("%w: %v", ErrBadMessage, err)
	}
	return r, nil
}

// sentinels are the errors a response's code maps back to, so a broker
// tests errors.Is(err, ErrStaleBrokerEpoch) on a remote answer too. Codes
// that several sentinels share (INVALID_REQUEST) come back as the Kafka
// error alone.
var sentinels = []*Error{
	ErrBrokerNotRegistered, ErrStaleBrokerEpoch, ErrDuplicateBrokerRegistration, ErrUnknownPartition,
	ErrFencedLeaderEpoch, ErrInvalidUpdateVersion, ErrIneligibleReplica, ErrElectionNotNeeded,
	ErrPreferredLeaderNotAvailable, ErrEligibleLeadersNotAvailable, ErrInvalidReplicationFactor, ErrInvalidPartitions,
	ErrInvalidReplicaAssignment, ErrNoReassignmentInProgress,
}

// Err returns the refusal the response carries: nil on success; else an
// error with the message that wraps the package's sentinel for the code
// (or the Kafka error, for a code no single sentinel owns).
func (r Response) Err() error {
	if r.ErrorCode == 0 {
		return nil
	}
	for _, s := range sentinels {
		if s.Code() == r.ErrorCode {
			return &remoteError{msg: r.ErrorMessage, err: s}
		}
	}
	return &remoteError{msg: r.ErrorMessage, err: kerr.ErrorForCode(r.ErrorCode)}
}

type remoteError struct {
	msg string
	err error
}

func (e *remoteError) Error() string { return e.msg }
func (e *remoteError) Unwrap() error { return e.err }
