package connect

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/runnel-io/runnel/internal/configfile"
)

// The worker's keys, with Kafka Connect's names where it has one.
const (
	WorkerBootstrapServers = "bootstrap.servers"
	WorkerGroupID          = "group.id"
	WorkerListeners        = "listeners"
	WorkerAdvertisedURL    = "rest.advertised.url"
	WorkerOffsetsFile      = "offset.storage.file.filename"
	WorkerOffsetsTopic     = "offset.storage.topic"
	WorkerConfigTopic      = "config.storage.topic"
	WorkerStatusTopic      = "status.storage.topic"
	WorkerOffsetsRF        = "offset.storage.replication.factor"
	WorkerConfigRF         = "config.storage.replication.factor"
	WorkerStatusRF         = "status.storage.replication.factor"
	WorkerOffsetFlush      = "offset.flush.interval.ms"
	WorkerShutdownTimeout  = "task.shutdown.graceful.timeout.ms"
	WorkerEOSSource        = "exactly.once.source.support"
	WorkerSessionTimeout   = "session.timeout.ms"
	WorkerHeartbeat        = "heartbeat.interval.ms"
	WorkerRebalanceTimeout = "rebalance.timeout.ms"
	WorkerMaxPollRecords   = "consumer.max.poll.records"
	WorkerLinger           = "producer.linger.ms"
)

var workerDef = NewConfigDef(
	ConfigKey{Name: WorkerBootstrapServers, Type: TypeList, Default: "localhost:9092", Importance: High,
		Doc: "host:port pairs of the Kafka brokers to reach first."},
	ConfigKey{Name: WorkerGroupID, Type: TypeString, Importance: High,
		Doc: "Distributed mode: the group the workers of one Connect cluster join. Required there."},
	ConfigKey{Name: WorkerListeners, Type: TypeList, Default: "http://:8083", Importance: Low,
		Doc: "Where the REST API listens: http://host:port; port 0 picks a free one."},
	ConfigKey{Name: WorkerAdvertisedURL, Type: TypeString, Importance: Low,
		Doc: "The URL other workers and clients use to reach this worker's REST API; empty: the listener's address."},
	ConfigKey{Name: KeyKeyConverter, Type: TypeClass, Default: "org.apache.kafka.connect.json.JsonConverter", Importance: High,
		Doc: "Converter for record keys (key.converter.* keys configure it)."},
	ConfigKey{Name: KeyValueConverter, Type: TypeClass, Default: "org.apache.kafka.connect.json.JsonConverter", Importance: High,
		Doc: "Converter for record values (value.converter.* keys configure it)."},
	ConfigKey{Name: WorkerOffsetsFile, Type: TypeString, Importance: Low,
		Doc: "Standalone mode: the file source offsets are stored in; empty stores them in offset.storage.topic."},
	ConfigKey{Name: WorkerOffsetsTopic, Type: TypeString, Default: "connect-offsets", Importance: Low,
		Doc: "The compacted topic source offsets are stored in (distributed mode, or standalone without a file)."},
	ConfigKey{Name: WorkerConfigTopic, Type: TypeString, Default: "connect-configs", Importance: Low,
		Doc: "Distributed mode: the compacted topic connector configs are stored in."},
	ConfigKey{Name: WorkerStatusTopic, Type: TypeString, Default: "connect-status", Importance: Low,
		Doc: "Distributed mode: the compacted topic connector and task states are stored in."},
	ConfigKey{Name: WorkerOffsetsRF, Type: TypeInt, Default: "-1", Importance: Low, Doc: "Replication factor of the offsets topic when it is created; -1: the broker's default."},
	ConfigKey{Name: WorkerConfigRF, Type: TypeInt, Default: "-1", Importance: Low, Doc: "Replication factor of the config topic when it is created; -1: the broker's default."},
	ConfigKey{Name: WorkerStatusRF, Type: TypeInt, Default: "-1", Importance: Low, Doc: "Replication factor of the status topic when it is created; -1: the broker's default."},
	ConfigKey{Name: WorkerOffsetFlush, Type: TypeLong, Default: "10000", Importance: Low, Check: AtLeast(1),
		Doc: "How often tasks commit offsets, in ms: sources store the offsets of acknowledged records, sinks flush and commit."},
	ConfigKey{Name: WorkerShutdownTimeout, Type: TypeLong, Default: "5000", Importance: Low, Check: AtLeast(0),
		Doc: "How long a stopping task may take to finish its work before it is abandoned, in ms."},
	ConfigKey{Name: WorkerEOSSource, Type: TypeString, Default: "disabled", Importance: Low, Check: OneOf("disabled", "enabled"),
		Doc: "enabled: source tasks write records and offsets in one transaction (exactly once)."},
	ConfigKey{Name: WorkerSessionTimeout, Type: TypeInt, Default: "10000", Importance: Low, Check: AtLeast(1000), Doc: "Group session timeout of workers and sink tasks, in ms."},
	ConfigKey{Name: WorkerHeartbeat, Type: TypeInt, Default: "3000", Importance: Low, Check: AtLeast(100), Doc: "Group heartbeat interval, in ms."},
	ConfigKey{Name: WorkerRebalanceTimeout, Type: TypeInt, Default: "60000", Importance: Low, Check: AtLeast(1000), Doc: "How long a rebalance may take, in ms."},
	ConfigKey{Name: WorkerMaxPollRecords, Type: TypeInt, Default: "500", Importance: Low, Check: AtLeast(1), Doc: "The most records a sink task's Put gets at once."},
	ConfigKey{Name: WorkerLinger, Type: TypeLong, Default: "5", Importance: Low, Check: AtLeast(0), Doc: "How long source producers wait to fill a batch, in ms."},
)

