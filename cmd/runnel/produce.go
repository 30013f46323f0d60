package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"
)

type produceFlags struct {
	file            string
	keySep          string
	headers         []string
	partition       int32
	acks            string
	compression     string
	idempotent      bool
	deliveryTimeout time.Duration
	quiet           bool
}

func newProduceCmd(g *globals) *cobra.Command {
	var f produceFlags
	cmd := &cobra.Command{
		Use:   "produce TOPIC",
		Short: "Write records to a topic, one per input line",
		Long: `Write records to a topic, one per line of standard input (or of -f file).
A trailing "\n" or "\r\n" is stripped; an empty line is an empty record.

With -K SEP each line is split at the first SEP into key and value; a line
without SEP becomes a record with a null key, as in kcat. Records without a
key, or with -p, go where the partitioner (or -p) puts them; keyed records go
to the partition Kafka's Java client would pick (murmur2).

Input is streamed: large files are never held in memory. The number of records
written is reported on stderr at the end. The first failed record stops the
input; records already sent are still flushed.`,
		Example: `  echo hello | runnel produce greetings
  runnel produce orders -K : -H source=cli -f orders.txt --compression zstd`,
		Args: exactArgs(1, "TOPIC"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.explain(runProduce(cmd, g, args[0], &f))
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.file, "file", "f", "-", `read records from this file ("-": standard input)`)
	fl.StringVarP(&f.keySep, "key-separator", "K", "", "split each line at the first SEP into key and value")
	fl.StringArrayVarP(&f.headers, "header", "H", nil, "add header key=value to every record, repeatable")
	fl.Int32VarP(&f.partition, "partition", "p", -1, "write every record to this partition (-1: let the partitioner choose)")
	fl.StringVar(&f.acks, "acks", "all", "acknowledgements to wait for: all, 1 or 0")
	fl.StringVar(&f.compression, "compression", "none", "batch compression: none, gzip, snappy, lz4 or zstd")
	fl.BoolVar(&f.idempotent, "idempotent", true, "idempotent producer (no duplicates on retry); needs --acks all, off otherwise")
	fl.DurationVar(&f.deliveryTimeout, "delivery-timeout", 2*time.Minute, "give up on a record not acknowledged in this time (Kafka's delivery.timeout.ms)")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "do not report the record count on stderr")
	return cmd
}

func runProduce(cmd *cobra.Command, g *globals, topic string, f *produceFlags) error {
	hdrs, err := parseKVs("-H/--header", f.headers)
	if err != nil {
		return err
	}
	headers := make([]kgo.RecordHeader, len(hdrs))
	for i, kv := range hdrs {
		headers[i] = kgo.RecordHeader{Key: kv[0], Value: []byte(kv[1])}
	}
	opts, err := producerOpts(f.acks, f.compression, f.idempotent, cmd.Flags().Changed("idempotent"))
	if err != nil {
		return err
	}
	opts = append(opts, kgo.DefaultProduceTopic(topic), kgo.RecordDeliveryTimeout(f.deliveryTimeout))
	if f.partition >= 0 {
		opts = append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	}

	in := cmd.InOrStdin()
	if f.file != "-" {
		file, err := os.Open(f.file)
		if err != nil {
			return fmt.Errorf("-f: %w", err)
		}
		defer file.Close()
		in = file
	}

	cl, err := g.newClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()

	ctx := cmd.Context()
	ps, err := topicPartitions(ctx, cl, topic, true)
	if err != nil {
		return err
	}
	if f.partition >= 0 {
		if err := checkPartition(topic, ps, f.partition); err != nil {
			return err
		}
	}
	stderr := cmd.ErrOrStderr()
	if f.file == "-" && isTerminal(in) && !f.quiet {
		fmt.Fprintf(stderr, "Type records for %q, one per line; Ctrl-D to finish.\n", topic)
	}

	lines := lineRecords(in, []byte(f.keySep), headers, f.partition)
	defer lines.stop()

	var (
		ok       atomic.Int64
		failed   atomic.Int64
		firstErr atomic.Pointer[error]
		aborted  = make(chan struct{})
		once     sync.Once
	)
	promise := func(_ *kgo.Record, err error) {
		if err == nil {
			ok.Add(1)
			return
		}
		failed.Add(1)
		if firstErr.CompareAndSwap(nil, &err) {
			once.Do(func() { close(aborted) })
		}
	}

	start := time.Now()
	interrupted := false
loop:
	for {
		select {
		case r, more := <-lines.records:
			if !more {
				break loop
			}
			cl.Produce(ctx, r, promise)
		case <-aborted:
			break loop
		case <-ctx.Done():
			interrupted = true
			break loop
		}
	}
	if interrupted && !f.quiet && cl.BufferedProduceRecords() > 0 {
		fmt.Fprintf(stderr, "Interrupted: flushing %d buffered records (Ctrl-C again to abort).\n", cl.BufferedProduceRecords())
	}
	// Records already handed to the client are delivered or time out
	// (--delivery-timeout); the interrupt does not drop them.
	if err := cl.Flush(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	readErr := lines.err()

	n := ok.Load()
	if !f.quiet {
		fmt.Fprintf(stderr, "Produced %d %s to %q in %s.\n", n, plural(int(n), "record"), topic, time.Since(start).Round(time.Millisecond))
	}
	if p := firstErr.Load(); p != nil {
		nf := int(failed.Load())
		return fmt.Errorf("%d %s failed, stopped at the first error: %w", nf, plural(nf, "record"), kafkaErr(g.explain(*p), ""))
	}
	if readErr != nil {
		return fmt.Errorf("reading input: %w", readErr)
	}
	return nil
}

// lineSource reads records from an input in its own goroutine, so that an
// interrupt is not stuck behind a blocking read of a terminal or pipe.
type lineSource struct {
	records chan *kgo.Record
	done    chan struct{}
	readErr error // set before records is closed
	once    sync.Once
}

func lineRecords(in io.Reader, keySep []byte, headers []kgo.RecordHeader, partition int32) *lineSource {
	s := &lineSource{records: make(chan *kgo.Record, 256), done: make(chan struct{})}
	go func() {
		defer close(s.records)
		br := bufio.NewReaderSize(in, 64<<10)
		for {
			// ReadBytes returns a fresh slice per line: the record owns
			// it until the client is done with it.
			line, err := br.ReadBytes('\n')
			if len(line) > 0 {
				line = bytes.TrimSuffix(line, []byte{'\n'})
				line = bytes.TrimSuffix(line, []byte{'\r'})
				r := &kgo.Record{Value: line, Headers: headers}
				if partition >= 0 {
					r.Partition = partition
				}
				if len(keySep) > 0 {
					if k, v, ok := bytes.Cut(line, keySep); ok {
						r.Key, r.Value = k, v
					}
				}
				select {
				case s.records <- r:
				case <-s.done:
					return
				}
			}
			if err != nil {
				if err != io.EOF {
					s.readErr = err
				}
				return
			}
		}
	}()
	return s
}

// stop lets the reader goroutine exit at its next record. A read that is
// blocked on a terminal stays blocked until the process exits.
func (s *lineSource) stop() { s.once.Do(func() { close(s.done) }) }

// err returns the read error, once records has been closed; nil otherwise.
func (s *lineSource) err() error {
	select {
	case _, more := <-s.records:
		if !more {
			return s.readErr
		}
	default:
	}
	return nil
}
