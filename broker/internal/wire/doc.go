// Package wire frames the Kafka protocol on a connection: size-prefixed
// frames with limits, request headers, request bodies decoded with kmsg, and
// responses framed with their headers.
//
// # Using it
//
// A connection's read loop, one request at a time:
//
//	max := int32(64 << 10) // until the first valid request
//	var buf []byte
//	for {
//		frame, err := wire.ReadFrame(conn, buf, max)
//		if err != nil {
//			return err // io.EOF: the client closed; anything else: close
//		}
//		buf = frame
//		hdr, body, err := wire.ParseRequestHeader(frame)
//		if hdr.APIKey == 18 && errors.Is(err, wire.ErrUnsupportedVersion) {
//			out = wire.AppendApiVersionsUnsupported(out[:0], hdr.CorrelationID, keys)
//			// write out, continue
//		}
//		if err != nil {
//			return err // close the connection
//		}
//		req, err := wire.DecodeRequest(hdr, body)
//		if err != nil {
//			return err // close the connection
//		}
//		max = socketRequestMaxBytes
//		resp := handle(req) // a kmsg.Response
//		out = wire.AppendResponse(out[:0], hdr.CorrelationID, req, resp)
//		// write out
//	}
//
// A hand-written response (a zero-copy Fetch) is framed with BeginFrame,
// AppendResponseHeader and EndFrame, or with its size computed up front.
//
// # What it leaves to the broker
//
// Versions: ParseRequestHeader and DecodeRequest accept every version kmsg
// knows for a key. Which versions the broker implements, and so advertises
// in ApiVersions, is the handlers' business; Kafka closes the connection on
// a request for a version it does not advertise.
//
// Buffers: a decoded request's byte-slice fields alias the frame (see
// DecodeRequest); the frame buffer is reused for the next request only once
// the broker is done with the previous one, which Kafka's one-request-at-a-
// time processing per connection gives for free.
//
// # Errors
//
// See the table on the package's errors: every framing or decoding error
// closes the connection, except an unknown ApiVersions version.
//
// # Concurrency
//
// The package has no state; its functions are safe for concurrent use on
// distinct buffers.
package wire
