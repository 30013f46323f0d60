package assign

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
)

// The UserData encodings. Both start with a version byte; version 1 is
// the only one written. Later versions may only append fields, so a
// version 1 reader reads the version 1 prefix of any later version and
// ignores the rest; within version 1 itself trailing bytes are an error.
//
// Integers are varints (encoding/binary); a string is a uvarint length and
// its bytes; a task list is a uvarint count and, per task, the uvarint
// subtopology and uvarint partition.
//
//	member (JoinGroup):  version, endpoint, active tasks, standby tasks,
//	                     offsets (uvarint count; task, varint offset each)
//	assignment (Sync):   version, standby tasks,
//	                     hosts (uvarint count; endpoint, task list each),
//	                     error string
const codecVersion = 1

// memberInfo is what a member tells the leader about itself.
type memberInfo struct {
	endpoint string
	active   []Task // tasks it owns now (from kgo's current assignment)
	standby  []Task // standbys of its last assignment
	offsets  map[Task]int64
}

// assignmentInfo is what the leader tells a member beyond its partitions.
type assignmentInfo struct {
	standby []Task
	hosts   map[string][]Task
	err     string
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

func appendTasks(dst []byte, ts []Task) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(ts)))
	for _, t := range ts {
		dst = appendTask(dst, t)
	}
	return dst
}

func appendTask(dst []byte, t Task) []byte {
	dst = binary.AppendUvarint(dst, uint64(t.Subtopology))
	return binary.AppendUvarint(dst, uint64(t.Partition))
}

func (m *memberInfo) appendTo(dst []byte) []byte {
	dst = append(dst, codecVersion)
	dst = appendString(dst, m.endpoint)
	dst = appendTasks(dst, m.active)
	dst = appendTasks(dst, m.standby)
	keys := make([]Task, 0, len(m.offsets))
	for t := range m.offsets {
		keys = append(keys, t)
	}
	sortTasks(keys)
	dst = binary.AppendUvarint(dst, uint64(len(keys)))
	for _, t := range keys {
		dst = appendTask(dst, t)
		dst = binary.AppendVarint(dst, m.offsets[t])
	}
	return dst
}

func (a *assignmentInfo) appendTo(dst []byte) []byte {
	dst = append(dst, codecVersion)
	dst = appendTasks(dst, a.standby)
	eps := make([]string, 0, len(a.hosts))
	for ep := range a.hosts {
		eps = append(eps, ep)
	}
	slices.Sort(eps)
	dst = binary.AppendUvarint(dst, uint64(len(eps)))
	for _, ep := range eps {
		dst = appendString(dst, ep)
		dst = appendTasks(dst, a.hosts[ep])
	}
	return appendString(dst, a.err)
}

// reader decodes; the first failure sticks and later reads return zeros.
type reader struct {
	src []byte
	err error
}

func (r *reader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s at %d bytes from the end", ErrUserData, what, len(r.src))
	}
}

func (r *reader) uvarint(what string, max uint64) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.src)
	if n <= 0 || v > max {
		r.fail(what)
		return 0
	}
	r.src = r.src[n:]
	return v
}

func (r *reader) varint(what string) int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.src)
	if n <= 0 {
		r.fail(what)
		return 0
	}
	r.src = r.src[n:]
	return v
}

// count reads a collection length; each element takes at least minSize
// bytes, so a length beyond what is left is rejected before allocating.
func (r *reader) count(what string, minSize int) int {
	n := r.uvarint(what, math.MaxInt32)
	if n > uint64(len(r.src)/minSize) {
		r.fail(what)
		return 0
	}
	return int(n)
}

func (r *reader) string(what string) string {
	n := r.uvarint(what, math.MaxInt32)
	if n > uint64(len(r.src)) {
		r.fail(what)
	}
	if r.err != nil {
		return ""
	}
	s := string(r.src[:n])
	r.src = r.src[n:]
	return s
}

func (r *reader) task() Task {
	s := r.uvarint("subtopology", math.MaxInt32)
	p := r.uvarint("partition", math.MaxInt32)
	return Task{Subtopology: int(s), Partition: int32(p)}
}

func (r *reader) tasks(what string) []Task {
	n := r.count(what, 2)
	if n == 0 {
		return nil
	}
	ts := make([]Task, n)
	for i := range ts {
		ts[i] = r.task()
	}
	return ts
}

// version reads the version byte and returns whether trailing bytes are
// to be rejected at the end.
func (r *reader) version() (strict bool) {
	if len(r.src) == 0 {
		r.fail("empty")
		return false
	}
	v := r.src[0]
	r.src = r.src[1:]
	if v < codecVersion {
		r.err = fmt.Errorf("%w: unknown version %d", ErrUserData, v)
	}
	return v == codecVersion
}

func (r *reader) finish(strict bool) error {
	if r.err == nil && strict && len(r.src) > 0 {
		r.fail("trailing bytes")
	}
	return r.err
}

func decodeMemberInfo(src []byte) (memberInfo, error) {
	r := reader{src: src}
	strict := r.version()
	var m memberInfo
	m.endpoint = r.string("endpoint")
	m.active = r.tasks("active tasks")
	m.standby = r.tasks("standby tasks")
	if n := r.count("offsets", 3); n > 0 {
		m.offsets = make(map[Task]int64, n)
		for range n {
			t := r.task()
			m.offsets[t] = r.varint("offset")
		}
	}
	return m, r.finish(strict)
}

func decodeAssignmentInfo(src []byte) (assignmentInfo, error) {
	r := reader{src: src}
	strict := r.version()
	var a assignmentInfo
	a.standby = r.tasks("standby tasks")
	if n := r.count("hosts", 2); n > 0 {
		a.hosts = make(map[string][]Task, n)
		for range n {
			ep := r.string("endpoint")
			a.hosts[ep] = append(a.hosts[ep], r.tasks("host tasks")...)
		}
	}
	a.err = r.string("error")
	return a, r.finish(strict)
}
