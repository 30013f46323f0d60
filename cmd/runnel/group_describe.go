package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
)

// groupView is what describe knows about one group; it is also the
// -o json shape (one object per group and line).
type groupView struct {
	Group              string           `json:"group"`
	State              string           `json:"state"`
	ProtocolType       string           `json:"protocol_type"`
	AssignmentStrategy string           `json:"assignment_strategy"`
	Coordinator        coordinatorView  `json:"coordinator"`
	Members            []memberView     `json:"members"`
	Offsets            []partitionState `json:"offsets"`
}

type coordinatorView struct {
	ID   int32  `json:"id"`
	Host string `json:"host"`
	Port int32  `json:"port"`
}

type memberView struct {
	MemberID   string          `json:"member_id"`
	InstanceID *string         `json:"instance_id"`
	ClientID   string          `json:"client_id"`
	Host       string          `json:"host"`
	Assignment []assignedTopic `json:"assignment"`
}

type assignedTopic struct {
	Topic      string  `json:"topic"`
	Partitions []int32 `json:"partitions"`
}

// partitionState is one row of the default describe: a partition the group
// is assigned or has committed an offset for. Nil means unknown: no
// committed offset, no listed end, no owning member.
type partitionState struct {
	Topic         string  `json:"topic"`
	Partition     int32   `json:"partition"`
	CurrentOffset *int64  `json:"current_offset"`
	LogEndOffset  *int64  `json:"log_end_offset"`
	Lag           *int64  `json:"lag"`
	MemberID      *string `json:"member_id"`
	Host          *string `json:"host"`
	ClientID      *string `json:"client_id"`
}

func (gc *groupCmd) describeCmd() *cobra.Command {
	var members, state, verbose bool
	var output string
	cmd := &cobra.Command{
		Use:   "describe GROUP...",
		Short: "Show a group's committed offsets, lag and owners per partition, or its members or state",
		Long: `Show, like kafka-consumer-groups --describe, each partition the group is
assigned or has committed an offset for: the committed (current) offset, the
log end offset, the lag between them, and the member that owns the partition.
A "-" is unknown: no committed offset (so no lag), or no member owns it.

--members lists the members (with --verbose, their assignments); --state shows
the coordinator, assignment strategy, state and member count. -o json prints
everything known about each group as one JSON object per line.`,
		Example: `  runnel group describe billing
  runnel group describe billing --members --verbose
  runnel group describe billing audit --state
  runnel group describe billing -o json`,
		Args: minArgs(1, "GROUP"),
		RunE: func(cmd *cobra.Command, groups []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			switch {
			case members && state:
				return errors.New("--members and --state are different views; pass one of them")
			case verbose && !members:
				return errors.New("--verbose adds the assignments to --members; pass --members too")
			}
			groups = slices.Compact(slices.Sorted(slices.Values(groups)))
			return gc.admin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				views, errs, err := collectGroups(ctx, adm, groups)
				if err != nil {
					return err
				}
				w := cmd.OutOrStdout()
				for i, v := range views {
					if output == "json" {
						if err := writeJSON(w, v); err != nil {
							return err
						}
						continue
					}
					if i > 0 {
						fmt.Fprintln(w)
					}
					warnGroupState(cmd.ErrOrStderr(), v)
					var err error
					switch {
					case members:
						err = printMembers(w, v, verbose)
					case state:
						err = printState(w, v)
					default:
						err = printOffsets(w, v)
					}
					if err != nil {
						return err
					}
				}
				return errors.Join(errs...)
			})
		},
	}
	f := cmd.Flags()
	f.BoolVar(&members, "members", false, "list the group's members instead of its partitions")
	f.BoolVar(&state, "state", false, "show the group's coordinator, assignment strategy, state and member count")
	f.BoolVar(&verbose, "verbose", false, "with --members: also show each member's assigned partitions")
	f.StringVarP(&output, "output", "o", "text", "output format: text or json")
	return cmd
}

// collectGroups describes the groups, fetches their committed offsets and
// lists the end offsets of every topic they are assigned or committed.
func collectGroups(ctx context.Context, adm *kadm.Client, groups []string) ([]groupView, []error, error) {
	found, errs, err := describeGroups(ctx, adm, groups)
	if err != nil || len(found) == 0 {
		return nil, errs, err
	}
	names := make([]string, len(found))
	for i, d := range found {
		names[i] = d.Group
	}
	fetched := adm.FetchManyOffsets(ctx, names...)
	topics := make(kadm.TopicsSet)
	for _, d := range found {
		topics.Merge(d.AssignedPartitions())
		topics.Merge(fetched[d.Group].CommittedPartitions())
	}
	var ends kadm.ListedOffsets
	if len(topics) > 0 {
		// A topic deleted since the group committed is missing here;
		// its rows show an unknown log end, as Kafka's tool does.
		if ends, err = adm.ListEndOffsets(ctx, topics.Topics()...); err != nil && len(ends) == 0 {
			return nil, nil, err
		}
	}
	var views []groupView
	for _, d := range found {
		f := fetched[d.Group]
		if f.Err != nil {
			errs = append(errs, kafkaErr(fmt.Errorf("fetching the offsets of group %q: %w", d.Group, f.Err), ""))
			continue
		}
		views = append(views, newGroupView(d, f.Fetched, ends))
	}
	return views, errs, nil
}

