// Package txn is the transaction coordinator's deterministic core: Kafka's
// TransactionCoordinator and TransactionStateManager for the transactional
// ids of one `__transaction_state` partition (InitProducerId,
// AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, DescribeTransactions,
// ListTransactions, transaction timeouts and transactional id expiry).
//
// A [Coordinator] has no goroutines, clocks or IO, in the manner of etcd's
// RawNode and of package group. It is driven by requests, each with the
// current time, and by [Coordinator.Tick], which aborts transactions past
// their timeout and expires idle transactional ids. Every call returns an
// [Output]: the replies to deliver, the records to persist, named by a
// [WriteID], and the transaction markers to write. The caller must
//
//  1. append Output.Records to the partition right away, in call order
//     (under the same lock as the call), as one record batch;
//  2. make them durable (fsync), then report the outcome with
//     [Coordinator.Written]: nil, or the Kafka error the failure maps to
//     (NOT_COORDINATOR when the partition's leadership or log is lost);
//  3. deliver Output.Replies, and write each of Output.Markers
//     (WriteTxnMarkers to the leaders of its partitions, with its producer
//     id, epoch, result and coordinator epoch), then report
//     [Coordinator.MarkersWritten];
//
// and deliver, append, write and report what each of those returns in
// turn.
//
// A transition is pending until Written reports its record durable, as
// Kafka's pendingState: the id's current state does not change, other
// requests for it get CONCURRENT_TRANSACTIONS (but a partition leader's
// verification, KIP-890 part 1, is answered from the current state, as
// Kafka answers it), and the request that caused it is not answered. So a client never hears of a state (a producer id
// and epoch, an added partition, a commit) that a crash could lose, and
// markers are only written for a decision that is durable. On failure the
// id keeps its state and the request gets the error.
//
// A transaction runs as in Kafka (without KIP-890 part 2, transaction
// version 2): InitProducerId puts the id in Empty with a new epoch;
// AddPartitionsToTxn and AddOffsetsToTxn make it Ongoing; EndTxn writes
// PrepareCommit or PrepareAbort and, once that is durable, answers the
// client and emits the markers; MarkersWritten writes CompleteCommit or
// CompleteAbort. An InitProducerId or a timeout over an Ongoing
// transaction aborts it with a bumped epoch (PrepareEpochFence, which is
// never written), fencing the old producer. Producer ids come from
// Config.NewProducerID: for a new id, and when an epoch is exhausted.
//
// Records use Kafka's schemas (kmsg.TxnMetadataKey v0 and
// kmsg.TxnMetadataValue v0: producer id, epoch, timeout, state byte,
// partitions, last update and start timestamps; a tombstone for an
// expired id), so [Coordinator.Load] replays a partition written by
// Runnel or by Kafka, at start or when this broker becomes the
// partition's coordinator. [Coordinator.Loaded] ends the load and resends
// the markers of every transaction left prepared.
//
// Left to the caller: routing a transactional id to its partition, the
// coordinator epoch (Config.CoordinatorEpoch), authorization, whether a
// topic exists, the __consumer_offsets partition of a group, and writing
// markers. Transactional offset commits belong to package group.
//
// Files: txn.go (states, config, Output, the Coordinator), pending.go
// (transitions waiting for their records, Written, markers), init.go
// (InitProducerId and epoch fencing), add.go (AddPartitionsToTxn,
// AddOffsetsToTxn), end.go (EndTxn, Tick), records.go (records, Load,
// Loaded), describe.go (DescribeTransactions, ListTransactions).
//
// A Coordinator is not safe for concurrent use; its owner serializes calls.
package txn
