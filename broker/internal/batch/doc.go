// Package batch reads, validates and patches Kafka record batches (magic 2).
//
// The broker stores produced batches byte-for-byte. This package is the only
// place that knows the batch layout: it parses the 61-byte header, checks
// structure and CRC32C before a batch is appended, and rewrites the few fields
// the broker owns (baseOffset and partitionLeaderEpoch, outside the CRC; and
// for LogAppendTime topics the timestamp type and maxTimestamp, with a new CRC).
//
// # Using it
//
// A produce handler calls [Validate] on each partition's batch before the
// append, then patches it with [SetBaseOffset], [SetPartitionLeaderEpoch]
// and, for LogAppendTime topics, [SetLogAppendTime]:
//
//	h, err := batch.Validate(b, batch.ValidateOptions{
//		RequireKeys:     compacted,
//		MaxDecompressed: maxDecompressed,
//	})
//	if err != nil {
//		return kafkaCode(err) // see the table on the package's errors
//	}
//
// Log recovery and followers validate batches a log has already stored with
// Stored and AllowControl set: compaction leaves batches with fewer records
// than their offset range, and transaction markers are control batches.
//
// Compaction and any code that needs the records themselves use
// [ForEachRecord], which decompresses when the batch is compressed. The
// codecs are available on their own as [Decompress]. Every decompression has
// a hard output limit; nothing is allocated in proportion to a size a batch
// claims without that limit bounding it.
//
// # What is checked where
//
// [ParseHeader] checks only the fixed header (magic, length field).
// [Validate] checks one whole batch: exact length, CRC32C, codec, control
// bit, record count against the offset range, the producer's base sequence,
// and, when the records are uncompressed or RequireKeys asks for it, every
// record's structure. [ForEachRecord] trusts the CRC (it does not recompute
// it) but checks every record's structure as it goes.
//
// # Concurrency
//
// All functions are safe for concurrent use. They keep decoders and
// decompression buffers in sync.Pools; a Record passed to a ForEachRecord
// callback and the slices inside it are valid only during that call.
package batch
