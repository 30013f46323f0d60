package wire

import "errors"

// Errors returned for bad frames and requests. Every error this package
// returns for bad input wraps one of them; test with errors.Is.
//
// None of them has a Kafka error code: a request that cannot be framed,
// parsed or decoded cannot be answered in its own format, so Kafka closes
// the connection, and so does the broker. The one exception is
// ErrUnsupportedVersion for ApiVersions:
//
//	error                  broker action
//	---------------------  ---------------------------------------------------
//	ErrNegativeSize        close the connection
//	ErrFrameTooLarge       close the connection (log the size: a TLS client on
//	                       a plaintext port or an HTTP request shows up here)
//	io.EOF                 the peer closed between requests: close quietly
//	io.ErrUnexpectedEOF    the peer closed mid-frame: close
//	ErrMalformedHeader     close the connection
//	ErrUnknownAPIKey       close the connection (header returned for the log)
//	ErrUnsupportedVersion  ApiVersions (key 18): answer with
//	                       AppendApiVersionsUnsupported (error 35,
//	                       UNSUPPORTED_VERSION, in the v0 format), keep the
//	                       connection; any other key: close the connection
//	ErrMalformedRequest    close the connection
var (
	ErrNegativeSize       = errors.New("wire: negative frame size")
	ErrFrameTooLarge      = errors.New("wire: frame larger than allowed")
	ErrMalformedHeader    = errors.New("wire: malformed request header")
	ErrUnknownAPIKey      = errors.New("wire: unknown api key")
	ErrUnsupportedVersion = errors.New("wire: unsupported api version")
	ErrMalformedRequest   = errors.New("wire: malformed request body")
)
