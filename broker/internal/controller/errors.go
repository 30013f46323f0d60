package controller

import "github.com/twmb/franz-go/pkg/kerr"

// Errors the controller answers with. Each wraps the Kafka error a broker
// or client gets for it, so errors.As(err, **kerr.Error) gives the code
// (the server's errCode does) and errors.Is tests name the case.
var (
	ErrBrokerNotRegistered         = newError("controller: broker not registered", kerr.BrokerIDNotRegistered)
	ErrStaleBrokerEpoch            = newError("controller: stale broker epoch", kerr.StaleBrokerEpoch)
	ErrDuplicateBrokerRegistration = newError("controller: another incarnation of the broker is alive", kerr.DuplicateBrokerRegistration)
	ErrInvalidRegistration         = newError("controller: invalid broker registration", kerr.InvalidRequest)
	ErrUnknownPartition            = newError("controller: unknown topic or partition", kerr.UnknownTopicOrPartition)
	ErrFencedLeaderEpoch           = newError("controller: fenced leader epoch", kerr.FencedLeaderEpoch)
	ErrInvalidUpdateVersion        = newError("controller: partition epoch is not the current one", kerr.InvalidUpdateVersion)
	ErrNotLeader                   = newError("controller: the requester is not the partition's leader", kerr.InvalidRequest)
	ErrInvalidISR                  = newError("controller: invalid ISR", kerr.InvalidRequest)
	ErrIneligibleReplica           = newError("controller: replica may not join the ISR", kerr.IneligibleReplica)
	ErrElectionNotNeeded           = newError("controller: election not needed", kerr.ElectionNotNeeded)
	ErrPreferredLeaderNotAvailable = newError("controller: preferred leader not available", kerr.PreferredLeaderNotAvailable)
	ErrEligibleLeadersNotAvailable = newError("controller: no eligible leader", kerr.EligibleLeadersNotAvailable)
	ErrInvalidElectionType         = newError("controller: unknown election type", kerr.InvalidRequest)
	ErrInvalidReplicationFactor    = newError("controller: replication factor not possible", kerr.InvalidReplicationFactor)
	ErrInvalidPartitions           = newError("controller: invalid partition count", kerr.InvalidPartitions)
	ErrInvalidReplicaAssignment    = newError("controller: invalid replica assignment", kerr.InvalidReplicaAssignment)
	ErrNoReassignmentInProgress    = newError("controller: no reassignment in progress", kerr.NoReassignmentInProgress)
)

// Error is a controller sentinel: its text, and the Kafka error it maps
// to (Unwrap).
type Error struct {
	msg  string
	code *kerr.Error
}

func newError(msg string, code *kerr.Error) *Error { return &Error{msg: msg, code: code} }

func (e *Error) Error() string { return e.msg }

// Unwrap returns the Kafka error.
func (e *Error) Unwrap() error { return e.code }

// Code is the Kafka error code.
func (e *Error) Code() int16 { return e.code.Code }
