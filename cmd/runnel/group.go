package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// This file holds `runnel group` and its list and delete subcommands;
// group_describe.go and group_reset.go hold the other two. They follow
// kafka-consumer-groups.sh: same states, columns and rules (offsets are
// reset only while a group is inactive, only empty groups are deleted).

// groupCmd carries what the group subcommands share.
type groupCmd struct {
	g       *globals
	timeout time.Duration
}

func newGroupCmd(g *globals) *cobra.Command {
	gc := &groupCmd{g: g}
	cmd := &cobra.Command{
		Use:     "group",
		Aliases: []string{"groups"},
		Short:   "List, describe, reset the offsets of, and delete consumer groups",
	}
	cmd.PersistentFlags().DurationVar(&gc.timeout, "timeout", 30*time.Second, "overall deadline for the command")
	cmd.AddCommand(gc.listCmd(), gc.describeCmd(), gc.resetOffsetsCmd(), gc.deleteCmd())
	return cmd
}

// admin runs fn with an admin client and the command's deadline.
func (gc *groupCmd) admin(cmd *cobra.Command, fn func(ctx context.Context, adm *kadm.Client) error) error {
	return gc.g.withClient(cmd, gc.timeout, func(ctx context.Context, cl *kgo.Client) error {
		return fn(ctx, kadm.NewClient(cl))
	})
}

// errGroupMissing is wrapped by every "group does not exist" error.
var errGroupMissing = kerr.GroupIDNotFound

// missingGroupError says a group does not exist and what to do about it.
type missingGroupError struct{ group string }

func (e *missingGroupError) Error() string {
	return fmt.Sprintf("group %q does not exist (see \"runnel group list\")", e.group)
}

func (e *missingGroupError) Unwrap() error { return errGroupMissing }

// classicStates are the states kafka-consumer-groups accepts for --state
// (Kafka parses them case-insensitively). Assigning and Reconciling are
// KIP-848 consumer-group states.
var classicStates = []string{"PreparingRebalance", "CompletingRebalance", "Stable", "Dead", "Empty", "Assigning", "Reconciling"}

// parseStates parses --state's comma-separated list into Kafka's spelling.
func parseStates(s string) ([]string, error) {
	out, bad := parseNames(s, classicStates)
	if bad != "" {
		return nil, fmt.Errorf("--state %q: unknown state %q; want a comma-separated list of Stable, Empty, PreparingRebalance, CompletingRebalance, Dead", s, bad)
	}
	return out, nil
}

// describeGroups describes groups and splits the answer into the groups
// that exist (in the order asked) and errors for the others. Kafka answers
// an unknown group with state Dead (DescribeGroups v0-5) or
// GROUP_ID_NOT_FOUND (v6+).
func describeGroups(ctx context.Context, adm *kadm.Client, groups []string) ([]kadm.DescribedGroup, []error, error) {
	ds, err := adm.DescribeGroups(ctx, groups...)
	if err != nil {
		return nil, nil, err
	}
	var found []kadm.DescribedGroup
	var errs []error
	for _, g := range groups {
		d, ok := ds[g]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("the broker did not describe group %q; try again", g))
		case errors.Is(d.Err, kerr.GroupIDNotFound) || d.Err == nil && d.State == "Dead":
			errs = append(errs, &missingGroupError{g})
		case d.Err != nil:
			errs = append(errs, kafkaErr(fmt.Errorf("describing group %q: %w", g, d.Err), d.ErrMessage))
		default:
			found = append(found, d)
		}
	}
	return found, errs, nil
}

// activeMembersError refuses an operation Kafka allows only on inactive
// groups.
func activeMembersError(group, state string, members int, what string) error {
	return fmt.Errorf("group %q has %d active %s (state %s); stop them first: %s",
		group, members, plural(members, "member"), state, what)
}

