package harness

import (
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// FetchStats is a kgo hook that records what a consumer's fetches looked
// like: how many, how large, how many batches and records they carried,
// how long each round trip took and how long the client spent between one
// response and its next request (decoding and handing records out: franz-go
// keeps one fetch in flight per broker, so that time adds to every fetch).
// Pass it with kgo.WithHooks; String summarizes. Safe for concurrent use.
type FetchStats struct {
	mu               sync.Mutex
	fetches, bytes   int
	maxResp          int
	batches, records int
	e2e, gap         time.Duration
	last             time.Time
}

var (
	_ kgo.HookBrokerE2E      = (*FetchStats)(nil)
	_ kgo.HookFetchBatchRead = (*FetchStats)(nil)
)

// OnBrokerE2E implements kgo.HookBrokerE2E for Fetch requests.
func (s *FetchStats) OnBrokerE2E(_ kgo.BrokerMetadata, key int16, e kgo.BrokerE2E) {
	if key != 1 || e.Err() != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if !s.last.IsZero() {
		s.gap += max(0, now.Sub(s.last)-e.DurationE2E())
	}
	s.last = now
	s.fetches++
	s.bytes += e.BytesRead
	s.maxResp = max(s.maxResp, e.BytesRead)
	s.e2e += e.DurationE2E()
}

// OnFetchBatchRead implements kgo.HookFetchBatchRead.
func (s *FetchStats) OnFetchBatchRead(_ kgo.BrokerMetadata, _ string, _ int32, m kgo.FetchBatchMetrics) {
	s.mu.Lock()
	s.batches++
	s.records += m.NumRecords
	s.mu.Unlock()
}

// String summarizes the fetches: count, mean and largest response, batches
// per response, records per batch, mean round trip and mean client time
// between fetches.
func (s *FetchStats) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := max(1, s.fetches)
	return fmt.Sprintf("fetches=%d mean-response=%dKiB max-response=%dKiB batches/fetch=%.1f records/batch=%.0f round-trip=%v client-between=%v",
		s.fetches, s.bytes/f>>10, s.maxResp>>10, float64(s.batches)/float64(f), float64(s.records)/float64(max(1, s.batches)),
		(s.e2e / time.Duration(f)).Round(time.Microsecond), (s.gap / time.Duration(f)).Round(time.Microsecond))
}
