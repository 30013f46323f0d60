package txn

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/internal/kerrname"
)

// TestDataDriven runs the scripts in testdata/scripts/ (not testdata/
// itself, where go test keeps fuzz corpora). Commands:
//
//	config key=value ...   (before the first request: max-timeout, expiration,
//	                        abort-check, expiry-check in ms; coord-epoch)
//	init w=N [id=T] [timeout=MS] [pid=N epoch=N] [v=V]   (no id: none)
//	add w=N id=T pid=N epoch=N parts=t/0,t/1 [v=V]
//	add-batch w=N           (v4; one transaction a line:
//	                         id=T pid=N epoch=N parts=t/0,t/1 [verify])
//	offsets w=N id=T pid=N epoch=N partition=P [v=V]
//	end w=N id=T pid=N epoch=N commit|abort [v=V]
//	markers id=T [pid=N epoch=N]  (the id's last Marker's, by default)
//	written write=N [error=CODE]
//	describe id=T
//	list [states=S,...] [pids=N,...] [duration=MS] [pattern=RE]
//	advance DURATION       (moves the clock and ticks)
//	restart                (a new coordinator loads the durable records)
//	seed id=T pid=N epoch=N [state=S] [parts=t/0,...] [timeout=MS]
//	                       (a record in the log, as an earlier coordinator
//	                        wrote it; restart loads it)
//
// Each command prints its replies (w<N>: ...), records and markers. Its
// records are written at once (Written with no error) and what that
// brings is printed too, unless the command says hold: then it prints
// "write=N pending" until a written command. Records whose write failed
// are not in the log restart loads. Times are printed relative to the
// script's start.
func TestDataDriven(t *testing.T) {
	datadriven.Walk(t, "testdata/scripts", func(t *testing.T, path string) {
		start := time.UnixMilli(1_000_000)
		now := start
		cfg := Config{MaxTimeout: 15 * time.Minute, IDExpiration: 7 * 24 * time.Hour,
			AbortCheckInterval: 10 * time.Second, ExpiryCheckInterval: time.Hour, CoordinatorEpoch: 3}
		var c *Coordinator
		coord := func() *Coordinator {
			if c == nil {
				c = New(cfg)
			}
			return c
		}
		type write struct {
			id     WriteID
			recs   []Record
			failed bool
		}
		var wal []*write
		lastMarker := map[string]Marker{}
		var settle func(out *Output, hold bool) WriteID
		settle = func(out *Output, hold bool) WriteID {
			if out.Write == 0 {
				return 0
			}
			wal = append(wal, &write{id: out.Write, recs: out.Records})
			if hold {
				return out.Write
			}
			more := coord().Written(now, out.Write, nil)
			settle(&more, false)
			out.Replies = append(out.Replies, more.Replies...)
			out.Records = append(out.Records, more.Records...)
			out.Markers = append(out.Markers, more.Markers...)
			return 0
		}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			parse := func(cmdArgs []datadriven.CmdArg) map[string]string {
				args := map[string]string{}
				for _, a := range cmdArgs {
					args[a.Key] = strings.Join(a.Vals, ",")
				}
				return args
			}
			args := parse(d.CmdArgs)
			num := func(args map[string]string, k string, def int64) int64 {
				v, ok := args[k]
				if !ok {
					return def
				}
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					d.Fatalf(t, "%s: %v", k, err)
				}
				return n
			}
			parts := func(s string) []TopicPartition {
				var out []TopicPartition
				for _, tp := range strings.Split(s, ",") {
					topic, p, _ := strings.Cut(tp, "/")
					pi, _ := strconv.Atoi(p)
					out = append(out, TopicPartition{topic, int32(pi)})
				}
				return out
			}
			var out Output
			var b strings.Builder
			_, hold := args["hold"]
			w := Waiter(num(args, "w", 0))
			id, pid, epoch := args["id"], num(args, "pid", -1), int16(num(args, "epoch", -1))
			switch d.Cmd {
			case "config":
				ms := func(k string, dst *time.Duration) {
					if _, ok := args[k]; ok {
						*dst = time.Duration(num(args, k, 0)) * time.Millisecond
					}
				}
				ms("max-timeout", &cfg.MaxTimeout)
				ms("expiration", &cfg.IDExpiration)
				ms("abort-check", &cfg.AbortCheckInterval)
				ms("expiry-check", &cfg.ExpiryCheckInterval)
				cfg.CoordinatorEpoch = int32(num(args, "coord-epoch", int64(cfg.CoordinatorEpoch)))
				return "ok"
			case "init":
				req := kmsg.NewPtrInitProducerIDRequest()
				req.Version = int16(num(args, "v", 5))
				if v, ok := args["id"]; ok {
					req.TransactionalID = &v
				}
				req.TransactionTimeoutMillis = int32(num(args, "timeout", 60000))
				req.ProducerID, req.ProducerEpoch = pid, epoch
				out = coord().InitProducerID(now, w, req)
			case "add", "add-batch":
				req := kmsg.NewPtrAddPartitionsToTxnRequest()
				req.Version = int16(num(args, "v", 3))
				if d.Cmd == "add" {
					req.TransactionalID, req.ProducerID, req.ProducerEpoch = id, pid, epoch
					for _, tp := range parts(args["parts"]) {
						rt := kmsg.NewAddPartitionsToTxnRequestTopic()
						rt.Topic, rt.Partitions = tp.Topic, []int32{tp.Partition}
						req.Topics = append(req.Topics, rt)
					}
				} else {
					req.Version = 4
					for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
						la := map[string]string{}
						for _, f := range strings.Fields(line) {
							k, v, _ := strings.Cut(f, "=")
							la[k] = v
						}
						rt := kmsg.NewAddPartitionsToTxnRequestTransaction()
						rt.TransactionalID, rt.ProducerID, rt.ProducerEpoch = la["id"], num(la, "pid", -1), int16(num(la, "epoch", -1))
						_, rt.VerifyOnly = la["verify"]
						for _, tp := range parts(la["parts"]) {
							tt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
							tt.Topic, tt.Partitions = tp.Topic, []int32{tp.Partition}
							rt.Topics = append(rt.Topics, tt)
						}
						req.Transactions = append(req.Transactions, rt)
					}
				}
				out = coord().AddPartitions(now, w, req, func(topic string, _ int32) bool { return topic != "nosuch" })
			case "offsets":
				req := kmsg.NewPtrAddOffsetsToTxnRequest()
				req.Version = int16(num(args, "v", 3))
				req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = id, pid, epoch, "g"
				out = coord().AddOffsets(now, w, req, int32(num(args, "partition", 0)))
			case "end":
				req := kmsg.NewPtrEndTxnRequest()
				req.Version = int16(num(args, "v", 3))
				req.TransactionalID, req.ProducerID, req.ProducerEpoch = id, pid, epoch
				_, req.Commit = args["commit"]
				out = coord().EndTxn(now, w, req)
			case "markers":
				m := lastMarker[id]
				out = coord().MarkersWritten(now, id, num(args, "pid", m.ProducerID), int16(num(args, "epoch", int64(m.ProducerEpoch))))
			case "written":
				wid := WriteID(num(args, "write", 0))
				var failure *kerr.Error
				if name, ok := args["error"]; ok {
					failure = errorNamed(name)
					if failure == nil {
						d.Fatalf(t, "unknown error %s", name)
					}
					for _, wr := range wal {
						if wr.id == wid {
							wr.failed = true
						}
					}
				}
				out = coord().Written(now, wid, failure)
			case "describe":
				s := coord().Describe(id)
				fmt.Fprintf(&b, "%s: %s", id, codeName(s.ErrorCode))
				if s.ErrorCode == 0 {
					fmt.Fprintf(&b, " state=%s pid=%d epoch=%d timeout=%d start=%s parts=[", s.State, s.ProducerID, s.ProducerEpoch, s.TimeoutMillis, rel(start, s.StartTimestamp))
					for i, t := range s.Topics {
						for j, p := range t.Partitions {
							if i+j > 0 {
								b.WriteString(" ")
							}
							fmt.Fprintf(&b, "%s/%d", t.Topic, p)
						}
					}
					b.WriteString("]")
				}
				b.WriteString("\n")
			case "list":
				req := kmsg.NewPtrListTransactionsRequest()
				req.Version = 2
				if s, ok := args["states"]; ok {
					req.StateFilters = strings.Split(s, ",")
				}
				if s, ok := args["pids"]; ok {
					for _, p := range strings.Split(s, ",") {
						n, _ := strconv.ParseInt(p, 10, 64)
						req.ProducerIDFilters = append(req.ProducerIDFilters, n)
					}
				}
				req.DurationFilterMillis = num(args, "duration", -1)
				if p, ok := args["pattern"]; ok {
					req.TransactionalIDPattern = &p
				}
				resp := coord().List(now, req)
				fmt.Fprintf(&b, "list: %s", codeName(resp.ErrorCode))
				if len(resp.UnknownStateFilters) > 0 {
					fmt.Fprintf(&b, " unknown=%s", strings.Join(resp.UnknownStateFilters, ","))
				}
				b.WriteString("\n")
				for _, s := range resp.TransactionStates {
					fmt.Fprintf(&b, "  %s pid=%d %s\n", s.TransactionalID, s.ProducerID, s.TransactionState)
				}
			case "advance":
				dur, err := time.ParseDuration(d.CmdArgs[0].Key)
				if err != nil {
					d.Fatalf(t, "advance: %v", err)
				}
				now = now.Add(dur)
				out = coord().Tick(now)
				fmt.Fprintf(&b, "t=%s\n", now.Sub(start))
			case "seed":
				st, ok := ParseState(args["state"])
				if !ok {
					st = Empty
				}
				m := meta{producerID: pid, epoch: epoch, state: st, start: -1, updated: now.UnixMilli(),
					timeout: time.Duration(num(args, "timeout", 60000)) * time.Millisecond}
				if p, ok := args["parts"]; ok {
					m.partitions, m.start = parts(p), now.UnixMilli()
				}
				wal = append(wal, &write{recs: []Record{record(id, m)}})
				return "ok"
			case "restart":
				next := coord().nextPID
				c = New(cfg)
				c.nextPID = next
				n := 0
				for _, wr := range wal {
					if wr.failed {
						continue
					}
					for _, r := range wr.recs {
						if err := c.Load(r.Key, r.Value); err != nil {
							d.Fatalf(t, "load: %v", err)
						}
						n++
					}
				}
				fmt.Fprintf(&b, "loaded %d records\n", n)
				out = c.Loaded(now)
			default:
				d.Fatalf(t, "unknown command %s", d.Cmd)
			}
			if wid := settle(&out, hold); wid != 0 {
				fmt.Fprintf(&b, "write=%d pending\n", wid)
			}
			for _, m := range out.Markers {
				lastMarker[m.TransactionalID] = m
			}
			printOutput(&b, start, out)
			return b.String()
		})
	})
}