func (gc *groupCmd) listCmd() *cobra.Command {
	var states string
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List consumer groups with their state, protocol type and member count",
		Example: `  runnel group list
  runnel group list --state Stable,Empty`,
		Args: exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, args []string) error {
			filter, err := parseStates(states)
			if err != nil {
				return err
			}
			return gc.admin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				listed, err := adm.ListGroups(ctx, filter...)
				if err != nil {
					return err
				}
				ds := make(kadm.DescribedGroups)
				if len(listed) > 0 {
					if ds, err = adm.DescribeGroups(ctx, listed.Groups()...); err != nil {
						return err
					}
				}
				tw := newTable(cmd.OutOrStdout())
				fmt.Fprintln(tw, "GROUP\tSTATE\tPROTOCOL-TYPE\tMEMBERS")
				for _, l := range listed.Sorted() {
					members := "-"
					if d, ok := ds[l.Group]; ok && d.Err == nil {
						members = strconv.Itoa(len(d.Members))
						if l.State == "" { // ListGroups before v4 (Kafka 2.6) has no state
							l.State = d.State
						}
					}
					// Filter here too: ListGroups before v4 ignores the filter.
					if len(filter) > 0 && !slices.Contains(filter, l.State) {
						continue
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", l.Group, dash(l.State), dash(l.ProtocolType), members)
				}
				return tw.Flush()
			})
		},
	}
	cmd.Flags().StringVar(&states, "state", "", "only groups in these states, comma-separated: Stable, Empty, PreparingRebalance, CompletingRebalance, Dead")
	return cmd
}

// dash renders an empty table cell as Kafka's tools do.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func (gc *groupCmd) deleteCmd() *cobra.Command {
	var topics []string
	cmd := &cobra.Command{
		Use:     "delete GROUP...",
		Aliases: []string{"rm"},
		Short:   "Delete consumer groups, or with --topic only their committed offsets for topics",
		Long: `Delete consumer groups with their committed offsets (DeleteGroups). Kafka
deletes only groups without active members.

With --topic, delete only the group's committed offsets for those topics
(OffsetDelete), e.g. for a topic the group no longer reads: the group stays.
Kafka refuses while active members subscribe to the topic.`,
		Example: `  runnel group delete billing
  runnel group delete billing --topic old-orders
  runnel group delete billing --topic orders:0,1`,
		Args: minArgs(1, "GROUP"),
		RunE: func(cmd *cobra.Command, groups []string) error {
			if len(topics) > 0 {
				if len(groups) != 1 {
					return fmt.Errorf("--topic deletes the offsets of one group, got %d groups %q", len(groups), groups)
				}
				specs, err := parseTopicSpecs(topics)
				if err != nil {
					return err
				}
				return gc.admin(cmd, func(ctx context.Context, adm *kadm.Client) error {
					return deleteGroupOffsets(ctx, adm, cmd, groups[0], specs)
				})
			}
			groups = slices.Compact(slices.Sorted(slices.Values(groups)))
			return gc.admin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				return deleteGroups(ctx, adm, cmd, groups)
			})
		},
	}
	cmd.Flags().StringArrayVar(&topics, "topic", nil, "delete only the offsets of this topic, or of TOPIC:P,P... (repeatable)")
	return cmd
}

func deleteGroups(ctx context.Context, adm *kadm.Client, cmd *cobra.Command, groups []string) error {
	rs, err := adm.DeleteGroups(ctx, groups...)
	if err != nil {
		return err
	}
	var errs []error
	for _, g := range groups {
		r, ok := rs[g]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("the broker did not answer for group %q", g))
		case errors.Is(r.Err, kerr.GroupIDNotFound):
			errs = append(errs, &missingGroupError{g})
		case errors.Is(r.Err, kerr.NonEmptyGroup):
			errs = append(errs, nonEmptyGroupError(ctx, adm, g, "Kafka deletes only groups without members"))
		case r.Err != nil:
			errs = append(errs, kafkaErr(fmt.Errorf("deleting group %q: %w", g, r.Err), r.ErrMessage))
		default:
			fmt.Fprintf(cmd.OutOrStdout(), "Deleted group %q.\n", g)
		}
	}
	return errors.Join(errs...)
}

// nonEmptyGroupError explains NON_EMPTY_GROUP with the group's member count
// when it can be described.
func nonEmptyGroupError(ctx context.Context, adm *kadm.Client, group, why string) error {
	found, _, err := describeGroups(ctx, adm, []string{group})
	if err != nil || len(found) == 0 {
		return fmt.Errorf("group %q has active members; stop them first: %s", group, why)
	}
	return activeMembersError(group, found[0].State, len(found[0].Members), why)
}

