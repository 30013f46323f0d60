package group

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

// TestDataDriven runs the scripts in testdata/. Commands:
//
//	config key=value ...        (before the first request: min-session, max-session,
//	                             delay, max-size, meta-max, retention, check, in ms)
//	join w=N group=G [member=M] [instance=I] [client=C] [session=MS] [rebalance=MS]
//	     [v=V] [type=T] [protocols=P1,P2] [meta=X]
//	sync w=N group=G member=M gen=N [instance=I] [assign=M1:A1,M2:A2] [type=T] [protocol=P]
//	heartbeat group=G member=M gen=N [instance=I]
//	leave group=G [v=V] members=M1,M2 | member=M [instance=I]
//	commit group=G [member=M] [gen=N] [instance=I] offsets=T/P=O,... [meta=X]
//	fetch group=G [topics=T/P,...] [stable]   (stable: require_stable)
//	txn-commit group=G producer=P [epoch=E] [member=M] [gen=N] [instance=I] [v=V]
//	     offsets=T/P=O,... [meta=X]
//	complete-txn producer=P result=commit|abort [unlogged]
//	                            (the marker is written, then CompleteTxn;
//	                             unlogged: CompleteTxn without a marker in
//	                             the log, as after a lost marker write)
//	marker producer=P result=commit|abort
//	                            (a marker in the log the core is not told
//	                             of, as when the broker stops before
//	                             CompleteTxn: restart replays it)
//	delete group=G
//	delete-offsets group=G offsets=T/P,...
//	describe group=G
//	list
//	advance DURATION            (moves the clock and ticks)
//	written write=N [error=CODE] (reports a held write: durable, or failed)
//	restart [slow=DURATION]     (a new coordinator loads the durable records;
//	                             slow: the load takes that long, and Loaded
//	                             is called that much later)
//
// Each command prints the replies it produced (w<N>: ...) and the records.
// A command's records are written at once (Written with no error) and the
// replies that brings are printed with the command's own, unless the
// command says hold: then it prints "write=N pending" and the write stays
// pending until a written command. Records whose write failed are not in
// the log that restart loads; a txn-commit's records are a transactional
// batch of its producer, replayed with LoadTxn, and markers with
// LoadMarker.
func TestDataDriven(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		start := time.UnixMilli(1_000_000)
		now := start
		cfg := Config{
			MinSessionTimeout: 6 * time.Second, MaxSessionTimeout: 30 * time.Minute,
			InitialRebalanceDelay: 0, MaxSize: 1000, OffsetMetadataMaxBytes: 4096,
			OffsetsRetention: 7 * 24 * time.Hour, OffsetsRetentionCheckInterval: 10 * time.Minute,
		}
		var c *Coordinator
		coord := func() *Coordinator {
			if c == nil {
				c = New(cfg)
			}
			return c
		}
		// The partition's log: each write's records, in append order.
		type write struct {
			id       WriteID
			recs     []Record
			failed   bool
			producer *Producer
			// marker, when set, makes this a control batch of producer.
			marker *bool
		}
		var wal []*write
		// settle writes out's records and, unless held, reports them
		// written, merging what that brings into out.
		var settle func(out *Output, hold bool) (held WriteID)
		settle = func(out *Output, hold bool) WriteID {
			if out.Write == 0 {
				return 0
			}
			wal = append(wal, &write{id: out.Write, recs: out.Records, producer: out.Producer})
			if hold {
				return out.Write
			}
			more := coord().Written(now, out.Write, nil)
			settle(&more, false)
			out.Replies = append(out.Replies, more.Replies...)
			out.Records = append(out.Records, more.Records...)
			return 0
		}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			args := map[string]string{}
			for _, a := range d.CmdArgs {
				args[a.Key] = strings.Join(a.Vals, ",")
			}
			str := func(k, def string) string {
				if v, ok := args[k]; ok {
					return v
				}
				return def
			}
			num := func(k string, def int64) int64 {
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
			optStr := func(k string) *string {
				if v, ok := args[k]; ok {
					return &v
				}
				return nil
			}
			var out Output
			var b strings.Builder
			_, hold := args["hold"]
			switch d.Cmd {
			case "config":
				ms := func(k string, dst *time.Duration) {
					if _, ok := args[k]; ok {
						*dst = time.Duration(num(k, 0)) * time.Millisecond
					}
				}
				ms("min-session", &cfg.MinSessionTimeout)
				ms("max-session", &cfg.MaxSessionTimeout)
				ms("delay", &cfg.InitialRebalanceDelay)
				ms("retention", &cfg.OffsetsRetention)
				ms("check", &cfg.OffsetsRetentionCheckInterval)
				cfg.MaxSize = int(num("max-size", int64(cfg.MaxSize)))
				cfg.OffsetMetadataMaxBytes = int(num("meta-max", int64(cfg.OffsetMetadataMaxBytes)))
				return "ok"
			case "join":
				req := kmsg.NewPtrJoinGroupRequest()
				req.Version = int16(num("v", 5))
				req.Group, req.MemberID, req.InstanceID = str("group", "g"), str("member", ""), optStr("instance")
				req.SessionTimeoutMillis = int32(num("session", 10000))
				req.RebalanceTimeoutMillis = int32(num("rebalance", 20000))
				req.ProtocolType = str("type", "consumer")
				for _, p := range strings.Split(str("protocols", "range"), ",") {
					rp := kmsg.NewJoinGroupRequestProtocol()
					rp.Name, rp.Metadata = p, []byte(str("meta", "m"))
					req.Protocols = append(req.Protocols, rp)
				}
				out = coord().Join(now, Waiter(num("w", 0)), Client{ID: str("client", "c"), Host: "/127.0.0.1"}, req)
			case "sync":
				req := kmsg.NewPtrSyncGroupRequest()
				req.Version = 5
				req.Group, req.MemberID, req.InstanceID = str("group", "g"), str("member", ""), optStr("instance")
				req.Generation = int32(num("gen", 0))
				req.ProtocolType, req.Protocol = optStr("type"), optStr("protocol")
				if a := str("assign", ""); a != "" {
					for _, kv := range strings.Split(a, ",") {
						m, v, _ := strings.Cut(kv, ":")
						ra := kmsg.NewSyncGroupRequestGroupAssignment()
						ra.MemberID, ra.MemberAssignment = m, []byte(v)
						req.GroupAssignment = append(req.GroupAssignment, ra)
					}
				}
				out = coord().Sync(now, Waiter(num("w", 0)), req)
			case "heartbeat":
				req := kmsg.NewPtrHeartbeatRequest()
				req.Version = 4
				req.Group, req.MemberID, req.InstanceID = str("group", "g"), str("member", ""), optStr("instance")
				req.Generation = int32(num("gen", 0))
				fmt.Fprintf(&b, "heartbeat: %s\n", codeName(coord().Heartbeat(now, req).ErrorCode))
			case "leave":
				req := kmsg.NewPtrLeaveGroupRequest()
				req.Version = int16(num("v", 5))
				req.Group, req.MemberID = str("group", "g"), str("member", "")
				if ms, ok := args["members"]; ok {
					for _, m := range strings.Split(ms, ",") {
						rm := kmsg.NewLeaveGroupRequestMember()
						id, inst, ok := strings.Cut(m, "/")
						rm.MemberID = id
						if ok {
							rm.InstanceID = &inst
						}
						req.Members = append(req.Members, rm)
					}
				}
				var resp *kmsg.LeaveGroupResponse
				resp, out = coord().Leave(now, req)
				fmt.Fprintf(&b, "leave: %s", codeName(resp.ErrorCode))
				for _, m := range resp.Members {
					fmt.Fprintf(&b, " %s=%s", m.MemberID, codeName(m.ErrorCode))
				}
				b.WriteString("\n")
			case "commit":
				req := kmsg.NewPtrOffsetCommitRequest()
				req.Version = 8
				req.Group, req.MemberID, req.InstanceID = str("group", "g"), str("member", ""), optStr("instance")
				req.Generation = int32(num("gen", -1))
				for _, tp := range parseOffsets(str("offsets", "")) {
					rt := kmsg.NewOffsetCommitRequestTopic()
					rt.Topic = tp.topic
					rp := kmsg.NewOffsetCommitRequestTopicPartition()
					rp.Partition, rp.Offset, rp.Metadata = tp.partition, tp.offset, optStr("meta")
					rt.Partitions = append(rt.Partitions, rp)
					req.Topics = append(req.Topics, rt)
				}
				var resp *kmsg.OffsetCommitResponse
				resp, out = coord().CommitOffsets(now, req, func(topic string, _ int32) bool { return topic != "nosuch" })
				b.WriteString("commit:")
				for _, rt := range resp.Topics {
					for _, rp := range rt.Partitions {
						fmt.Fprintf(&b, " %s/%d=%s", rt.Topic, rp.Partition, codeName(rp.ErrorCode))
					}
				}
				b.WriteString("\n")
			case "fetch":
				var topics []kmsg.OffsetFetchRequestTopic
				if ts, ok := args["topics"]; ok {
					for _, tp := range strings.Split(ts, ",") {
						topic, p, _ := strings.Cut(tp, "/")
						pi, _ := strconv.Atoi(p)
						rt := kmsg.NewOffsetFetchRequestTopic()
						rt.Topic, rt.Partitions = topic, []int32{int32(pi)}
						topics = append(topics, rt)
					}
				}
				b.WriteString("offsets:")
				_, stable := args["stable"]
				for _, st := range coord().FetchOffsets(str("group", "g"), topics, stable) {
					for _, sp := range st.Partitions {
						if sp.ErrorCode != 0 {
							fmt.Fprintf(&b, " %s/%d=%s", st.Topic, sp.Partition, codeName(sp.ErrorCode))
							continue
						}
						fmt.Fprintf(&b, " %s/%d=%d", st.Topic, sp.Partition, sp.Offset)
						if sp.Metadata != nil && *sp.Metadata != "" {
							fmt.Fprintf(&b, "(%s)", *sp.Metadata)
						}
					}
				}
				b.WriteString("\n")
			case "txn-commit":
				req := kmsg.NewPtrTxnOffsetCommitRequest()
				req.Version = int16(num("v", 4))
				req.Group, req.MemberID, req.InstanceID = str("group", "g"), str("member", ""), optStr("instance")
				req.ProducerID, req.ProducerEpoch = num("producer", 1), int16(num("epoch", 0))
				req.Generation = int32(num("gen", -1))
				for _, tp := range parseOffsets(str("offsets", "")) {
					rt := kmsg.NewTxnOffsetCommitRequestTopic()
					rt.Topic = tp.topic
					rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
					rp.Partition, rp.Offset, rp.Metadata = tp.partition, tp.offset, optStr("meta")
					rt.Partitions = append(rt.Partitions, rp)
					req.Topics = append(req.Topics, rt)
				}
				var resp *kmsg.TxnOffsetCommitResponse
				resp, out = coord().TxnCommitOffsets(now, req, func(topic string, _ int32) bool { return topic != "nosuch" })
				b.WriteString("txn-commit:")
				for _, rt := range resp.Topics {
					for _, rp := range rt.Partitions {
						fmt.Fprintf(&b, " %s/%d=%s", rt.Topic, rp.Partition, codeName(rp.ErrorCode))
					}
				}
				b.WriteString("\n")
				if p := out.Producer; p != nil {
					fmt.Fprintf(&b, "transactional batch: producer=%d epoch=%d atomic=%t\n", p.ID, p.Epoch, out.Atomic)
				}
			case "complete-txn", "marker":
				pid, commit := num("producer", 1), str("result", "") == "commit"
				if r := str("result", ""); r != "commit" && r != "abort" {
					d.Fatalf(t, "result=%q: want commit or abort", r)
				}
				if _, unlogged := args["unlogged"]; !unlogged {
					wal = append(wal, &write{producer: &Producer{ID: pid}, marker: &commit})
				}
				if d.Cmd == "complete-txn" {
					out = coord().CompleteTxn(now, pid, commit)
				}
			case "delete":
				var code *kerr.Error
				code, out = coord().DeleteGroup(now, str("group", "g"))
				fmt.Fprintf(&b, "delete: %s\n", errName(code))
			case "delete-offsets":
				req := kmsg.NewPtrOffsetDeleteRequest()
				req.Group = str("group", "g")
				for _, tp := range strings.Split(str("offsets", ""), ",") {
					topic, p, _ := strings.Cut(tp, "/")
					pi, _ := strconv.Atoi(p)
					rt := kmsg.NewOffsetDeleteRequestTopic()
					rt.Topic = topic
					rp := kmsg.NewOffsetDeleteRequestTopicPartition()
					rp.Partition = int32(pi)
					rt.Partitions = append(rt.Partitions, rp)
					req.Topics = append(req.Topics, rt)
				}
				var resp *kmsg.OffsetDeleteResponse
				resp, out = coord().DeleteOffsets(now, req)
				fmt.Fprintf(&b, "delete-offsets: %s", codeName(resp.ErrorCode))
				for _, rt := range resp.Topics {
					for _, rp := range rt.Partitions {
						fmt.Fprintf(&b, " %s/%d=%s", rt.Topic, rp.Partition, codeName(rp.ErrorCode))
					}
				}
				b.WriteString("\n")
			case "describe":
				g := coord().Describe(str("group", "g"))
				fmt.Fprintf(&b, "%s state=%s type=%s protocol=%s\n", g.Group, g.State, g.ProtocolType, g.Protocol)
				for _, m := range g.Members {
					fmt.Fprintf(&b, "  %s instance=%s client=%s assignment=%q\n", m.MemberID, deref(m.InstanceID), m.ClientID, m.MemberAssignment)
				}
			case "list":
				for _, s := range coord().List() {
					fmt.Fprintf(&b, "%s %s %s\n", s.Group, s.ProtocolType, s.State)
				}
			case "advance":
				dur, err := time.ParseDuration(d.CmdArgs[0].Key)
				if err != nil {
					d.Fatalf(t, "advance: %v", err)
				}
				now = now.Add(dur)
				out = coord().Tick(now)
				fmt.Fprintf(&b, "t=%s\n", now.Sub(start))
			case "written":
				id := WriteID(num("write", 0))
				var failure *kerr.Error
				if name, ok := args["error"]; ok {
					failure = errorNamed(name)
					if failure == nil {
						d.Fatalf(t, "unknown error %s", name)
					}
					for _, w := range wal {
						if w.id == id {
							w.failed = true
						}
					}
				}
				out = coord().Written(now, id, failure)
			case "restart":
				// Member ids stay unique across the restart, as the
				// broker's random ones are.
				ids := coord().nextID
				c = New(cfg)
				c.nextID = ids
				n := 0
				for _, w := range wal {
					switch {
					case w.failed:
						continue
					case w.marker != nil:
						c.LoadMarker(now, w.producer.ID, *w.marker)
						continue
					}
					for _, r := range w.recs {
						var err error
						if w.producer != nil {
							err = c.LoadTxn(now, w.producer.ID, r.Key, r.Value)
						} else {
							err = c.Load(now, r.Key, r.Value)
						}
						if err != nil {
							d.Fatalf(t, "load: %v", err)
						}
						n++
					}
				}
				if s, ok := args["slow"]; ok {
					dur, err := time.ParseDuration(s)
					if err != nil {
						d.Fatalf(t, "slow: %v", err)
					}
					now = now.Add(dur)
				}
				fmt.Fprintf(&b, "loaded %d records\n", n)
				out = c.Loaded(now)
			default:
				d.Fatalf(t, "unknown command %s", d.Cmd)
			}
			if w := settle(&out, hold); w != 0 {
				fmt.Fprintf(&b, "write=%d pending\n", w)
			}
			printOutput(&b, out)
			return b.String()
		})
	})
}

