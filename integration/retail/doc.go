// Package retail tests the retail reorder demo end to end: the generator
// writes a fixed, seeded data set to a broker while the Streams app runs
// in child processes (this test binary started again) that are SIGKILLed,
// stopped and restarted mid-way; the reorders and price adjustments it
// emits must equal those of an independent reference
// (retail-demo/retail/retailtest) computed from the same input.
package retail