// ErrInvalidConfig wraps every config problem.
var ErrInvalidConfig = errors.New("connect: invalid config")

// LoadWorkerConfig reads a worker config file (YAML, JSON or .properties)
// and checks it. Errors name the file, line and key.
func LoadWorkerConfig(path string) (Config, error) {
	raw, lines, err := readConfigFile(path)
	if err != nil {
		return nil, err
	}
	cfg, errs := ParseWorkerConfig(raw)
	return cfg, fileErrors(path, lines, errs)
}

// ParseWorkerConfig checks worker settings and fills in defaults. Keys it
// does not know are kept: converters, producer.* and consumer.* keys
// configure parts built later.
func ParseWorkerConfig(raw map[string]string) (Config, []KeyError) {
	cfg, errs := workerDef.Parse(raw)
	return cfg, errs
}

// LoadConnectorConfig reads a connector config file. The connector's keys
// are checked when it is created (PUT/POST, or standalone start), against
// its plugin.
func LoadConnectorConfig(path string) (Config, error) {
	raw, _, err := readConfigFile(path)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(raw[KeyName]) == "" {
		return nil, fmt.Errorf("%w: %s: the connector config has no name", ErrInvalidConfig, path)
	}
	return Config(raw), nil
}

// readConfigFile reads a flat config file; a key set twice is an error.
func readConfigFile(path string) (map[string]string, map[string]int, error) {
	entries, err := configfile.Read(path)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	raw := map[string]string{}
	lines := map[string]int{}
	var problems []string
	for _, e := range entries {
		if l, dup := lines[e.Key]; dup {
			problems = append(problems, fmt.Sprintf("%s:%d: %s is set twice (first on line %d)", path, e.Line, e.Key, l))
			continue
		}
		lines[e.Key] = e.Line
		if e.Err != nil {
			problems = append(problems, fmt.Sprintf("%s:%d: %v", path, e.Line, e.Err))
			continue
		}
		if !e.Null {
			raw[e.Key] = e.Value
		}
	}
	if len(problems) > 0 {
		return nil, nil, fmt.Errorf("%w:\n%s", ErrInvalidConfig, strings.Join(problems, "\n"))
	}
	return raw, lines, nil
}

// fileErrors formats key errors as "path:line: key: message", one per
// line.
func fileErrors(path string, lines map[string]int, errs []KeyError) error {
	if len(errs) == 0 {
		return nil
	}
	sort.SliceStable(errs, func(i, j int) bool { return lines[errs[i].Key] < lines[errs[j].Key] })
	var b strings.Builder
	for _, e := range errs {
		if l, ok := lines[e.Key]; ok {
			fmt.Fprintf(&b, "\n%s:%d: %s: %s", path, l, e.Key, e.Message)
		} else {
			fmt.Fprintf(&b, "\n%s: %s: %s", path, e.Key, e.Message)
		}
	}
	return fmt.Errorf("%w:%s", ErrInvalidConfig, b.String())
}
