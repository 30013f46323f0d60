package main

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// topicCmd carries what the topic subcommands share.
type topicCmd struct {
	g       *globals
	timeout time.Duration
}

func newTopicCmd(g *globals) *cobra.Command {
	tc := &topicCmd{g: g}
	cmd := &cobra.Command{
		Use:     "topic",
		Aliases: []string{"topics"},
		Short:   "Create, list, describe, alter and delete topics",
	}
	cmd.PersistentFlags().DurationVar(&tc.timeout, "timeout", 30*time.Second, "overall deadline for the command")
	cmd.AddCommand(tc.createCmd(), tc.listCmd(), tc.describeCmd(), tc.alterCmd(), tc.deleteCmd())
	return cmd
}

// admin runs fn with an admin client and the command's deadline.
func (tc *topicCmd) admin(cmd *cobra.Command, fn func(ctx context.Context, adm *kadm.Client) error) error {
	return tc.g.withClient(cmd, tc.timeout, func(ctx context.Context, cl *kgo.Client) error {
		adm := kadm.NewClient(cl)
		// The broker may work on a create or delete until our own deadline.
		adm.SetTimeoutMillis(int32(min(tc.timeout, 5*time.Minute) / time.Millisecond))
		return fn(ctx, adm)
	})
}

func (tc *topicCmd) createCmd() *cobra.Command {
	var (
		partitions   int32
		replication  int16
		configs      []string
		ifNotExists  bool
		validateOnly bool
	)
	cmd := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a topic",
		Long: `Create a topic. Partitions and replication factor default to the broker's
num.partitions and default.replication.factor.`,
		Example: `  runnel topic create orders -p 6 -r 3 -c retention.ms=86400000 -c cleanup.policy=compact`,
		Args:    exactArgs(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			kvs, err := parseKVs("-c/--config", configs)
			if err != nil {
				return err
			}
			cfg := make(map[string]*string, len(kvs))
			for _, kv := range kvs {
				cfg[kv[0]] = kmsg.StringPtr(kv[1])
			}
			return tc.admin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				create := adm.CreateTopics
				if validateOnly {
					create = adm.ValidateCreateTopics
				}
				rs, err := create(ctx, partitions, replication, cfg, name)
				if err != nil {
					return err
				}
				r, ok := rs[name]
				if !ok {
					return fmt.Errorf("the broker did not answer for topic %q", name)
				}
				switch {
				case errors.Is(r.Err, kerr.TopicAlreadyExists) && ifNotExists:
					return nil
				case errors.Is(r.Err, kerr.TopicAlreadyExists):
					return fmt.Errorf("topic %q already exists (pass --if-not-exists to ignore this, or change it with \"runnel topic alter\")", name)
				case r.Err != nil:
					return kafkaErr(fmt.Errorf("creating topic %q: %w", name, r.Err), r.ErrMessage)
				}
				shape := describeShape(r.NumPartitions, r.ReplicationFactor, partitions, replication)
				if validateOnly {
					fmt.Fprintf(cmd.OutOrStdout(), "Topic %q is valid and would be created%s (validate only: nothing changed).\n", name, shape)
					return nil
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Created topic %q%s.\n", name, shape)
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.Int32VarP(&partitions, "partitions", "p", -1, "number of partitions (-1: broker default)")
	f.Int16VarP(&replication, "replication-factor", "r", -1, "replicas per partition (-1: broker default)")
	f.StringArrayVarP(&configs, "config", "c", nil, "topic config key=value, repeatable (e.g. retention.ms=86400000)")
	f.BoolVar(&ifNotExists, "if-not-exists", false, "succeed without changes if the topic exists")
	f.BoolVar(&validateOnly, "validate-only", false, "ask the broker to check the request without creating anything")
	return cmd
}

// describeShape renders " with N partitions, replication factor R" from the
// broker's answer (Kafka 2.4+), falling back to what was asked.
func describeShape(gotP int32, gotR int16, askedP int32, askedR int16) string {
	if gotP <= 0 {
		gotP = askedP
	}
	if gotR <= 0 {
		gotR = askedR
	}
	if gotP <= 0 || gotR <= 0 {
		return ""
	}
	return fmt.Sprintf(" with %d %s, replication factor %d", gotP, plural(int(gotP), "partition"), gotR)
}

func (tc *topicCmd) listCmd() *cobra.Command {
	var internal bool
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List topics with their partition and replica counts",
		Args:    exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, args []string) error {
			return tc.admin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				list := adm.ListTopics
				if internal {
					list = adm.ListTopicsWithInternal
				}
				tds, err := list(ctx)
				if err != nil {
					return err
				}
				tw := newTable(cmd.OutOrStdout())
				fmt.Fprintln(tw, "TOPIC\tPARTITIONS\tREPLICAS")
				for _, td := range tds.Sorted() {
					if td.Err != nil {
						fmt.Fprintf(tw, "%s\t-\t-\t%v\n", td.Topic, td.Err)
						continue
					}
					fmt.Fprintf(tw, "%s\t%d\t%d\n", td.Topic, len(td.Partitions), td.Partitions.NumReplicas())
				}
				return tw.Flush()
			})
		},
	}
	cmd.Flags().BoolVar(&internal, "internal", false, "include internal topics such as __consumer_offsets")
	return cmd
}

