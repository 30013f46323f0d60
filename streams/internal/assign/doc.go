// Package assign is the consumer-group assignor of Runnel Streams: it hands
// out tasks (one partition of one subtopology, i.e. partition P of every
// source topic of that subtopology) to the app instances of one consumer
// group, as a kgo.GroupBalancer named "runnel-streams".
//
// Plain Kafka assignors balance topic partitions one by one and so split
// co-partitioned topics (the two sides of a join) across members. This
// assignor, like Kafka Streams' StreamsPartitionAssignor, assigns whole
// tasks:
//
//   - balanced: active task counts differ by at most one among members;
//   - sticky: a task stays with its previous owner while balance allows; a
//     task whose owner left goes to a member that had a standby for it or
//     the most local state (Config.Offsets), among balanced choices;
//   - standbys (Config.Standbys per stateful task) on members other than
//     the active owner, balanced as well;
//   - cooperative (KIP-429): a task moving from member A to member B is
//     first taken from A, and given to B only in the next rebalance (which
//     A's revoke triggers), so its partitions are never owned twice.
//
// Every member joins with a kmsg.ConsumerMemberMetadata (v3) whose UserData
// carries this package's versioned encoding of the member's endpoint,
// previous tasks and local state offsets. The leader answers each member
// with a kmsg.ConsumerMemberAssignment of its active tasks' partitions whose
// UserData carries its standby tasks, the endpoint -> active tasks map of
// the whole group (for interactive queries) and, when the leader could not
// assign (co-partitioning violated, source topic missing), an error message
// that reaches every member through Config.OnAssign.
//
// Files: task.go (Task and topology), codec.go (user data encodings),
// place.go (the deterministic placement core, no IO), balancer.go (the
// kgo.GroupBalancer glue). There are no goroutines; the balancer's only
// mutable state (the standbys of the last assignment) is under a mutex.
package assign
