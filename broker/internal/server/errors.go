package server

import (
	"context"
	"errors"

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
	{batch.ErrShort, kerr.CorruptMessage},
	{batch.ErrLength, kerr.CorruptMessage},
	{batch.ErrCRC, kerr.CorruptMessage},
	{batch.ErrRecordCount, kerr.CorruptMessage},
	{batch.ErrCorrupt, kerr.CorruptMessage},
	{batch.ErrOffsetDeltas, kerr.CorruptMessage},
	{batch.ErrCodec, kerr.CorruptMessage},
	{batch.ErrTooLarge, kerr.CorruptMessage},
	{batch.ErrMagic, kerr.UnsupportedForMessageFormat},
	{batch.ErrControl, kerr.InvalidRecord},
	{batch.ErrNoKey, kerr.InvalidRecord},
	{batch.ErrSequence, kerr.InvalidRecord},
	{batch.ErrDecompress, kerr.CorruptMessage},
	{partition.ErrRecordTooLarge, kerr.MessageTooLarge},
	{partition.ErrInvalidTimestamp, kerr.InvalidTimestamp},
	{partition.ErrOutOfOrderSequence, kerr.OutOfOrderSequenceNumber},
	{partition.ErrInvalidEpoch, kerr.InvalidProducerEpoch},
	{partition.ErrClosed, kerr.NotLeaderForPartition},
	{plog.ErrOffsetOutOfRange, kerr.OffsetOutOfRange},
	{plog.ErrClosed, kerr.NotLeaderForPartition},
	{plog.ErrFailed, kerr.KafkaStorageError},
	{metadata.ErrTopicExists, kerr.TopicAlreadyExists},
	{metadata.ErrUnknownTopic, kerr.UnknownTopicOrPartition},
	{configs.ErrUnknownConfig, kerr.InvalidConfig},
	{configs.ErrInvalidConfig, kerr.InvalidConfig},
	{context.DeadlineExceeded, kerr.RequestTimedOut},
	{context.Canceled, kerr.RequestTimedOut},
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
