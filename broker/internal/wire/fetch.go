package wire

import (
	"encoding/binary"
	"net"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Fetch responses, versions 4-16, hand-framed so the record bytes are not
// copied.
//
// Why by hand: kmsg's FetchResponse.AppendTo copies every partition's
// RecordBatches into the output buffer. A consumer's fetch is mostly those
// bytes (a megabyte per partition by default), so encoding it costs a copy
// of everything the broker sends, plus a buffer of that size, on the hot
// path of every consumer. AppendFetchResponse writes every field except the
// record bytes exactly as kmsg does (TestAppendFetchResponseMatchesKmsg
// compares the two byte for byte, version by version) and leaves the large
// record fields out of the buffer: they go out as their own slices in a
// vectored write (writev), straight from the buffer the log read them into.

// SpliceMinBytes is the smallest records field that AppendFetchResponse
// leaves out of the header buffer; smaller ones are copied in, since a
// separate slice in a writev costs more than copying a few KiB.
const SpliceMinBytes = 16 << 10

// CanHandFrameFetch reports whether AppendFetchResponse encodes resp: every
// field it sets is one the hand framing writes. Tagged fields (diverging
// epoch, current leader, snapshot id, node endpoints, unknown tags) are
// left to kmsg.
func CanHandFrameFetch(resp *kmsg.FetchResponse) bool {
	if resp.Version < 4 || resp.Version > 16 || len(resp.Brokers) > 0 || resp.UnknownTags.Len() > 0 {
		return false
	}
	for i := range resp.Topics {
		t := &resp.Topics[i]
		if t.UnknownTags.Len() > 0 {
			return false
		}
		for j := range t.Partitions {
			p := &t.Partitions[j]
			if p.DivergingEpoch.Epoch != -1 || p.DivergingEpoch.EndOffset != -1 || p.DivergingEpoch.UnknownTags.Len() > 0 ||
				p.CurrentLeader.LeaderID != -1 || p.CurrentLeader.LeaderEpoch != -1 || p.CurrentLeader.UnknownTags.Len() > 0 ||
				p.SnapshotID.EndOffset != -1 || p.SnapshotID.Epoch != -1 || p.SnapshotID.UnknownTags.Len() > 0 ||
				p.UnknownTags.Len() > 0 {
				return false
			}
			for k := range p.AbortedTransactions {
				if p.AbortedTransactions[k].UnknownTags.Len() > 0 {
					return false
				}
			}
		}
	}
	return true
}

// AppendFetchResponse frames resp (whose version must be set, and for which
// CanHandFrameFetch is true) as a whole response frame: size, response
// header, body. It appends everything but the records fields of
// SpliceMinBytes or more to dst, and returns dst and the frame as buffers
// to write in order: pieces of dst with the record slices between them.
// The buffers alias dst and resp's records until written.
func AppendFetchResponse(dst []byte, correlationID int32, resp *kmsg.FetchResponse, bufs net.Buffers) ([]byte, net.Buffers) {
	v := resp.Version
	flexible := v >= 12
	// Pieces of dst are kept as offsets while dst may still move; spliced
	// record fields are recorded by where in dst they belong.
	type splice struct {
		at      int
		records []byte
	}
	var splices []splice
	spliced := 0

	base := len(dst)
	dst = append(dst, 0, 0, 0, 0) // frame size, set below
	dst = AppendResponseHeader(dst, correlationID, flexible)
	dst = binary.BigEndian.AppendUint32(dst, uint32(resp.ThrottleMillis))
	if v >= 7 {
		dst = binary.BigEndian.AppendUint16(dst, uint16(resp.ErrorCode))
		dst = binary.BigEndian.AppendUint32(dst, uint32(resp.SessionID))
	}
	dst = appendArrayLen(dst, len(resp.Topics), flexible)
	for i := range resp.Topics {
		t := &resp.Topics[i]
		if v <= 12 {
			dst = appendString(dst, t.Topic, flexible)
		} else {
			dst = append(dst, t.TopicID[:]...)
		}
		dst = appendArrayLen(dst, len(t.Partitions), flexible)
		for j := range t.Partitions {
			p := &t.Partitions[j]
			dst = binary.BigEndian.AppendUint32(dst, uint32(p.Partition))
			dst = binary.BigEndian.AppendUint16(dst, uint16(p.ErrorCode))
			dst = binary.BigEndian.AppendUint64(dst, uint64(p.HighWatermark))
			dst = binary.BigEndian.AppendUint64(dst, uint64(p.LastStableOffset))
			if v >= 5 {
				dst = binary.BigEndian.AppendUint64(dst, uint64(p.LogStartOffset))
			}
			if p.AbortedTransactions == nil {
				dst = appendNullArrayLen(dst, flexible)
			} else {
				dst = appendArrayLen(dst, len(p.AbortedTransactions), flexible)
				for _, a := range p.AbortedTransactions {
					dst = binary.BigEndian.AppendUint64(dst, uint64(a.ProducerID))
					dst = binary.BigEndian.AppendUint64(dst, uint64(a.FirstOffset))
					if flexible {
						dst = append(dst, 0) // no tagged fields
					}
				}
			}
			if v >= 11 {
				dst = binary.BigEndian.AppendUint32(dst, uint32(p.PreferredReadReplica))
			}
			r := p.RecordBatches
			switch {
			case r == nil && flexible:
				dst = append(dst, 0)
			case r == nil:
				dst = binary.BigEndian.AppendUint32(dst, 0xffffffff)
			case flexible:
				dst = binary.AppendUvarint(dst, uint64(len(r))+1)
			default:
				dst = binary.BigEndian.AppendUint32(dst, uint32(len(r)))
			}
			if len(r) >= SpliceMinBytes {
				splices = append(splices, splice{len(dst), r})
				spliced += len(r)
			} else {
				dst = append(dst, r...)
			}
			if flexible {
				dst = append(dst, 0) // partition: no tagged fields
			}
		}
		if flexible {
			dst = append(dst, 0) // topic: no tagged fields
		}
	}
	if flexible {
		dst = append(dst, 0) // response: no tagged fields
	}
	binary.BigEndian.PutUint32(dst[base:], uint32(len(dst)-base-4+spliced))

	from := base
	for _, s := range splices {
		bufs = append(bufs, dst[from:s.at:s.at], s.records)
		from = s.at
	}
	bufs = append(bufs, dst[from:len(dst):len(dst)])
	return dst, bufs
}

func appendArrayLen(dst []byte, n int, flexible bool) []byte {
	if flexible {
		return binary.AppendUvarint(dst, uint64(n)+1)
	}
	return binary.BigEndian.AppendUint32(dst, uint32(n))
}

func appendNullArrayLen(dst []byte, flexible bool) []byte {
	if flexible {
		return append(dst, 0)
	}
	return binary.BigEndian.AppendUint32(dst, 0xffffffff)
}

func appendString(dst []byte, s string, flexible bool) []byte {
	if flexible {
		dst = binary.AppendUvarint(dst, uint64(len(s))+1)
	} else {
		dst = binary.BigEndian.AppendUint16(dst, uint16(len(s)))
	}
	return append(dst, s...)
}
