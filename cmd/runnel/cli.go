package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"
)

// This file holds the argument, flag and output helpers the commands share.

// parseKVs parses repeated key=value flag values.
func parseKVs(flag string, kvs []string) ([][2]string, error) {
	out := make([][2]string, 0, len(kvs))
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%s %q: want key=value", flag, kv)
		}
		out = append(out, [2]string{k, v})
	}
	return out, nil
}

// parseAcks maps --acks to franz-go's setting.
func parseAcks(s string) (kgo.Acks, error) {
	switch s {
	case "all", "-1":
		return kgo.AllISRAcks(), nil
	case "1":
		return kgo.LeaderAck(), nil
	case "0":
		return kgo.NoAck(), nil
	}
	return kgo.Acks{}, fmt.Errorf("--acks %q: want all, 1 or 0", s)
}

// parseCompression maps --compression to franz-go's codec.
func parseCompression(s string) (kgo.CompressionCodec, error) {
	switch s {
	case "none", "":
		return kgo.NoCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	}
	return kgo.CompressionCodec{}, fmt.Errorf("--compression %q: want none, gzip, snappy, lz4 or zstd", s)
}

// producerOpts builds the producer settings shared by produce and perf
// produce. Kafka's idempotent producer needs acks=all, so idempotence is on
// for acks=all unless disabled, and asking for it with other acks is an error.
func producerOpts(acks, compression string, idempotent, idempotentSet bool) ([]kgo.Opt, error) {
	a, err := parseAcks(acks)
	if err != nil {
		return nil, err
	}
	c, err := parseCompression(compression)
	if err != nil {
		return nil, err
	}
	opts := []kgo.Opt{kgo.RequiredAcks(a), kgo.ProducerBatchCompression(c)}
	all := acks == "all" || acks == "-1"
	switch {
	case !all && idempotent && idempotentSet:
		return nil, fmt.Errorf("--idempotent needs --acks all (Kafka's idempotent producer waits for all in-sync replicas); drop one of them")
	case !all || !idempotent:
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	return opts, nil
}

// parseNames parses a comma-separated list of names (such as --state's)
// case-insensitively into their spelling in known, without repeats. bad is
// the first name that is not in known.
func parseNames(s string, known []string) (names []string, bad string) {
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		i := slices.IndexFunc(known, func(k string) bool { return strings.EqualFold(k, part) })
		if i < 0 {
			return nil, part
		}
		if !slices.Contains(names, known[i]) {
			names = append(names, known[i])
		}
	}
	return names, ""
}

// checkOutput checks an -o/--output value.
func checkOutput(output string) error {
	if output != "text" && output != "json" {
		return fmt.Errorf("-o %q: want text or json", output)
	}
	return nil
}

// writeJSON writes v as one line of JSON, as -o json prints each object.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// writeJSONLines writes each of vs with writeJSON.
func writeJSONLines[T any](w io.Writer, vs []T) error {
	for _, v := range vs {
		if err := writeJSON(w, v); err != nil {
			return err
		}
	}
	return nil
}

func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// exactArgs is cobra.ExactArgs with an error that names what is missing.
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		switch {
		case len(args) == n:
			return nil
		case n == 0:
			return fmt.Errorf("%s takes no arguments, got %q", cmd.CommandPath(), args)
		case len(args) < n:
			return fmt.Errorf("missing %s: usage: %s", what, cmd.UseLine())
		}
		return fmt.Errorf("too many arguments %q: usage: %s", args[n:], cmd.UseLine())
	}
}

// minArgs is cobra.MinimumNArgs with an error that names what is missing.
func minArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < n {
			return fmt.Errorf("missing %s: usage: %s", what, cmd.UseLine())
		}
		return nil
	}
}

// isTerminal reports whether f is a character device such as a terminal.
func isTerminal(f any) bool {
	file, ok := f.(*os.File)
	if !ok {
		return false
	}
	fi, err := file.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
