package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

type consumeFlags struct {
	from      string
	partition int32
	count     int
	follow    bool
	output    string
	group     string
	isolation string
	printKey  bool
	keySep    string
	quiet     bool
}

func newConsumeCmd(g *globals) *cobra.Command {
	var f consumeFlags
	cmd := &cobra.Command{
		Use:   "consume TOPIC",
		Short: "Print records from a topic",
		Long: `Print records from a topic, one per line: the value, or with --print-key the
key, the key separator and the value. With -o json each record is a JSON object
on its own line:

  {"topic":"t","partition":0,"offset":7,"timestamp":1714564800000,
   "key":"k","value":"v","headers":[{"key":"h","value":"x"}]}

timestamp is in unix milliseconds; a null key or value is null; a key, value
or header value that is not UTF-8 is base64 and marked with
"key_encoding":"base64" (or value_encoding, or "encoding" in the header).

Without -f, consume stops at the end of the partitions as they were when it
started (kcat -e); with -f it keeps waiting for new records until Ctrl-C.
--from defaults to end with -f (like kafka-console-consumer: tail new records)
and to beginning without it (print what the topic holds and exit).

Without -g no offsets are committed and no group is joined. With -g the
group's committed offsets win over --from, which then only applies to
partitions the group has not committed yet; printed records are committed.`,
		Example: `  runnel consume orders                   # everything in the topic, then exit
  runnel consume orders -f                # wait for new records, Ctrl-C to stop
  runnel consume orders --from -10 --print-key -K ': '  # the last 10 of each partition
  runnel consume orders -g billing -f -o json
  runnel consume orders --from 2024-05-01T00:00:00Z -n 100`,
		Args: exactArgs(1, "TOPIC"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.explain(runConsume(cmd, g, args[0], &f))
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.from, "from", "", "where to start: "+fromHelp+` (default "end" with -f, else "beginning")`)
	fl.Int32VarP(&f.partition, "partition", "p", -1, "read only this partition (-1: all)")
	fl.IntVarP(&f.count, "count", "n", 0, "exit after this many records (0: no limit)")
	fl.BoolVarP(&f.follow, "follow", "f", false, "keep waiting for new records instead of exiting at the end")
	fl.StringVarP(&f.output, "output", "o", "text", "output format: text or json")
	fl.StringVarP(&f.group, "group", "g", "", "consume as a member of this consumer group and commit offsets")
	fl.StringVar(&f.isolation, "isolation", "read_uncommitted", "read_uncommitted, or read_committed to skip aborted and open transactions")
	fl.BoolVar(&f.printKey, "print-key", false, "text output: print the key, the key separator, then the value")
	fl.StringVarP(&f.keySep, "key-separator", "K", "\t", "text output: separator between key and value (implies --print-key)")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "do not report the record count on stderr")
	return cmd
}

