package main

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestTopicLifecycle(t *testing.T) {
	c := newCLI(t)

	if got, want := c.ok("", "topic", "create", "orders", "-p", "3", "-r", "1", "-c", "retention.ms=60000"),
		"Created topic \"orders\" with 3 partitions, replication factor 1.\n"; got != want {
		t.Errorf("create: got %q, want %q", got, want)
	}
	err := c.fail("", "topic", "create", "orders")
	if !strings.Contains(err.Error(), `topic "orders" already exists`) || !strings.Contains(err.Error(), "--if-not-exists") {
		t.Errorf("create existing: got %q, want it to say the topic exists and suggest --if-not-exists", err)
	}
	if got := c.ok("", "topic", "create", "orders", "--if-not-exists"); got != "" {
		t.Errorf("create --if-not-exists on an existing topic printed %q, want nothing", got)
	}
	if got := c.ok("", "topic", "create", "dry", "-p", "2", "--validate-only"); !strings.Contains(got, "validate only") {
		t.Errorf("validate-only: got %q", got)
	}
	c.ok("", "topic", "create", "logs", "-p", "1")

	rows := table(c.ok("", "topic", "list"))
	wantRows := [][]string{{"TOPIC", "PARTITIONS", "REPLICAS"}, {"logs", "1", "1"}, {"orders", "3", "1"}}
	if !slices.EqualFunc(rows, wantRows, slices.Equal) {
		t.Errorf("list: got %q, want %q (and no topic \"dry\" from --validate-only)", rows, wantRows)
	}

	c.ok("a\nb\nc\nd\n", "produce", "orders", "-p", "1")
	desc := c.ok("", "topic", "describe", "orders")
	ls := lines(desc)
	if len(ls) != 6 {
		t.Fatalf("describe: got %d lines, want 6:\n%s", len(ls), desc)
	}
	if !strings.HasPrefix(ls[0], "Topic: orders\t") || !strings.Contains(ls[0], "Partitions: 3") || !strings.Contains(ls[0], "ReplicationFactor: 1") {
		t.Errorf("describe header: %q", ls[0])
	}
	if ls[1] != "Configs: retention.ms=60000" {
		t.Errorf("describe configs: got %q, want the one override", ls[1])
	}
	parts := table(strings.Join(ls[2:], "\n"))
	node := "?" // the one broker's node id, whatever it is
	if len(parts) > 1 && len(parts[1]) > 1 {
		node = parts[1][1]
	}
	wantParts := [][]string{
		{"PARTITION", "LEADER", "REPLICAS", "ISR", "LOG-START", "LOG-END"},
		{"0", node, node, node, "0", "0"},
		{"1", node, node, node, "0", "4"},
		{"2", node, node, node, "0", "0"},
	}
	if !slices.EqualFunc(parts, wantParts, slices.Equal) {
		t.Errorf("describe partitions: got %q, want %q", parts, wantParts)
	}

	if got, want := c.ok("", "topic", "alter", "orders", "-c", "cleanup.policy=compact", "--delete-config", "retention.ms", "-p", "5"),
		"Altered topic \"orders\": set cleanup.policy=compact, deleted retention.ms, partitions 3 -> 5.\n"; got != want {
		t.Errorf("alter: got %q, want %q", got, want)
	}
	desc = c.ok("", "topic", "describe", "orders")
	if !strings.Contains(desc, "Partitions: 5") || !strings.Contains(desc, "\nConfigs: cleanup.policy=compact\n") {
		t.Errorf("describe after alter:\n%s", desc)
	}
	if err := c.fail("", "topic", "alter", "orders", "-p", "2"); !strings.Contains(err.Error(), "can only add partitions") {
		t.Errorf("shrinking: got %q", err)
	}
	if err := c.fail("", "topic", "alter", "orders"); !strings.Contains(err.Error(), "nothing to alter") {
		t.Errorf("alter without changes: got %q", err)
	}
	if err := c.fail("", "topic", "alter", "nope", "-c", "retention.ms=1"); !errors.Is(err, errTopicMissing) {
		t.Errorf("alter missing topic: got %v, want errTopicMissing", err)
	}

	// describe prints what exists and fails for what does not.
	out, _, err := c.run("", "topic", "describe", "nope", "logs")
	if !errors.Is(err, errTopicMissing) || !strings.Contains(err.Error(), `topic "nope" does not exist`) {
		t.Errorf("describe missing: got %v", err)
	}
	if !strings.HasPrefix(out, "Topic: logs\t") {
		t.Errorf("describe missing+existing printed %q, want the existing topic", out)
	}

	if got, want := c.ok("", "topic", "delete", "orders", "logs"), "Deleted topic \"logs\".\nDeleted topic \"orders\".\n"; got != want {
		t.Errorf("delete: got %q, want %q", got, want)
	}
	err = c.fail("", "topic", "delete", "orders")
	if !errors.Is(err, errTopicMissing) || !strings.Contains(err.Error(), "--if-exists") {
		t.Errorf("delete missing: got %v, want errTopicMissing suggesting --if-exists", err)
	}
	c.ok("", "topic", "delete", "orders", "--if-exists")
	if rows := table(c.ok("", "topic", "list")); len(rows) != 1 {
		t.Errorf("list after delete: got %q, want only the header", rows)
	}
}

func TestTopicCreateErrors(t *testing.T) {
	c := newCLI(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"topic", "create", "x", "-r", "3"}, "replication-factor"},
		{[]string{"topic", "create", "x", "-c", "novalue"}, "want key=value"},
		{[]string{"topic", "create"}, "missing NAME"},
		{[]string{"topic", "create", "a", "b"}, "too many arguments"},
		{[]string{"topic", "create", "x", "--bogus"}, "unknown flag"},
		{[]string{"topic", "describe"}, "missing NAME"},
	} {
		if err := c.fail("", tc.args...); !strings.Contains(err.Error(), tc.want) {
			t.Errorf("runnel %s: got %q, want it to mention %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
}

func TestUnreachableBroker(t *testing.T) {
	c := &cli{t: t, addr: "127.0.0.1:1"}
	err := c.fail("", "topic", "list")
	if !strings.Contains(err.Error(), "cannot reach brokers 127.0.0.1:1") || !strings.Contains(err.Error(), "--brokers") {
		t.Errorf("got %q, want it to name the address and the flag", err)
	}
}

func TestRunExitCode(t *testing.T) {
	addr := startTestBroker(t)
	var out, errb strings.Builder
	if code := run(t.Context(), []string{"-b", addr, "topic", "describe", "nope"}, strings.NewReader(""), &out, &errb); code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	if want := "runnel: topic \"nope\" does not exist"; !strings.HasPrefix(errb.String(), want) {
		t.Errorf("stderr %q, want prefix %q", errb.String(), want)
	}
	errb.Reset()
	if code := run(t.Context(), []string{"-b", addr, "topic", "list"}, strings.NewReader(""), &out, &errb); code != 0 || errb.Len() != 0 {
		t.Errorf("topic list: exit code %d, stderr %q", code, errb.String())
	}
}
