package controller

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/runnel-io/runnel/broker/internal/metadata"
)

// TestDataDriven runs the scripts in testdata/scripts/ (not testdata/
// itself, where go test keeps fuzz corpora). Commands:
//
//	config [session=MS] [unclean=BOOL] [rebalance=BOOL] [pct=N] [interval=MS]
//	                          (before the first command that uses the controller)
//	register id=N inc=I [rack=R]
//	legacy id=N [rack=R]      (a broker registered without the controller: epoch 0)
//	heartbeat id=N [epoch=E] [offset=O] [fence] [shutdown]
//	                          (epoch: the registered one; offset: the image's)
//	topic name=T replicas=1,2,3/2,3,1 [configs=k=v]   (leader: first replica; ISR: all)
//	cluster-config key=K [value=V]  (the cluster-wide dynamic broker default)
//	advance MS                (moves the clock and ticks)
//	tick
//	alter broker=N topic=T p=N isr=1,2 [lepoch=E] [pepoch=E] [bepoch=E]
//	                          (epochs default to the current ones)
//	elect topic=T p=N type=preferred|unclean
//	place brokers=1:rack,2,3:rack:fenced n=N rf=N [start=N] [first=N]
//	show                      (brokers and partitions)
//	new-controller            (a failover: a new Controller, same config)
//
// Every command prints its reply or Kafka error and the records it made,
// which are then applied to the image (they must apply), and the
// partition invariants are checked.
func TestDataDriven(t *testing.T) {
	datadriven.Walk(t, "testdata/scripts", func(t *testing.T, path string) {
		now := time.UnixMilli(1_000_000)
		cfg := Config{SessionTimeout: 9 * time.Second, LeaderImbalancePercentage: 10, LeaderImbalanceCheckInterval: 300 * time.Second}
		var c *Controller
		ctl := func() *Controller {
			if c == nil {
				c = New(cfg)
			}
			return c
		}
		im := metadata.Empty()
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			args := map[string]string{}
			for _, a := range d.CmdArgs {
				args[a.Key] = strings.Join(a.Vals, ",")
			}
			flag := func(k string) bool { _, ok := args[k]; return ok }
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
			boolean := func(k string, def bool) bool {
				v, ok := args[k]
				if !ok {
					return def
				}
				return v == "true" || v == ""
			}
			var b strings.Builder
			var recs []metadata.Record
			apply := func() {
				for _, r := range recs {
					fmt.Fprintln(&b, formatRecord(r))
					next, err := im.Apply(r)
					if err != nil {
						d.Fatalf(t, "record %s does not apply: %v", formatRecord(r), err)
					}
					im = next
				}
				if err := checkInvariants(im); err != nil {
					d.Fatalf(t, "%v", err)
				}
			}
			switch d.Cmd {
			case "config":
				if c != nil {
					d.Fatalf(t, "config after the controller started")
				}
				cfg.NodeID = int32(num("node", int64(cfg.NodeID)))
				cfg.SessionTimeout = time.Duration(num("session", int64(cfg.SessionTimeout/time.Millisecond))) * time.Millisecond
				cfg.UncleanLeaderElection = boolean("unclean", cfg.UncleanLeaderElection)
				cfg.AutoLeaderRebalance = boolean("rebalance", cfg.AutoLeaderRebalance)
				cfg.LeaderImbalancePercentage = int32(num("pct", int64(cfg.LeaderImbalancePercentage)))
				cfg.LeaderImbalanceCheckInterval = time.Duration(num("interval", int64(cfg.LeaderImbalanceCheckInterval/time.Millisecond))) * time.Millisecond
				return "ok\n"
			case "register":
				reply, rs, err := ctl().Register(im, now, Registration{
					ID: int32(num("id", 0)), Host: "h", Port: 9092, Rack: args["rack"], Incarnation: args["inc"],
				})
				if err != nil {
					return errString(err)
				}
				fmt.Fprintf(&b, "epoch=%d\n", reply.Epoch)
				recs = rs
			case "legacy":
				recs = []metadata.Record{{RegisterBroker: &metadata.Broker{ID: int32(num("id", 0)), Host: "h", Port: 9092, Rack: args["rack"]}}}
			case "heartbeat":
				id := int32(num("id", 0))
				reply, rs, err := ctl().Heartbeat(im, now, Heartbeat{
					ID: id, Epoch: num("epoch", im.Brokers[id].Epoch), MetadataOffset: num("offset", im.Offset),
					WantFence: flag("fence"), WantShutdown: flag("shutdown"),
				})
				if err != nil {
					return errString(err)
				}
				fmt.Fprintf(&b, "caught-up=%v fenced=%v should-shut-down=%v\n", reply.IsCaughtUp, reply.IsFenced, reply.ShouldShutDown)
				recs = rs
			case "topic":
				tp := &metadata.Topic{Name: args["name"]}
				copy(tp.ID[:], tp.Name)
				for _, s := range strings.Split(args["replicas"], "/") {
					rs := ids(d, t, s)
					tp.Partitions = append(tp.Partitions, metadata.Partition{Leader: rs[0], Replicas: rs, ISR: slices.Clone(rs)})
				}
				if v, ok := args["configs"]; ok {
					k, val, _ := strings.Cut(v, "=")
					tp.Configs = map[string]string{k: val}
				}
				recs = []metadata.Record{{CreateTopic: tp}}
			case "cluster-config":
				var v *string
				if s, ok := args["value"]; ok {
					v = &s
				}
				recs = []metadata.Record{{SetBrokerConfig: &metadata.SetConfig{Name: "", Key: args["key"], Value: v}}}
			case "advance":
				ms, err := strconv.Atoi(strings.TrimSpace(d.CmdArgs[0].Key))
				if err != nil {
					d.Fatalf(t, "advance: %v", err)
				}
				now = now.Add(time.Duration(ms) * time.Millisecond)
				recs = ctl().Tick(im, now)
			case "tick":
				recs = ctl().Tick(im, now)
			case "alter":
				topic, p := args["topic"], int32(num("p", 0))
				var cur metadata.Partition
				if tp := im.Topic(topic); tp != nil && int(p) < len(tp.Partitions) {
					cur = tp.Partitions[p]
				}
				broker := int32(num("broker", 0))
				st, r, err := AlterPartition(im, AlterPartitionRequest{
					Broker: broker, BrokerEpoch: num("bepoch", im.Brokers[broker].Epoch), Topic: topic, Partition: p,
					LeaderEpoch: int32(num("lepoch", int64(cur.LeaderEpoch))), PartitionEpoch: int32(num("pepoch", int64(cur.Epoch))),
					ISR: ids(d, t, args["isr"]),
				})
				if err != nil {
					return errString(err)
				}
				fmt.Fprintf(&b, "ok %s\n", formatPartition(st))
				if r != nil {
					recs = []metadata.Record{*r}
				}
			case "elect":
				typ := map[string]ElectionType{"preferred": Preferred, "unclean": Unclean, "bad": 7}[args["type"]]
				ch, err := ElectLeader(im, args["topic"], int32(num("p", 0)), typ)
				if err != nil {
					return errString(err)
				}
				recs = []metadata.Record{{ChangePartition: ch}}
			case "reassign":
				rp := ReassignPartition{Topic: args["topic"], Partition: int32(num("p", 0))}
				if args["replicas"] != "cancel" {
					rp.Replicas = ids(d, t, args["replicas"])
				}
				reply, rs := Reassign(im, ReassignRequest{Partitions: []ReassignPartition{rp}})
				for _, r := range reply.Results {
					if r.ErrorCode != 0 {
						fmt.Fprintf(&b, "%s\n", kerr.ErrorForCode(r.ErrorCode).(*kerr.Error).Message)
					}
				}
				recs = rs
			case "place":
				var brokers []metadata.Broker
				for _, s := range strings.Split(args["brokers"], ",") {
					f := strings.Split(s, ":")
					id, err := strconv.Atoi(f[0])
					if err != nil {
						d.Fatalf(t, "broker %q: %v", s, err)
					}
					br := metadata.Broker{ID: int32(id)}
					if len(f) > 1 {
						br.Rack = f[1]
					}
					br.Fenced = len(f) > 2 && f[2] == "fenced"
					br.InControlledShutdown = len(f) > 2 && f[2] == "shutdown"
					brokers = append(brokers, br)
				}
				out, err := Place(brokers, Placement{First: int(num("first", 0)), Count: int(num("n", 1)),
					ReplicationFactor: int(num("rf", 1)), Start: int(num("start", 0))})
				if err != nil {
					return errString(err)
				}
				return formatPlacement(brokers, out, int(num("first", 0)))
			case "show":
				return show(im)
			case "new-controller":
				if c != nil {
					c.dropped, c = 0, New(cfg)
				}
				return "ok\n"
			default:
				d.Fatalf(t, "unknown command %s", d.Cmd)
			}
			apply()
			if b.Len() == 0 {
				return "no change\n"
			}
			return b.String()
		})
		if c != nil && c.dropped != 0 {
			t.Fatalf("the controller dropped %d changes that did not apply", c.dropped)
		}
	})
}

