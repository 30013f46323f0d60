//go:build race

package txn

// recordsFactor scales defaultRecords: the race detector slows the copy
// enough for the faults as it is.
const recordsFactor = 1
