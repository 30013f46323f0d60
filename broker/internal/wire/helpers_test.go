package wire_test

import (
	"reflect"
	"runtime"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// bytesAllocated runs f and returns the bytes it allocated.
func bytesAllocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// maxKey is the highest api key kmsg knows.
func maxKey() int16 {
	k := int16(0)
	for i := int16(0); i < 1000; i++ {
		if kmsg.RequestForKey(i) != nil {
			k = i
		}
	}
	return k
}

// fill sets every exported field of the struct v points to (a kmsg request)
// to a non-zero value, with two elements in every array, so that a round
// trip exercises every field a version has. Version and tags are left alone.
func fill(v any) {
	fillValue(reflect.ValueOf(v).Elem(), 0)
}

func fillValue(v reflect.Value, depth int) {
	switch v.Kind() {
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() || f.Name == "Version" || f.Type == reflect.TypeFor[kmsg.Tags]() {
				continue
			}
			fillValue(v.Field(i), depth+1)
		}
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(1 + depth))
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(1 + depth))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1.5)
	case reflect.String:
		v.SetString("s")
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fillValue(p.Elem(), depth+1)
		v.Set(p)
	case reflect.Array:
		for i := range v.Len() {
			fillValue(v.Index(i), depth+1)
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			v.SetBytes([]byte("bytes"))
			return
		}
		if depth > 8 {
			return
		}
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := range 2 {
			fillValue(s.Index(i), depth+1)
		}
		v.Set(s)
	}
}
