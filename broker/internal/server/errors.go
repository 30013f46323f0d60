package server

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/runnel-io/runnel/broker/internal/batch"
	"github.com/runnel-io/runnel/broker/internal/configs"
	plog "github.com/runnel-io/runnel/broker/internal/log"
	"github.com/runnel-io/runnel/broker/internal/metadata"
	"github.com/runnel-io/runnel/broker/internal/partition"
)

// codeTable is the one place that maps Runnel's errors to Kafka error codes.
// Order matters only where one error wraps another.
var codeTable = []struct {
	err  error
	code *kerr.Error
}{
	// Bytes damaged in transit: retriable. Content built wrong by the
	// producer: not (see the table in package batch).
	{batch.ErrLegacyMagic, kerr.InvalidRecord},
	{batch.ErrShort, kerr.CorruptMessage},
	{batch.ErrLength, kerr.CorruptMessage},
	{batch.ErrCRC, kerr.CorruptMessage},
	{batch.ErrMagic, kerr.CorruptMessage},
	{batch.ErrCodec, kerr.InvalidRecord},
	{batch.ErrControl, kerr.InvalidRecord},
	{batch.ErrRecordCount, kerr.InvalidRecord},
	{batch.ErrOffsetDeltas, kerr.InvalidRecord},
	{batch.ErrCorrupt, kerr.InvalidRecord},
	{batch.ErrBaseOffset, kerr.InvalidRecord},
	{batch.ErrSequence, kerr.InvalidRecord},
	{batch.ErrNoKey, kerr.InvalidRecord},
	{batch.ErrNoProducerID, kerr.InvalidRecord},
	{batch.ErrDecompress, kerr.InvalidRecord},
	{batch.ErrTooLarge, kerr.MessageTooLarge},
	{partition.ErrRecordTooLarge, kerr.MessageTooLarge},
	{partition.ErrInvalidTimestamp, kerr.InvalidTimestamp},
	{partition.ErrOutOfOrderSequence, kerr.OutOfOrderSequenceNumber},
	{partition.ErrInvalidEpoch, kerr.InvalidProducerEpoch},
	{partition.ErrCoordinatorFenced, kerr.TransactionCoordinatorFenced},
	{partition.ErrInvalidTxnState, kerr.InvalidTxnState},
	{partition.ErrNotEnoughReplicasAfterAppend, kerr.NotEnoughReplicasAfterAppend},
	{partition.ErrNotEnoughReplicas, kerr.NotEnoughReplicas},
	{partition.ErrNotLeader, kerr.NotLeaderForPartition},
	{partition.ErrClosed, kerr.NotLeaderForPartition},
	{plog.ErrOffsetOutOfRange, kerr.OffsetOutOfRange},
	{plog.ErrClosed, kerr.NotLeaderForPartition},
	{plog.ErrFailed, kerr.KafkaStorageError},
	{metadata.ErrTopicExists, kerr.TopicAlreadyExists},
	{metadata.ErrUnknownTopic, kerr.UnknownTopicOrPartition},
	{configs.ErrInvalidTopicName, kerr.InvalidTopicException},
	{configs.ErrUnknownConfig, kerr.InvalidConfig},
	{configs.ErrInvalidConfig, kerr.InvalidConfig},
	{errFetchSessionNotFound, kerr.FetchSessionIDNotFound},
	{errFetchSessionEpoch, kerr.InvalidFetchSessionEpoch},
	{errFetchSessionTopicID, kerr.FetchSessionTopicIDError},
	{context.DeadlineExceeded, kerr.RequestTimedOut},
	{context.Canceled, kerr.RequestTimedOut},
}

// kafkaError is an error with a Kafka code and a message of its own: its
// text does not repeat the code's description, which clients print anyway.
type kafkaError struct {
	code *kerr.Error
	msg  string
}

func (e *kafkaError) Error() string { return e.msg }
func (e *kafkaError) Unwrap() error { return e.code }

// kafkaErr returns an error that maps to code, with a message saying what
// is wrong.
func kafkaErr(code *kerr.Error, format string, args ...any) error {
	return &kafkaError{code: code, msg: fmt.Sprintf(format, args...)}
}

// errCode returns the Kafka error code for err: 0 for nil, and
// UNKNOWN_SERVER_ERROR for errors the table does not know.
func errCode(err error) int16 {
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	for _, e := range codeTable {
		if errors.Is(err, e.err) {
			return e.code.Code
		}
	}
	return kerr.UnknownServerError.Code
}

// errMessage returns the message to put in a response's error message field,
// or nil for success.
func errMessage(err error) *string {
	if err == nil {
		return nil
	}
	s := err.Error()
	return &s
}

// groupWriteError is the Kafka error a group coordinator answers when its
// write to __consumer_offsets failed with err (nil for nil): the code from
// codeTable, normalized as Kafka's GroupCoordinatorService does for an
// OffsetCommit (commit) and appendGroupMetadataErrorToResponseError does
// for group records. A client retries COORDINATOR_NOT_AVAILABLE and
// NOT_COORDINATOR by finding the coordinator again; a batch over the
// offsets topic's max.message.bytes is INVALID_COMMIT_OFFSET_SIZE for a
// commit, UNKNOWN_SERVER_ERROR for the rest.
func groupWriteError(err error, commit bool) *kerr.Error {
	if err == nil {
		return nil
	}
	code, _ := kerr.ErrorForCode(errCode(err)).(*kerr.Error)
	switch code {
	case kerr.UnknownTopicOrPartition, kerr.NotEnoughReplicas, kerr.NotEnoughReplicasAfterAppend:
		return kerr.CoordinatorNotAvailable
	case kerr.RequestTimedOut:
		if !commit {
			return kerr.CoordinatorNotAvailable
		}
	case kerr.NotLeaderForPartition, kerr.KafkaStorageError:
		return kerr.NotCoordinator
	case kerr.MessageTooLarge, kerr.RecordListTooLarge, kerr.InvalidFetchSize:
		if commit {
			return kerr.InvalidCommitOffsetSize
		}
		return kerr.UnknownServerError
	case nil:
		return kerr.UnknownServerError
	}
	return code
}
