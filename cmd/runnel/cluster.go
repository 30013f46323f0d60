package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
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

// This file holds `runnel cluster status`: nodes, controller and the
// partitions that are under-replicated or offline, as kafka-metadata-quorum
// and kafka-topics --describe --under-replicated-partitions show them.
// newClusterStatus is the pure part (metadata and topic configs in, report
// out); collectClusterStatus makes the requests; printClusterStatus renders.

func newClusterCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Show the health of the cluster",
	}
	cmd.AddCommand(newClusterStatusCmd(g))
	return cmd
}

func newClusterStatusCmd(g *globals) *cobra.Command {
	var (
		output        string
		limit         int
		failUnhealthy bool
		timeout       time.Duration
	)
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show nodes, the controller, and under-replicated and offline partitions",
		Long: `Show the cluster's nodes (address, rack, whether it is the active controller,
how many partitions it leads, how many replicas it holds and how many of those
are out of the ISR), the cluster id and controller, totals, and the
partitions that are offline (no leader) or under-replicated (ISR smaller than
the replicas), at most --limit of them (0: all).

Under-min-ISR counts partitions whose ISR is smaller than their topic's
min.insync.replicas (read with DescribeConfigs; topics where it cannot be read
are named as unknown and not counted). A node that holds replicas but is not
in the metadata's broker list (usually a broker that is down) is shown with
address "-". The controller is DescribeCluster's, else Metadata's.

The cluster is healthy when no partition is offline or under-replicated.
The exit status is 0 even when it is not, unless --fail-unhealthy: then an
unhealthy cluster exits with status 2, after the report.

-o json prints one JSON object (null is unknown):
  cluster_id              string|null
  controller_id           int|null
  healthy                 bool
  nodes[]                 {id, host, port, rack (string|null), listed (in the
                          metadata's broker list), controller, leaders,
                          replicas, out_of_sync_replicas}
  totals                  {topics, partitions, under_replicated, under_min_isr,
                          offline}
  min_isr_unknown_topics  [string]
  topic_errors[]          {topic, error}: topics whose partitions are unknown
  partitions[]            {topic, partition, leader (int|null), replicas, isr,
                          offline, under_replicated, under_min_isr (bool|null)}
                          the offline and under-replicated ones, sorted,
                          at most --limit
  partitions_omitted      int: how many --limit left out`,
		Example: `  runnel cluster status
  runnel cluster status -o json | jq .totals
  runnel cluster status --fail-unhealthy --limit 0 > report.txt || alert`,
		Args: exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			if limit < 0 {
				return fmt.Errorf("--limit %d: want 0 (no limit) or more", limit)
			}
			return g.withClient(cmd, timeout, func(ctx context.Context, cl *kgo.Client) error {
				st, err := collectClusterStatus(ctx, cl, limit)
				if err != nil {
					return err
				}
				if output == "json" {
					err = writeJSON(cmd.OutOrStdout(), st)
				} else {
					err = printClusterStatus(cmd.OutOrStdout(), cmd.ErrOrStderr(), st)
				}
				if err != nil {
					return err
				}
				if failUnhealthy && !st.Healthy {
					return &exitCodeError{code: 2, err: fmt.Errorf("cluster unhealthy: %s", st.problems())}
				}
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.StringVarP(&output, "output", "o", "text", "output format: text or json")
	f.IntVar(&limit, "limit", 20, "list at most this many offline or under-replicated partitions (0: all)")
	f.BoolVar(&failUnhealthy, "fail-unhealthy", false, "exit with status 2 when a partition is offline or under-replicated")
	f.DurationVar(&timeout, "timeout", 30*time.Second, "overall deadline for the command")
	return cmd
}

// clusterStatus is the report; it is also the -o json shape.
type clusterStatus struct {
	ClusterID           *string            `json:"cluster_id"`
	ControllerID        *int32             `json:"controller_id"`
	Healthy             bool               `json:"healthy"`
	Nodes               []nodeStatus       `json:"nodes"`
	Totals              statusTotals       `json:"totals"`
	MinISRUnknownTopics []string           `json:"min_isr_unknown_topics"`
	TopicErrors         []topicError       `json:"topic_errors"`
	Partitions          []partitionProblem `json:"partitions"`
	PartitionsOmitted   int                `json:"partitions_omitted"`
}

type nodeStatus struct {
	ID         int32   `json:"id"`
	Host       string  `json:"host"`
	Port       int32   `json:"port"`
	Rack       *string `json:"rack"`
	Listed     bool    `json:"listed"`
	Controller bool    `json:"controller"`
	Leaders    int     `json:"leaders"`
	Replicas   int     `json:"replicas"`
	OutOfSync  int     `json:"out_of_sync_replicas"`
}

type statusTotals struct {
	Topics          int `json:"topics"`
	Partitions      int `json:"partitions"`
	UnderReplicated int `json:"under_replicated"`
	UnderMinISR     int `json:"under_min_isr"`
	Offline         int `json:"offline"`
}

type topicError struct {
	Topic string `json:"topic"`
	Error string `json:"error"`
}

type partitionProblem struct {
	Topic           string  `json:"topic"`
	Partition       int32   `json:"partition"`
	Leader          *int32  `json:"leader"`
	Replicas        []int32 `json:"replicas"`
	ISR             []int32 `json:"isr"`
	Offline         bool    `json:"offline"`
	UnderReplicated bool    `json:"under_replicated"`
	UnderMinISR     *bool   `json:"under_min_isr"`
}

// describedCluster is what DescribeCluster adds to Metadata: an empty id
// and controller -1 when the broker does not answer it.
type describedCluster struct {
	clusterID  string
	controller int32
}

// newClusterStatus computes the report from a metadata response, the
// DescribeCluster answer and the topics' configs. It lists at most limit
// problem partitions (0: all).
func newClusterStatus(m kadm.Metadata, dc describedCluster, configs kadm.ResourceConfigs, limit int) clusterStatus {
	st := clusterStatus{
		MinISRUnknownTopics: []string{},
		TopicErrors:         []topicError{},
		Partitions:          []partitionProblem{},
	}
	if id := cmp.Or(m.Cluster, dc.clusterID); id != "" {
		st.ClusterID = &id
	}
	controller := dc.controller
	if controller < 0 {
		controller = m.Controller
	}
	if controller >= 0 {
		st.ControllerID = &controller
	}

	nodes := make(map[int32]*nodeStatus)
	for _, b := range m.Brokers {
		nodes[b.NodeID] = &nodeStatus{ID: b.NodeID, Host: b.Host, Port: b.Port, Rack: b.Rack, Listed: true}
	}
	node := func(id int32) *nodeStatus {
		if nodes[id] == nil {
			nodes[id] = &nodeStatus{ID: id}
		}
		return nodes[id]
	}

	minISR := minInsyncReplicas(configs)
	st.Totals.Topics = len(m.Topics)
	for _, td := range m.Topics.Sorted() {
		if td.Err != nil {
			st.TopicErrors = append(st.TopicErrors, topicError{td.Topic, td.Err.Error()})
			continue
		}
		topicMin, known := minISR[td.Topic]
		if !known {
			st.MinISRUnknownTopics = append(st.MinISRUnknownTopics, td.Topic)
		}
		for _, p := range td.Partitions.Sorted() {
			st.Totals.Partitions++
			pp := partitionProblem{
				Topic:           p.Topic,
				Partition:       p.Partition,
				Replicas:        nonNil(p.Replicas),
				ISR:             nonNil(p.ISR),
				Offline:         p.Leader < 0 || errors.Is(p.Err, kerr.LeaderNotAvailable),
				UnderReplicated: len(p.ISR) < len(p.Replicas),
			}
			if p.Leader >= 0 {
				pp.Leader = &p.Leader
				if !pp.Offline {
					node(p.Leader).Leaders++
				}
			}
			for _, r := range p.Replicas {
				n := node(r)
				n.Replicas++
				if !slices.Contains(p.ISR, r) {
					n.OutOfSync++
				}
			}
			if known {
				under := len(p.ISR) < topicMin
				pp.UnderMinISR = &under
				if under {
					st.Totals.UnderMinISR++
				}
			}
			if pp.Offline {
				st.Totals.Offline++
			}
			if pp.UnderReplicated {
				st.Totals.UnderReplicated++
			}
			if pp.Offline || pp.UnderReplicated {
				st.Partitions = append(st.Partitions, pp)
			}
		}
	}
	st.Healthy = st.Totals.Offline == 0 && st.Totals.UnderReplicated == 0
	if limit > 0 && len(st.Partitions) > limit {
		st.PartitionsOmitted = len(st.Partitions) - limit
		st.Partitions = st.Partitions[:limit]
	}
	for _, n := range nodes {
		n.Controller = st.ControllerID != nil && n.ID == *st.ControllerID
		st.Nodes = append(st.Nodes, *n)
	}
	slices.SortFunc(st.Nodes, func(a, b nodeStatus) int { return int(a.ID - b.ID) })
	if st.Nodes == nil {
		st.Nodes = []nodeStatus{}
	}
	return st
}

// minInsyncReplicas reads each topic's min.insync.replicas; topics whose
// configs could not be read or do not name it are missing from the map.
func minInsyncReplicas(rcs kadm.ResourceConfigs) map[string]int {
	out := make(map[string]int, len(rcs))
	for _, rc := range rcs {
		if rc.Err != nil {
			continue
		}
		for _, c := range rc.Configs {
			if c.Key != "min.insync.replicas" || c.Value == nil {
				continue
			}
			if n, err := strconv.Atoi(*c.Value); err == nil {
				out[rc.Name] = n
			}
		}
	}
	return out
}

func nonNil(is []int32) []int32 {
	if is == nil {
		return []int32{}
	}
	return is
}

// problems says what makes the cluster unhealthy, e.g. "1 offline
// partition, 2 under-replicated partitions".
func (st clusterStatus) problems() string {
	var s []string
	if n := st.Totals.Offline; n > 0 {
		s = append(s, fmt.Sprintf("%d offline %s", n, plural(n, "partition")))
	}
	if n := st.Totals.UnderReplicated; n > 0 {
		s = append(s, fmt.Sprintf("%d under-replicated %s", n, plural(n, "partition")))
	}
	return strings.Join(s, ", ")
}

// collectClusterStatus asks for the metadata of every topic, the
// controller (DescribeCluster) and the topics' configs. Only the metadata is
// required: the rest falls back or is reported as unknown.
func collectClusterStatus(ctx context.Context, cl *kgo.Client, limit int) (clusterStatus, error) {
	adm := kadm.NewClient(cl)
	m, err := adm.Metadata(ctx)
	if err != nil {
		return clusterStatus{}, err
	}
	dc := describedCluster{controller: -1}
	if resp, err := kmsg.NewPtrDescribeClusterRequest().RequestWith(ctx, cl); err == nil && resp.ErrorCode == 0 {
		dc = describedCluster{clusterID: resp.ClusterID, controller: resp.ControllerID}
	}
	var names []string
	for _, td := range m.Topics.Sorted() {
		if td.Err == nil && td.Topic != "" {
			names = append(names, td.Topic)
		}
	}
	// A partial answer (*kadm.ShardErrors) keeps what came back; topics
	// without an answer are listed as unknown by newClusterStatus.
	configs, _ := adm.DescribeTopicConfigs(ctx, names...)
	return newClusterStatus(m, dc, configs, limit), nil
}

// printClusterStatus renders the report as text on w; topics whose metadata
// could not be read are warned about on errw.
func printClusterStatus(w, errw io.Writer, st clusterStatus) error {
	for _, te := range st.TopicErrors {
		fmt.Fprintf(errw, "Warning: topic %q: %s\n", te.Topic, te.Error)
	}
	health := "healthy"
	if !st.Healthy {
		health = "unhealthy (" + st.problems() + ")"
	}
	controller := "-"
	if st.ControllerID != nil {
		controller = strconv.Itoa(int(*st.ControllerID))
	}
	fmt.Fprintf(w, "Cluster: %s\tController: %s\tStatus: %s\n", strCell(st.ClusterID), controller, health)
	t := st.Totals
	underMin := strconv.Itoa(t.UnderMinISR)
	if n := len(st.MinISRUnknownTopics); n > 0 {
		underMin += fmt.Sprintf(" (min.insync.replicas unknown for %d %s)", n, plural(n, "topic"))
	}
	fmt.Fprintf(w, "Topics: %d\tPartitions: %d\tUnder-replicated: %d\tUnder-min-ISR: %s\tOffline: %d\n",
		t.Topics, t.Partitions, t.UnderReplicated, underMin, t.Offline)

	fmt.Fprintln(w)
	tw := newTable(w)
	fmt.Fprintln(tw, "NODE\tADDRESS\tRACK\tCONTROLLER\tLEADERS\tREPLICAS\tOUT-OF-ISR")
	for _, n := range st.Nodes {
		addr := "-"
		if n.Listed {
			addr = net.JoinHostPort(n.Host, strconv.Itoa(int(n.Port)))
		}
		ctrl := "-"
		if n.Controller {
			ctrl = "yes"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%d\t%d\n", n.ID, addr, strCell(n.Rack), ctrl, n.Leaders, n.Replicas, n.OutOfSync)
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	if len(st.Partitions) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tw = newTable(w)
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tLEADER\tREPLICAS\tISR\tSTATUS")
	for _, p := range st.Partitions {
		leader := "none"
		if p.Leader != nil {
			leader = strconv.Itoa(int(*p.Leader))
		}
		var status []string
		if p.Offline {
			status = append(status, "offline")
		}
		if p.UnderReplicated {
			status = append(status, "under-replicated")
		}
		if p.UnderMinISR != nil && *p.UnderMinISR {
			status = append(status, "under-min-isr")
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\n", p.Topic, p.Partition, leader,
			joinInt32s(p.Replicas), joinInt32s(p.ISR), strings.Join(status, ","))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if st.PartitionsOmitted > 0 {
		fmt.Fprintf(w, "... %d more (see --limit)\n", st.PartitionsOmitted)
	}
	return nil
}
