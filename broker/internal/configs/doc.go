// Package configs knows every broker and topic config Runnel accepts: its
// Kafka name, type, default, allowed values, documentation, broker
// synonyms and whether it can change at runtime. One table per resource
// (topic_defs.go, broker_defs.go) is the single source of truth for the
// YAML / .properties config file, the command-line flags, validation,
// defaults, DescribeConfigs output and AlterConfigs checks. Adding a config
// is adding a row; everything else follows.
//
// # Names
//
// Keys are Kafka's names, with Kafka 4.0's defaults and ranges, so
// kafka-configs, kafka-topics --config and AdminClient code work
// unchanged. A setting Kafka has no name for gets the prefix "runnel."
// (runnel.http.listener). One exception predates the rule: log.flush
// (always|never), named in the project design; Kafka has no key of that
// name. Defaults that differ from Kafka's are commented in the table:
// node.id (1), process.roles (broker,controller), log.dir (./data), and the
// replication factors / min ISR of the internal topics (1), so that one
// node is a working cluster.
//
// # Layers and precedence
//
// A broker's raw settings come in layers (BrokerLayers), highest first:
//
//  1. dynamic per-broker configs (AlterConfigs on broker "<node.id>")
//  2. dynamic cluster-wide defaults (AlterConfigs on broker "")
//  3. static configs: the file overlaid with flags
//  4. the table's defaults
//
// A topic's own configs (AlterConfigs on the topic, or CreateTopics) come
// above all of them. A topic config takes its broker-wide default from its
// BrokerSynonyms (retention.ms <- log.retention.ms, log.retention.minutes,
// log.retention.hours; max.message.bytes <- message.max.bytes), tried name
// by name within each layer in the order Kafka lists them, and scaled to
// the topic's unit. Only broker keys marked Dynamic are read from the
// dynamic layers; they are exactly Kafka's cluster-wide dynamic log
// configs.
//
// Values are stored as strings, as Kafka's metadata does. Normalize (and
// NormalizeTopicConfigs, NormalizeDynamicBrokerConfigs) turn accepted
// input into the canonical form to store; ResolveTopic and ResolveBroker
// turn layers into typed settings (Topic, Broker); DescribeTopic,
// DescribeBroker and DescribeBrokerDefaults give DescribeConfigs entries
// with sources and synonyms.
//
// # Typical use
//
// At startup (cmd/runnel):
//
//	flags := configs.RegisterFlags(fs)
//	// parse args; then
//	static := map[string]string{}
//	if path != "" {
//		if static, err = configs.LoadFile(path); err != nil { ... }
//	}
//	maps.Copy(static, flags())
//	b, err := configs.ParseBroker(static)
//
// In the broker: CreateTopics checks names with TopicNameError and configs
// with NormalizeTopicConfigs, then ResolveTopic on the result to catch
// conflicts with the broker defaults; the log and partition of a topic run
// on ResolveTopic(topicConfigs, layers), recomputed when a config record
// changes the topic or a dynamic broker layer. AlterConfigs on a broker
// resource uses NormalizeDynamicBrokerConfigs, then ResolveBroker on the
// would-be layers.
//
// # Errors
//
// Every error wraps ErrUnknownConfig, ErrInvalidConfig, ErrReadOnlyConfig
// (with ErrInvalidConfig) or ErrInvalidTopicName, and its message reads on
// its own, so handlers can send it as the Kafka error message. Request
// paths report the first problem; operator paths (LoadFile, ParseBroker)
// report all of them joined.
//
// # Files
//
//	def.go         Def, Type, validators, Normalize, sentinel errors
//	table.go       table plumbing: lookups, synonym chains, did-you-mean
//	topic_defs.go  the topic table
//	broker_defs.go the broker table
//	topic.go       Topic, ResolveTopic, NormalizeTopicConfigs
//	broker.go      BrokerLayers, Broker, ResolveBroker, dynamic-update checks
//	listeners.go   listeners, security protocol map, quorum voters
//	describe.go    DescribeConfigs entries
//	file.go        LoadFile: checks the entries internal/configfile reads
//	flags.go       RegisterFlags
//	topicname.go   TopicNameError
//
// Everything here is pure and safe for concurrent use: the tables are
// built once at package initialization and never modified.
package configs