type topicOffset struct {
	topic     string
	partition int32
	offset    int64
}

// parseOffsets parses T/P=O,...
func parseOffsets(s string) []topicOffset {
	var out []topicOffset
	for _, o := range strings.Split(s, ",") {
		tp, off, _ := strings.Cut(o, "=")
		topic, p, _ := strings.Cut(tp, "/")
		pi, _ := strconv.Atoi(p)
		oi, _ := strconv.ParseInt(off, 10, 64)
		out = append(out, topicOffset{topic, int32(pi), oi})
	}
	return out
}

func codeName(code int16) string { return kerrname.Of(code) }

func errorNamed(name string) *kerr.Error { return kerrname.Lookup(name) }

func errName(e *kerr.Error) string {
	if e == nil {
		return "NONE"
	}
	return e.Message
}

func printOutput(b *strings.Builder, out Output) {
	for _, r := range out.Replies {
		switch resp := r.Resp.(type) {
		case *kmsg.JoinGroupResponse:
			fmt.Fprintf(b, "w%d: join %s gen=%d member=%s leader=%s protocol=%s", r.To, codeName(resp.ErrorCode), resp.Generation, resp.MemberID, resp.LeaderID, deref(resp.Protocol))
			if resp.SkipAssignment {
				b.WriteString(" skip-assignment")
			}
			if len(resp.Members) > 0 {
				b.WriteString(" members=")
				for i, m := range resp.Members {
					if i > 0 {
						b.WriteString(",")
					}
					b.WriteString(m.MemberID)
				}
			}
			b.WriteString("\n")
		case *kmsg.SyncGroupResponse:
			fmt.Fprintf(b, "w%d: sync %s assignment=%q\n", r.To, codeName(resp.ErrorCode), resp.MemberAssignment)
		}
	}
	for _, rec := range out.Records {
		b.WriteString(describeRecord(rec))
		b.WriteString("\n")
	}
}

func describeRecord(r Record) string {
	if r.Key[1] < 2 {
		var k kmsg.OffsetCommitKey
		_ = k.ReadFrom(r.Key)
		if r.Value == nil {
			return fmt.Sprintf("record: offset %s %s/%d tombstone", k.Group, k.Topic, k.Partition)
		}
		var v kmsg.OffsetCommitValue
		_ = v.ReadFrom(r.Value)
		return fmt.Sprintf("record: offset %s %s/%d=%d", k.Group, k.Topic, k.Partition, v.Offset)
	}
	var k kmsg.GroupMetadataKey
	_ = k.ReadFrom(r.Key)
	if r.Value == nil {
		return fmt.Sprintf("record: group %s tombstone", k.Group)
	}
	var v kmsg.GroupMetadataValue
	_ = v.ReadFrom(r.Value)
	var ms []string
	for _, m := range v.Members {
		ms = append(ms, fmt.Sprintf("%s:%q", m.MemberID, m.Assignment))
	}
	return fmt.Sprintf("record: group %s gen=%d protocol=%s leader=%s members=[%s]", k.Group, v.Generation, deref(v.Protocol), deref(v.Leader), strings.Join(ms, " "))
}
