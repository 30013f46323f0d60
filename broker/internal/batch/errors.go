package batch

import (
	"errors"
	"fmt"
)

// Errors returned for malformed batches. Every error this package returns for
// bad input wraps exactly one of them (ErrLegacyMagic also wraps ErrMagic);
// test with errors.Is. The text after the sentinel's own says what was found
// and where, and is fit for a produce response's ErrorMessage.
//
// The broker maps them to Kafka error codes in its one error table. The
// mapping follows what Kafka 4.0 answers for the same fault, with one rule
// behind it: bytes that may have been damaged in transit (the CRC or the
// framing around it does not hold) get CORRUPT_MESSAGE, which clients treat
// as retriable; a batch whose CRC holds but whose content is wrong was built
// that way by the producer, so retrying cannot help and it gets the
// non-retriable INVALID_RECORD.
//
//	sentinel         Kafka error code             Kafka 4.0 reference
//	---------------  ---------------------------  ------------------------------------------
//	ErrShort         CORRUPT_MESSAGE (2)          batch cut short (CorruptRecordException)
//	ErrLength        CORRUPT_MESSAGE (2)          length field vs bytes (CorruptRecordException)
//	ErrCRC           CORRUPT_MESSAGE (2)          DefaultRecordBatch.ensureValid
//	ErrMagic         CORRUPT_MESSAGE (2)          magic not 0..2; the magic byte sits outside
//	                                              the CRC (ByteBufferLogInputStream)
//	ErrLegacyMagic   INVALID_RECORD (87)          magic 0/1: ProduceRequest.validateRecords,
//	                                              "only allowed to contain record batches
//	                                              with magic version 2"; test it before
//	                                              ErrMagic, which it also wraps
//	ErrCodec         INVALID_RECORD (87)          codec 5..7 (Kafka fails in
//	                                              CompressionType.forId with
//	                                              UNKNOWN_SERVER_ERROR; this is the honest code)
//	ErrControl       INVALID_RECORD (87)          "Clients are not allowed to write control
//	                                              records" (LogValidator.validateBatch)
//	ErrRecordCount   INVALID_RECORD (87)          "Invalid reported count", "Inconsistent
//	                                              batch offset range", "Incorrect declared
//	                                              batch size"
//	ErrOffsetDeltas  INVALID_RECORD (87)          record offset deltas not 0,1,2...
//	ErrCorrupt       INVALID_RECORD (87)          DefaultRecord.readFrom "Found invalid
//	                                              record structure" and friends
//	ErrBaseOffset    INVALID_RECORD (87)          "The baseOffset of the record batch in the
//	                                              append to ... should be 0" (UnifiedLog)
//	ErrSequence      INVALID_RECORD (87)          "Invalid sequence number" (producer id set,
//	                                              base sequence < 0)
//	ErrNoProducerID  INVALID_RECORD (87)          a transactional batch without a producer
//	                                              id (it cannot be ended by a marker)
//	ErrNoKey         INVALID_RECORD (87)          "Compacted topic cannot accept message
//	                                              without key"; Kafka also names the record
//	                                              in ProduceResponse RecordErrors
//	ErrDecompress    INVALID_RECORD (87)          the compressed payload does not decode
//	                                              (Kafka: UNKNOWN_SERVER_ERROR)
//	ErrTooLarge      MESSAGE_TOO_LARGE (10)       decompressed records over the limit; the
//	                                              Java producer splits the batch and retries
//
// Two produce-level checks Kafka makes belong to the broker, not here:
// exactly one batch per partition in a produce request (INVALID_RECORD), and
// zstd only from produce v7 (UNSUPPORTED_COMPRESSION_TYPE, 76). The batch's
// size against max.message.bytes is MESSAGE_TOO_LARGE (10).
var (
	ErrShort        = errors.New("batch: truncated")
	ErrMagic        = errors.New("batch: unsupported magic (only record batch v2 is accepted)")
	ErrLegacyMagic  = fmt.Errorf("%w: message sets (magic 0 and 1) were removed in Kafka 4.0", ErrMagic)
	ErrCRC          = errors.New("batch: CRC32C mismatch")
	ErrLength       = errors.New("batch: bad length")
	ErrRecordCount  = errors.New("batch: record count does not match records")
	ErrCorrupt      = errors.New("batch: malformed record")
	ErrControl      = errors.New("batch: control bit set by a producer")
	ErrCodec        = errors.New("batch: unknown compression codec")
	ErrTooLarge     = errors.New("batch: decompressed size over limit")
	ErrOffsetDeltas = errors.New("batch: offset deltas out of order")
	ErrBaseOffset   = errors.New("batch: produced batch with a base offset other than 0")
	ErrSequence     = errors.New("batch: producer id without a base sequence")
	ErrNoKey        = errors.New("batch: record without a key for a compacted topic")
	ErrNoProducerID = errors.New("batch: transactional batch without a producer id")
	ErrDecompress   = errors.New("batch: records do not decompress")
)

// checkMagic returns nil for magic 2 and the error for anything else.
func checkMagic(m int8) error {
	switch m {
	case 2:
		return nil
	case 0, 1:
		return ErrLegacyMagic
	}
	return fmt.Errorf("%w: magic %d", ErrMagic, m)
}
