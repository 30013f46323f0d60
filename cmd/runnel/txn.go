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
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// This file holds `runnel txn` and its list, describe and
// describe-producers subcommands. They follow kafka-transactions.sh
// (Kafka 4.x): its column names, its list filters, one row per
// transactional id or producer. A "-" is unknown or empty where Kafka's
// tool prints "None" or nothing, as the group commands do.

// txnCmd carries what the txn subcommands share.
type txnCmd struct {
	g       *globals
	timeout time.Duration
}

func newTxnCmd(g *globals) *cobra.Command {
	tc := &txnCmd{g: g}
	cmd := &cobra.Command{
		Use:     "txn",
		Aliases: []string{"txns", "transactions"},
		Short:   "List and describe transactions, and the producers writing to a partition",
	}
	cmd.PersistentFlags().DurationVar(&tc.timeout, "timeout", 30*time.Second, "overall deadline for the command")
	cmd.AddCommand(tc.listCmd(), tc.describeCmd(), tc.describeProducersCmd())
	return cmd
}

// txnStates are the transaction states of Kafka's coordinator, as
// ListTransactions and DescribeTransactions name them.
var txnStates = []string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence"}

// txnFilter is what txn list asks the brokers to filter on.
type txnFilter struct {
	states     []string
	durationMs int64 // -1: no filter
	pattern    string
}

// txnListing is one row of txn list; it is also the -o json shape.
type txnListing struct {
	TransactionalID string `json:"transactional_id"`
	Coordinator     int32  `json:"coordinator"`
	ProducerID      int64  `json:"producer_id"`
	State           string `json:"state"`
}

func (tc *txnCmd) listCmd() *cobra.Command {
	var states, output string
	var f txnFilter
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List transactional ids with their coordinator, producer id and transaction state",
		Long: `List, like kafka-transactions list, the transactional ids every broker
coordinates: the coordinator's broker id, the producer id and the state of
the id's transaction (Ongoing while one is open; CompleteCommit or
CompleteAbort after one ended; Empty before the first).

The filters are applied by the brokers:
  --duration-filter MS            only transactions running longer than MS
                                  milliseconds (ListTransactions v1, Kafka 3.8+)
  --transactional-id-pattern RE   only ids matching the RE2 expression RE
                                  (ListTransactions v2, Kafka 4.1+)
  --state S,S                     only ids in these states (not in
                                  kafka-transactions.sh; ListTransactions v0)
A broker too old for a filter is reported as an error, never listed unfiltered.
-o json prints one JSON object per id and line.`,
		Example: `  runnel txn list
  runnel txn list --duration-filter 60000      # open for more than a minute
  runnel txn list --state Ongoing --transactional-id-pattern '^payments-'`,
		Args: exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			var bad string
			if f.states, bad = parseNames(states, txnStates); bad != "" {
				return fmt.Errorf("--state %q: unknown state %q; want a comma-separated list of %s", states, bad, strings.Join(txnStates, ", "))
			}
			return tc.g.withClient(cmd, tc.timeout, func(ctx context.Context, cl *kgo.Client) error {
				ls, err := listTransactions(ctx, cl, f)
				w := cmd.OutOrStdout()
				if output == "json" {
					return errors.Join(writeJSONLines(w, ls), err)
				}
				tw := newTable(w)
				fmt.Fprintln(tw, "TransactionalId\tCoordinator\tProducerId\tTransactionState")
				for _, l := range ls {
					fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", l.TransactionalID, l.Coordinator, l.ProducerID, l.State)
				}
				return errors.Join(tw.Flush(), err)
			})
		},
	}
	fl := cmd.Flags()
	fl.Int64Var(&f.durationMs, "duration-filter", -1, "only transactions running longer than this many milliseconds (below 0: all)")
	fl.StringVar(&f.pattern, "transactional-id-pattern", "", "only transactional ids matching this RE2 regular expression")
	fl.StringVar(&states, "state", "", "only ids in these states, comma-separated: "+strings.Join(txnStates, ", "))
	fl.StringVarP(&output, "output", "o", "text", "output format: text or json")
	return cmd
}

