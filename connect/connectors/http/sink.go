package http

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	nethttp "net/http"
	"net/url"
	"strings"

	"github.com/runnel-io/runnel/connect"
)

const (
	keyURL       = "http.url"
	keyFormat    = "http.format"
	keyHeaders   = "http.headers"
	keyBatchSize = "batch.max.size"
	keyTimeout   = "http.timeout.ms"
)

// The formats of a batch.
const (
	formatJSON  = "json"
	formatLines = "jsonl"
)

// maxErrorBody is how much of a refusal's body an error quotes.
const maxErrorBody = 2048

func sinkPlugin() connect.Plugin {
	return connect.Plugin{
		Class:   "io.runnel.connect.http.HttpSinkConnector",
		Aliases: []string{"HttpSink", "HttpSinkConnector", "http-sink"},
		Type:    connect.SinkPlugin,
		Version: connect.Version,
		Doc:     "POSTs batches of record values as JSON to a URL, retrying what the server could not take.",
		Config: connect.NewConfigDef(
			connect.ConfigKey{Name: keyURL, Type: connect.TypeString, Required: true, Importance: connect.High, Group: "HTTP",
				Doc: "The http:// or https:// URL to POST to.", Check: checkURL},
			connect.ConfigKey{Name: keyFormat, Type: connect.TypeString, Default: formatJSON, Importance: connect.Medium, Group: "HTTP",
				Doc:   "json: a batch is a JSON array of values (Content-Type: application/json); jsonl: a value a line (application/x-ndjson).",
				Check: connect.OneOf(formatJSON, formatLines), Recommended: []string{formatJSON, formatLines}},
			connect.ConfigKey{Name: keyBatchSize, Type: connect.TypeInt, Default: "500", Importance: connect.Medium, Group: "HTTP",
				Doc: "The most records in one POST.", Check: connect.AtLeast(1)},
			connect.ConfigKey{Name: keyHeaders, Type: connect.TypeString, Importance: connect.Medium, Group: "HTTP",
				Doc:   "Headers to send, as Name:Value,Name:Value (values cannot hold commas). Put secrets in ${env:NAME} or ${file:...} references.",
				Check: func(v string) error { _, err := parseHeaders(v); return err }},
			connect.ConfigKey{Name: keyTimeout, Type: connect.TypeLong, Default: "30000", Importance: connect.Low, Group: "HTTP",
				Doc: "How long one POST may take, in ms; a timeout is retried.", Check: connect.AtLeast(1)},
		),
		NewSinkTask: func() connect.SinkTask { return &sinkTask{} },
	}
}

func checkURL(v string) error {
	u, err := url.Parse(strings.TrimSpace(v))
	if err != nil {
		return err
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("must be an absolute http:// or https:// URL")
	}
	return nil
}

// parseHeaders reads Name:Value,Name:Value.
func parseHeaders(v string) (nethttp.Header, error) {
	h := nethttp.Header{}
	for _, item := range connect.SplitList(v) {
		name, value, ok := strings.Cut(item, ":")
		name = strings.TrimSpace(name)
		if !ok || name == "" || strings.ContainsAny(name, " \t\"(),/;<=>?@[\\]{}") {
			return nil, fmt.Errorf("%q is not Name:Value", item)
		}
		h.Add(name, strings.TrimSpace(value))
	}
	return h, nil
}

// sinkTask POSTs each Put's records at once, in batches of
// batch.max.size, so Flush has nothing left to do.
//
// A 2xx answer takes a batch. A connection error, a timeout, 408, 429 or
// a 5xx is returned as a connect.RetriableError: the runtime puts the same
// records again, with a backoff from 300 ms doubling up to
// errors.retry.delay.max.ms, until they are taken or the connector stops;
// the batches already taken are not sent again. Any other answer (a 4xx,
// a redirect) fails the task with the answer's status and body.
type sinkTask struct {
	url     string
	shown   string // url without a password
	lines   bool
	headers nethttp.Header
	batch   int
	client  *nethttp.Client

	// retry is where a Put that failed with a retriable error stopped,
	// so that the same records put again go on from there.
	retry struct {
		first *connect.Record
		n     int
		sent  int
	}
}

