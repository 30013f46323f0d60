package streams

import (
	"fmt"
	"log/slog"
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"
)

// BadRecordHandler decides what happens to an input record whose key or
// value its serde cannot decode: fail the app (the default), skip it with a
// log line, or write it to a dead-letter topic. Skipped and dead-lettered
// records count as processed: their offsets are committed.
type BadRecordHandler interface {
	handle(t *task, r *kgo.Record, err error) error
}

// ErrBadRecord is wrapped by the error that stops an app on a record it
// cannot decode (FailOnBadRecord).
var ErrBadRecord = fmt.Errorf("streams: cannot decode record")

type failOnBad struct{}

func (failOnBad) handle(t *task, r *kgo.Record, err error) error {
	return fmt.Errorf("%w: %s partition %d offset %d: %w (the app stops without committing this record; use SkipBadRecords or DeadLetterTopic to go on)", ErrBadRecord, r.Topic, r.Partition, r.Offset, err)
}

// FailOnBadRecord stops the app at the first record it cannot decode, with
// an error naming it. Nothing at or after it is committed.
func FailOnBadRecord() BadRecordHandler { return failOnBad{} }

type skipBad struct{ log *slog.Logger }

func (s skipBad) handle(t *task, r *kgo.Record, err error) error {
	s.log.Warn("skipping a record that cannot be decoded", "task", t.id.String(), "topic", r.Topic, "partition", r.Partition, "offset", r.Offset, "err", err)
	t.env.dropped("bad-record")
	return nil
}

// SkipBadRecords logs each record it cannot decode and goes on (log may be
// nil: slog's default).
func SkipBadRecords(log *slog.Logger) BadRecordHandler {
	if log == nil {
		log = slog.Default()
	}
	return skipBad{log}
}

type deadLetter struct{ topic string }

// Dead-letter headers, in the spirit of Kafka Connect's __connect.errors.*:
// where the record came from and why it could not be read.
const (
	HeaderErrorTopic     = "__streams.errors.topic"
	HeaderErrorPartition = "__streams.errors.partition"
	HeaderErrorOffset    = "__streams.errors.offset"
	HeaderErrorMessage   = "__streams.errors.exception.message"
	HeaderErrorTask      = "__streams.errors.task.id"
)

func (d deadLetter) handle(t *task, r *kgo.Record, err error) error {
	headers := append(append([]kgo.RecordHeader(nil), r.Headers...),
		kgo.RecordHeader{Key: HeaderErrorTopic, Value: []byte(r.Topic)},
		kgo.RecordHeader{Key: HeaderErrorPartition, Value: strconv.AppendInt(nil, int64(r.Partition), 10)},
		kgo.RecordHeader{Key: HeaderErrorOffset, Value: strconv.AppendInt(nil, r.Offset, 10)},
		kgo.RecordHeader{Key: HeaderErrorMessage, Value: []byte(err.Error())},
		kgo.RecordHeader{Key: HeaderErrorTask, Value: []byte(t.id.String())},
	)
	out := &kgo.Record{Topic: d.topic, Key: r.Key, Value: r.Value, Headers: headers, Timestamp: r.Timestamp}
	n, perr := t.env.partitions(d.topic)
	if perr != nil {
		return fmt.Errorf("streams: dead-letter topic %q: %w", d.topic, perr)
	}
	out.Partition = int32(keyPartitioner.ForTopic(d.topic).Partition(out, int(n)))
	t.env.dropped("dead-letter")
	return t.env.send(out)
}

// DeadLetterTopic writes each record it cannot decode, bytes unchanged, to
// topic with headers saying where it came from and why; the app goes on.
// With exactly-once, the dead letter is part of the transaction.
func DeadLetterTopic(topic string) BadRecordHandler { return deadLetter{topic} }

func (t *task) badRecord(r *kgo.Record, err error) error {
	h := t.env.onBadRecord
	if h == nil {
		h = failOnBad{}
	}
	return h.handle(t, r, err)
}
