package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// resetMode is where reset-offsets moves a group's offsets.
type resetMode int

const (
	toEarliest resetMode = iota + 1 // the log start offset
	toLatest                        // the log end offset
	toOffset                        // an absolute offset, clamped to the log
	toDatetime                      // the first record at or after a time
	shiftBy                         // the committed offset plus n, clamped to the log
	toCurrent                       // the committed offset, else the log end
)

// resetSpec is the parsed mode flag of reset-offsets.
type resetSpec struct {
	mode resetMode
	n    int64 // offset, shift or unix milliseconds, by mode
}

// partitionOffsets is what the plan of one partition is computed from.
type partitionOffsets struct {
	committed  int64 // -1: nothing committed
	start, end int64 // the log start and end offsets
	atTime     int64 // toDatetime: first offset at or after the time, -1 if none
}

// planOffset computes a partition's new offset as kafka-consumer-groups
// does: absolute and shifted offsets are clamped to [start, end] with a
// warning, a time after the last record gives the end, and --to-current
// without a committed offset gives the end.
func planOffset(s resetSpec, o partitionOffsets) (next int64, warning string, err error) {
	switch s.mode {
	case toEarliest:
		return o.start, "", nil
	case toLatest:
		return o.end, "", nil
	case toCurrent:
		if o.committed < 0 {
			return o.end, "", nil
		}
		return o.committed, "", nil
	case toDatetime:
		if o.atTime < 0 {
			// kadm's ListOffsetsAfterMilli already answers the
			// end for a time after the last record; a bare -1
			// from a broker means the same.
			return o.end, "", nil
		}
		return o.atTime, "", nil
	case toOffset:
		next = s.n
	case shiftBy:
		if o.committed < 0 {
			return 0, "", errors.New("the group has no committed offset to shift from; pick another mode, e.g. --to-earliest")
		}
		next = o.committed + s.n
	default:
		return 0, "", fmt.Errorf("unknown reset mode %d", s.mode)
	}
	switch {
	case next > o.end:
		return o.end, fmt.Sprintf("offset %d is past the log end; using %d", next, o.end), nil
	case next < o.start:
		return o.start, fmt.Sprintf("offset %d is before the log start; using %d", next, o.start), nil
	}
	return next, "", nil
}

// parseDatetime parses --to-datetime like Kafka's tool: ISO-8601 with a
// 'T', seconds with an optional fraction, and an optional zone (Z, +hh,
// +hhmm, +hh:mm); without a zone the time is UTC.
func parseDatetime(s string) (time.Time, error) {
	// Go accepts a fractional second after the seconds field even
	// when the layout has none.
	for _, layout := range []string{
		"2006-01-02T15:04:05Z07:00",
		"2006-01-02T15:04:05Z0700",
		"2006-01-02T15:04:05Z07",
	} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	if t, err := time.ParseInLocation("2006-01-02T15:04:05", s, time.UTC); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("--to-datetime %q: want an ISO-8601 time like 2026-12-02T10:00:00Z, 2026-12-02T10:00:00.000+01:00 or 2026-12-02T10:00:00 (UTC)", s)
}

type resetFlags struct {
	group                string
	topics               []string
	allTopics            bool
	toEarliest, toLatest bool
	toCurrent            bool
	toOffset, shiftBy    int64
	toDatetime           string
	execute, dryRun      bool
}

func (gc *groupCmd) resetOffsetsCmd() *cobra.Command {
	var f resetFlags
	cmd := &cobra.Command{
		Use:   "reset-offsets --group G (--topic T[:P,P...]... | --all-topics) MODE [--execute]",
		Short: "Move a group's committed offsets (dry run unless --execute)",
		Long: `Move an inactive group's committed offsets, like kafka-consumer-groups
--reset-offsets. Pick the partitions with --topic (all of a topic's partitions,
or TOPIC:P,P...; repeatable) or --all-topics (every partition the group has
committed), and exactly one MODE:

  --to-earliest         the log start
  --to-latest           the log end
  --to-offset N         offset N (clamped to the log start and end)
  --to-datetime TIME    the first record at or after TIME (ISO-8601; no zone is UTC)
  --shift-by N          the committed offset plus N, N may be negative (clamped)
  --to-current          the committed offset (the log end where none)

Without --execute nothing changes: the plan is printed (a dry run). Kafka
resets offsets only of groups without active members: stop the consumers first.
A group that does not exist yet is created with the new offsets.`,
		Example: `  runnel group reset-offsets -g billing --topic orders --to-earliest            # dry run
  runnel group reset-offsets -g billing --topic orders --to-earliest --execute
  runnel group reset-offsets -g billing --topic orders:0,2 --shift-by -100 --execute
  runnel group reset-offsets -g billing --all-topics --to-datetime 2026-12-02T10:00:00Z --execute`,
		Args: exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, args []string) error {
			spec, specs, err := f.parse(cmd)
			if err != nil {
				return err
			}
			return gc.admin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				return runReset(ctx, adm, cmd, &f, spec, specs)
			})
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.group, "group", "g", "", "the consumer group (required)")
	fl.StringArrayVar(&f.topics, "topic", nil, "reset this topic's partitions, or TOPIC:P,P... (repeatable)")
	fl.BoolVar(&f.allTopics, "all-topics", false, "reset every partition the group has committed an offset for")
	fl.BoolVar(&f.toEarliest, "to-earliest", false, "reset to the log start")
	fl.BoolVar(&f.toLatest, "to-latest", false, "reset to the log end")
	fl.BoolVar(&f.toCurrent, "to-current", false, "reset to the committed offset (the log end where none)")
	fl.Int64Var(&f.toOffset, "to-offset", 0, "reset to this offset (clamped to the log)")
	fl.StringVar(&f.toDatetime, "to-datetime", "", "reset to the first record at or after this ISO-8601 time, e.g. 2026-12-02T10:00:00Z")
	fl.Int64Var(&f.shiftBy, "shift-by", 0, "move the committed offset by N, e.g. -100 (clamped to the log)")
	fl.BoolVar(&f.execute, "execute", false, "commit the new offsets (default: only print the plan)")
	fl.BoolVar(&f.dryRun, "dry-run", false, "only print the plan (the default without --execute)")
	return cmd
}

