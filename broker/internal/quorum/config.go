package quorum

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/runnel-io/runnel/broker/internal/configs"
)

// DirName is the quorum's directory under the first log dir: Kafka's name
// for its metadata log.
const DirName = "__cluster_metadata"

// Config is what Open needs. The zero values of the durations and the
// snapshot settings take the defaults below.
type Config struct {
	// NodeID is node.id.
	NodeID int32
	// Voters is controller.quorum.voters. Empty: a quorum of this node
	// alone on raft's in-memory transport, with no port (a single-node
	// cluster without quorum config).
	Voters []configs.Voter
	// Dir is <log.dirs[0]>/__cluster_metadata: the Raft log and stable
	// store (raft.db, bbolt) and the snapshots (snapshots/).
	Dir string
	// Listener, when set, is the already bound controller listener (tests
	// bind port 0 first to learn their voter addresses). Otherwise Open
	// listens on this node's voter address. Open owns it, also when it
	// fails.
	Listener net.Listener

	// ElectionTimeout is controller.quorum.election.timeout.ms (1s);
	// HeartbeatTimeout is controller.quorum.fetch.timeout.ms (2s): how long
	// a follower waits for the leader before it stands for election. The
	// leader steps down when it has not heard from a majority for half
	// the election timeout (its lease).
	ElectionTimeout  time.Duration
	HeartbeatTimeout time.Duration
	// SnapshotThreshold is how many log entries since the last snapshot
	// trigger a new one (8192), checked every SnapshotInterval (2m);
	// TrailingLogs entries (10240) stay in the log after a snapshot so a
	// briefly absent follower catches up from the log.
	SnapshotThreshold uint64
	SnapshotInterval  time.Duration
	TrailingLogs      uint64

	Logger *slog.Logger
	// RaftLogLevel is the lowest level of hashicorp/raft's own log lines
	// passed on to Logger (nil: warn; its info lines are chatty).
	RaftLogLevel slog.Leveler
}

// standaloneTimeout is the election and heartbeat timeout of a quorum of
// one.
const standaloneTimeout = 20 * time.Millisecond

// Errors from Open's validation.
var ErrConfig = errors.New("quorum: invalid configuration")

