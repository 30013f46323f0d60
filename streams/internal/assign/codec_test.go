package assign

import (
	"errors"
	"maps"
	"reflect"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func sampleMember() memberInfo {
	return memberInfo{
		endpoint: "10.0.0.7:8080",
		active:   []Task{{0, 1}, {2, 300}},
		standby:  []Task{{1, 0}},
		offsets:  map[Task]int64{{0, 1}: 1 << 40, {1, 0}: 0, {3, 2}: -1},
	}
}

func sampleAssignment() assignmentInfo {
	return assignmentInfo{
		standby: []Task{{0, 4}, {1, 2}},
		hosts:   map[string][]Task{"a:1": {{0, 0}}, "b:2": {{0, 1}, {1, 0}}},
		err:     "",
	}
}

func TestMemberInfoRoundTrip(t *testing.T) {
	for _, m := range []memberInfo{{}, sampleMember()} {
		got, err := decodeMemberInfo(m.appendTo(nil))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, m) {
			t.Fatalf("got %+v, want %+v", got, m)
		}
	}
}

func TestAssignmentInfoRoundTrip(t *testing.T) {
	for _, a := range []assignmentInfo{{}, sampleAssignment(), {err: "assign: no"}} {
		got, err := decodeAssignmentInfo(a.appendTo(nil))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, a) {
			t.Fatalf("got %+v, want %+v", got, a)
		}
	}
}

func TestCodecVersions(t *testing.T) {
	m := sampleMember()
	b := m.appendTo(nil)
	later := append([]byte{codecVersion + 1}, b[1:]...)
	later = append(later, 0xde, 0xad) // fields a later version appends
	if got, err := decodeMemberInfo(later); err != nil || !reflect.DeepEqual(got, m) {
		t.Errorf("a later version's v1 prefix: %+v, %v", got, err)
	}
	for name, src := range map[string][]byte{
		"empty":      nil,
		"version 0":  append([]byte{0}, b[1:]...),
		"trailing":   append(slices.Clone(b), 0),
		"truncated":  b[:len(b)-1],
		"huge count": {codecVersion, 0, 0xff, 0xff, 0xff, 0xff, 0x0f},
	} {
		if _, err := decodeMemberInfo(src); !errors.Is(err, ErrUserData) {
			t.Errorf("%s: err %v", name, err)
		}
	}
}

func FuzzDecodeMemberInfo(f *testing.F) {
	f.Add([]byte{})
	f.Add((&memberInfo{}).appendTo(nil))
	m := sampleMember()
	f.Add(m.appendTo(nil))
	f.Fuzz(func(t *testing.T, src []byte) {
		m, err := decodeMemberInfo(src)
		if err != nil {
			if !errors.Is(err, ErrUserData) {
				t.Fatalf("unwrapped error %v", err)
			}
			return
		}
		again, err := decodeMemberInfo(m.appendTo(nil))
		if err != nil || !equalMemberInfo(again, m) {
			t.Fatalf("re-encoding %+v gives %+v, %v", m, again, err)
		}
	})
}

func equalMemberInfo(a, b memberInfo) bool {
	return a.endpoint == b.endpoint && slices.Equal(a.active, b.active) && slices.Equal(a.standby, b.standby) && maps.Equal(a.offsets, b.offsets)
}

func FuzzDecodeAssignmentInfo(f *testing.F) {
	f.Add([]byte{})
	a := sampleAssignment()
	f.Add(a.appendTo(nil))
	f.Add((&assignmentInfo{err: "x"}).appendTo(nil))
	f.Fuzz(func(t *testing.T, src []byte) {
		a, err := decodeAssignmentInfo(src)
		if err != nil {
			if !errors.Is(err, ErrUserData) {
				t.Fatalf("unwrapped error %v", err)
			}
			return
		}
		if _, err := decodeAssignmentInfo(a.appendTo(nil)); err != nil {
			t.Fatalf("re-encoding %+v: %v", a, err)
		}
	})
}

// FuzzParseSyncAssignment feeds arbitrary SyncGroup assignment bytes.
func FuzzParseSyncAssignment(f *testing.F) {
	ka := kmsg.NewConsumerMemberAssignment()
	at := kmsg.NewConsumerMemberAssignmentTopic()
	at.Topic, at.Partitions = "a", []int32{0, 3}
	ka.Topics = append(ka.Topics, at)
	a := sampleAssignment()
	ka.UserData = a.appendTo(nil)
	f.Add(ka.AppendTo(nil))
	f.Add([]byte{0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, src []byte) {
		cfg := Config{Subtopologies: [][]string{{"a", "b"}, {"c"}}, OnAssign: func(Assignment) {}}
		if _, err := New(cfg).ParseSyncAssignment(src); err != nil && !errors.Is(err, ErrAssignment) && !errors.Is(err, ErrUserData) {
			t.Fatalf("unwrapped error %v", err)
		}
	})
}

// FuzzMemberBalancer feeds arbitrary member metadata to the leader and
// balances whatever decodes.
func FuzzMemberBalancer(f *testing.F) {
	b := New(Config{Subtopologies: [][]string{{"a", "b"}}, Standbys: 1, Offsets: func() map[Task]int64 { return map[Task]int64{{0, 1}: 5} }})
	f.Add(b.JoinGroupMetadata([]string{"a", "b"}, map[string][]int32{"a": {1}, "b": {1}}, 4), uint8(4))
	f.Add(b.JoinGroupMetadata(nil, nil, -1), uint8(0))
	f.Fuzz(func(t *testing.T, meta []byte, parts uint8) {
		good := kmsg.NewJoinGroupResponseMember()
		good.MemberID = "good"
		good.ProtocolMetadata = b.JoinGroupMetadata(nil, nil, 1)
		fuzzed := kmsg.NewJoinGroupResponseMember()
		fuzzed.MemberID = "fuzzed"
		fuzzed.ProtocolMetadata = meta
		mb, _, err := b.MemberBalancer([]kmsg.JoinGroupResponseMember{fuzzed, good})
		if err != nil {
			if !errors.Is(err, ErrMetadata) && !errors.Is(err, ErrUserData) {
				t.Fatalf("unwrapped error %v", err)
			}
			return
		}
		n := int32(parts % 16)
		plan, err := mb.(kgo.GroupMemberBalancerOrError).BalanceOrError(map[string]int32{"a": n, "b": n})
		if err != nil {
			t.Fatalf("balance: %v", err)
		}
		for _, sa := range plan.IntoSyncAssignment() {
			if _, err := New(Config{Subtopologies: [][]string{{"a", "b"}}}).ParseSyncAssignment(sa.MemberAssignment); err != nil {
				t.Fatalf("the leader's own assignment does not parse: %v", err)
			}
		}
	})
}