func runConsume(cmd *cobra.Command, g *globals, topic string, f *consumeFlags) error {
	if f.from == "" {
		f.from = "beginning"
		if f.follow {
			f.from = "end"
		}
	}
	spec, err := parseFrom(f.from)
	if err != nil {
		return err
	}
	var readCommitted bool
	switch f.isolation {
	case "read_uncommitted":
	case "read_committed":
		readCommitted = true
	default:
		return fmt.Errorf("--isolation %q: want read_uncommitted or read_committed", f.isolation)
	}
	if f.output != "text" && f.output != "json" {
		return fmt.Errorf("-o %q: want text or json", f.output)
	}
	if f.count < 0 {
		return fmt.Errorf("-n %d: want a positive count, or 0 for no limit", f.count)
	}
	if f.group != "" && f.partition >= 0 {
		return errors.New("-p cannot be combined with -g: the group assigns partitions to its members")
	}
	pr := &printer{json: f.output == "json", printKey: f.printKey || cmd.Flags().Changed("key-separator"), keySep: []byte(f.keySep)}

	// Resolve partitions and offsets with an admin client first.
	ctx := cmd.Context()
	admCl, err := g.newClient()
	if err != nil {
		return err
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	ps, err := topicPartitions(ctx, admCl, topic, false)
	if err != nil {
		return err
	}
	if f.partition >= 0 {
		if err := checkPartition(topic, ps, f.partition); err != nil {
			return err
		}
		ps = []int32{f.partition}
	}
	rctx, cancel := context.WithTimeout(ctx, metadataTimeout)
	ranges, err := resolveRanges(rctx, adm, topic, ps, spec, readCommitted)
	cancel()
	if err != nil {
		return err
	}

	pollCtx, stopPolling := context.WithCancel(ctx)
	defer stopPolling()
	var ends *endTracker
	if !f.follow {
		ends = newEndTracker(ranges, stopPolling)
		if f.group == "" {
			ends.direct()
		}
	}

	opts := []kgo.Opt{
		// Control records (transaction markers) are not printed, but
		// they move the position, so the end of a partition is seen.
		kgo.KeepControlRecords(),
		// Kafka's fetch.max.wait.ms default. franz-go's 5s would hold a
		// partition that joins late (e.g. after loading its committed
		// offset) behind an empty fetch of the others for that long.
		kgo.FetchMaxWait(500 * time.Millisecond),
	}
	if readCommitted {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	if f.group == "" {
		offsets := make(map[int32]kgo.Offset, len(ranges))
		for p, r := range ranges {
			if ends == nil || r.start < r.end {
				offsets[p] = kgo.NewOffset().At(r.start)
			}
		}
		if len(offsets) == 0 {
			return finishConsume(cmd, f, topic, 0)
		}
		opts = append(opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}))
	} else {
		opts = append(opts,
			kgo.ConsumerGroup(f.group),
			kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(spec.kgoOffset()),
			kgo.AutoCommitMarks(),
		)
		if ends != nil {
			opts = append(opts,
				kgo.OnPartitionsAssigned(func(ctx context.Context, _ *kgo.Client, m map[string][]int32) {
					committed, err := adm.FetchOffsets(ctx, f.group)
					if err != nil {
						committed = nil // fall back to --from
					}
					ends.assign(m[topic], func(p int32) (int64, bool) {
						o, ok := committed.Lookup(topic, p)
						return o.At, ok && o.Err == nil && o.At >= 0
					})
				}),
				kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { ends.revoke(m[topic]) }),
				kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { ends.revoke(m[topic]) }),
			)
		}
	}
	cl, err := g.newClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()

	out := bufio.NewWriterSize(cmd.OutOrStdout(), 64<<10)
	defer out.Flush()
	n := 0
	for !ends.done() && (f.count == 0 || n < f.count) {
		var fetches kgo.Fetches
		if f.count > 0 {
			fetches = cl.PollRecords(pollCtx, f.count-n)
		} else {
			fetches = cl.PollFetches(pollCtx)
		}
		var fatal error
		fetches.EachError(func(t string, p int32, err error) {
			var dataLoss *kgo.ErrDataLoss
			switch {
			case errors.Is(err, context.Canceled), errors.Is(err, kgo.ErrClientClosed):
			case errors.As(err, &dataLoss):
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: %v\n", err)
			case fatal == nil:
				fatal = kafkaErr(fmt.Errorf("%s: %w", fetchSource(t, p, f.group), err), "")
			}
		})
		if fatal != nil {
			return fatal
		}
		var werr error
		fetches.EachRecord(func(r *kgo.Record) {
			ends.advance(r.Partition, r.Offset)
			if r.Attrs.IsControl() || werr != nil {
				return
			}
			werr = pr.print(out, r)
			n++
			if f.group != "" {
				cl.MarkCommitRecords(r)
			}
		})
		if werr == nil {
			werr = out.Flush()
		}
		if werr != nil {
			return werr
		}
		if pollCtx.Err() != nil {
			break // interrupted, or every partition is at its end
		}
	}
	if f.group != "" {
		if err := cl.CommitMarkedOffsets(context.WithoutCancel(ctx)); err != nil {
			return fmt.Errorf("committing offsets of group %q: %w", f.group, err)
		}
	}
	return finishConsume(cmd, f, topic, n)
}

// fetchSource names where a fetch error came from: a partition, or the
// group when joining it failed.
func fetchSource(topic string, p int32, group string) string {
	if topic == "" {
		return fmt.Sprintf("consumer group %q", group)
	}
	return fmt.Sprintf("reading %s[%d]", topic, p)
}

func finishConsume(cmd *cobra.Command, f *consumeFlags, topic string, n int) error {
	if !f.quiet {
		fmt.Fprintf(cmd.ErrOrStderr(), "Consumed %d %s from %q.\n", n, plural(n, "record"), topic)
	}
	return nil
}