// listTransactions asks every broker for the transactional ids it
// coordinates (ListTransactions) and returns them sorted by id, with an
// error for each broker that could not answer. The request is built here
// rather than by kadm.ListTransactions, which has no duration filter.
func listTransactions(ctx context.Context, cl *kgo.Client, f txnFilter) ([]txnListing, error) {
	req := kmsg.NewPtrListTransactionsRequest()
	req.StateFilters = f.states
	req.DurationFilterMillis = f.durationMs
	if f.pattern != "" {
		req.TransactionalIDPattern = &f.pattern
	}
	var out []txnListing
	var errs []error
	for _, shard := range cl.RequestSharded(ctx, req) {
		broker := shard.Meta.NodeID
		if shard.Err != nil {
			errs = append(errs, kafkaErr(fmt.Errorf("listing the transactions of broker %d: %w", broker, shard.Err), ""))
			continue
		}
		resp := shard.Resp.(*kmsg.ListTransactionsResponse)
		// Fields of a version the broker lacks are not sent: without
		// these checks it would list everything.
		switch {
		case f.durationMs >= 0 && resp.Version < 1:
			errs = append(errs, fmt.Errorf("broker %d cannot filter by duration (it needs ListTransactions v1, Kafka 3.8+); drop --duration-filter", broker))
			continue
		case f.pattern != "" && resp.Version < 2:
			errs = append(errs, fmt.Errorf("broker %d cannot filter by pattern (it needs ListTransactions v2, Kafka 4.1+); drop --transactional-id-pattern", broker))
			continue
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			errs = append(errs, kafkaErr(fmt.Errorf("listing the transactions of broker %d: %w", broker, err), ""))
			continue
		}
		for _, s := range resp.TransactionStates {
			out = append(out, txnListing{TransactionalID: s.TransactionalID, Coordinator: broker, ProducerID: s.ProducerID, State: s.TransactionState})
		}
	}
	slices.SortFunc(out, func(a, b txnListing) int { return strings.Compare(a.TransactionalID, b.TransactionalID) })
	return out, errors.Join(errs...)
}

// txnView is one transactional id as describe shows it; it is also the
// -o json shape. Nil is unknown: no transaction has started.
type txnView struct {
	CoordinatorID   int32           `json:"coordinator_id"`
	TransactionalID string          `json:"transactional_id"`
	ProducerID      int64           `json:"producer_id"`
	ProducerEpoch   int16           `json:"producer_epoch"`
	State           string          `json:"state"`
	TimeoutMs       int32           `json:"timeout_ms"`
	StartTimeMs     *int64          `json:"start_time_ms"`
	DurationMs      *int64          `json:"duration_ms"`
	Partitions      []assignedTopic `json:"partitions"`
}

// newTxnView assembles the view of d at now. The duration is now minus
// the start, as kafka-transactions computes it (also after the
// transaction ended).
func newTxnView(d kadm.DescribedTransaction, now time.Time) txnView {
	v := txnView{
		CoordinatorID: d.Coordinator, TransactionalID: d.TxnID,
		ProducerID: d.ProducerID, ProducerEpoch: d.ProducerEpoch,
		State: d.State, TimeoutMs: d.TimeoutMillis,
		Partitions: []assignedTopic{},
	}
	if d.StartTimestamp >= 0 {
		start, dur := d.StartTimestamp, now.UnixMilli()-d.StartTimestamp
		v.StartTimeMs, v.DurationMs = &start, &dur
	}
	for _, t := range d.Topics.Sorted() {
		v.Partitions = append(v.Partitions, assignedTopic{t.Topic, t.Partitions})
	}
	return v
}

// errTxnMissing is wrapped by every "transactional id does not exist" error.
var errTxnMissing = kerr.TransactionalIDNotFound

// missingTxnError says a transactional id is unknown to its coordinator.
type missingTxnError struct{ id string }

