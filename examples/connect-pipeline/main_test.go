package main

import (
	"context"
	"encoding/json"
	"maps"
	"strings"
	"testing"
	"time"
)

// TestConnectPipeline runs the example with its config files against its
// embedded broker, in a temporary directory, and checks the output file it
// prints: every order once, in order, its card masked by the source and
// the topic, partition and offset added by the sink.
func TestConnectPipeline(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out strings.Builder
	if err := run(ctx, "", ".", t.TempDir(), orders, &out); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out.String())

	_, output, ok := strings.Cut(out.String(), "\noutput (orders-out.jsonl)")
	if !ok {
		t.Fatalf("no output section:\n%s", out.String())
	}
	var got []string
	for _, line := range strings.Split(output, "\n")[1:] {
		if line = strings.TrimSpace(line); line != "" {
			got = append(got, line)
		}
	}
	if len(got) != len(orders) {
		t.Fatalf("%d output lines, want %d:\n%s", len(got), len(orders), out.String())
	}
	for i, line := range got {
		var in, o map[string]any
		if err := json.Unmarshal([]byte(orders[i]), &in); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(line), &o); err != nil {
			t.Fatalf("output line %d is not JSON: %v: %s", i, err, line)
		}
		want := maps.Clone(in)
		want["card"] = "****"
		want["topic"] = "pipeline-orders"
		want["partition"] = float64(0)
		want["offset"] = float64(i)
		if !maps.Equal(o, want) {
			t.Errorf("output line %d:\n  %s\nwant (from %s):\n  %v", i, line, orders[i], want)
		}
		if card := in["card"].(string); strings.Contains(output, card) {
			t.Errorf("card %s of order %d is in the output", card, i)
		}
	}
}
