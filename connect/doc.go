// Package connect is Runnel's connector runtime, in the spirit of Kafka
// Connect: connectors described in config files move records between
// topics and other systems, with offsets that survive restarts, error
// tolerance with a dead letter queue, automatic task restarts and a REST
// API with Kafka Connect's paths and shapes. It reaches brokers only
// through the Kafka protocol (franz-go), so it runs unchanged against
// Runnel, Apache Kafka or Redpanda.
//
// # Writing a connector
//
// A connector is a Plugin: a config definition (ConfigDef: types,
// defaults, checks and docs, shown by the validate endpoint), an optional
// TaskConfigs that splits the work, and a task constructor. A SourceTask
// polls records from outside (each with a source partition and offset
// that the runtime stores once the brokers acknowledged the record); a
// SinkTask receives batches with Put and makes them durable in Flush,
// after which the runtime commits consumer offsets. Plugins are
// registered explicitly into a Registry (connect/connectors registers the
// built-in ones); nothing registers itself.
//
// Records carry structured values (maps, slices, strings, numbers); the
// converters (json with or without schema envelope, string, bytes) turn
// them into bytes and back, and transforms (connect/transforms) change
// them one at a time, as Kafka Connect's single message transforms do.
//
// # Running
//
// StartStandalone runs one worker with connectors from config files
// (runnel connect standalone worker.yaml c1.yaml ...). Worker and
// connector keys follow Kafka Connect's names (bootstrap.servers,
// key.converter, offset.storage.file.filename, connector.class,
// tasks.max, errors.tolerance, transforms ...). A config value may refer
// to a secret instead of holding it: ${env:NAME}, ${file:/path:key} or
// ${file:/path}; responses show the reference, never the secret, and
// values of PASSWORD keys are shown as [hidden].
//
// # Delivery
//
// Sources are at least once: every offset.flush.interval.ms a task waits
// until the brokers acknowledged what it produced, then stores the source
// offsets of those records. Sinks are at least once: the task flushes,
// then the runtime commits the offsets after the records flushed. A sink
// that stores offsets with its data (OffsetStorer) is exactly once: the
// runtime starts each partition where the sink says.
//
// # Concurrency
//
// Each task runs in its own goroutine; pausing, resuming, restarting and
// stopping are messages to it. The herder's methods are safe for
// concurrent use (the REST API calls them from its handlers). Close
// stops the REST API, then every task, and waits for them.
package connect
