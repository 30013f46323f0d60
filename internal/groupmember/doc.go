// Package groupmember runs franz-go consumer-group members for tests and
// benchmarks and records what each one saw: the partitions it was assigned
// and lost, every record it polled, and every offset commit the broker
// acknowledged.
//
// A member runs either in the calling process (Start) or in a child process
// (StartProcess) that a test can SIGKILL. The child is the test binary itself:
// its TestMain calls MainIfChild first, which runs the member and exits when
// the process was started as one. Both run the same loop (Run): poll, report
// the records, commit their offsets synchronously, report the commit, allow
// the next rebalance. With kgo.BlockRebalanceOnPoll no rebalance happens
// between a poll and its commit, so a member that leaves cleanly has
// committed everything it reported, and a killed one has committed
// everything up to its last reported commit.
//
// Files: run.go (Config, events, Run), transact.go (RunTransact),
// member.go (Board, Member, Start), child.go (MainIfChild, StartProcess).
//
// Members report to a Board, which wakes waiters on every change, so tests
// wait for conditions (Board.Wait) instead of sleeping.
package groupmember