func (t *sinkTask) Start(_ context.Context, cfg connect.Config, _ connect.SinkTaskContext) error {
	t.url = strings.TrimSpace(cfg.String(keyURL))
	u, err := url.Parse(t.url)
	if err != nil {
		return err
	}
	t.shown = u.Redacted()
	t.lines = cfg.String(keyFormat) == formatLines
	t.batch = cfg.Int(keyBatchSize)
	if t.headers, err = parseHeaders(cfg.String(keyHeaders)); err != nil {
		return err
	}
	t.client = &nethttp.Client{
		Timeout: cfg.Millis(keyTimeout),
		// A redirect would turn the POST into a GET: report it instead.
		CheckRedirect: func(*nethttp.Request, []*nethttp.Request) error { return nethttp.ErrUseLastResponse },
	}
	return nil
}

func (t *sinkTask) Put(ctx context.Context, records []connect.Record) error {
	from := 0
	if len(records) > 0 && t.retry.first == &records[0] && t.retry.n == len(records) {
		from = t.retry.sent
	}
	t.retry.first, t.retry.n, t.retry.sent = nil, 0, 0
	for i := from; i < len(records); i += t.batch {
		if err := t.post(ctx, records[i:min(i+t.batch, len(records))]); err != nil {
			var re *connect.RetriableError
			if errors.As(err, &re) {
				t.retry.first, t.retry.n, t.retry.sent = &records[0], len(records), i
			}
			return err
		}
	}
	return nil
}

func (t *sinkTask) post(ctx context.Context, recs []connect.Record) error {
	body, err := encodeBatch(recs, t.lines)
	if err != nil {
		return err
	}
	req, err := nethttp.NewRequestWithContext(ctx, nethttp.MethodPost, t.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	if t.lines {
		req.Header.Set("Content-Type", "application/x-ndjson")
	} else {
		req.Header.Set("Content-Type", "application/json")
	}
	for name, values := range t.headers {
		req.Header[name] = values
	}
	resp, err := t.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return connect.Retriable(err) // the client's error names the URL without its password
	}
	defer resp.Body.Close()
	quoted, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20)) // so the connection can be reused
	code := resp.StatusCode
	switch {
	case code >= 200 && code < 300:
		return nil
	case code == nethttp.StatusRequestTimeout || code == nethttp.StatusTooManyRequests || code >= 500:
		return connect.Retriable(fmt.Errorf("POST %s: %s: %s", t.shown, resp.Status, printable(quoted)))
	case code >= 300 && code < 400:
		return fmt.Errorf("POST %s: %s to %s: set %s to the final URL", t.shown, resp.Status, resp.Header.Get("Location"), keyURL)
	}
	return fmt.Errorf("POST %s: the server refused a batch of %d records: %s: %s", t.shown, len(recs), resp.Status, printable(quoted))
}

// printable shows a body in an error: valid UTF-8, trimmed.
func printable(b []byte) string {
	s := strings.TrimSpace(strings.ToValidUTF8(string(b), "\uFFFD"))
	if len(b) == maxErrorBody {
		s += " …"
	}
	return s
}

// encodeBatch writes record values as a JSON array or as JSON lines.
// Values are written as JSON; bytes that hold valid JSON are written as
// they are (other bytes as base64 strings); a null value is null.
func encodeBatch(recs []connect.Record, lines bool) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if !lines {
		buf.WriteByte('[')
	}
	for i := range recs {
		if i > 0 && !lines {
			buf.WriteByte(',')
		}
		v := recs[i].Value
		if b, ok := v.([]byte); ok && json.Valid(b) {
			v = json.RawMessage(b)
		}
		if err := enc.Encode(v); err != nil {
			r := &recs[i]
			return nil, fmt.Errorf("record %s-%d@%d: encoding its value as JSON: %w", r.Topic, r.Partition, r.Offset, err)
		}
		if !lines {
			buf.Truncate(buf.Len() - 1) // the Encoder's newline
		}
	}
	if !lines {
		buf.WriteByte(']')
	}
	return buf.Bytes(), nil
}

func (t *sinkTask) Flush(context.Context) error { return nil }

func (t *sinkTask) Stop() error {
	if t.client != nil {
		t.client.CloseIdleConnections()
	}
	return nil
}
