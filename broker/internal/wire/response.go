package wire

import (
	"encoding/binary"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// AppendResponse appends resp as a whole frame to dst: the size, the
// response header and the body. resp is set to req's version first.
//
// The header is v1 (with an empty tagged-field section) for flexible
// versions and v0 otherwise, except that ApiVersions responses always have
// header v0, as a client reads them before it knows what the broker speaks.
func AppendResponse(dst []byte, correlationID int32, req kmsg.Request, resp kmsg.Response) []byte {
	resp.SetVersion(req.GetVersion())
	dst, start := BeginFrame(dst)
	dst = AppendResponseHeader(dst, correlationID, responseHeaderFlexible(resp))
	dst = resp.AppendTo(dst)
	EndFrame(dst, start)
	return dst
}

// responseHeaderFlexible reports whether resp takes response header v1.
func responseHeaderFlexible(resp kmsg.Response) bool {
	return resp.IsFlexible() && resp.Key() != apiVersionsKey
}

// AppendResponseHeader appends a response header to dst: the correlation id,
// then for flexible versions (header v1) an empty tagged-field section. For
// a hand-framed response, pass req.IsFlexible() (false for ApiVersions) and
// bracket header and body with BeginFrame and EndFrame.
func AppendResponseHeader(dst []byte, correlationID int32, flexible bool) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(correlationID))
	if flexible {
		dst = append(dst, 0)
	}
	return dst
}

// errUnsupportedVersion is Kafka's UNSUPPORTED_VERSION error code.
const errUnsupportedVersion = 35

// AppendApiVersionsUnsupported appends the answer to an ApiVersions request
// whose version the broker does not know (ParseRequestHeader returned
// ErrUnsupportedVersion for key 18): a frame with header v0 and an
// ApiVersions v0 response carrying UNSUPPORTED_VERSION (35) and keys. The
// client reads the ApiVersions entry of keys, retries with a version it
// finds there, and keeps the connection.
//
// Kafka sends only its ApiVersions entry here; sending every supported key,
// as the first ApiVersions answer does, works as well.
func AppendApiVersionsUnsupported(dst []byte, correlationID int32, keys []kmsg.ApiVersionsResponseApiKey) []byte {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(0)
	resp.ErrorCode = errUnsupportedVersion
	resp.ApiKeys = keys
	dst, start := BeginFrame(dst)
	dst = AppendResponseHeader(dst, correlationID, false)
	dst = resp.AppendTo(dst)
	EndFrame(dst, start)
	return dst
}
