package batch

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// Layout of the v2 record batch header (KIP-98). Offsets are byte positions.
const (
	offBaseOffset      = 0  // int64
	offLength          = 8  // int32: bytes after this field
	offLeaderEpoch     = 12 // int32
	offMagic           = 16 // int8
	offCRC             = 17 // uint32, CRC32C of bytes [21:]
	offAttributes      = 21 // int16
	offLastOffsetDelta = 23 // int32
	offFirstTimestamp  = 27 // int64
	offMaxTimestamp    = 35 // int64
	offProducerID      = 43 // int64
	offProducerEpoch   = 51 // int16
	offBaseSequence    = 53 // int32
	offNumRecords      = 57 // int32

	// HeaderSize is the size of the fixed batch header, before the records.
	HeaderSize = 61
	// LengthOverhead is the number of bytes before and including the length
	// field; a batch occupies LengthOverhead+Length bytes.
	LengthOverhead = 12
	crcStart       = 21
)

// Attribute bits.
const (
	AttrCompressionMask = 0x07
	AttrTimestampType   = 0x08 // set: LogAppendTime
	AttrTransactional   = 0x10
	AttrControl         = 0x20
	AttrDeleteHorizon   = 0x40
)

// Codec is a batch's compression codec.
type Codec int8

// Compression codecs, as numbered in the attributes.
const (
	CodecNone   Codec = 0
	CodecGzip   Codec = 1
	CodecSnappy Codec = 2
	CodecLZ4    Codec = 3
	CodecZstd   Codec = 4
)

func (c Codec) String() string {
	switch c {
	case CodecNone:
		return "none"
	case CodecGzip:
		return "gzip"
	case CodecSnappy:
		return "snappy"
	case CodecLZ4:
		return "lz4"
	case CodecZstd:
		return "zstd"
	}
	return fmt.Sprintf("codec(%d)", int8(c))
}

// Header is the parsed fixed header of a v2 record batch.
type Header struct {
	BaseOffset           int64
	Length               int32
	PartitionLeaderEpoch int32
	Magic                int8
	CRC                  uint32
	Attributes           int16
	LastOffsetDelta      int32
	FirstTimestamp       int64
	MaxTimestamp         int64
	ProducerID           int64
	ProducerEpoch        int16
	BaseSequence         int32
	NumRecords           int32
}

// Size is the number of bytes the batch occupies, header included.
func (h *Header) Size() int { return LengthOverhead + int(h.Length) }

// LastOffset is the offset of the batch's last record.
func (h *Header) LastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// Codec is the batch's compression codec.
func (h *Header) Codec() Codec { return Codec(h.Attributes & AttrCompressionMask) }

// IsTransactional reports whether the batch belongs to a transaction.
func (h *Header) IsTransactional() bool { return h.Attributes&AttrTransactional != 0 }

// IsControl reports whether the batch is a control batch (transaction marker).
func (h *Header) IsControl() bool { return h.Attributes&AttrControl != 0 }

// IsLogAppendTime reports whether the batch's timestamps are log-append times.
func (h *Header) IsLogAppendTime() bool { return h.Attributes&AttrTimestampType != 0 }

// HasProducerID reports whether the batch was written by an idempotent or
// transactional producer.
func (h *Header) HasProducerID() bool { return h.ProducerID >= 0 }

// LastSequence is the sequence number of the batch's last record, wrapping at
// MaxInt32 as Kafka does.
func (h *Header) LastSequence() int32 {
	if h.BaseSequence < 0 {
		return -1
	}
	s := int64(h.BaseSequence) + int64(h.LastOffsetDelta)
	if s > 0x7fffffff {
		s -= 0x80000000
	}
	return int32(s)
}

// ParseHeader parses the header at the start of b. It checks only that the
// header is present, the magic is 2 and the length is sane; it does not check
// that the whole batch is present or its CRC (see Validate).
func ParseHeader(b []byte) (Header, error) {
	var h Header
	if len(b) < HeaderSize {
		return h, ErrShort
	}
	h.Magic = int8(b[offMagic])
	if err := checkMagic(h.Magic); err != nil {
		return h, err
	}
	be := binary.BigEndian
	h.BaseOffset = int64(be.Uint64(b[offBaseOffset:]))
	h.Length = int32(be.Uint32(b[offLength:]))
	if h.Length < HeaderSize-LengthOverhead {
		return h, fmt.Errorf("%w: %d", ErrLength, h.Length)
	}
	h.PartitionLeaderEpoch = int32(be.Uint32(b[offLeaderEpoch:]))
	h.CRC = be.Uint32(b[offCRC:])
	h.Attributes = int16(be.Uint16(b[offAttributes:]))
	h.LastOffsetDelta = int32(be.Uint32(b[offLastOffsetDelta:]))
	h.FirstTimestamp = int64(be.Uint64(b[offFirstTimestamp:]))
	h.MaxTimestamp = int64(be.Uint64(b[offMaxTimestamp:]))
	h.ProducerID = int64(be.Uint64(b[offProducerID:]))
	h.ProducerEpoch = int16(be.Uint16(b[offProducerEpoch:]))
	h.BaseSequence = int32(be.Uint32(b[offBaseSequence:]))
	h.NumRecords = int32(be.Uint32(b[offNumRecords:]))
	return h, nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ComputeCRC returns the CRC32C of a whole batch b as the header should hold it.
func ComputeCRC(b []byte) uint32 { return crc32.Checksum(b[crcStart:], castagnoli) }

// SetBaseOffset writes the base offset into batch b. It is outside the CRC.
func SetBaseOffset(b []byte, off int64) { binary.BigEndian.PutUint64(b[offBaseOffset:], uint64(off)) }

// SetPartitionLeaderEpoch writes the partition leader epoch into batch b. It is
// outside the CRC.
func SetPartitionLeaderEpoch(b []byte, epoch int32) {
	binary.BigEndian.PutUint32(b[offLeaderEpoch:], uint32(epoch))
}

// SetLogAppendTime marks batch b as LogAppendTime with maxTimestamp ts and
// rewrites its CRC, as Kafka does for topics with
// message.timestamp.type=LogAppendTime.
func SetLogAppendTime(b []byte, ts int64) {
	be := binary.BigEndian
	attrs := be.Uint16(b[offAttributes:]) | AttrTimestampType
	be.PutUint16(b[offAttributes:], attrs)
	be.PutUint64(b[offMaxTimestamp:], uint64(ts))
	be.PutUint32(b[offCRC:], ComputeCRC(b))
}
