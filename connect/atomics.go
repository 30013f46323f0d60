package connect

import (
	"strconv"
	"sync/atomic"
)

// atomicString is a string safe for concurrent use.
type atomicString struct{ v atomic.Value }

func (a *atomicString) Store(s string) { a.v.Store(s) }

func (a *atomicString) Load() string {
	s, _ := a.v.Load().(string)
	return s
}

func itoa(i int) string { return strconv.Itoa(i) }
