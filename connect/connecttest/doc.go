// Package connecttest holds helpers for tests of the Connect runtime and
// its connectors. Like broker/brokertest it is imported only by tests;
// every helper takes the test's testing.TB and fails the test on an
// error.
//
//   - StartWorker starts a standalone worker in this process against
//     brokers (brokertest starts them), with its REST API on a free
//     loopback port and its offsets in a file of a directory, so that a
//     worker started again on that directory resumes. It is closed when
//     the test ends, if not before. TaskStatus reads a connector's first
//     task's status from it; Logger is the slog logger it logs with.
//   - Call makes a request to a worker's REST API; TryCall is Call for a
//     worker that may be dying or gone (a `runnel connect` process a test
//     kills).
//   - CreateTopic, EndOffset and Consume act on topics with a franz-go
//     client.
//   - AppendLines, ReadLines and WriteFile handle the files that file
//     connectors read and write, and worker config files.
//   - WaitFor polls a condition until it holds or a deadline passes: tests
//     wait on conditions, not for fixed times.
//
// The helpers fail the test with t.Fatal, so they are for the test's own
// goroutine (WaitFor's condition runs on it).
package connecttest
