// Package group is the consumer group coordinator's deterministic core: the
// classic group protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) and
// committed offsets for the groups of one `__consumer_offsets` partition.
//
// A [Coordinator] has no goroutines, clocks or IO, in the manner of etcd's
// RawNode. It is driven by requests, each with the current time, and by
// [Coordinator.Tick], which fires the timers (initial rebalance delay,
// rebalance timeout, session timeouts, the SyncGroup deadline, offset
// expiry). Every call returns an [Output]: the replies to deliver and the
// records to persist, named by a [WriteID]. The caller must
//
//  1. append Output.Records to the partition right away, in call order
//     (under the same lock as the call), as one record batch: always for
//     an Atomic Output (an OffsetCommit: one request, one batch, so a
//     crash keeps all of it or none); others may be split when one batch
//     would be too large;
//  2. make them durable (fsync), and only then deliver Output.Replies;
//  3. report the outcome with [Coordinator.Written]: nil, or the Kafka
//     error the failure maps to; and deliver, append and report what that
//     returns in turn.
//
// State that a record carries is pending until Written reports it
// durable, as in Kafka (pendingOffsetCommits, the SyncGroup append
// callback): a commit's offsets are invisible to FetchOffsets, Offsets
// (lag) and expiry, and a leader's SyncGroup leaves the group
// CompletingRebalance with no member told its assignment. On success the
// offsets take effect (of two commits of a partition, the later record
// wins whichever completes first) and the group turns Stable and answers
// its SyncGroups. On failure the previous offsets stay, and the waiting
// SyncGroups get the error and the group rebalances. A static member
// replaced without a rebalance (KIP-345) hears of its new member id once
// the group record is durable; if it fails it gets the error and the old
// member id comes back, as in Kafka. So a client never hears of a state
// (an assignment, a commit, a member id) that a crash could lose, and
// nobody reads a commit that could be lost.
//
// Other records take effect at once, before their write, as in Kafka's
// classic coordinator: tombstones of deletions and expiry (a deletion
// also drops the commits in flight that its tombstones follow) and the
// group record of a group left empty. If such a write fails the owner's
// log is failed for good (an fsync error) or the records were refused
// whole; a restart reloads what is durable.
//
// JoinGroup and SyncGroup answers may come later than their request: the
// caller names each such request with a [Waiter] and the answer arrives in
// some later Output (of any call, often Tick) addressed to that Waiter.
// A Waiter whose connection has gone may still be answered; the caller
// drops such answers.
//
// The state machine follows Kafka's classic GroupCoordinator: states Empty,
// PreparingRebalance, CompletingRebalance, Stable and Dead; required member
// ids (KIP-394); static membership (KIP-345: a static member that does
// not rejoin a rebalance stays until its session expires, and one that
// restarts keeps its assignment if the group's protocol would not change;
// a restarted leader is told to skip the assignment from JoinGroup v9, and
// before v9 is named a follower); the protocol chosen by vote
// among those every member supports; group.initial.rebalance.delay.ms
// extended while members keep joining, up to the rebalance timeout.
//
// Records use Kafka's schemas (kmsg.OffsetCommitKey/Value,
// GroupMetadataKey/Value), so [Coordinator.Load] replays a partition written
// by Runnel and the records mean to other tools what they mean in Kafka.
// A group record is written when a leader's SyncGroup completes a
// generation (with every member's subscription and assignment), when a
// static member is replaced without a rebalance, and when a group is left
// without members. A group loads as its last one says, as Kafka's does:
// with members it is Stable, with its generation, protocol, leader and
// members (ids, instance ids, client, timeouts, subscription, assignment),
// and their sessions start again when the load ends, so a consumer that
// outlived a broker restart goes on heartbeating with its member id and
// generation and is not made to rebalance, while one that is gone expires
// after its session timeout; without members it is Empty.
// [Coordinator.Loaded] ends the load: it restarts the loaded members'
// sessions at its own time, however long the load took, and a group over
// group.max.size rebalances, keeping only as many members as rejoin first.
//
// Transactional offset commits (Kafka's
// pendingTransactionalOffsets): [Coordinator.TxnCommitOffsets] checks a
// TxnOffsetCommit as Kafka 4.0 does and returns the same offset records as
// CommitOffsets, in an Atomic Output whose Producer asks the owner to write
// them as one transactional batch of the request's producer id and epoch.
// The offsets are then open under that producer id: invisible to
// FetchOffsets (which answers UNSTABLE_OFFSET_COMMIT for their partitions
// when asked for stable offsets), Offsets, Describe and expiry (which
// spares their partitions and their group). A failed write drops them.
// Once the producer's marker is durable in the partition, the owner calls
// [Coordinator.CompleteTxn]: a commit moves the producer's open offsets
// into the committed ones, an abort drops them. Of two commits of a
// partition, transactional or not, the later record wins, as Kafka
// compares record offsets: the core orders records by their place in the
// log, loaded ones by their order in the load and written ones by WriteID
// after them (the owner appends Outputs in WriteID order), so no log
// offsets need to reach it. Tombstones (OffsetDelete, DeleteGroups, which
// also tombstones partitions that only have open transactional offsets)
// drop the open offsets of their partitions, as Kafka 4.0 replays them;
// a later commit marker does not bring them back. At start,
// [Coordinator.LoadTxn] replays a transactional batch's records (open
// under its producer) and [Coordinator.LoadMarker] a marker, in log
// order; offsets whose marker is not in the log stay open after Loaded,
// until the transaction coordinator writes it and the owner calls
// CompleteTxn. The owner must call CompleteTxn before the producer can
// start its next transaction (that is, before WriteTxnMarkers answers):
// CompleteTxn closes every open offset of the producer, and a later
// transaction's offsets would be taken for this one's.
//
// A Coordinator is not safe for concurrent use; its owner serializes calls.
package group