// deleteGroupOffsets deletes the group's committed offsets for the named
// topics (all the partitions it committed, or the ones named).
func deleteGroupOffsets(ctx context.Context, adm *kadm.Client, cmd *cobra.Command, group string, specs []topicSpec) error {
	committed, err := adm.FetchOffsets(ctx, group)
	if errors.Is(err, kerr.GroupIDNotFound) {
		return &missingGroupError{group}
	}
	if err != nil {
		return kafkaErr(fmt.Errorf("fetching the offsets of group %q: %w", group, err), "")
	}
	set := make(kadm.TopicsSet)
	for _, s := range specs {
		if s.partitions != nil {
			set.Add(s.topic, s.partitions...)
			continue
		}
		var ps []int32
		for p, o := range committed[s.topic] {
			if o.Err == nil && o.At >= 0 {
				ps = append(ps, p)
			}
		}
		if len(ps) == 0 {
			return fmt.Errorf("group %q has no committed offsets for topic %q (see \"runnel group describe %s\")", group, s.topic, group)
		}
		set.Add(s.topic, ps...)
	}
	rs, err := adm.DeleteOffsets(ctx, group, set)
	switch {
	case errors.Is(err, kerr.GroupIDNotFound):
		return &missingGroupError{group}
	case errors.Is(err, kerr.NonEmptyGroup):
		return nonEmptyGroupError(ctx, adm, group, "Kafka deletes offsets only of topics no member subscribes to")
	case err != nil:
		return kafkaErr(fmt.Errorf("deleting offsets of group %q: %w", group, err), "")
	}
	var errs []error
	for _, t := range set.Sorted() {
		var done []string
		for _, p := range t.Partitions {
			perr, ok := rs.Lookup(t.Topic, p)
			switch {
			case !ok:
				errs = append(errs, fmt.Errorf("the broker did not answer for %s[%d]", t.Topic, p))
			case errors.Is(perr, kerr.GroupSubscribedToTopic):
				errs = append(errs, fmt.Errorf("group %q has active members subscribed to topic %q; stop them first (or delete the offsets of topics the group no longer reads)", group, t.Topic))
			case perr != nil:
				errs = append(errs, kafkaErr(fmt.Errorf("deleting the offset of group %q for %s[%d]: %w", group, t.Topic, p, perr), ""))
			default:
				done = append(done, strconv.Itoa(int(p)))
			}
		}
		if len(done) > 0 {
			fmt.Fprintf(cmd.OutOrStdout(), "Deleted the offsets of group %q for topic %q, %s %s.\n",
				group, t.Topic, plural(len(done), "partition"), strings.Join(done, ","))
		}
	}
	// One member subscribed to a topic fails every partition of it: say it once.
	return errors.Join(slices.CompactFunc(errs, func(a, b error) bool { return a.Error() == b.Error() })...)
}

// topicSpec is a parsed --topic TOPIC or TOPIC:P,P... value; partitions is
// nil for the whole topic.
type topicSpec struct {
	topic      string
	partitions []int32
}

// parseTopicSpecs parses kafka-consumer-groups' --topic forms.
func parseTopicSpecs(args []string) ([]topicSpec, error) {
	var out []topicSpec
	for _, a := range args {
		topic, parts, hasParts := strings.Cut(a, ":")
		if topic == "" {
			return nil, fmt.Errorf("--topic %q: want TOPIC or TOPIC:P,P...", a)
		}
		s := topicSpec{topic: topic}
		if hasParts {
			s.partitions = []int32{}
			for p := range strings.SplitSeq(parts, ",") {
				n, err := strconv.ParseInt(strings.TrimSpace(p), 10, 32)
				if err != nil || n < 0 {
					return nil, fmt.Errorf("--topic %q: partition %q is not a partition number; want TOPIC or TOPIC:P,P...", a, p)
				}
				if !slices.Contains(s.partitions, int32(n)) {
					s.partitions = append(s.partitions, int32(n))
				}
			}
			slices.Sort(s.partitions)
		}
		out = append(out, s)
	}
	return out, nil
}
