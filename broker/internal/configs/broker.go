package configs

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// BrokerLayers are a broker's raw config maps, one per level, highest
// precedence first. Nil maps are empty.
type BrokerLayers struct {
	// Dynamic: this broker's dynamic configs, set with AlterConfigs on the
	// broker resource named by its node.id (kafka-configs --entity-name).
	Dynamic map[string]string
	// DynamicDefault: cluster-wide dynamic defaults, set on the broker
	// resource with an empty name (kafka-configs --entity-default).
	DynamicDefault map[string]string
	// Static: the config file overlaid with command-line flags.
	Static map[string]string
}

// Broker is a node's effective broker settings, typed.
type Broker struct {
	NodeID                 int32
	Roles                  Roles
	ControllerQuorumVoters []Voter // empty: this node alone
	// ControllerQuorumElectionTimeoutMs and ControllerQuorumFetchTimeoutMs
	// are the metadata quorum's Raft election and heartbeat timeouts.
	ControllerQuorumElectionTimeoutMs int32
	ControllerQuorumFetchTimeoutMs    int32
	ClusterID                         string // "": not configured
	BrokerRack                        string // "": none

	// Listeners are the addresses to bind. AdvertisedListeners are what
	// metadata tells clients: advertised.listeners if set, else a copy of
	// Listeners, in which case the server must replace an empty or
	// wildcard host with the machine's host name and port 0 with the
	// bound port.
	Listeners           []Listener
	AdvertisedListeners []Listener
	// HTTPListener is runnel.http.listener: host:port of /metrics,
	// /healthz and /readyz; "" disables the HTTP server.
	HTTPListener          string
	SocketRequestMaxBytes int32
	ConnectionsMaxIdleMs  int64
	// FetchSessionSlots is max.incremental.fetch.session.cache.slots.
	FetchSessionSlots int32

	NumPartitions            int32
	DefaultReplicationFactor int16
	AutoCreateTopics         bool
	DeleteTopicEnable        bool

	// LogDirs is log.dirs if set, else [log.dir].
	LogDirs []string
	// LogFlushNever is log.flush=never: do not fsync before acknowledging.
	LogFlushNever               bool
	LogRetentionCheckIntervalMs int64
	LogCleanerEnable            bool
	LogCleanerThreads           int32
	LogCleanerBackoffMs         int64
	LogCleanerDedupeBufferSize  int64
	LogCleanerIOBufferSize      int32
	LogCleanerLoadFactor        float64

	ReplicaFetchMaxBytes  int32
	ReplicaFetchWaitMaxMs int32
	ReplicaLagTimeMaxMs   int64

	BrokerSessionTimeoutMs             int32
	BrokerHeartbeatIntervalMs          int32
	AutoLeaderRebalanceEnable          bool
	LeaderImbalancePerBrokerPercentage int32
	LeaderImbalanceCheckIntervalSecs   int64

	OffsetsTopicNumPartitions     int32
	OffsetsTopicReplicationFactor int16
	OffsetsTopicSegmentBytes      int32
	OffsetsRetentionMinutes       int32
	OffsetsRetentionCheckInterval int64
	OffsetMetadataMaxBytes        int32
	GroupInitialRebalanceDelayMs  int32
	GroupMinSessionTimeoutMs      int32
	GroupMaxSessionTimeoutMs      int32
	GroupMaxSize                  int32

	TransactionStateLogNumPartitions     int32
	TransactionStateLogReplicationFactor int16
	TransactionStateLogMinISR            int32
	TransactionStateLogSegmentBytes      int32
	TransactionAbortCheckIntervalMs      int32
	TransactionExpiryCheckIntervalMs     int32
	TransactionMaxTimeoutMs              int32
	TransactionalIDExpirationMs          int32
	ProducerIDExpirationMs               int32

	// TopicDefaults are the settings of a topic without configs of its
	// own (message.max.bytes, min.insync.replicas, log.retention.* ...).
	TopicDefaults Topic
}

