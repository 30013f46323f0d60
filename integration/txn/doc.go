// Package txn holds the acceptance test of Kafka transactions in Runnel
// (issue 5): exactly-once under failures. A consume-transform-produce
// pipeline — franz-go GroupTransactSessions in child processes, each
// copying records of an input topic, read committed, to an output topic
// in one transaction per poll — copies N pre-filled records while a
// seeded chaos loop SIGKILLs pipeline members (restarting them with the
// same transactional id, which fences the dead one) and brokers of a
// three-node cluster (restarting them on their data directories, one at a
// time, so that two of three nodes always run). At the end the output
// read with read_committed must hold every input value exactly once and
// no aborted record, read with read_uncommitted every value at least once
// (the aborted copies it also shows are counted and logged), and the
// group's committed offsets must be the input's end offsets.
//
// Brokers are `runnel broker` processes (brokertest.StartProcesses);
// pipeline members are this test binary started again
// (groupmember.StartProcess with Config.Output; TestMain hands over to
// groupmember.MainIfChild).
//
// Knobs, from the environment: RUNNEL_TXN_RECORDS (N, see
// defaultRecords), RUNNEL_TXN_SEED (the chaos loop's seed; a new one,
// logged, by default).
//
// Files: eos_test.go (the test), cluster_test.go (the cluster, its
// topics and health), pipeline_test.go (the members), chaos_test.go (the
// kills), read_test.go (filling the input, reading a topic back),
// check_test.go (deciding each output record's fate from the markers and
// checking the copies; check_self_test.go tests it on made-up logs).
package txn
