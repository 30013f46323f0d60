// Package controller is the KRaft active controller's decision logic as a
// deterministic core: broker registration, heartbeats and fencing, leader
// election from the ISR (unclean when allowed), controlled shutdown,
// AlterPartition validation, preferred leader election and automatic
// leader rebalancing, and replica placement.
//
// Like broker/internal/group it has no goroutines, clocks or IO, in the
// manner of etcd's RawNode: every call takes the newest metadata image
// (metadata.Image) and, where time matters, the current time, and returns
// a reply and the metadata.Records to propose to the quorum. Pure parts
// are plain functions: [AlterPartition], [ElectLeader], [Place]. The state
// that is not in the image (each broker's session deadline, the next
// rebalance check) lives in a [Controller], which one owner drives.
//
// # Use (by the active controller's owner, on the quorum leader)
//
//	c := controller.New(controller.Config{SessionTimeout: ..., ...})
//	reply, recs, err := c.Register(im, now, controller.Registration{...})
//	reply, recs, err := c.Heartbeat(im, now, controller.Heartbeat{...})
//	recs := c.Tick(im, now)                        // every ~100 ms–1 s
//	state, rec, err := controller.AlterPartition(im, req)
//	change, err := controller.ElectLeader(im, topic, p, controller.Preferred)
//	replicas, err := controller.Place(brokers, controller.Placement{...})
//
// The owner must
//
//  1. start a Controller when its node becomes the quorum leader, after
//     the leader has applied every committed entry (a raft barrier, or a
//     Sync), and drop it when the leadership ends; a new Controller gives
//     every unfenced broker a full session from its first Tick, as a newly
//     elected Kafka controller does;
//  2. serialize the calls, and pass each one an image that includes every
//     record an earlier call returned (apply them to the image it keeps
//     while their proposal is in flight, as Kafka's controller keeps its
//     uncommitted state), so no decision is made on state the controller
//     itself already changed;
//  3. propose each call's records as one quorum entry (all or none), and
//     answer the request only once they are committed (a heartbeat that
//     unfences, a registration, an AlterPartition). If the entry is
//     refused (metadata.ErrStaleEpoch: something else changed the image
//     meanwhile) or lost, rebuild the image from the quorum's and go on;
//     brokers retry their heartbeats and AlterPartition, and Tick redoes
//     what a lost batch did.
//
// Records are checked as they are made: each call applies them in order
// to a scratch image, so a batch always applies whole to the image it was
// made from. metadata.Image.Apply refuses a ChangePartition whose
// partition epoch is not newer than the current one, or whose leader or
// (led) ISR holds a broker that is fenced or shutting down, and a
// ChangeBroker of another registration: a change decided on an older
// image is refused rather than applied over a newer state.
//
// # Rules (Kafka's)
//
// Liveness. A broker registers with an incarnation id and gets a broker
// epoch larger than any before (the image offset + 1); it starts fenced. A
// heartbeat renews its session (broker.session.timeout.ms, 9 s by
// default); the first heartbeat whose metadata offset reached its epoch
// (it has applied its own registration) unfences it. Tick fences a broker
// whose session ran out. Stale epochs are refused (STALE_BROKER_EPOCH); a
// new incarnation while the old one's session is alive is
// DUPLICATE_BROKER_REGISTRATION; the same incarnation again gets its
// epoch back. Brokers registered without the controller (epoch 0, the
// server's own registration today) are never fenced.
//
// Election. A broker is usable when registered, unfenced and not in
// controlled shutdown. Unusable brokers leave every ISR, except that an
// ISR never empties: its last member (the last leader) stays, so that a
// partition that lost every in-sync replica goes offline (leader -1) and
// gets its leader back, with no data lost, when that broker returns. A
// leader that is not a usable ISR member is replaced by the first usable
// ISR member in replica order; with none, by the first usable replica if
// unclean.leader.election.enable holds for the topic (its config, else the
// cluster-wide dynamic default, else the static one), the ISR reset to
// it; else the partition is offline. Every change bumps the partition
// epoch; every change of leader (to -1 too) the leader epoch.
//
// Controlled shutdown. A heartbeat with WantShutdown marks the broker in
// controlled shutdown: leadership moves to other ISR members, it leaves
// every ISR (an ISR where it is the last member keeps it, offline), and
// the reply's ShouldShutDown says once it leads nothing. Its session's end
// (or a new registration) fences it and ends the shutdown state.
//
// AlterPartition. The leader's ISR proposal is accepted only with its
// broker epoch, the current leader epoch (else FENCED_LEADER_EPOCH) and
// partition epoch (else INVALID_UPDATE_VERSION), from the leader, with an
// ISR that is a subset of the replicas holding the leader (else
// INVALID_REQUEST), of usable brokers only (else INELIGIBLE_REPLICA).
//
// ElectLeaders and rebalance. PREFERRED makes the first replica the
// leader if it is usable and in the ISR (else
// PREFERRED_LEADER_NOT_AVAILABLE; ELECTION_NOT_NEEDED if it leads). UNCLEAN
// elects a leader for a partition without a usable one, ignoring the
// topic config (ELIGIBLE_LEADERS_NOT_AVAILABLE if no replica is usable).
// With auto.leader.rebalance.enable, Tick checks every
// leader.imbalance.check.interval.seconds, and for each broker whose
// share of preferred partitions led by others is above
// leader.imbalance.per.broker.percentage runs the preferred elections
// that can succeed.
//
// Placement. [Place] is Kafka's rack-aware assignment (see its doc): even
// leaders and replicas, one replica per rack while racks allow, fenced and
// shutting-down brokers skipped, INVALID_REPLICATION_FACTOR when the
// replication factor exceeds the usable brokers. The server's CreateTopics
// and CreatePartitions use it.
//
// Errors are the package's sentinels ([ErrStaleBrokerEpoch] ...), each
// wrapping the *kerr.Error a Kafka client gets, so errors.As finds the
// code and errors.Is names the case.
//
// # Transport
//
// Brokers reach the active controller with quorum.Quorum.CallLeader, an
// opaque request/response RPC on the controller port that the leader
// answers with the handler it registered (quorum.Quorum.HandleCalls),
// retried across leader changes. Its payload is a [Request] (registration,
// heartbeat or AlterPartition) and its answer a [Response], JSON
// (wire.go); a refusal travels as its Kafka code and comes back as the
// same sentinel (Response.Err).
//
// # Files
//
//	controller.go       Config, Controller, Tick, the election rule (rebuild)
//	liveness.go         Register, Heartbeat (fencing, unfencing, controlled shutdown)
//	alter_partition.go  AlterPartition
//	election.go         ElectLeader (PREFERRED, UNCLEAN), the auto rebalance
//	placement.go        Place, StartOf
//	errors.go           the sentinels and their Kafka errors
//	wire.go             Request and Response, the payloads of quorum.CallLeader
package controller