func rel(start time.Time, ms int64) string {
	if ms < 0 {
		return "-"
	}
	return time.UnixMilli(ms).Sub(start).String()
}

func codeName(code int16) string { return kerrname.Of(code) }

func errorNamed(name string) *kerr.Error { return kerrname.Lookup(name) }

func printOutput(b *strings.Builder, start time.Time, out Output) {
	for _, r := range out.Replies {
		switch resp := r.Resp.(type) {
		case *kmsg.InitProducerIDResponse:
			fmt.Fprintf(b, "w%d: init %s pid=%d epoch=%d\n", r.To, codeName(resp.ErrorCode), resp.ProducerID, resp.ProducerEpoch)
		case *kmsg.AddPartitionsToTxnResponse:
			fmt.Fprintf(b, "w%d: add", r.To)
			for _, t := range resp.Topics {
				for _, p := range t.Partitions {
					fmt.Fprintf(b, " %s/%d=%s", t.Topic, p.Partition, codeName(p.ErrorCode))
				}
			}
			for _, tx := range resp.Transactions {
				fmt.Fprintf(b, " %s:", tx.TransactionalID)
				for _, t := range tx.Topics {
					for _, p := range t.Partitions {
						fmt.Fprintf(b, " %s/%d=%s", t.Topic, p.Partition, codeName(p.ErrorCode))
					}
				}
			}
			b.WriteString("\n")
		case *kmsg.AddOffsetsToTxnResponse:
			fmt.Fprintf(b, "w%d: offsets %s\n", r.To, codeName(resp.ErrorCode))
		case *kmsg.EndTxnResponse:
			fmt.Fprintf(b, "w%d: end %s\n", r.To, codeName(resp.ErrorCode))
		}
	}
	for _, rec := range out.Records {
		b.WriteString(describeRecord(start, rec))
		b.WriteString("\n")
	}
	for _, m := range out.Markers {
		result := "abort"
		if m.Commit {
			result = "commit"
		}
		fmt.Fprintf(b, "marker: %s pid=%d epoch=%d %s coord-epoch=%d parts=%v\n", m.TransactionalID, m.ProducerID, m.ProducerEpoch, result, m.CoordinatorEpoch, fmtParts(m.Partitions))
	}
}

func fmtParts(ps []TopicPartition) string {
	var s []string
	for _, p := range ps {
		s = append(s, fmt.Sprintf("%s/%d", p.Topic, p.Partition))
	}
	return "[" + strings.Join(s, " ") + "]"
}

func describeRecord(start time.Time, r Record) string {
	var k kmsg.TxnMetadataKey
	_ = k.ReadFrom(r.Key)
	if r.Value == nil {
		return fmt.Sprintf("record: %s tombstone", k.TransactionalID)
	}
	var v kmsg.TxnMetadataValue
	_ = v.ReadFrom(r.Value)
	var ps []TopicPartition
	for _, t := range v.Topics {
		for _, p := range t.Partitions {
			ps = append(ps, TopicPartition{t.Topic, p})
		}
	}
	return fmt.Sprintf("record: %s pid=%d epoch=%d state=%s timeout=%d parts=%s start=%s updated=%s",
		k.TransactionalID, v.ProducerID, v.ProducerEpoch, State(v.State), v.TimeoutMillis, fmtParts(ps), rel(start, v.StartTimestamp), rel(start, v.LastUpdateTimestamp))
}
