package server

// Incremental fetch sessions (KIP-227), Fetch v7+.
//
// A client opens a session with a full fetch (session id 0, epoch 0); the
// broker remembers the session's partitions with their fetch offsets and
// max bytes, and answers with a session id. Each later fetch of the session
// carries the next epoch and only the partitions that changed (new fetch
// offsets, new partitions) plus forgotten ones to drop; the broker answers
// only partitions with records, an error, or a changed high watermark, last
// stable offset or log start offset (as Kafka's CachedPartition). Epoch -1 is a sessionless full fetch; a full fetch
// closes the session it names, if any.
//
// As Kafka's FetchSessionCache: at most max.incremental.fetch.session.cache
// .slots (1000) sessions; a new session may evict the least recently used
// one if it has been idle for two minutes, else the smallest one created
// more than two minutes ago if the new one has more partitions; otherwise
// the fetch runs sessionless (session id 0). An unknown id is
// FETCH_SESSION_ID_NOT_FOUND, a wrong epoch INVALID_FETCH_SESSION_EPOCH,
// switching between topic names (v7-12) and topic ids (v13+) in one session
// FETCH_SESSION_TOPIC_ID_ERROR. The epoch moves when a request is accepted,
// so a repeated or concurrent request with the same epoch is refused. An
// incremental fetch that leaves the session empty closes it. Partitions
// that are answered move to the end of the session's order, so that
// max_bytes does not always favour the same ones.

