package wire

import (
	"encoding/binary"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// RequestHeader is a parsed Kafka request header (v1, or v2 for flexible
// versions; v0, without a client id, for ControlledShutdown v0).
type RequestHeader struct {
	APIKey        int16
	APIVersion    int16
	CorrelationID int32
	ClientID      *string // nil when the client sent a null client id
}

// apiVersionsKey is the key of ApiVersions, whose unknown future versions
// still get an answer.
const apiVersionsKey = 18

// ParseRequestHeader parses the request header at the start of frame (a
// frame as ReadFrame returns it) and returns it with the request body that
// follows it. The header's tagged fields, if any, are skipped.
//
// Whether the header is v1 or v2 (flexible) depends on the key and version,
// which it takes from kmsg. Errors:
//
//   - ErrMalformedHeader: too short, or a bad client id or tagged field.
//   - ErrUnknownAPIKey: kmsg does not know the key. The header is returned
//     (key, version, correlation id and, when it parses, client id) for the
//     log; there is no body.
//   - ErrUnsupportedVersion: kmsg does not know the version (below 0 or above
//     its max for the key). The header is returned; there is no body. For
//     ApiVersions this is the normal case of a client newer than the broker:
//     answer it with AppendApiVersionsUnsupported. Its header is read as v2
//     from version 3 on, as Kafka does, since a future version's flexibility
//     cannot be known; a header that is not otherwise v2 still gets the
//     answer, as only the correlation id is needed for it.
//
// The client id is copied, so the header does not alias frame; the body
// does.
func ParseRequestHeader(frame []byte) (RequestHeader, []byte, error) {
	var h RequestHeader
	if len(frame) < 8 {
		return h, nil, fmt.Errorf("%w: %d bytes", ErrMalformedHeader, len(frame))
	}
	be := binary.BigEndian
	h.APIKey = int16(be.Uint16(frame))
	h.APIVersion = int16(be.Uint16(frame[2:]))
	h.CorrelationID = int32(be.Uint32(frame[4:]))
	rest := frame[8:]

	// The client id is in the same place in header v1 and v2, so it is
	// read before anything else is known about the request.
	var err error
	if h.APIKey != 7 || h.APIVersion != 0 { // ControlledShutdown v0: header v0
		h.ClientID, rest, err = readClientID(rest)
	}

	req := kmsg.RequestForKey(h.APIKey)
	if req == nil {
		return h, nil, fmt.Errorf("%w: %d", ErrUnknownAPIKey, h.APIKey)
	}
	if err != nil {
		return h, nil, err
	}
	known := h.APIVersion >= 0 && h.APIVersion <= req.MaxVersion()
	if h.APIKey == apiVersionsKey && !known {
		return h, nil, fmt.Errorf("%w: %s v%d (answer in ApiVersions v0)", ErrUnsupportedVersion, kmsg.NameForKey(h.APIKey), h.APIVersion)
	}
	if !known {
		return h, nil, fmt.Errorf("%w: %s v%d (known up to v%d)", ErrUnsupportedVersion, kmsg.NameForKey(h.APIKey), h.APIVersion, req.MaxVersion())
	}
	req.SetVersion(h.APIVersion)
	if req.IsFlexible() {
		if rest, err = skipTags(rest); err != nil {
			return h, nil, err
		}
	}
	return h, rest, nil
}

// readClientID reads the header's nullable (non-compact) string.
func readClientID(b []byte) (*string, []byte, error) {
	if len(b) < 2 {
		return nil, nil, fmt.Errorf("%w: no client id", ErrMalformedHeader)
	}
	n := int16(binary.BigEndian.Uint16(b))
	b = b[2:]
	switch {
	case n == -1:
		return nil, b, nil
	case n < -1 || int(n) > len(b):
		return nil, nil, fmt.Errorf("%w: client id length %d", ErrMalformedHeader, n)
	}
	s := string(b[:n])
	return &s, b[n:], nil
}

// skipTags skips a tagged-field section: a count, then per field a tag, a
// size and that many bytes, all unsigned varints.
func skipTags(b []byte) ([]byte, error) {
	count, b, ok := uvarint(b)
	if !ok {
		return nil, fmt.Errorf("%w: bad tagged field count", ErrMalformedHeader)
	}
	for range count {
		var size uint32
		if _, b, ok = uvarint(b); !ok {
			return nil, fmt.Errorf("%w: bad tag", ErrMalformedHeader)
		}
		if size, b, ok = uvarint(b); !ok || uint64(size) > uint64(len(b)) {
			return nil, fmt.Errorf("%w: bad tagged field size", ErrMalformedHeader)
		}
		b = b[size:]
	}
	return b, nil
}

// uvarint reads an unsigned varint of at most 5 bytes (32 bits), as Kafka
// writes counts and sizes in flexible versions.
func uvarint(b []byte) (uint32, []byte, bool) {
	var v uint32
	for i := 0; i < 5 && i < len(b); i++ {
		c := b[i]
		if i == 4 && c > 0x0f {
			return 0, nil, false
		}
		v |= uint32(c&0x7f) << (7 * i)
		if c < 0x80 {
			return v, b[i+1:], true
		}
	}
	return 0, nil, false
}

// unsafeReader is what every kmsg request implements besides Request: a
// decode whose strings alias the input.
type unsafeReader interface {
	UnsafeReadFrom([]byte) error
}

// DecodeRequest decodes body, as ParseRequestHeader returned it, into the
// kmsg request for the header's key and version. The body must be exactly
// one request: a short body or bytes after the request give
// ErrMalformedRequest.
//
// Byte-slice fields of the request (a Produce request's records, SASL
// tokens, ...) alias body, as kmsg decodes them; strings are copied. The
// broker must not reuse the frame buffer until it is done with the request,
// and must copy records it keeps past the request.
//
// kmsg does not report how many bytes it read, so trailing bytes are found
// by first decoding body without its last byte: that decode fails exactly
// when the whole request needs every byte. (Decoding is a function of the
// bytes read so far, and kmsg's array-length checks only get easier with more
// bytes left.) It runs into the same request, with strings aliasing body, and
// the real decode then overwrites every field it set and reuses its arrays,
// so the probe costs time but little memory.
//
// kmsg bounds every array it allocates by the bytes left in the body, so
// memory follows len(body), by up to ~30x for arrays of tiny elements (see
// TestDecodeAllocationBounded). Bound the frame size, and decode only the
// keys and versions the broker serves.
func DecodeRequest(h RequestHeader, body []byte) (kmsg.Request, error) {
	req := kmsg.RequestForKey(h.APIKey)
	if req == nil {
		return nil, fmt.Errorf("%w: %d", ErrUnknownAPIKey, h.APIKey)
	}
	if h.APIVersion < 0 || h.APIVersion > req.MaxVersion() {
		return nil, fmt.Errorf("%w: %s v%d", ErrUnsupportedVersion, kmsg.NameForKey(h.APIKey), h.APIVersion)
	}
	req.SetVersion(h.APIVersion)
	if len(body) > 0 {
		var err error
		if u, ok := req.(unsafeReader); ok {
			err = u.UnsafeReadFrom(body[:len(body)-1])
		} else {
			err = req.ReadFrom(body[:len(body)-1])
		}
		if err == nil {
			return nil, fmt.Errorf("%w: %s v%d: bytes after the request", ErrMalformedRequest, kmsg.NameForKey(h.APIKey), h.APIVersion)
		}
	}
	if err := req.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("%w: %s v%d: %v", ErrMalformedRequest, kmsg.NameForKey(h.APIKey), h.APIVersion, err)
	}
	return req, nil
}
