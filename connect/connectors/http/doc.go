// Package http holds the HTTP connectors: HttpSource serves HTTP and
// writes each POSTed JSON object to a topic, answering once the brokers
// stored them; HttpSink POSTs batches of record values to a URL. Register
// adds both to a registry.
//
// # HttpSource
//
// io.runnel.connect.http.HttpSourceConnector (alias HttpSource) listens
// on http.listener (host:port; port 0 picks a free port, which the task
// logs and writes into http.listener.file when that is set) and takes
// POSTs to http.path (default /). One task serves; tasks.max does not
// apply. The Content-Type says how to read the body:
//
//   - application/json, any type ending in +json, or none: one JSON
//     object, or an array of objects (an empty array is fine);
//   - application/x-ndjson (or application/jsonl, application/jsonlines,
//     application/json-lines ...): JSON lines, one object a line, blank
//     lines skipped.
//
// Each object becomes a record's value (integers decode as int64, other
// numbers as float64, as the json converter does), keyed by the value of
// its key.field if that is set (a null key if the object lacks it; with
// several fields, "store_id,product_id", their values joined by ':'), with
// no timestamp (the producer stamps it). A request is all or nothing as
// far as decoding goes: one bad object refuses the whole request and
// nothing of it reaches the topic.
//
// The answers:
//
//	200  every record is stored (or dropped by a transform):
//	     {"records": n, "filtered": k}
//	400  the body is not what the Content-Type says; the message says
//	     where ({"error_code": 400, "message": "line 3: ..."})
//	404  another path; 405 another method
//	413  the body is larger than http.max.body.bytes, or has more
//	     records than http.max.inflight.records
//	415  a Content-Type that is neither JSON nor JSON lines
//	429  http.max.inflight.records are already waiting to be stored:
//	     retry after a while (Retry-After: 1)
//	500  the brokers refused a record (the task then fails)
//	503  no Poll of the runtime took the request within a second: the
//	     connector is paused, stopping or not started yet, or the
//	     brokers are slow to take what it has (Retry-After: 1)
//	504  the records were not stored within http.ack.timeout.ms; they may
//	     still be
//
// After 500, 503 and 504 some records of the request may be stored, so a
// client that retries may write them twice: delivery is at least once.
// The source partition is {"path": http.path} and a record's offset is
// {"request": n}, a count of requests that goes on after a restart; it
// says nothing about where to resume, as nothing is read back.
//
// # HttpSink
//
// io.runnel.connect.http.HttpSinkConnector (alias HttpSink) POSTs the
// values of the records it reads to http.url, batch.max.size at a time:
// as a JSON array (http.format=json, Content-Type: application/json) or
// one value a line (http.format=jsonl, application/x-ndjson), with the
// headers of http.headers (Name:Value,Name:Value). Values are written as
// JSON; with the bytes converter, values that are valid JSON are written
// as they are.
//
// A 2xx answer takes the batch. Connection errors, timeouts
// (http.timeout.ms), 408, 429 and 5xx answers are retried by the
// runtime: the task returns a connect.RetriableError and the runtime puts
// the same records again, waiting 300 ms and doubling up to
// errors.retry.delay.max.ms, until they are taken or the connector stops;
// batches of those records already taken are not sent again. Any other
// answer (a 4xx, a redirect) fails the task; its status and body are in
// the task's trace (GET /connectors/{name}/status). Offsets are committed
// after the records were taken: at least once.
package http

import "github.com/runnel-io/runnel/connect"

// Register adds the HTTP connectors to r.
func Register(r *connect.Registry) error {
	if err := r.Register(sourcePlugin()); err != nil {
		return err
	}
	return r.Register(sinkPlugin())
}
