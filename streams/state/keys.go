package state

import (
	"encoding/binary"
	"math"
)

// Key layout. Every key starts with a one-byte tag:
//
//	tagMeta  'r' name                              -> registry entry (see registry.go)
//	tagMeta  'c' uvarint(len(name)) name uvarint(partition) -> checkpoint, 8-byte big-endian offset
//	tagData  uvarint(id) uvarint(partition) suffix -> store data
//
// The data prefix (tagData, id, partition) is prefix-free: uvarints are
// self-delimiting, so no store partition's prefix is a prefix of another's and
// [prefix, prefixEnd) holds exactly one store partition.
//
// Suffixes by kind (ts() is a sign-flipped big-endian int64, so byte order is
// numeric order; seg is the time segment, also ts()-encoded):
//
//	KeyValue: key
//	Window:   ts(seg) 0x00 uvarint(len(key)) key ts(start)   primary, holds the value
//	          ts(seg) 0x01 ts(start) key                      time index, empty value
//	Session:  ts(seg) uvarint(len(key)) key ts(end) ts(start) segment of end
//
// The length prefix makes one key's entries contiguous, so Fetch scans exactly
// the entries of its key with no filtering.
const (
	tagMeta byte = 0x00
	tagData byte = 0x01

	metaRegistry   byte = 'r'
	metaCheckpoint byte = 'c'

	winPrimary byte = 0x00
	winIndex   byte = 0x01
)

// appendPrefix appends the data prefix of a store partition.
func appendPrefix(b []byte, id uint64, partition int32) []byte {
	b = append(b, tagData)
	b = binary.AppendUvarint(b, id)
	return binary.AppendUvarint(b, uint64(uint32(partition)))
}

// prefixEnd returns the smallest key greater than every key with prefix p, or
// nil if there is none.
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] != 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// appendTS appends t so that byte order equals numeric order.
func appendTS(b []byte, t int64) []byte {
	return binary.BigEndian.AppendUint64(b, uint64(t)^(1<<63))
}

func readTS(b []byte) int64 {
	return int64(binary.BigEndian.Uint64(b) ^ (1 << 63))
}

// appendLenKey appends uvarint(len(key)) key.
func appendLenKey(b, key []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(key)))
	return append(b, key...)
}

// segmentOf returns the segment holding time t: floor(t / interval).
func segmentOf(t, interval int64) int64 {
	s := t / interval
	if t%interval != 0 && t < 0 {
		s--
	}
	return s
}

// minLive returns streamTime - retention without overflowing.
func minLive(streamTime, retention int64) int64 {
	if streamTime < math.MinInt64+retention {
		return math.MinInt64
	}
	return streamTime - retention
}

// segmentInterval is Kafka's choice for segmented stores: max(retention/2, 60s).
func segmentInterval(retentionMs int64) int64 {
	return max(retentionMs/2, 60_000)
}

// decodeDataKey splits a data key into store id, partition and suffix.
func decodeDataKey(k []byte) (id uint64, partition int32, suffix []byte, ok bool) {
	if len(k) == 0 || k[0] != tagData {
		return 0, 0, nil, false
	}
	k = k[1:]
	id, n := binary.Uvarint(k)
	if n <= 0 {
		return 0, 0, nil, false
	}
	k = k[n:]
	p, n := binary.Uvarint(k)
	if n <= 0 || p > math.MaxUint32 {
		return 0, 0, nil, false
	}
	return id, int32(uint32(p)), k[n:], true
}

// splitLenKey reads uvarint(len) key from b and returns key and the rest.
func splitLenKey(b []byte) (key, rest []byte, ok bool) {
	l, n := binary.Uvarint(b)
	if n <= 0 || l > uint64(len(b)-n) {
		return nil, nil, false
	}
	return b[n : n+int(l)], b[n+int(l):], true
}