func (e *missingTxnError) Error() string {
	return fmt.Sprintf("transactional id %q does not exist (see \"runnel txn list\")", e.id)
}

func (e *missingTxnError) Unwrap() error { return errTxnMissing }

func (tc *txnCmd) describeCmd() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "describe TRANSACTIONAL-ID...",
		Short: "Show a transactional id's producer, state, timeout, open transaction and its partitions",
		Long: `Show, like kafka-transactions describe, each transactional id's coordinator,
producer id and epoch, transaction state and timeout, when its current (or
last) transaction started and how long ago, and the partitions of the open
transaction (while committing or aborting, those still without a marker).
-o json prints one JSON object per id and line (null: no transaction yet).`,
		Example: `  runnel txn describe payments-1
  runnel txn describe payments-1 payments-2 -o json`,
		Args: minArgs(1, "TRANSACTIONAL-ID"),
		RunE: func(cmd *cobra.Command, ids []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			ids = slices.Compact(slices.Sorted(slices.Values(ids)))
			return tc.g.withClient(cmd, tc.timeout, func(ctx context.Context, cl *kgo.Client) error {
				views, errs, err := describeTransactions(ctx, kadm.NewClient(cl), ids, time.Now())
				if err != nil {
					return err
				}
				w := cmd.OutOrStdout()
				if output == "json" {
					if err := writeJSONLines(w, views); err != nil {
						return err
					}
				} else if len(views) > 0 {
					if err := printTxns(w, views); err != nil {
						return err
					}
				}
				return errors.Join(errs...)
			})
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	return cmd
}

// describeTransactions describes ids and splits the answer into the views
// of the ids that exist (in the order asked) and errors for the others.
func describeTransactions(ctx context.Context, adm *kadm.Client, ids []string, now time.Time) ([]txnView, []error, error) {
	ds, err := adm.DescribeTransactions(ctx, ids...)
	var shardErrs *kadm.ShardErrors
	if err != nil && !errors.As(err, &shardErrs) {
		return nil, nil, err
	}
	var views []txnView
	var errs []error
	for _, id := range ids {
		d, ok := ds[id]
		switch {
		case !ok && shardErrs != nil:
			errs = append(errs, fmt.Errorf("describing transactional id %q: %w", id, shardErrs))
		case !ok:
			errs = append(errs, fmt.Errorf("the broker did not describe transactional id %q; try again", id))
		case errors.Is(d.Err, kerr.TransactionalIDNotFound):
			errs = append(errs, &missingTxnError{id})
		case d.Err != nil:
			errs = append(errs, kafkaErr(fmt.Errorf("describing transactional id %q: %w", id, d.Err), ""))
		default:
			views = append(views, newTxnView(d, now))
		}
	}
	return views, errs, nil
}

func printTxns(w io.Writer, views []txnView) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "CoordinatorId\tTransactionalId\tProducerId\tProducerEpoch\tTransactionState\tTransactionTimeoutMs\tCurrentTransactionStartTimeMs\tTransactionDurationMs\tTopicPartitions")
	for _, v := range views {
		// Kafka's form: topic-partition, comma-separated.
		var tps []string
		for _, t := range v.Partitions {
			for _, p := range t.Partitions {
				tps = append(tps, fmt.Sprintf("%s-%d", t.Topic, p))
			}
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%s\t%d\t%s\t%s\t%s\n", v.CoordinatorID, v.TransactionalID, v.ProducerID, v.ProducerEpoch,
			v.State, v.TimeoutMs, intCell(v.StartTimeMs), intCell(v.DurationMs), dash(strings.Join(tps, ",")))
	}
	return tw.Flush()
}

// producerView is one row of describe-producers; it is also the -o json
// shape. A nil start offset: the producer has no open transaction there.
type producerView struct {
	ProducerID            int64  `json:"producer_id"`
	ProducerEpoch         int16  `json:"producer_epoch"`
	CoordinatorEpoch      int32  `json:"latest_coordinator_epoch"`
	LastSequence          int32  `json:"last_sequence"`
	LastTimestamp         int64  `json:"last_timestamp"`
	CurrentTxnStartOffset *int64 `json:"current_transaction_start_offset"`
}