// validate checks the voters (ids and addresses unique, this node one of
// them) and fills in the defaults. It returns whether this node is alone
// without a network transport.
func (c *Config) validate() (standalone bool, err error) {
	if c.Dir == "" {
		return false, fmt.Errorf("%w: no directory", ErrConfig)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.RaftLogLevel == nil {
		c.RaftLogLevel = slog.LevelWarn
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.ElectionTimeout, time.Second)
	def(&c.HeartbeatTimeout, 2*time.Second)
	def(&c.SnapshotInterval, 2*time.Minute)
	if c.SnapshotThreshold == 0 {
		c.SnapshotThreshold = 8192
	}
	if c.TrailingLogs == 0 {
		c.TrailingLogs = 10240
	}
	if len(c.Voters) == 0 {
		if c.Listener != nil {
			return false, fmt.Errorf("%w: a listener but no controller.quorum.voters", ErrConfig)
		}
		// Alone, nobody else can lead: raft still waits one heartbeat
		// timeout before it elects itself, so keep that short (a single
		// node starts in milliseconds, not seconds).
		c.HeartbeatTimeout = standaloneTimeout
		c.ElectionTimeout = standaloneTimeout
		return true, nil
	}
	ids := map[int32]bool{}
	addrs := map[string]int32{}
	self := false
	for _, v := range c.Voters {
		if ids[v.ID] {
			return false, fmt.Errorf("%w: voter id %d appears twice in controller.quorum.voters", ErrConfig, v.ID)
		}
		ids[v.ID] = true
		a := strings.ToLower(v.Addr())
		if o, dup := addrs[a]; dup {
			return false, fmt.Errorf("%w: voters %d and %d both use %s", ErrConfig, o, v.ID, v.Addr())
		}
		addrs[a] = v.ID
		self = self || v.ID == c.NodeID
	}
	if !self {
		// Observers (brokers that only follow the metadata log) come with
		// the server wiring; today every node is a voter.
		return false, fmt.Errorf("%w: node.id %d is not one of controller.quorum.voters", ErrConfig, c.NodeID)
	}
	if len(c.Voters)%2 == 0 {
		c.Logger.Warn("controller.quorum.voters has an even count: it tolerates no more failures than one voter fewer",
			"voters", len(c.Voters))
	}
	return false, nil
}

// self returns this node's voter entry.
func (c *Config) self() configs.Voter {
	for _, v := range c.Voters {
		if v.ID == c.NodeID {
			return v
		}
	}
	return configs.Voter{ID: c.NodeID}
}

// configuration is the Raft configuration every voter bootstraps with.
func (c *Config) configuration(localAddr raft.ServerAddress) raft.Configuration {
	if len(c.Voters) == 0 {
		return raft.Configuration{Servers: []raft.Server{{Suffrage: raft.Voter, ID: serverID(c.NodeID), Address: localAddr}}}
	}
	var conf raft.Configuration
	for _, v := range c.Voters {
		conf.Servers = append(conf.Servers, raft.Server{Suffrage: raft.Voter, ID: serverID(v.ID), Address: raft.ServerAddress(v.Addr())})
	}
	return conf
}

func (c *Config) raftConfig(notify chan<- bool) *raft.Config {
	rc := raft.DefaultConfig()
	rc.LocalID = serverID(c.NodeID)
	rc.HeartbeatTimeout = c.HeartbeatTimeout
	// hashicorp/raft requires ElectionTimeout >= HeartbeatTimeout, while
	// Kafka's defaults are election 1s < fetch 2s: a candidate waits at
	// least as long as a follower does.
	rc.ElectionTimeout = max(c.ElectionTimeout, c.HeartbeatTimeout)
	rc.LeaderLeaseTimeout = min(c.ElectionTimeout, c.HeartbeatTimeout) / 2
	// An idle leader sends followers the commit index every CommitTimeout;
	// a follower's forwarded proposal returns only once the follower has
	// applied it, so raft's 50 ms default showed as ~75 ms per follower
	// proposal (BenchmarkPropose); 10 ms (raft waits 10–20 ms) gives ~20
	// ms against ~3 ms on the leader, and costs each follower 50–100 empty
	// AppendEntries a second while idle.
	rc.CommitTimeout = min(10*time.Millisecond, rc.LeaderLeaseTimeout)
	rc.SnapshotThreshold = c.SnapshotThreshold
	rc.SnapshotInterval = c.SnapshotInterval
	rc.TrailingLogs = c.TrailingLogs
	rc.NotifyCh = notify
	rc.Logger = newRaftLogger(c.Logger, c.RaftLogLevel)
	return rc
}

func serverID(id int32) raft.ServerID { return raft.ServerID(strconv.Itoa(int(id))) }

func parseServerID(id raft.ServerID) int32 {
	n, err := strconv.ParseInt(string(id), 10, 32)
	if err != nil {
		return -1
	}
	return int32(n)
}

// newRaftLogger passes raft's hclog lines to slog. hclog has no slog
// bridge in the version raft pins, so its text output is forwarded line by
// line.
func newRaftLogger(l *slog.Logger, leveler slog.Leveler) hclog.Logger {
	level := leveler.Level()
	hl := hclog.Warn
	switch {
	case level <= slog.LevelDebug:
		hl = hclog.Debug
	case level <= slog.LevelInfo:
		hl = hclog.Info
	case level > slog.LevelWarn:
		hl = hclog.Error
	}
	return hclog.New(&hclog.LoggerOptions{
		Name:            "raft",
		Level:           hl,
		Output:          slogWriter{l},
		DisableTime:     true,
		IncludeLocation: false,
	})
}

type slogWriter struct{ l *slog.Logger }

var _ io.Writer = slogWriter{}

func (w slogWriter) Write(p []byte) (int, error) {
	line := strings.TrimSpace(string(p))
	lvl := slog.LevelInfo
	switch {
	case strings.HasPrefix(line, "[ERROR]"):
		lvl = slog.LevelError
	case strings.HasPrefix(line, "[WARN]"):
		lvl = slog.LevelWarn
	case strings.HasPrefix(line, "[DEBUG]"), strings.HasPrefix(line, "[TRACE]"):
		lvl = slog.LevelDebug
	}
	w.l.Log(context.Background(), lvl, line)
	return len(p), nil
}
