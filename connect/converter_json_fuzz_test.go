package connect

import (
	"reflect"
	"testing"
)

// FuzzJSONToConnect feeds arbitrary bytes to the JSON converter in both
// modes. It must never panic; what it reads must write back, and read
// back the same.
func FuzzJSONToConnect(f *testing.F) {
	for _, seed := range []string{
		`{"schema":` + orderSchemaJSON + `,"payload":{"id":7,"price":9.5,"paid":true,"at":1}}`,
		`{"schema":{"type":"map","keys":{"type":"int32"},"values":{"type":"string","optional":true}},"payload":[[1,"a"],[2,null]]}`,
		`{"schema":{"type":"array","items":{"type":"bytes"},"default":["AA=="]},"payload":null}`,
		`{"schema":{"type":"float","optional":true},"payload":1e-3}`,
		`{"schema":{"type":"struct","fields":[{"type":"int8","optional":true,"default":3,"field":"a"}],"parameters":{"p":"v"},"version":3},"payload":{"a":null}}`,
		`{"schema":null,"payload":{"a":[1,2.5,"x",true,null,{"b":{}}]}}`,
		`{"schema":{"type":"map","keys":{"type":"boolean","optional":true,"default":true},"values":{"type":"double"}},"payload":[[null,1],[false,-0]]}`,
		`{"a":1}`, `[1,-0,1e400,18446744073709551616]`, `"\ud800"`, `null`, ``, `{`, `[[[[[[[[[[[[`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, schemas := range []bool{true, false} {
			c := newTestConverter(t, "json", false, Config{"schemas.enable": map[bool]string{true: "true", false: "false"}[schemas]})
			s, v, err := c.ToConnect("t", data)
			if err != nil || v == nil {
				continue
			}
			out, err := c.FromConnect("t", s, v)
			if err != nil {
				t.Fatalf("schemas=%v: %q read as %+v %#v does not write back: %v", schemas, data, s, v, err)
			}
			s2, v2, err := c.ToConnect("t", out)
			if err != nil {
				t.Fatalf("schemas=%v: %q wrote %q, which does not read back: %v", schemas, data, out, err)
			}
			if !reflect.DeepEqual(v, v2) || !reflect.DeepEqual(s, s2) {
				t.Fatalf("schemas=%v: %q read as %+v %#v, wrote %q, read back %+v %#v", schemas, data, s, v, out, s2, v2)
			}
		}
	})
}