// Roles is process.roles.
type Roles struct{ Broker, Controller bool }

// ParseBroker checks static settings (file and flags) and returns the
// effective broker settings with defaults applied. See ResolveBroker.
func ParseBroker(settings map[string]string) (Broker, error) {
	return ResolveBroker(BrokerLayers{Static: settings})
}

// ResolveBroker returns the effective broker settings from all layers.
//
// Every static key must be a known broker key with a valid value; all
// problems are reported, joined, in key order (ErrUnknownConfig,
// ErrInvalidConfig). In the dynamic layers, unknown keys and keys that are
// not Dynamic are ignored, as Kafka does (they may come from another
// version); invalid values of Dynamic keys are errors. Cross-key checks:
// listener names unique and in listener.security.protocol.map,
// advertised.listeners a subset of listeners without 0.0.0.0 or port 0,
// node.id among controller.quorum.voters when this node is a controller and
// its voter port not bound by a listener,
// group.min.session.timeout.ms <= group.max.session.timeout.ms, and the
// topic defaults must resolve (ResolveTopic).
func ResolveBroker(b BrokerLayers) (Broker, error) {
	var errs []error
	for _, k := range sortedKeys(b.Static) {
		d, ok := brokerTable.byName[k]
		if !ok {
			errs = append(errs, unknownBrokerConfig(k))
			continue
		}
		if _, err := d.Normalize(b.Static[k]); err != nil {
			errs = append(errs, err)
		}
	}
	for _, layer := range []map[string]string{b.Dynamic, b.DynamicDefault} {
		for _, k := range sortedKeys(layer) {
			if d, ok := brokerTable.byName[k]; ok && d.Dynamic {
				if _, err := d.Normalize(layer[k]); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	if len(errs) > 0 {
		return Broker{}, errors.Join(errs...)
	}

	// Every value below is valid; get returns the canonical effective
	// value of one key ("" if unset without default).
	get := func(name string) string {
		cs := brokerCandidates([]string{name}, b, true, true)
		if len(cs) == 0 {
			return ""
		}
		v, _ := cs[0].def.normalize(cs[0].raw)
		return v
	}
	isSet := func(name string) bool { return len(brokerCandidates([]string{name}, b, true, true)) > 0 }

	var c Broker
	c.NodeID = i32(get("node.id"))
	for _, r := range splitList(get("process.roles")) {
		c.Roles.Broker = c.Roles.Broker || r == "broker"
		c.Roles.Controller = c.Roles.Controller || r == "controller"
	}
	c.ControllerQuorumVoters, _ = parseVoters(get("controller.quorum.voters"))
	c.ControllerQuorumElectionTimeoutMs = i32(get("controller.quorum.election.timeout.ms"))
	c.ControllerQuorumFetchTimeoutMs = i32(get("controller.quorum.fetch.timeout.ms"))
	c.ClusterID = get("cluster.id")
	c.BrokerRack = get("broker.rack")
	c.HTTPListener = get("runnel.http.listener")
	c.SocketRequestMaxBytes = i32(get("socket.request.max.bytes"))
	c.ConnectionsMaxIdleMs = i64(get("connections.max.idle.ms"))
	c.FetchSessionSlots = i32(get("max.incremental.fetch.session.cache.slots"))
	c.NumPartitions = i32(get("num.partitions"))
	c.DefaultReplicationFactor = int16(i64(get("default.replication.factor")))
	c.AutoCreateTopics = get("auto.create.topics.enable") == "true"
	c.DeleteTopicEnable = get("delete.topic.enable") == "true"
	if isSet("log.dirs") {
		c.LogDirs = splitList(get("log.dirs"))
	} else {
		c.LogDirs = []string{get("log.dir")}
	}
	c.LogFlushNever = get("log.flush") == "never"
	c.LogRetentionCheckIntervalMs = i64(get("log.retention.check.interval.ms"))
	c.LogCleanerEnable = get("log.cleaner.enable") == "true"
	c.LogCleanerThreads = i32(get("log.cleaner.threads"))
	c.LogCleanerBackoffMs = i64(get("log.cleaner.backoff.ms"))
	c.LogCleanerDedupeBufferSize = i64(get("log.cleaner.dedupe.buffer.size"))
	c.LogCleanerIOBufferSize = i32(get("log.cleaner.io.buffer.size"))
	c.LogCleanerLoadFactor, _ = strconv.ParseFloat(get("log.cleaner.io.buffer.load.factor"), 64)
	c.ReplicaFetchMaxBytes = i32(get("replica.fetch.max.bytes"))
	c.ReplicaFetchWaitMaxMs = i32(get("replica.fetch.wait.max.ms"))
	c.ReplicaLagTimeMaxMs = i64(get("replica.lag.time.max.ms"))
	c.BrokerSessionTimeoutMs = i32(get("broker.session.timeout.ms"))
	c.BrokerHeartbeatIntervalMs = i32(get("broker.heartbeat.interval.ms"))
	c.AutoLeaderRebalanceEnable = get("auto.leader.rebalance.enable") == "true"
	c.LeaderImbalancePerBrokerPercentage = i32(get("leader.imbalance.per.broker.percentage"))
	c.LeaderImbalanceCheckIntervalSecs = i64(get("leader.imbalance.check.interval.seconds"))
	c.OffsetsTopicNumPartitions = i32(get("offsets.topic.num.partitions"))
	c.OffsetsTopicReplicationFactor = int16(i64(get("offsets.topic.replication.factor")))
	c.OffsetsTopicSegmentBytes = i32(get("offsets.topic.segment.bytes"))
	c.OffsetsRetentionMinutes = i32(get("offsets.retention.minutes"))
	c.OffsetsRetentionCheckInterval = i64(get("offsets.retention.check.interval.ms"))
	c.OffsetMetadataMaxBytes = i32(get("offset.metadata.max.bytes"))
	c.GroupInitialRebalanceDelayMs = i32(get("group.initial.rebalance.delay.ms"))
	c.GroupMinSessionTimeoutMs = i32(get("group.min.session.timeout.ms"))
	c.GroupMaxSessionTimeoutMs = i32(get("group.max.session.timeout.ms"))
	c.GroupMaxSize = i32(get("group.max.size"))
	c.TransactionStateLogNumPartitions = i32(get("transaction.state.log.num.partitions"))
	c.TransactionStateLogReplicationFactor = int16(i64(get("transaction.state.log.replication.factor")))
	c.TransactionStateLogMinISR = i32(get("transaction.state.log.min.isr"))
	c.TransactionStateLogSegmentBytes = i32(get("transaction.state.log.segment.bytes"))
	c.TransactionAbortCheckIntervalMs = i32(get("transaction.abort.timed.out.transaction.cleanup.interval.ms"))
	c.TransactionExpiryCheckIntervalMs = i32(get("transaction.remove.expired.transaction.cleanup.interval.ms"))
	c.TransactionMaxTimeoutMs = i32(get("transaction.max.timeout.ms"))
	c.TransactionalIDExpirationMs = i32(get("transactional.id.expiration.ms"))
	c.ProducerIDExpirationMs = i32(get("producer.id.expiration.ms"))

	// Cross-key checks.
	invalid := func(format string, args ...any) {
		errs = append(errs, newError(ErrInvalidConfig, format, args...))
	}
	protocols, _ := parseProtocolMap(get("listener.security.protocol.map"))
	c.Listeners, _ = parseListeners(get("listeners"))
	for i, l := range c.Listeners {
		p, ok := protocols[l.Name]
		if !ok {
			invalid("listener %s has no entry in listener.security.protocol.map", l.Name)
		}
		c.Listeners[i].SecurityProtocol = p
		for _, o := range c.Listeners[:i] {
			if l.Port != 0 && l.Port == o.Port && l.Host == o.Host {
				invalid("listeners %s and %s both use %s", o.Name, l.Name, l.Addr())
			}
		}
	}
	if isSet("advertised.listeners") {
		c.AdvertisedListeners, _ = parseListeners(get("advertised.listeners"))
		for i, a := range c.AdvertisedListeners {
			j := slices.IndexFunc(c.Listeners, func(l Listener) bool { return l.Name == a.Name })
			switch {
			case j < 0:
				invalid("advertised listener %s is not in listeners", a.Name)
			case a.Host == "" || a.Host == "0.0.0.0" || a.Host == "::":
				invalid("advertised listener %s must name a host clients can reach, not %q", a.Name, a.Host)
			case a.Port == 0:
				invalid("advertised listener %s must have a port other than 0", a.Name)
			default:
				c.AdvertisedListeners[i].SecurityProtocol = c.Listeners[j].SecurityProtocol
			}
		}
	} else {
		c.AdvertisedListeners = slices.Clone(c.Listeners)
	}
	if !c.Roles.Broker && !c.Roles.Controller {
		invalid("process.roles must name broker, controller or both")
	}
	if c.Roles.Controller && len(c.ControllerQuorumVoters) > 0 &&
		!slices.ContainsFunc(c.ControllerQuorumVoters, func(v Voter) bool { return v.ID == c.NodeID }) {
		invalid("node.id %d must be one of controller.quorum.voters when process.roles includes controller", c.NodeID)
	}
	for _, v := range c.ControllerQuorumVoters {
		if v.ID != c.NodeID || !c.Roles.Controller {
			continue
		}
		// This node binds its voter address for the quorum's transport.
		for _, l := range c.Listeners {
			if l.Port == v.Port && (l.Host == "" || l.Host == v.Host) {
				invalid("controller.quorum.voters gives node %d the port %d, which listener %s binds too", v.ID, v.Port, l.Name)
			}
		}
	}
	if c.GroupMinSessionTimeoutMs > c.GroupMaxSessionTimeoutMs {
		invalid("group.min.session.timeout.ms (%d) must not exceed group.max.session.timeout.ms (%d)",
			c.GroupMinSessionTimeoutMs, c.GroupMaxSessionTimeoutMs)
	}
	var err error
	if c.TopicDefaults, err = ResolveTopic(nil, b); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return Broker{}, errors.Join(errs...)
	}
	return c, nil
}

// NormalizeDynamicBrokerConfigs checks configs to be set on a broker
// resource by AlterConfigs or IncrementalAlterConfigs (per broker or as the
// cluster-wide default) and returns them in canonical form. The error is
// for the first bad key in sorted order: unknown (ErrUnknownConfig), not
// Dynamic (ErrReadOnlyConfig, which also matches ErrInvalidConfig), or a
// bad value (ErrInvalidConfig). To check cross-key conflicts, resolve the
// would-be layers with ResolveBroker.
func NormalizeDynamicBrokerConfigs(m map[string]string) (map[string]string, error) {
	out := make(map[string]string, len(m))
	for _, k := range sortedKeys(m) {
		d, ok := brokerTable.byName[k]
		if !ok {
			return nil, unknownBrokerConfig(k)
		}
		if !d.Dynamic {
			return nil, &configError{
				msg:   fmt.Sprintf("config %s cannot be changed dynamically; set it in the config file or a flag and restart", k),
				kinds: []error{ErrReadOnlyConfig, ErrInvalidConfig},
			}
		}
		v, err := d.Normalize(m[k])
		if err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, nil
}

func unknownBrokerConfig(k string) error {
	hint := brokerTable.suggest(k)
	if td, ok := topicTable.byName[k]; ok {
		hint = " (" + k + " is a topic config"
		if len(td.BrokerSynonyms) > 0 {
			hint += "; its broker-wide default is " + strings.Join(td.BrokerSynonyms, " / ")
		}
		hint += ")"
	}
	return newError(ErrUnknownConfig, "unknown broker config %q%s", k, hint)
}
