package wire

import (
	"encoding/binary"
	"fmt"
	"sync"

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
// still get an answer, and whose response header is always v0.
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
//     answer it with AppendApiVersionsUnsupported. Kafka reads that header
//     as v2 (flexible) from version 3 on, since a future version's header
//     cannot be known; here only the part that v1 and v2 share (key,
//     version, correlation id, client id) is read, so whatever follows, the
//     client gets its answer.
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

	v, ok := lookupVersions(h.APIKey)
	if !ok {
		return h, nil, fmt.Errorf("%w: %d", ErrUnknownAPIKey, h.APIKey)
	}
	if err != nil {
		return h, nil, err
	}
	if h.APIVersion < 0 || h.APIVersion > v.max {
		return h, nil, fmt.Errorf("%w: %s v%d (known up to v%d)", ErrUnsupportedVersion, kmsg.NameForKey(h.APIKey), h.APIVersion, v.max)
	}
	if h.APIVersion >= v.flexibleFrom {
		if rest, err = skipTags(rest); err != nil {
			return h, nil, err
		}
	}
	return h, rest, nil
}

// versions is what the header parser needs to know of a key.
type versions struct {
	max          int16 // the highest version kmsg knows
	flexibleFrom int16 // the first flexible version, or max+1
}

// versionTable holds versions for every key kmsg knows, indexed by key,
// built from kmsg on first use.
var versionTable = sync.OnceValue(func() []versions {
	var table []versions
	for key := int16(0); key < 1024; key++ {
		req := kmsg.RequestForKey(key)
		if req == nil {
			continue
		}
		for len(table) <= int(key) {
			table = append(table, versions{max: -1})
		}
		v := versions{max: req.MaxVersion(), flexibleFrom: req.MaxVersion() + 1}
		for ver := int16(0); ver <= v.max; ver++ {
			req.SetVersion(ver)
			if req.IsFlexible() {
				v.flexibleFrom = ver
				break
			}
		}
		table[key] = v
	}
	return table
})

func lookupVersions(key int16) (versions, bool) {
	t := versionTable()
	if key < 0 || int(key) >= len(t) || t[key].max < 0 {
		return versions{}, false
	}
	return t[key], true
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
