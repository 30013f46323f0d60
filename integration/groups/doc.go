// Package groups runs the seed scenario of issue 3 against a Runnel broker
// with franz-go consumer groups: one topic with four partitions, group A
// with two members, group B with four and then a fifth, members killed with
// SIGKILL in the middle, and checks that every record reaches exactly one
// member of each group (at least one after a kill), in order, with no gap
// across a rebalance.
//
// Members that the test kills run in child processes: the test binary
// started again (TestMain hands over to groupmember.MainIfChild).
//
// RUNNEL_TEST_KFAKE=1 runs the same tests against franz-go's kfake instead,
// to tell a bug in a test from one in the broker; by default, and in
// `make test`, they run against Runnel.
package groups
