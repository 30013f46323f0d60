package log

import (
	"fmt"
	"strconv"
	"strings"
)

// File names inside a partition directory. See doc.go for the layout.
const (
	logSuffix             = ".log"
	indexSuffix           = ".index"
	timeIndexSuffix       = ".timeindex"
	tmpSuffix             = ".tmp"
	epochCheckpointFile   = "leader-epoch-checkpoint"
	logStartOffsetFile    = "log-start-offset"
	cleanShutdownFile     = ".clean-shutdown"
	cleanerCheckpointFile = "cleaner-offset-checkpoint"

	baseOffsetDigits = 20
)

// segmentFileName names a segment's file: the zero-padded base offset and a
// suffix (logSuffix, indexSuffix, timeIndexSuffix or txnIndexSuffix).
func segmentFileName(base int64, suffix string) string {
	return fmt.Sprintf("%020d%s", base, suffix)
}

// parseSegmentFileName is the inverse of segmentFileName.
func parseSegmentFileName(name string) (base int64, suffix string, ok bool) {
	if len(name) <= baseOffsetDigits {
		return 0, "", false
	}
	digits, suffix := name[:baseOffsetDigits], name[baseOffsetDigits:]
	switch suffix {
	case logSuffix, indexSuffix, timeIndexSuffix, txnIndexSuffix:
	default:
		return 0, "", false
	}
	if strings.IndexFunc(digits, func(r rune) bool { return r < '0' || r > '9' }) >= 0 {
		return 0, "", false
	}
	base, err := strconv.ParseInt(digits, 10, 64)
	if err != nil {
		return 0, "", false
	}
	return base, suffix, true
}
