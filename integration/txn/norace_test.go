//go:build !race

package txn

// recordsFactor scales defaultRecords: without the race detector the
// copy of a million records can end before minEach faults of each kind.
const recordsFactor = 2