// endTracker knows when a consume without --follow is done: when every
// partition it reads has reached the end offset listed at the start. With a
// group, only the partitions assigned to this member count. A nil tracker
// is never done.
type endTracker struct {
	ranges map[int32]partitionRange
	onDone func()

	mu struct {
		sync.Mutex
		pending  map[int32]bool // partitions not yet at their end
		assigned bool           // a direct consumer, or a group member that got partitions
	}
}

func newEndTracker(ranges map[int32]partitionRange, onDone func()) *endTracker {
	t := &endTracker{ranges: ranges, onDone: onDone}
	t.mu.pending = make(map[int32]bool)
	return t
}

// direct tracks every partition from its resolved start.
func (t *endTracker) direct() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.mu.assigned = true
	for p, r := range t.ranges {
		if r.start < r.end {
			t.mu.pending[p] = true
		}
	}
	t.checkLocked()
}

// assign tracks partitions given to this group member; committed returns a
// partition's committed offset, if the group has one.
func (t *endTracker) assign(ps []int32, committed func(int32) (int64, bool)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.mu.assigned = true
	for _, p := range ps {
		r, ok := t.ranges[p]
		if !ok {
			continue // a partition added after we started: not awaited
		}
		start := r.start
		if c, ok := committed(p); ok {
			start = c
		}
		if start < r.end {
			t.mu.pending[p] = true
		}
	}
	t.checkLocked()
}

func (t *endTracker) revoke(ps []int32) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, p := range ps {
		delete(t.mu.pending, p)
	}
}

// advance records that the record at offset was read from partition p.
func (t *endTracker) advance(p int32, offset int64) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.mu.pending[p] && offset+1 >= t.ranges[p].end {
		delete(t.mu.pending, p)
		t.checkLocked()
	}
}

func (t *endTracker) checkLocked() {
	if t.mu.assigned && len(t.mu.pending) == 0 {
		t.onDone()
	}
}

func (t *endTracker) done() bool {
	if t == nil {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.mu.assigned && len(t.mu.pending) == 0
}

// printer writes records in the --output format.
type printer struct {
	json     bool
	printKey bool
	keySep   []byte
}

func (pr *printer) print(w *bufio.Writer, r *kgo.Record) error {
	if pr.json {
		return writeJSONRecord(w, r)
	}
	if pr.printKey {
		w.Write(r.Key)
		w.Write(pr.keySep)
	}
	w.Write(r.Value)
	return w.WriteByte('\n')
}

// jsonRecord is the -o json shape: one object per line.
type jsonRecord struct {
	Topic         string       `json:"topic"`
	Partition     int32        `json:"partition"`
	Offset        int64        `json:"offset"`
	Timestamp     int64        `json:"timestamp"`
	Key           *string      `json:"key"`
	KeyEncoding   string       `json:"key_encoding,omitempty"`
	Value         *string      `json:"value"`
	ValueEncoding string       `json:"value_encoding,omitempty"`
	Headers       []jsonHeader `json:"headers"`
}

type jsonHeader struct {
	Key      string  `json:"key"`
	Value    *string `json:"value"`
	Encoding string  `json:"encoding,omitempty"`
}

func writeJSONRecord(w io.Writer, r *kgo.Record) error {
	jr := jsonRecord{
		Topic:     r.Topic,
		Partition: r.Partition,
		Offset:    r.Offset,
		Timestamp: r.Timestamp.UnixMilli(),
		Headers:   make([]jsonHeader, len(r.Headers)),
	}
	jr.Key, jr.KeyEncoding = jsonBytes(r.Key)
	jr.Value, jr.ValueEncoding = jsonBytes(r.Value)
	for i, h := range r.Headers {
		jr.Headers[i].Key = h.Key
		jr.Headers[i].Value, jr.Headers[i].Encoding = jsonBytes(h.Value)
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(&jr)
}

// jsonBytes renders bytes as a JSON string: nil as null, UTF-8 as is,
// anything else as base64 with its encoding named.
func jsonBytes(b []byte) (*string, string) {
	if b == nil {
		return nil, ""
	}
	if utf8.Valid(b) {
		s := string(b)
		return &s, ""
	}
	s := base64.StdEncoding.EncodeToString(b)
	return &s, "base64"
}
