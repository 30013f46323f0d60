package serde

import (
	"google.golang.org/protobuf/proto"
)

// Proto returns a serde for protobuf messages in the plain binary wire
// format: the bytes of message.toByteArray() in Java, without the magic byte
// and schema id that Confluent's Schema Registry serializers add. newMsg
// returns a fresh, empty message to decode into, e.g.
// func() *pb.Order { return new(pb.Order) }. Encode is deterministic (map
// entries sorted by key), so equal messages give equal bytes and can be
// used as keys. Decode(nil) returns the zero T, a nil message; an empty
// non-nil b decodes to an empty message. Decode copies bytes fields, so it
// keeps nothing of b. Proto panics if newMsg is nil.
func Proto[T proto.Message](newMsg func() T) Serde[T] {
	if newMsg == nil {
		panic("serde: Proto needs a constructor for its message")
	}
	return protoSerde[T]{newMsg: newMsg}
}

type protoSerde[T proto.Message] struct {
	newMsg func() T
}

var protoEncode = proto.MarshalOptions{Deterministic: true}

func (protoSerde[T]) Encode(dst []byte, v T) ([]byte, error) {
	out, err := protoEncode.MarshalAppend(dst, v)
	if err != nil {
		return dst, err
	}
	return nonNil(out), nil
}

func (s protoSerde[T]) Decode(b []byte) (T, error) {
	var zero T
	if b == nil {
		return zero, nil
	}
	m := s.newMsg()
	if err := proto.Unmarshal(b, m); err != nil {
		return zero, causeError("proto "+string(m.ProtoReflect().Descriptor().FullName()), err)
	}
	return m, nil
}