// parse checks the flag combination and returns the mode and partitions.
func (f *resetFlags) parse(cmd *cobra.Command) (resetSpec, []topicSpec, error) {
	var modes []string
	var spec resetSpec
	fl := cmd.Flags()
	for _, m := range []struct {
		flag string
		mode resetMode
	}{
		{"to-earliest", toEarliest}, {"to-latest", toLatest}, {"to-offset", toOffset},
		{"to-datetime", toDatetime}, {"shift-by", shiftBy}, {"to-current", toCurrent},
	} {
		if fl.Changed(m.flag) {
			modes = append(modes, "--"+m.flag)
			spec.mode = m.mode
		}
	}
	switch {
	case f.group == "":
		return spec, nil, errors.New("missing --group: which group's offsets to reset")
	case len(modes) == 0:
		return spec, nil, errors.New("missing a mode: pass one of --to-earliest, --to-latest, --to-offset N, --to-datetime TIME, --shift-by N, --to-current")
	case len(modes) > 1:
		return spec, nil, fmt.Errorf("%s: pass exactly one mode", strings.Join(modes, " and "))
	case len(f.topics) == 0 && !f.allTopics:
		return spec, nil, errors.New("missing partitions: pass --topic TOPIC[:P,P...] (repeatable) or --all-topics")
	case len(f.topics) > 0 && f.allTopics:
		return spec, nil, errors.New("--topic and --all-topics: pass one of them")
	case f.execute && f.dryRun:
		return spec, nil, errors.New("--execute and --dry-run: pass one of them")
	}
	switch spec.mode {
	case toOffset:
		if f.toOffset < 0 {
			return spec, nil, fmt.Errorf("--to-offset %d: want an offset of 0 or more", f.toOffset)
		}
		spec.n = f.toOffset
	case shiftBy:
		spec.n = f.shiftBy
	case toDatetime:
		t, err := parseDatetime(f.toDatetime)
		if err != nil {
			return spec, nil, err
		}
		spec.n = t.UnixMilli()
	case toEarliest, toLatest, toCurrent:
		// --to-latest=false names a mode and turns it off: refuse it
		// rather than guess what was meant.
		if !f.toEarliest && !f.toLatest && !f.toCurrent {
			return spec, nil, fmt.Errorf("%s=false: pass the mode you want instead", modes[0])
		}
	}
	specs, err := parseTopicSpecs(f.topics)
	return spec, specs, err
}

// resetRow is one line of the plan.
type resetRow struct {
	topic     string
	partition int32
	current   int64 // -1: nothing committed
	next      int64
}