func ids(d *datadriven.TestData, t *testing.T, s string) []int32 {
	var out []int32
	for _, f := range strings.Split(s, ",") {
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil {
			d.Fatalf(t, "id %q: %v", f, err)
		}
		out = append(out, int32(n))
	}
	return out
}

// errString prints the Kafka error name a controller error maps to.
func errString(err error) string {
	var ke *kerr.Error
	if !errors.As(err, &ke) {
		return "error: " + err.Error() + "\n"
	}
	return ke.Message + "\n"
}

func formatRecord(r metadata.Record) string {
	switch {
	case r.RegisterBroker != nil:
		b := r.RegisterBroker
		return fmt.Sprintf("register %d epoch=%d fenced=%v rack=%q", b.ID, b.Epoch, b.Fenced, b.Rack)
	case r.ChangeBroker != nil:
		c := r.ChangeBroker
		s := fmt.Sprintf("change-broker %d epoch=%d", c.ID, c.Epoch)
		if c.Fenced != nil {
			s += fmt.Sprintf(" fenced=%v", *c.Fenced)
		}
		if c.InControlledShutdown != nil {
			s += fmt.Sprintf(" shutdown=%v", *c.InControlledShutdown)
		}
		return s
	case r.ChangePartition != nil:
		c := r.ChangePartition
		return fmt.Sprintf("change %s-%d %s", c.Topic, c.Partition, formatPartition(c.State))
	case r.CreateTopic != nil:
		return fmt.Sprintf("create %s partitions=%d", r.CreateTopic.Name, len(r.CreateTopic.Partitions))
	case r.SetBrokerConfig != nil:
		return fmt.Sprintf("broker-config %s", r.SetBrokerConfig.Key)
	}
	return fmt.Sprintf("%+v", r)
}

