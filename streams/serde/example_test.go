package serde_test

import (
	"errors"
	"fmt"
	"strings"

	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/runnel-io/runnel/streams/serde"
)

// Encode appends, so one buffer serves every record.
func Example() {
	var buf []byte
	for _, count := range []int64{1, 256, -1} {
		var err error
		buf, err = serde.Int64.Encode(buf[:0], count)
		if err != nil {
			panic(err)
		}
		back, _ := serde.Int64.Decode(buf)
		fmt.Printf("% x -> %d\n", buf, back)
	}
	// Output:
	// 00 00 00 00 00 00 00 01 -> 1
	// 00 00 00 00 00 00 01 00 -> 256
	// ff ff ff ff ff ff ff ff -> -1
}

// The primitive serdes write what Kafka's Java serializers write.
func Example_kafkaBytes() {
	s, _ := serde.String.Encode(nil, "sku-42")
	i, _ := serde.Int32.Encode(nil, 7)
	f, _ := serde.Float64.Encode(nil, 0.5)
	b, _ := serde.Bool.Encode(nil, true)
	fmt.Printf("StringSerializer  % x\n", s)
	fmt.Printf("IntegerSerializer % x\n", i)
	fmt.Printf("DoubleSerializer  % x\n", f)
	fmt.Printf("BooleanSerializer % x\n", b)
	// Output:
	// StringSerializer  73 6b 75 2d 34 32
	// IntegerSerializer 00 00 00 07
	// DoubleSerializer  3f e0 00 00 00 00 00 00
	// BooleanSerializer 01
}

// A nil input is a Kafka null and decodes to the zero value.
func Example_null() {
	n, err := serde.Int64.Decode(nil)
	fmt.Println(n, err)
	_, err = serde.Int64.Decode([]byte{1, 2, 3})
	fmt.Println(err)
	fmt.Println(errors.Is(err, serde.ErrDecode))
	// Output:
	// 0 <nil>
	// serde: decode int64: want 8 bytes, got 3
	// true
}

func ExampleJSON() {
	type sale struct {
		Store string  `json:"store"`
		SKU   string  `json:"sku"`
		Qty   int     `json:"qty"`
		Price float64 `json:"price"`
	}
	s := serde.JSON[sale]()
	b, err := s.Encode(nil, sale{Store: "s-7", SKU: "sku-42", Qty: 2, Price: 3.5})
	if err != nil {
		panic(err)
	}
	fmt.Println(string(b))
	v, err := s.Decode([]byte(`{"store":"s-9","sku":"sku-1","qty":5}`))
	fmt.Printf("%+v %v\n", v, err)
	// Output:
	// {"store":"s-7","sku":"sku-42","qty":2,"price":3.5}
	// {Store:s-9 SKU:sku-1 Qty:5 Price:0} <nil>
}

func ExampleProto() {
	s := serde.Proto(func() *wrapperspb.StringValue { return new(wrapperspb.StringValue) })
	b, err := s.Encode(nil, wrapperspb.String("hi"))
	if err != nil {
		panic(err)
	}
	fmt.Printf("% x\n", b)
	v, err := s.Decode(b)
	fmt.Println(v.GetValue(), err)
	// Output:
	// 0a 02 68 69
	// hi <nil>
}

// Func adapts any encoder and decoder; its errors are wrapped to match
// ErrDecode and nil still decodes to the zero value.
func ExampleFunc() {
	upper := serde.Func(
		func(dst []byte, v string) ([]byte, error) { return append(dst, strings.ToUpper(v)...), nil },
		func(b []byte) (string, error) {
			if len(b) > 8 {
				return "", fmt.Errorf("%d bytes is too long", len(b))
			}
			return string(b), nil
		},
	)
	b, _ := upper.Encode(nil, "sku-42")
	fmt.Println(string(b))
	_, err := upper.Decode([]byte("much too long"))
	fmt.Println(err, errors.Is(err, serde.ErrDecode))
	// Output:
	// SKU-42
	// serde: decode string: 13 bytes is too long true
}
