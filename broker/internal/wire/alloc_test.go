// Under the race detector the real decode does not reuse the arrays of the
// trailing-bytes probe (allocation doubles), so the bound is measured
// without it.

//go:build !race

package wire_test

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/broker/internal/wire"
)

// The worst a request body can do to memory is claim long arrays of the
// smallest elements: kmsg allocates every element's struct, which is larger
// than its encoding. For every request and version, a body whose every
// top-level array holds 10,000 zero elements decodes (twice, counting the
// trailing-bytes probe, which kmsg mostly reuses) within a fixed multiple of
// the body's length.
func TestDecodeAllocationBounded(t *testing.T) {
	const elems = 10_000
	const bound = 64 // bytes allocated per body byte
	worst, worstName := 0.0, ""
	for key := range maxKey() + 1 {
		proto := kmsg.RequestForKey(key)
		if proto == nil {
			continue
		}
		for version := int16(0); version <= proto.MaxVersion(); version++ {
			req := kmsg.RequestForKey(key)
			req.SetVersion(version)
			v := reflect.ValueOf(req).Elem()
			arrays := 0
			for i := range v.NumField() {
				f := v.Field(i)
				if f.Kind() != reflect.Slice || f.Type().Elem().Kind() == reflect.Uint8 || !v.Type().Field(i).IsExported() {
					continue
				}
				s := reflect.MakeSlice(f.Type(), elems, elems)
				for j := range elems {
					if d, ok := s.Index(j).Addr().Interface().(interface{ Default() }); ok {
						d.Default()
					}
				}
				f.Set(s)
				arrays++
			}
			if arrays == 0 {
				continue
			}
			body := req.AppendTo(nil)
			if len(body) < elems {
				continue // no array of this request is in this version
			}
			h := wire.RequestHeader{APIKey: key, APIVersion: version}
			var err error
			n := bytesAllocated(func() { _, err = wire.DecodeRequest(h, body) })
			if err != nil {
				continue // zero elements are not valid in every version (e.g. null where not nullable)
			}
			ratio := float64(n) / float64(len(body))
			if ratio > worst {
				worst, worstName = ratio, fmt.Sprintf("%s v%d", kmsg.NameForKey(key), version)
			}
			if ratio > bound {
				t.Errorf("%s v%d: %d body bytes allocate %d (%.0fx)", kmsg.NameForKey(key), version, len(body), n, ratio)
			}
		}
	}
	t.Logf("worst: %.1f bytes allocated per body byte (%s)", worst, worstName)
}
