package compat

import (
	"strconv"
	"testing"
	"time"
)

// kcatGroupConsume consumes n records of topic as a member of group with
// `kcat -G` (librdkafka's balanced consumer), starting from the group's
// committed offsets (the earliest when it has none). On exit after n records
// kcat closes the consumer, which commits the offsets after what it printed
// and leaves the group.
func kcatGroupConsume(t *testing.T, kcat, addr, group, topic string, n int) []record {
	t.Helper()
	out := runTool(t, testContext(t, 60*time.Second), nil, kcat,
		"-b", addr, "-G", group, topic, "-c", strconv.Itoa(n), "-q", "-f", kcatFormat,
		"-X", "auto.offset.reset=earliest", "-X", "fetch.wait.max.ms=100")
	return parseKcat(t, out)
}

// TestGroupKafkaJSThenKcat passes a group's position from kafkajs to
// librdkafka: kafkajs consumes the first round in the group and commits, kadm
// reads exactly its commits, and `kcat -G` in the same group resumes with the
// second round only and commits in turn.
func TestGroupKafkaJSThenKcat(t *testing.T) {
	t.Parallel()
	node, script := nodeDriver(t)
	kcat := lookTool(t, "kcat")
	addr := startBroker(t)
	topic := topicName(t)
	group := topic + ".group"
	createTopic(t, addr, topic, groupPartitions)

	r1 := produceRound(t, addr, topic, groupPartitions, 10, "r1")
	req := driverRequest{Brokers: []string{addr}, Topic: topic, Group: group, Count: len(r1)}
	assertConsumedOnce(t, "kafkajs group", runDriver(t, 90*time.Second, req, node, script, "consume").Consumed, r1)
	waitCommitted(t, addr, group, topic, endsOf(r1))
	waitGroupEmpty(t, addr, group)

	r2 := produceRound(t, addr, topic, groupPartitions, 10, "r2")
	assertConsumedOnce(t, "kcat -G resuming from kafkajs's commits", kcatGroupConsume(t, kcat, addr, group, topic, len(r2)), r2)
	waitCommitted(t, addr, group, topic, endsOf(r2))
}

// TestGroupKafkaPython passes a group's position between kafka-python and
// franz-go: kafka-python's KafkaConsumer (group_id) consumes the first round
// and commits, kadm reads exactly its commits, a franz-go member resumes with
// the second round only and commits, and kafka-python resumes with the third.
func TestGroupKafkaPython(t *testing.T) {
	t.Parallel()
	python, script := pythonDriver(t)
	addr := startBroker(t)
	topic := topicName(t)
	group := topic + ".group"
	createTopic(t, addr, topic, groupPartitions)

	r1 := produceRound(t, addr, topic, groupPartitions, 10, "r1")
	req := driverRequest{Brokers: []string{addr}, Topic: topic, Group: group, Count: len(r1)}
	assertConsumedOnce(t, "kafka-python group", runDriver(t, 90*time.Second, req, python, script, "group").Consumed, r1)
	waitCommitted(t, addr, group, topic, endsOf(r1))
	waitGroupEmpty(t, addr, group)

	resumeWithFranzGo(t, addr, group, topic, "kafka-python", produceRound(t, addr, topic, groupPartitions, 10, "r2"))

	r3 := produceRound(t, addr, topic, groupPartitions, 10, "r3")
	req.Count = len(r3)
	assertConsumedOnce(t, "kafka-python resuming from franz-go's commits", runDriver(t, 90*time.Second, req, python, script, "group").Consumed, r3)
	waitCommitted(t, addr, group, topic, endsOf(r3))
}