func formatPartition(p metadata.Partition) string {
	s := fmt.Sprintf("leader=%d leader-epoch=%d epoch=%d isr=%v replicas=%v", p.Leader, p.LeaderEpoch, p.Epoch, p.ISR, p.Replicas)
	if p.Reassigning() {
		s += fmt.Sprintf(" adding=%v removing=%v", p.AddingReplicas, p.RemovingReplicas)
	}
	return s
}

func show(im *metadata.Image) string {
	var b strings.Builder
	for _, id := range im.BrokerIDs() {
		br := im.Brokers[id]
		fmt.Fprintf(&b, "broker %d epoch=%d fenced=%v shutdown=%v\n", id, br.Epoch, br.Fenced, br.InControlledShutdown)
	}
	for _, n := range im.TopicNames() {
		for i, p := range im.Topics[n].Partitions {
			fmt.Fprintf(&b, "%s-%d %s\n", n, i, formatPartition(p))
		}
	}
	return b.String()
}

// formatPlacement prints each partition's replicas and, per broker, how
// many partitions it leads and holds.
func formatPlacement(brokers []metadata.Broker, out [][]int32, first int) string {
	var b strings.Builder
	leads, holds := map[int32]int{}, map[int32]int{}
	rack := map[int32]string{}
	for _, br := range brokers {
		rack[br.ID] = br.Rack
	}
	for i, rs := range out {
		racks := map[string]bool{}
		for _, r := range rs {
			holds[r]++
			racks[rack[r]] = true
		}
		leads[rs[0]]++
		fmt.Fprintf(&b, "p%d: %v racks=%d\n", first+i, rs, len(racks))
	}
	for _, br := range brokers {
		fmt.Fprintf(&b, "broker %d: leads %d, holds %d\n", br.ID, leads[br.ID], holds[br.ID])
	}
	return b.String()
}

// checkInvariants: every leader is -1 or a usable ISR member; every ISR is
// a non-empty subset of its replicas without repeats, and holds only
// usable brokers unless the partition is offline (then it keeps its last
// member).
func checkInvariants(im *metadata.Image) error {
	for _, n := range im.TopicNames() {
		for i, p := range im.Topics[n].Partitions {
			if p.Leader != -1 && (!slices.Contains(p.ISR, p.Leader) || !usable(im, p.Leader)) {
				return fmt.Errorf("%s-%d: leader %d not a usable ISR member: %s", n, i, p.Leader, formatPartition(p))
			}
			if len(p.ISR) == 0 {
				return fmt.Errorf("%s-%d: empty ISR", n, i)
			}
			for j, r := range p.ISR {
				if !slices.Contains(p.Replicas, r) || slices.Contains(p.ISR[:j], r) {
					return fmt.Errorf("%s-%d: ISR %v not a subset of %v", n, i, p.ISR, p.Replicas)
				}
				if p.Leader != -1 && !usable(im, r) {
					return fmt.Errorf("%s-%d: unusable broker %d in the ISR of a led partition: %s", n, i, r, formatPartition(p))
				}
			}
		}
	}
	return nil
}