// newGroupView assembles a group's view. Lag is computed here rather than
// with kadm.CalculateGroupLag because Kafka's tool shows no lag ("-") for a
// partition without a committed offset, where kadm counts from the log start.
func newGroupView(d kadm.DescribedGroup, committed kadm.OffsetResponses, ends kadm.ListedOffsets) groupView {
	v := groupView{
		Group:              d.Group,
		State:              d.State,
		ProtocolType:       d.ProtocolType,
		AssignmentStrategy: d.Protocol,
		Coordinator:        coordinatorView{ID: d.Coordinator.NodeID, Host: d.Coordinator.Host, Port: d.Coordinator.Port},
		Members:            []memberView{},
		Offsets:            []partitionState{},
	}
	rows := make(map[[2]string]bool) // topic, partition already listed
	add := func(topic string, p int32, m *kadm.DescribedGroupMember) {
		key := [2]string{topic, strconv.Itoa(int(p))}
		if rows[key] {
			return
		}
		rows[key] = true
		r := partitionState{Topic: topic, Partition: p}
		if o, ok := committed.Lookup(topic, p); ok && o.Err == nil && o.At >= 0 {
			r.CurrentOffset = &o.At
		}
		if e, ok := ends.Lookup(topic, p); ok && e.Err == nil {
			r.LogEndOffset = &e.Offset
		}
		if r.CurrentOffset != nil && r.LogEndOffset != nil {
			lag := *r.LogEndOffset - *r.CurrentOffset
			r.Lag = &lag
		}
		if m != nil {
			r.MemberID, r.Host, r.ClientID = &m.MemberID, &m.ClientHost, &m.ClientID
		}
		v.Offsets = append(v.Offsets, r)
	}
	for i := range d.Members {
		m := &d.Members[i]
		mv := memberView{MemberID: m.MemberID, InstanceID: m.InstanceID, ClientID: m.ClientID, Host: m.ClientHost, Assignment: []assignedTopic{}}
		if a, ok := m.Assigned.AsConsumer(); ok {
			for _, t := range a.Topics {
				ps := slices.Sorted(slices.Values(t.Partitions))
				mv.Assignment = append(mv.Assignment, assignedTopic{t.Topic, ps})
				for _, p := range ps {
					add(t.Topic, p, m)
				}
			}
			slices.SortFunc(mv.Assignment, func(a, b assignedTopic) int { return strings.Compare(a.Topic, b.Topic) })
		}
		v.Members = append(v.Members, mv)
	}
	for _, o := range committed.Sorted() {
		if o.Err == nil && o.At >= 0 {
			add(o.Topic, o.Partition, nil)
		}
	}
	slices.SortFunc(v.Offsets, func(a, b partitionState) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition - b.Partition)
	})
	return v
}

// warnGroupState says on stderr what kafka-consumer-groups says about a
// group that is not Stable.
func warnGroupState(w io.Writer, v groupView) {
	switch v.State {
	case "Empty":
		fmt.Fprintf(w, "Group %q has no active members.\n", v.Group)
	case "PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling":
		fmt.Fprintf(w, "Warning: group %q is rebalancing.\n", v.Group)
	}
}

func printOffsets(w io.Writer, v groupView) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "GROUP\tTOPIC\tPARTITION\tCURRENT-OFFSET\tLOG-END-OFFSET\tLAG\tCONSUMER-ID\tHOST\tCLIENT-ID")
	for _, r := range v.Offsets {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", v.Group, r.Topic, r.Partition,
			intCell(r.CurrentOffset), intCell(r.LogEndOffset), intCell(r.Lag),
			strCell(r.MemberID), strCell(r.Host), strCell(r.ClientID))
	}
	return tw.Flush()
}

func printMembers(w io.Writer, v groupView, verbose bool) error {
	tw := newTable(w)
	header := "GROUP\tCONSUMER-ID\tGROUP-INSTANCE-ID\tHOST\tCLIENT-ID\t#PARTITIONS"
	if verbose {
		header += "\tASSIGNMENT"
	}
	fmt.Fprintln(tw, header)
	for _, m := range v.Members {
		n := 0
		var parts []string
		for _, a := range m.Assignment {
			n += len(a.Partitions)
			parts = append(parts, a.Topic+":"+joinInt32s(a.Partitions))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d", v.Group, m.MemberID, strCell(m.InstanceID), dash(m.Host), dash(m.ClientID), n)
		if verbose {
			// Kafka's form: topic:p,p;topic:p
			fmt.Fprintf(tw, "\t%s", dash(strings.Join(parts, ";")))
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

func printState(w io.Writer, v groupView) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "GROUP\tCOORDINATOR (ID)\tASSIGNMENT-STRATEGY\tSTATE\t#MEMBERS")
	c := v.Coordinator
	fmt.Fprintf(tw, "%s\t%s:%d (%d)\t%s\t%s\t%d\n", v.Group, c.Host, c.Port, c.ID, dash(v.AssignmentStrategy), v.State, len(v.Members))
	return tw.Flush()
}

func intCell(n *int64) string {
	if n == nil {
		return "-"
	}
	return strconv.FormatInt(*n, 10)
}

func strCell(s *string) string {
	if s == nil {
		return "-"
	}
	return dash(*s)
}