func (tc *txnCmd) describeProducersCmd() *cobra.Command {
	var topic, output string
	var partition int32
	cmd := &cobra.Command{
		Use:   "describe-producers --topic TOPIC --partition N",
		Short: "Show the producers with state on a partition: epoch, last sequence and time, open transaction",
		Long: `Show, like kafka-transactions describe-producers, the producers the
partition's leader keeps state for: producer id and epoch, the coordinator
epoch of their last transaction marker, their last sequence number and
timestamp, and the offset where their open transaction started ("-": none).
A transaction open long past its timeout here is a hanging transaction.`,
		Example: `  runnel txn describe-producers --topic payments --partition 0`,
		Args:    exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case topic == "":
				return fmt.Errorf("missing --topic: usage: %s", cmd.UseLine())
			case !cmd.Flags().Changed("partition"):
				return fmt.Errorf("missing --partition: usage: %s", cmd.UseLine())
			}
			if err := checkOutput(output); err != nil {
				return err
			}
			return tc.g.withClient(cmd, tc.timeout, func(ctx context.Context, cl *kgo.Client) error {
				ps, err := topicPartitions(ctx, cl, topic, false)
				if err != nil {
					return err
				}
				if err := checkPartition(topic, ps, partition); err != nil {
					return err
				}
				views, err := describeProducers(ctx, kadm.NewClient(cl), topic, partition)
				if err != nil {
					return err
				}
				w := cmd.OutOrStdout()
				if output == "json" {
					return writeJSONLines(w, views)
				}
				tw := newTable(w)
				fmt.Fprintln(tw, "ProducerId\tProducerEpoch\tLatestCoordinatorEpoch\tLastSequence\tLastTimestamp\tCurrentTransactionStartOffset")
				for _, v := range views {
					fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%d\t%s\n", v.ProducerID, v.ProducerEpoch, v.CoordinatorEpoch,
						v.LastSequence, v.LastTimestamp, intCell(v.CurrentTxnStartOffset))
				}
				return tw.Flush()
			})
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&topic, "topic", "", "the topic (required)")
	fl.Int32Var(&partition, "partition", 0, "the partition (required)")
	fl.StringVarP(&output, "output", "o", "text", "output format: text or json")
	return cmd
}

// describeProducers asks the leader of topic's partition for its producers
// (DescribeProducers), sorted by producer id.
func describeProducers(ctx context.Context, adm *kadm.Client, topic string, partition int32) ([]producerView, error) {
	set := make(kadm.TopicsSet)
	set.Add(topic, partition)
	ds, err := adm.DescribeProducers(ctx, set)
	if err != nil {
		return nil, kafkaErr(fmt.Errorf("describing the producers of %s[%d]: %w", topic, partition, err), "")
	}
	dp, ok := ds[topic].Partitions[partition]
	switch {
	case !ok:
		return nil, fmt.Errorf("the broker did not describe the producers of %s[%d]; try again", topic, partition)
	case dp.Err != nil:
		return nil, kafkaErr(fmt.Errorf("describing the producers of %s[%d] on its leader, broker %d: %w", topic, partition, dp.Leader, dp.Err), dp.ErrMessage)
	}
	views := []producerView{}
	for _, p := range dp.ActiveProducers.Sorted() {
		v := producerView{ProducerID: p.ProducerID, ProducerEpoch: p.ProducerEpoch, CoordinatorEpoch: p.CoordinatorEpoch,
			LastSequence: p.LastSequence, LastTimestamp: p.LastTimestamp}
		if p.CurrentTxnStartOffset >= 0 {
			v.CurrentTxnStartOffset = &p.CurrentTxnStartOffset
		}
		views = append(views, v)
	}
	return views, nil
}
