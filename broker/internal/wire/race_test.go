//go:build race

package wire_test

// raceEnabled turns memory assertions into logs: the race detector
// allocates for itself.
const raceEnabled = true