import (
	"errors"
	"math"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Errors a fetch's session metadata can have; errors.go maps them.
var (
	errFetchSessionNotFound = errors.New("server: fetch session not found")
	errFetchSessionEpoch    = errors.New("server: fetch session epoch is not the next one")
	errFetchSessionTopicID  = errors.New("server: fetch session mixes topic names and topic ids")
)

const (
	// defaultFetchSessionSlots is Kafka's max.incremental.fetch.session.cache.slots.
	defaultFetchSessionSlots = 1000
	// fetchSessionEvictAfter is Kafka's fetch session eviction time: a
	// session idle this long may be evicted by any new one, and only one
	// this old may be evicted by a larger new one.
	fetchSessionEvictAfter = 2 * time.Minute
)

// sessionKey names a partition as the client does: by topic name below
// v13, by topic id from v13.
type sessionKey struct {
	topic string
	id    [16]byte
	part  int32
}

// fetchPart is one partition a fetch reads.
type fetchPart struct {
	key         sessionKey
	offset      int64
	maxBytes    int32
	leaderEpoch int32
}

// sessionPart is a partition in a session: what the client last asked for
// and what the broker last answered (-1 before the first answer), to tell
// which partitions changed.
type sessionPart struct {
	fetchPart
	hw, lso, logStart int64
}

type fetchSession struct {
	id                int32
	epoch             int32 // the epoch the next incremental fetch must carry
	topicIDs          bool  // addressed by topic id (v13+)
	parts             []*sessionPart
	index             map[sessionKey]*sessionPart
	created, lastUsed time.Time
}

// fetchSessions is the broker's cache of fetch sessions. It is a plain
// type driven by requests, responses and the clock it is given; it is safe
// for concurrent use.
type fetchSessions struct {
	slots int
	now   func() time.Time
	mu    struct {
		sync.Mutex
		nextID   int32
		sessions map[int32]*fetchSession
	}
}

func newFetchSessions(slots int, now func() time.Time) *fetchSessions {
	s := &fetchSessions{slots: slots, now: now}
	s.mu.sessions = map[int32]*fetchSession{}
	return s
}

// fetchPlan is one fetch resolved against the cache: the partitions to
// read, in order, and the session it belongs to.
type fetchPlan struct {
	parts       []fetchPart
	sessionID   int32 // for the response; 0 sessionless
	incremental bool
}

// begin resolves req: a sessionless fetch, a full fetch that opens a
// session, or an incremental fetch of an existing session (whose epoch it
// moves on). The error is a session error for the whole response.
func (s *fetchSessions) begin(req *kmsg.FetchRequest) (fetchPlan, error) {
	topicIDs := req.Version >= 13
	if req.Version < 7 || req.SessionEpoch == -1 || req.SessionEpoch == 0 {
		plan := fetchPlan{parts: requestParts(req, nil)}
		if req.Version < 7 {
			return plan, nil
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if req.SessionID != 0 {
			delete(s.mu.sessions, req.SessionID)
		}
		if req.SessionEpoch == -1 {
			return plan, nil
		}
		sess := s.newSessionLocked(topicIDs, len(plan.parts))
		if sess == nil {
			return plan, nil // no room: sessionless, as Kafka
		}
		for _, p := range plan.parts {
			sess.upsert(p)
		}
		plan.sessionID = sess.id
		return plan, nil
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	sess := s.mu.sessions[req.SessionID]
	switch {
	case sess == nil:
		return fetchPlan{}, errFetchSessionNotFound
	case sess.epoch != req.SessionEpoch:
		return fetchPlan{}, errFetchSessionEpoch
	case sess.topicIDs != topicIDs:
		return fetchPlan{}, errFetchSessionTopicID
	}
	for _, p := range requestParts(req, nil) {
		sess.upsert(p)
	}
	for _, ft := range req.ForgottenTopics {
		for _, part := range ft.Partitions {
			k := sessionKey{topic: ft.Topic, part: part}
			if topicIDs {
				k = sessionKey{id: ft.TopicID, part: part}
			}
			sess.forget(k)
		}
	}
	if len(sess.parts) == 0 {
		// Nothing left to fetch: Kafka closes the session and answers
		// sessionless.
		delete(s.mu.sessions, sess.id)
		return fetchPlan{}, nil
	}
	sess.epoch = nextEpoch(sess.epoch)
	sess.lastUsed = s.now()
	plan := fetchPlan{sessionID: sess.id, incremental: true, parts: make([]fetchPart, len(sess.parts))}
	for i, p := range sess.parts {
		plan.parts[i] = p.fetchPart
	}
	return plan, nil
}

// finish records what resp (built from plan, in its order) tells the
// client, and for an incremental fetch drops from resp the partitions that
// did not change and moves the others to the end of the session. A session
// evicted meanwhile is left alone.
func (s *fetchSessions) finish(plan fetchPlan, resp *kmsg.FetchResponse, topicIDs bool) {
	if plan.sessionID == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sess := s.mu.sessions[plan.sessionID]
	if sess == nil {
		return
	}
	var answered []*sessionPart
	nt := 0
	for _, rt := range resp.Topics {
		np := 0
		for _, rp := range rt.Partitions {
			k := sessionKey{topic: rt.Topic, part: rp.Partition}
			if topicIDs {
				k = sessionKey{id: rt.TopicID, part: rp.Partition}
			}
			keep := true
			if sp := sess.index[k]; sp != nil {
				keep = !plan.incremental || len(rp.RecordBatches) > 0 || rp.ErrorCode != 0 ||
					rp.HighWatermark != sp.hw || rp.LastStableOffset != sp.lso || rp.LogStartOffset != sp.logStart
				sp.hw, sp.lso, sp.logStart = rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset
				if rp.ErrorCode != 0 {
					sp.hw = -1 // so the partition is answered again once the error is gone
				}
				if plan.incremental && keep {
					answered = append(answered, sp)
				}
			}
			if keep {
				rt.Partitions[np] = rp
				np++
			}
		}
		rt.Partitions = rt.Partitions[:np]
		if np > 0 {
			resp.Topics[nt] = rt
			nt++
		}
	}
	resp.Topics = resp.Topics[:nt]
	for _, sp := range answered {
		sess.forget(sp.key)
		sess.parts = append(sess.parts, sp)
		sess.index[sp.key] = sp
	}
}

// newSessionLocked adds an empty session for size partitions, evicting
// one by Kafka's rule when the cache is full; nil when there is no room.
func (s *fetchSessions) newSessionLocked(topicIDs bool, size int) *fetchSession {
	if s.slots <= 0 {
		return nil
	}
	now := s.now()
	if len(s.mu.sessions) >= s.slots {
		var lru, smallest *fetchSession
		for _, sess := range s.mu.sessions {
			if lru == nil || sess.lastUsed.Before(lru.lastUsed) {
				lru = sess
			}
			if now.Sub(sess.created) > fetchSessionEvictAfter &&
				(smallest == nil || len(sess.parts) < len(smallest.parts) || len(sess.parts) == len(smallest.parts) && sess.id < smallest.id) {
				smallest = sess
			}
		}
		switch {
		case now.Sub(lru.lastUsed) > fetchSessionEvictAfter:
			delete(s.mu.sessions, lru.id)
		case smallest != nil && size > len(smallest.parts):
			delete(s.mu.sessions, smallest.id)
		default:
			return nil
		}
	}
	// Ids are positive and not in use; 0 means no session.
	for {
		s.mu.nextID++
		if s.mu.nextID <= 0 {
			s.mu.nextID = 1
		}
		if s.mu.sessions[s.mu.nextID] == nil {
			break
		}
	}
	sess := &fetchSession{id: s.mu.nextID, epoch: 1, topicIDs: topicIDs, index: map[sessionKey]*sessionPart{}, created: now, lastUsed: now}
	s.mu.sessions[sess.id] = sess
	return sess
}

// len returns the number of sessions cached.
func (s *fetchSessions) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.mu.sessions)
}

// upsert adds p at the end of the session, or updates what the client asks
// of it in place.
func (f *fetchSession) upsert(p fetchPart) {
	if sp := f.index[p.key]; sp != nil {
		sp.fetchPart = p
		return
	}
	sp := &sessionPart{fetchPart: p, hw: -1, lso: -1, logStart: -1}
	f.parts = append(f.parts, sp)
	f.index[p.key] = sp
}

func (f *fetchSession) forget(k sessionKey) {
	if f.index[k] == nil {
		return
	}
	delete(f.index, k)
	for i, p := range f.parts {
		if p.key == k {
			f.parts = append(f.parts[:i], f.parts[i+1:]...)
			break
		}
	}
}

// nextEpoch is the epoch after e: it wraps to 1, as Kafka's nextEpoch.
func nextEpoch(e int32) int32 {
	if e == math.MaxInt32 {
		return 1
	}
	return e + 1
}

// requestParts appends the partitions req names to dst, in request order.
func requestParts(req *kmsg.FetchRequest, dst []fetchPart) []fetchPart {
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			k := sessionKey{topic: rt.Topic, part: rp.Partition}
			if req.Version >= 13 {
				k = sessionKey{id: rt.TopicID, part: rp.Partition}
			}
			dst = append(dst, fetchPart{key: k, offset: rp.FetchOffset, maxBytes: rp.PartitionMaxBytes, leaderEpoch: rp.CurrentLeaderEpoch})
		}
	}
	return dst
}
