// Package group is the consumer group coordinator's deterministic core: the
// classic group protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) and
// committed offsets for the groups of one `__consumer_offsets` partition.
//
// A [Coordinator] has no goroutines, clocks or IO, in the manner of etcd's
// RawNode. It is driven by requests, each with the current time, and by
// [Coordinator.Tick], which fires the timers (initial rebalance delay,
// rebalance timeout, session timeouts, the SyncGroup deadline, offset
// expiry). Every call returns an [Output]: the replies to deliver and the
// records to persist. The caller must append Output.Records to the
// partition and make them durable before it delivers Output.Replies, so a
// client never hears of a state (an assignment, a commit) that a crash
// could lose.
//
// JoinGroup and SyncGroup answers may come later than their request: the
// caller names each such request with a [Waiter] and the answer arrives in
// some later Output (of any call, often Tick) addressed to that Waiter.
// A Waiter whose connection has gone may still be answered; the caller
// drops such answers.
//
// The state machine follows Kafka's classic GroupCoordinator: states Empty,
// PreparingRebalance, CompletingRebalance, Stable and Dead; required member
// ids (KIP-394); static membership (KIP-345); the protocol chosen by vote
// among those every member supports; group.initial.rebalance.delay.ms
// extended while members keep joining, up to the rebalance timeout.
//
// Records use Kafka's schemas (kmsg.OffsetCommitKey/Value,
// GroupMetadataKey/Value), so [Coordinator.Load] replays a partition written
// by Runnel and the records mean to other tools what they mean in Kafka.
// A group loads as Empty with its offsets; its members rejoin.
//
// Transactions (issue 5) extend this rather than rewrite it: a
// TxnOffsetCommit will be validated like CommitOffsets but kept as pending
// offsets per producer id (invisible to FetchOffsets, which then answers
// UNSTABLE_OFFSET_COMMIT to require_stable), and the transaction marker
// will move them into the committed map or drop them; the records are the
// same offset records, written transactionally by the shell.
//
// A Coordinator is not safe for concurrent use; its owner serializes calls.
package group
