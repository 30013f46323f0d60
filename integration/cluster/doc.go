// Package cluster holds the fault tests of a Runnel cluster: brokers run as
// child processes (`runnel broker`, brokertest.StartProcesses) that a test
// SIGKILLs, stops and restarts, and cuts off with TCP fault proxies, while
// franz-go producers and consumers run a workload whose whole history is
// checked at the end.
//
// The machinery, all in test files of this package:
//
//   - procs_test.go: startCluster(t, n, settings) starts n nodes on
//     loopback with brokertest.StartProcesses (node.id 1..n, each with its
//     own Kafka, controller and HTTP port and log dir; per-node log files
//     whose tails are printed when the test fails; Kill, Stop, Signal and
//     Restart on one node, Restart reusing its ports and dir).
//     withKafkaProxies puts a fault proxy in front of each node's Kafka
//     listener and advertises it (ProcessOptions.Advertise), so a test can
//     cut a node off.
//   - isolate_test.go: withQuorumProxies gives each node's Raft a proxy
//     per peer (per-node controller.quorum.voters, ProcessOptions.Voters),
//     withDirectClients lets the test's clients go around the Kafka
//     proxies (directTo), and Isolate/Rejoin cut a node off from the
//     replicas and the quorum while clients still reach it.
//   - faultproxy_test.go: a TCP proxy between a client and a target that
//     can Cut (close and refuse), Blackhole (stall, drop bytes) and Heal.
//   - workload_test.go: k idempotent acks=all producers writing numbered
//     values and recording every acknowledged and failed record; consumers
//     (assigned partitions, or a consumer group) recording every record
//     read and flagging offsets that do not increase within a session;
//     failover times per partition after an event such as a leader kill.
//   - check_test.go: check(history) reads nothing and decides: every
//     acknowledged record is in the final read at its acknowledged offset,
//     no value is stored twice, no offset held two values, no consumer saw
//     offsets go backwards; readBack reads a topic to its high watermark;
//     a poller that flags committed group offsets going backwards.
//
// Scenarios it will host once replication and the Raft metadata quorum are
// wired (today only a single node with replication factor 1 works, and
// TestSingleNodeKillNoLoss and TestSingleNodeClientsCutOff prove the
// machinery there):
//
//   - a three-node cluster, RF=3, min.insync.replicas=2: SIGKILL the leader
//     of each partition in turn under load; no acknowledged write is lost,
//     failover times (median, max) are reported;
//   - SIGKILL of the active controller; of a follower; of two nodes at once
//     (writes stop with NOT_ENOUGH_REPLICAS, nothing acknowledged is lost);
//   - a leader cut off by a fault proxy, then healed: it must truncate its
//     divergent tail, and consumers must never see an offset hold two
//     values;
//   - rolling restarts with SIGTERM (controlled shutdown) under load;
//   - consumer groups whose coordinator is killed: committed offsets never
//     go backwards.
package cluster