func (tc *topicCmd) describeCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "describe NAME...",
		Short: "Show partitions (leader, replicas, ISR, log start and end offsets) and configs",
		Long: `Show each topic's partitions with leader, replicas, in-sync replicas and log
start/end offsets, and the configs set on the topic (those not inherited from
the broker).`,
		Args: minArgs(1, "NAME"),
		RunE: func(cmd *cobra.Command, names []string) error {
			return tc.admin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				return describeTopics(ctx, adm, cmd.OutOrStdout(), names)
			})
		},
	}
}

func describeTopics(ctx context.Context, adm *kadm.Client, w io.Writer, names []string) error {
	names = slices.Compact(slices.Sorted(slices.Values(names)))
	tds, err := adm.ListTopicsWithInternal(ctx, names...)
	if err != nil {
		return err
	}
	var found []string
	var errs []error
	for _, name := range names {
		td, ok := tds[name]
		switch {
		case !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition):
			errs = append(errs, topicMissing(name))
		case td.Err != nil:
			errs = append(errs, kafkaErr(fmt.Errorf("topic %q: %w", name, td.Err), ""))
		default:
			found = append(found, name)
		}
	}
	if len(found) == 0 {
		return errors.Join(errs...)
	}
	starts, err := adm.ListStartOffsets(ctx, found...)
	if err != nil {
		return err
	}
	ends, err := adm.ListEndOffsets(ctx, found...)
	if err != nil {
		return err
	}
	configs, err := adm.DescribeTopicConfigs(ctx, found...)
	if err != nil {
		return err
	}
	for i, name := range found {
		if i > 0 {
			fmt.Fprintln(w)
		}
		td := tds[name]
		fmt.Fprintf(w, "Topic: %s\tID: %s\tPartitions: %d\tReplicationFactor: %d\tInternal: %t\n",
			name, topicID(td.ID), len(td.Partitions), td.Partitions.NumReplicas(), td.IsInternal)
		fmt.Fprintf(w, "Configs: %s\n", topicOverrides(configs, name))
		tw := newTable(w)
		fmt.Fprintln(tw, "PARTITION\tLEADER\tREPLICAS\tISR\tLOG-START\tLOG-END")
		for _, p := range td.Partitions.Sorted() {
			leader := "none"
			if p.Leader >= 0 {
				leader = strconv.Itoa(int(p.Leader))
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", p.Partition, leader,
				joinInt32s(p.Replicas), joinInt32s(p.ISR), offsetCell(starts, name, p.Partition), offsetCell(ends, name, p.Partition))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return errors.Join(errs...)
}

// topicOverrides lists the configs set on the topic itself, as Kafka's
// kafka-topics --describe does, or "(none)".
func topicOverrides(rcs kadm.ResourceConfigs, topic string) string {
	rc, err := rcs.On(topic, nil)
	if err != nil {
		return "(unknown: " + err.Error() + ")"
	}
	if rc.Err != nil {
		return "(unknown: " + kafkaErr(rc.Err, rc.ErrMessage).Error() + ")"
	}
	var kvs []string
	for _, c := range rc.Configs {
		if c.Source != kmsg.ConfigSourceDynamicTopicConfig {
			continue
		}
		v := c.MaybeValue()
		if c.Sensitive {
			v = "<sensitive>"
		}
		kvs = append(kvs, c.Key+"="+v)
	}
	if len(kvs) == 0 {
		return "(none)"
	}
	slices.Sort(kvs)
	return strings.Join(kvs, ",")
}

// topicID renders a topic ID as Kafka's tools do: unpadded URL-safe base64.
func topicID(id kadm.TopicID) string {
	if id == (kadm.TopicID{}) {
		return "-"
	}
	return base64.RawURLEncoding.EncodeToString(id[:])
}

func offsetCell(l kadm.ListedOffsets, topic string, p int32) string {
	o, ok := l.Lookup(topic, p)
	if !ok || o.Err != nil {
		return "?"
	}
	return strconv.FormatInt(o.Offset, 10)
}

func joinInt32s(is []int32) string {
	if len(is) == 0 {
		return "-"
	}
	s := make([]string, len(is))
	for i, v := range is {
		s[i] = strconv.Itoa(int(v))
	}
	return strings.Join(s, ",")
}

func (tc *topicCmd) alterCmd() *cobra.Command {
	var (
		set        []string
		del        []string
		partitions int32
	)
	cmd := &cobra.Command{
		Use:   "alter NAME",
		Short: "Change a topic's configs or grow its partition count",
		Long: `Change a topic's configs (IncrementalAlterConfigs: only the named keys change)
or grow its partition count (CreatePartitions; Kafka cannot shrink a topic).`,
		Example: `  runnel topic alter orders -c retention.ms=3600000 --delete-config cleanup.policy
  runnel topic alter orders -p 12`,
		Args: exactArgs(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			kvs, err := parseKVs("-c/--config", set)
			if err != nil {
				return err
			}
			if len(kvs) == 0 && len(del) == 0 && partitions == 0 {
				return errors.New("nothing to alter: pass -c key=value, --delete-config key or -p new-partition-count")
			}
			if partitions < 0 {
				return fmt.Errorf("-p %d: the new partition count must be positive", partitions)
			}
			return tc.admin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				tds, err := adm.ListTopicsWithInternal(ctx, name)
				if err != nil {
					return err
				}
				td := tds[name]
				switch {
				case errors.Is(td.Err, kerr.UnknownTopicOrPartition) || td.Topic == "":
					return topicMissing(name)
				case td.Err != nil:
					return kafkaErr(fmt.Errorf("topic %q: %w", name, td.Err), "")
				}
				have := int32(len(td.Partitions))
				if partitions > 0 && partitions < have {
					return fmt.Errorf("topic %q has %d partitions; Kafka can only add partitions, not remove them (asked for %d)", name, have, partitions)
				}

				var done []string
				var alters []kadm.AlterConfig
				for _, kv := range kvs {
					alters = append(alters, kadm.AlterConfig{Op: kadm.SetConfig, Name: kv[0], Value: kmsg.StringPtr(kv[1])})
					done = append(done, "set "+kv[0]+"="+kv[1])
				}
				for _, k := range del {
					alters = append(alters, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
					done = append(done, "deleted "+k)
				}
				if len(alters) > 0 {
					rs, err := adm.AlterTopicConfigs(ctx, alters, name)
					if err != nil {
						return err
					}
					r, err := rs.On(name, nil)
					if err != nil {
						return fmt.Errorf("the broker did not answer for topic %q", name)
					}
					if r.Err != nil {
						return kafkaErr(fmt.Errorf("altering configs of topic %q: %w", name, r.Err), r.ErrMessage)
					}
				}
				switch {
				case partitions == have:
					done = append(done, fmt.Sprintf("partitions unchanged (already %d)", have))
				case partitions > have:
					rs, err := adm.UpdatePartitions(ctx, int(partitions), name)
					if err != nil {
						return err
					}
					r, err := rs.On(name, nil)
					if err != nil {
						return fmt.Errorf("the broker did not answer for topic %q", name)
					}
					if r.Err != nil {
						if len(alters) > 0 {
							r.ErrMessage += " (the config changes were applied)"
						}
						return kafkaErr(fmt.Errorf("adding partitions to topic %q: %w", name, r.Err), r.ErrMessage)
					}
					done = append(done, fmt.Sprintf("partitions %d -> %d", have, partitions))
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Altered topic %q: %s.\n", name, strings.Join(done, ", "))
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.StringArrayVarP(&set, "config", "c", nil, "set topic config key=value, repeatable")
	f.StringArrayVar(&del, "delete-config", nil, "remove a topic config override (back to the broker default), repeatable")
	f.Int32VarP(&partitions, "partitions", "p", 0, "new total partition count (can only grow)")
	return cmd
}

func (tc *topicCmd) deleteCmd() *cobra.Command {
	var ifExists bool
	cmd := &cobra.Command{
		Use:     "delete NAME...",
		Aliases: []string{"rm"},
		Short:   "Delete topics and all their records",
		Args:    minArgs(1, "NAME"),
		RunE: func(cmd *cobra.Command, names []string) error {
			names = slices.Compact(slices.Sorted(slices.Values(names)))
			return tc.admin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				rs, err := adm.DeleteTopics(ctx, names...)
				if err != nil {
					return err
				}
				var errs []error
				for _, name := range names {
					r, ok := rs[name]
					switch {
					case !ok:
						errs = append(errs, fmt.Errorf("the broker did not answer for topic %q", name))
					case errors.Is(r.Err, kerr.UnknownTopicOrPartition) && ifExists:
					case errors.Is(r.Err, kerr.UnknownTopicOrPartition):
						errs = append(errs, &missingTopicError{name, "pass --if-exists to ignore missing topics"})
					case r.Err != nil:
						errs = append(errs, kafkaErr(fmt.Errorf("deleting topic %q: %w", name, r.Err), r.ErrMessage))
					default:
						fmt.Fprintf(cmd.OutOrStdout(), "Deleted topic %q.\n", name)
					}
				}
				return errors.Join(errs...)
			})
		},
	}
	cmd.Flags().BoolVar(&ifExists, "if-exists", false, "succeed for topics that do not exist")
	return cmd
}
