// Package brokertest starts Runnel brokers for tests, on loopback, each
// with a temporary data directory, stopped when the test ends.
//
// In this process:
//
//   - Start starts one node on a free port (StartWith with a full
//     broker.Config);
//   - StartCluster starts N nodes that form one cluster over a Raft
//     metadata quorum, every node a voter; Stop and Restart act on one
//     node (Restart keeps its directory and controller address).
//
// As child processes (`runnel broker`), for tests that SIGKILL a node,
// freeze it or cut it off:
//
//   - BuildRunnel builds cmd/runnel once per test binary; the package's
//     TestMain calls Main, which removes the binary after the tests:
//
//     func TestMain(m *testing.M) { brokertest.Main(m) }
//
//   - StartProcesses starts N nodes (node.id 1..N), each with its own
//     Kafka, controller and HTTP port and data directory, and returns once
//     every node answers /readyz. Kill (SIGKILL), Stop (SIGTERM, clean exit
//     required), Signal and Restart (same ports and directory) act on one
//     node; Seeds are the running nodes' addresses. Each node logs to its
//     LogPath, whose tail is printed when the test fails. ProcessOptions'
//     Advertise and Voters hooks let a test put proxies between clients,
//     replicas and the quorum (integration/cluster does).
//
// A Processes' methods are for the test goroutine; Seeds and Running may
// be called from any goroutine.
package brokertest
