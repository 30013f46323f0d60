// Package streams tests Runnel Streams apps as their users run them: app
// instances in child processes (this test binary started again, see
// child_test.go) against `runnel broker` processes, one node and three,
// SIGKILLed mid-way, with the outputs checked for exact counts
// (exactly once) or nothing lost (at least once).
package streams
