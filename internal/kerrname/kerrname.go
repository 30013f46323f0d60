// Package kerrname names Kafka error codes by their protocol names
// (NOT_COORDINATOR ...) and back, for the datadriven tests whose scripts
// print and read them.
package kerrname

import "github.com/twmb/franz-go/pkg/kerr"

// Of returns code's name, "NONE" for 0.
func Of(code int16) string {
	if code == 0 {
		return "NONE"
	}
	return kerr.ErrorForCode(code).(*kerr.Error).Message
}

// Lookup returns the Kafka error named name, or nil.
func Lookup(name string) *kerr.Error {
	for code := int16(1); code < 200; code++ {
		if e, ok := kerr.ErrorForCode(code).(*kerr.Error); ok && e.Message == name {
			return e
		}
	}
	return nil
}