func runReset(ctx context.Context, adm *kadm.Client, cmd *cobra.Command, f *resetFlags, spec resetSpec, specs []topicSpec) error {
	found, errs, err := describeGroups(ctx, adm, []string{f.group})
	switch {
	case err != nil:
		return err
	case len(found) == 1 && found[0].State != "Empty" && found[0].State != "Dead":
		return activeMembersError(f.group, found[0].State, len(found[0].Members),
			"Kafka resets the offsets only of a group without active members")
	case len(found) == 0 && !errors.Is(errors.Join(errs...), errGroupMissing):
		return errors.Join(errs...)
	}
	committed, err := adm.FetchOffsets(ctx, f.group)
	switch {
	case errors.Is(err, kerr.GroupIDNotFound):
		// Kafka 4's coordinator answers so for a group without
		// offsets; older ones answer with no offsets.
		committed = nil
	case err != nil:
		return kafkaErr(fmt.Errorf("fetching the offsets of group %q: %w", f.group, err), "")
	}
	parts, err := resetPartitions(ctx, adm, f.group, committed, specs)
	if err != nil {
		return err
	}
	topics := parts.Topics()
	starts, err := adm.ListStartOffsets(ctx, topics...)
	if err != nil {
		return err
	}
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		return err
	}
	var atTime kadm.ListedOffsets
	if spec.mode == toDatetime {
		if atTime, err = adm.ListOffsetsAfterMilli(ctx, spec.n, topics...); err != nil {
			return err
		}
	}

	var rows []resetRow
	stderr := cmd.ErrOrStderr()
	for _, t := range parts.Sorted() {
		for _, p := range t.Partitions {
			o := partitionOffsets{committed: -1, atTime: -1}
			if c, ok := committed.Lookup(t.Topic, p); ok && c.Err == nil && c.At >= 0 {
				o.committed = c.At
			}
			if o.start, err = listedOffset(starts, t.Topic, p); err != nil {
				return err
			}
			if o.end, err = listedOffset(ends, t.Topic, p); err != nil {
				return err
			}
			if spec.mode == toDatetime {
				if o.atTime, err = listedOffset(atTime, t.Topic, p); err != nil {
					return err
				}
			}
			next, warning, err := planOffset(spec, o)
			if err != nil {
				return fmt.Errorf("%s[%d]: %w", t.Topic, p, err)
			}
			if warning != "" {
				fmt.Fprintf(stderr, "warning: %s[%d]: %s\n", t.Topic, p, warning)
			}
			rows = append(rows, resetRow{t.Topic, p, o.committed, next})
		}
	}
	if err := printResetPlan(cmd.OutOrStdout(), f.group, rows); err != nil {
		return err
	}
	if !f.execute {
		fmt.Fprintf(stderr, "Dry run: nothing was committed; pass --execute to commit the new %s.\n", plural(len(rows), "offset"))
		return nil
	}
	return commitReset(ctx, adm, stderr, f.group, rows)
}

// resetPartitions resolves --topic and --all-topics to partitions.
func resetPartitions(ctx context.Context, adm *kadm.Client, group string, committed kadm.OffsetResponses, specs []topicSpec) (kadm.TopicsSet, error) {
	set := make(kadm.TopicsSet)
	if len(specs) == 0 { // --all-topics
		for _, o := range committed.Sorted() {
			if o.Err == nil && o.At >= 0 {
				set.Add(o.Topic, o.Partition)
			}
		}
		if len(set) == 0 {
			return nil, fmt.Errorf("group %q has no committed offsets to reset; name the partitions with --topic", group)
		}
		return set, nil
	}
	var names []string
	for _, s := range specs {
		names = append(names, s.topic)
	}
	names = slices.Compact(slices.Sorted(slices.Values(names)))
	tds, err := adm.ListTopicsWithInternal(ctx, names...)
	if err != nil {
		return nil, err
	}
	for _, s := range specs {
		td, ok := tds[s.topic]
		switch {
		case !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition):
			return nil, topicMissing(s.topic)
		case td.Err != nil:
			return nil, kafkaErr(fmt.Errorf("topic %q: %w", s.topic, td.Err), "")
		}
		all := td.Partitions.Numbers()
		slices.Sort(all)
		if s.partitions == nil {
			set.Add(s.topic, all...)
			continue
		}
		for _, p := range s.partitions {
			if err := checkPartition(s.topic, all, p); err != nil {
				return nil, err
			}
		}
		set.Add(s.topic, s.partitions...)
	}
	return set, nil
}

func printResetPlan(w io.Writer, group string, rows []resetRow) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "GROUP\tTOPIC\tPARTITION\tCURRENT-OFFSET\tNEW-OFFSET")
	for _, r := range rows {
		cur := "-"
		if r.current >= 0 {
			cur = fmt.Sprint(r.current)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%d\n", group, r.topic, r.partition, cur, r.next)
	}
	return tw.Flush()
}

// commitReset commits the plan with an OffsetCommit outside any generation,
// which Kafka accepts only while the group has no members.
func commitReset(ctx context.Context, adm *kadm.Client, stderr io.Writer, group string, rows []resetRow) error {
	os := make(kadm.Offsets)
	for _, r := range rows {
		os.Add(kadm.Offset{Topic: r.topic, Partition: r.partition, At: r.next, LeaderEpoch: -1})
	}
	rs, err := adm.CommitOffsets(ctx, group, os)
	if err != nil {
		return kafkaErr(fmt.Errorf("committing the offsets of group %q: %w", group, err), "")
	}
	var errs []error
	n := 0
	for _, r := range rs.Sorted() {
		switch {
		case r.Err == nil:
			n++
		case errors.Is(r.Err, kerr.UnknownMemberID), errors.Is(r.Err, kerr.IllegalGeneration), errors.Is(r.Err, kerr.RebalanceInProgress):
			errs = append(errs, fmt.Errorf("group %q gained members while resetting (%w); stop them and run the reset again", group, r.Err))
		default:
			errs = append(errs, kafkaErr(fmt.Errorf("committing %s[%d] for group %q: %w", r.Topic, r.Partition, group, r.Err), ""))
		}
	}
	if n > 0 {
		fmt.Fprintf(stderr, "Committed %d new %s for group %q.\n", n, plural(n, "offset"), group)
	}
	return errors.Join(slices.CompactFunc(errs, func(a, b error) bool { return a.Error() == b.Error() })...)
}
