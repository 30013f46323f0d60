package connecttest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"
)

// Call makes a REST request with body (if not nil) as JSON, decodes the
// JSON answer (if any) into out (if not nil) and returns the status code.
// A request that gets no answer, or an answer that is not JSON, fails the
// test.
func Call(t testing.TB, method, url string, body, out any) int {
	t.Helper()
	code, data, err := send(t, method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s %s: %d %q: %v", method, url, code, data, err)
		}
	}
	return code
}

// TryCall is Call for a worker that may be dying or gone: a request that
// gets no answer returns 0, and an answer cut short or not JSON is
// decoded into out as far as it goes. The caller retries or fails on its
// own terms.
func TryCall(t testing.TB, method, url string, body, out any) int {
	t.Helper()
	code, data, _ := send(t, method, url, body)
	if out != nil && len(data) > 0 {
		_ = json.Unmarshal(data, out)
	}
	return code
}

// send makes a request and reads the answer: its status code (0 when
// none came) and as much of its body as could be read. A body that cannot
// be encoded fails the test.
func send(t testing.TB, method, url string, body any) (int, []byte, error) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, data, err
}
