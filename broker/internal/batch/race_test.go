//go:build race

package batch_test

// raceEnabled turns memory assertions into logs: the race detector drops
// sync.Pool entries at random and allocates for itself.
const raceEnabled = true
