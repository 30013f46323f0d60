package batch

import "fmt"

// ValidateOptions says which batches Validate accepts. The zero value is
// right for a produce request to a topic with cleanup.policy=delete.
type ValidateOptions struct {
	// AllowControl accepts control batches (transaction markers). Producers
	// may not write them; the broker itself, a follower copying its leader
	// and log recovery do.
	AllowControl bool

	// RequireKeys makes every record need a non-null key, as Kafka requires
	// for compacted topics. Compressed batches are decompressed for it.
	RequireKeys bool

	// MaxDecompressed is the most a compressed batch may decompress to when
	// RequireKeys makes Validate look inside it; <= 0 means
	// DefaultMaxDecompressed.
	MaxDecompressed int

	// Stored relaxes the checks that hold only for a batch fresh from a
	// producer, for a batch a log has already accepted (log recovery, a
	// follower's fetch, compaction output): compaction leaves batches whose
	// records cover their offset range with gaps, or no records at all (kept
	// for the producer state), and a coordinator-written marker has a
	// producer id without a base sequence.
	Stored bool

	// Coordinator accepts a batch the broker's own coordinators wrote
	// (Kafka's AppendOrigin.COORDINATOR): a transactional offset commit
	// has a producer id without a base sequence.
	Coordinator bool
}

// Validate checks that b is exactly one whole, well-formed v2 record batch
// and returns its header. Every error wraps one of the package's sentinel
// errors (see their doc for the Kafka error codes). In order:
//
//   - magic 2 (ErrLegacyMagic for message sets, ErrMagic otherwise);
//   - length field at least 49 and len(b) equal to the batch's size
//     (ErrShort when bytes are missing, ErrLength when bytes follow);
//   - CRC32C over attributes to the end (ErrCRC), before anything it
//     covers, so that bytes damaged in transit give the retriable error;
//   - codec 0..4 (ErrCodec);
//   - control bit only with AllowControl (ErrControl);
//   - NumRecords > 0 and LastOffsetDelta == NumRecords-1 (ErrRecordCount);
//     with Stored, 0 <= NumRecords <= LastOffsetDelta+1;
//   - BaseOffset 0 (ErrBaseOffset) and, for a batch with a producer id,
//     BaseSequence >= 0 (ErrSequence), as Kafka checks for client batches;
//     neither is checked with Stored, nor the sequence with Coordinator;
//   - a transactional batch has a producer id (ErrNoProducerID; not
//     checked with Stored);
//   - when the records are uncompressed, or RequireKeys is set: every record
//     walked with exact bounds (ErrCorrupt), exactly NumRecords of them and no
//     bytes after (ErrRecordCount), offset deltas 0, 1, 2, ... (increasing
//     within LastOffsetDelta with Stored; ErrOffsetDeltas) and, with
//     RequireKeys, a non-null key on each (ErrNoKey). Compressed records are
//     decompressed into a pooled buffer of at most MaxDecompressed bytes
//     (ErrTooLarge, ErrDecompress).
//
// Compressed batches of topics without RequireKeys are not decompressed, so
// their records are not checked: like their CRC-protected bytes, they are
// stored and served as the producer sent them.
//
// Like Kafka, Validate is lenient about what it does not need: the unused
// record attributes, header key UTF-8, timestamps (the broker checks those
// against its timestamp configs), and the producer epoch. Validating an
// uncompressed batch does not allocate.
func Validate(b []byte, opts ValidateOptions) (Header, error) {
	h, err := parseWhole(b)
	if err != nil {
		return h, err
	}
	if crc := ComputeCRC(b); crc != h.CRC {
		return h, fmt.Errorf("%w: header %#08x, computed %#08x", ErrCRC, h.CRC, crc)
	}
	if err := checkCodec(&h); err != nil {
		return h, err
	}
	if h.IsControl() && !opts.AllowControl {
		return h, ErrControl
	}
	if err := checkCounts(&h, opts.Stored); err != nil {
		return h, err
	}
	if !opts.Stored {
		if h.BaseOffset != 0 {
			return h, fmt.Errorf("%w: %d", ErrBaseOffset, h.BaseOffset)
		}
		if h.HasProducerID() && h.BaseSequence < 0 && !opts.Coordinator {
			return h, fmt.Errorf("%w: producer id %d, base sequence %d", ErrSequence, h.ProducerID, h.BaseSequence)
		}
		if h.IsTransactional() && !h.HasProducerID() {
			return h, fmt.Errorf("%w: producer id %d", ErrNoProducerID, h.ProducerID)
		}
	}

	data := b[HeaderSize:]
	if c := h.Codec(); c != CodecNone && len(data) > 0 {
		// (A compacted batch may be left empty; there is nothing to decode.)
		if !opts.RequireKeys {
			return h, nil
		}
		st := iterPool.Get().(*iterState)
		defer putIterState(st)
		if st.buf, err = Decompress(st.buf[:0], c, data, opts.MaxDecompressed); err != nil {
			return h, err
		}
		data = st.buf
	}
	return h, walk(data, &h, opts)
}

// checkCounts checks NumRecords against the offset range the header claims.
func checkCounts(h *Header, stored bool) error {
	if stored {
		if h.NumRecords < 0 || h.LastOffsetDelta < 0 || int64(h.NumRecords) > int64(h.LastOffsetDelta)+1 {
			return fmt.Errorf("%w: %d records, last offset delta %d", ErrRecordCount, h.NumRecords, h.LastOffsetDelta)
		}
		return nil
	}
	if h.NumRecords <= 0 {
		return fmt.Errorf("%w: %d records", ErrRecordCount, h.NumRecords)
	}
	if h.LastOffsetDelta != h.NumRecords-1 {
		return fmt.Errorf("%w: %d records, last offset delta %d", ErrRecordCount, h.NumRecords, h.LastOffsetDelta)
	}
	return nil
}

// walk checks every record in data, the (decompressed) records of h.
func walk(data []byte, h *Header, opts ValidateOptions) error {
	// A record takes at least minRecordSize bytes: refuse an impossible
	// count before walking.
	if int64(h.NumRecords)*minRecordSize > int64(len(data)) {
		return fmt.Errorf("%w: %d records cannot fit in %d bytes", ErrRecordCount, h.NumRecords, len(data))
	}
	var r Record
	it := newRecordIter(data, h)
	for it.more() {
		i := it.i
		if err := it.next(&r, false); err != nil {
			return err
		}
		if !opts.Stored && r.OffsetDelta != i {
			return fmt.Errorf("%w: record %d has offset delta %d", ErrOffsetDeltas, i, r.OffsetDelta)
		}
		if opts.RequireKeys && r.Key == nil {
			return fmt.Errorf("%w: record %d", ErrNoKey, i)
		}
	}
	return it.finish()
}
