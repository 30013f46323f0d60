// Package quorum is the controller quorum: the cluster's metadata as a
// replicated log on hashicorp/raft, applied on every voter to the
// immutable metadata.Image.
//
// It is Kafka's KRaft quorum in Runnel's terms: node.id and
// controller.quorum.voters (id@host:port,...) configure it, each voter's
// Raft transport listens on its own voter address (Kafka's CONTROLLER
// listener), and its files live in <log.dirs[0]>/__cluster_metadata/
// (Kafka's name): raft.db (bbolt via raft-boltdb: the Raft log and the
// term/vote) and snapshots/ (raft's file snapshot store, two kept). The
// consensus is hashicorp/raft's; this package adds the state machine, the
// transport's listener sharing and proposal forwarding.
//
// # Use
//
//	q, err := quorum.Open(quorum.Config{NodeID: 1, Voters: voters, Dir: dir})
//	im := q.Watch(func(old, new *metadata.Image) { ... })  // act on im, then on each change
//	q.OnLeadership(func(leader bool) { ... })             // active controller duties
//	err = q.Sync(ctx)                                     // image current before serving
//	err = q.Propose(ctx, metadata.Record{CreateTopic: t}) // any node; applied here on return
//	q.Close()
//
// The API has the shape of metadata.Store (Open, Propose, Image, Watch,
// Close), which the server uses today, so the server switches by opening
// a Quorum instead (see broker/DESIGN.md, "Metadata quorum").
//
// # Lifecycle
//
// Open validates the voters (ids and addresses unique, this node among
// them; an even count is allowed with a warning, as Kafka allows it),
// opens the stores, and either bootstraps or recovers. A node with no Raft
// state bootstraps the configuration of all voters: every voter does so
// with the same list, which raft accepts (identical bootstrap
// configurations agree). A node with state ignores the list: it restores
// its newest snapshot inside Open (so Image is at least the snapshot's)
// and applies the log after it once a leader tells it the commit index.
// Sync waits for that. Changing the voter set is not supported yet.
//
// With no voters configured the node is a quorum of one on raft's
// in-memory transport: no port, the same log, snapshots and API, so a
// single node needs no quorum configuration.
//
// Propose encodes the records as JSON (as the journal does) into one Raft
// entry. On the leader it is raft.Apply, waited for until the leader's FSM
// applied it. On a follower it goes to the leader over the forward RPC
// (forward.go), which answers once the leader applied it, with the entry's
// index; the follower then waits until its own FSM reached that index. So
// on return the proposer's Image shows the change. The FSM applies an
// entry's records all or none; a refused entry (metadata.ErrTopicExists
// ...) changes nothing on any node, uses up its index, and its error comes
// back to the proposer, across the forward RPC too. While no leader is
// known Propose retries with backoff (10 ms doubling to 200 ms); these
// attempts are safe to repeat because the proposal did not enter a log.
// When ctx ends first it returns ErrNoQuorum (and ErrNotCommitted, and
// ctx's error). Once a leader took it, a lost leader or connection gives
// ErrLeadershipLost and an ended ctx ErrNotCommitted: the entry may still
// be committed by a later leader (as with Kafka's REQUEST_TIMED_OUT).
//
// HandOver transfers a leader's leadership to another voter (the server
// calls it before a clean stop, so the quorum does not wait out
// controller.quorum.fetch.timeout.ms). Close shuts raft down (a leader
// just stops; the others elect a new one after that timeout), closes the
// controller listener
// and every connection through it, waits for its goroutines, and closes
// raft.db. It is idempotent.
//
// # The controller port
//
// Raft RPCs, the forward RPC and the call RPC share the voter address:
// the dialer's first byte says which ('R': raft's NetworkTransport stream,
// 'F': one forwarded proposal, 'C': one call). So controller.quorum.voters
// stays Kafka's shape and there is no second port.
//
// # Calls to the leader
//
// CallLeader(ctx, payload) sends opaque bytes to the current leader and
// returns the answer of the handler the leader registered with
// HandleCalls (call.go): brokers reach the active controller this way
// (heartbeats, registrations, AlterPartition; the payloads are
// broker/internal/controller's Request and Response). On the leader the
// handler is called directly. While no leader is known, the node called
// no longer leads, or the leader has no handler yet, it retries with
// Propose's backoff until ctx ends (ErrNoQuorum): the call was not
// handled. A connection lost after sending gives ErrCallLost (it may have
// been handled); a handler's error ErrCallFailed with its text. The port is not authenticated, like a Kafka
// CONTROLLER listener on PLAINTEXT: bind it to a private network.
//
// # Goroutines
//
//   - hashicorp/raft's own (main loop, FSM, snapshots, replication per
//     peer, transport listener and one per inbound raft connection); raft
//     stops them on Shutdown, and the mux closes their connections.
//   - mux accept loop, and one routing goroutine per accepted connection,
//     which becomes the forward RPC's handler for 'F' connections (it
//     waits for the proposal's commit) and runs the call handler for 'C'
//     ones (its ctx ends on Close); mux.close waits for them.
//   - notifyLoop: passes raft's leadership changes to OnLeadership
//     callbacks; stops on Close.
//   - one per proposal Propose makes on the leader, waiting for raft's
//     future while Propose waits on ctx too; it ends when raft answers
//     (commit, step-down or shutdown). Close waits for it.
//
// Watchers run on raft's FSM goroutine, one change at a time, in log
// order; while one runs, nothing else applies. A watcher must not call
// Propose, Sync or Watch (they wait for the FSM: deadlock).
//
// # Lock order
//
// fsm.mu (held while watchers run; Watch takes it to register and read the
// image together) → whatever the watchers take (the server's locks).
// Quorum.leading is held while OnLeadership callbacks run. Quorum.mu
// (closed flag), mux.mu (connection set) and calls.mu (the call handler,
// held only to read or set it) are leaves. The image and the
// applied index are atomics: Image and MetadataOffset take no lock.
//
// # Files
//
//	config.go    Config, voter validation, raft settings, raft's log into slog
//	quorum.go    Open (bootstrap or recover), Close, Image, Watch, Leader, OnLeadership
//	fsm.go       the FSM: Apply, Snapshot/Restore, waitApplied
//	propose.go   Propose, Sync, the leader's apply, the errors
//	forward.go   the forward RPC: follower → leader proposals
//	call.go      the call RPC: CallLeader, HandleCalls
//	mux.go       the controller listener shared by raft, the forward and call RPCs
package quorum
