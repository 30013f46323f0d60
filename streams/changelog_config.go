package streams

import (
	"strconv"
	"time"
)

// windowChangelogExtraRetention is how much longer than its store a window
// or session store's changelog keeps records: Kafka Streams'
// windowstore.changelog.additional.retention.ms default, one day, so that
// clock drift between brokers and stream time does not delete records a
// restore still needs.
const windowChangelogExtraRetention = 24 * time.Hour

// internalTopicConfigs returns the topic configs an internal topic is
// created with. A key-value store's changelog is compacted; a window or
// session store's is compacted and deleted by time (cleanup.policy
// "compact,delete", retention.ms the store's retention plus a day), since
// its keys carry times and expired windows would otherwise stay forever.
// Repartition topics get the broker's defaults.
func internalTopicConfigs(topo *Topology, appID, topic string) map[string]*string {
	configs := map[string]*string{}
	if !isChangelog(topic) {
		return configs
	}
	policy := "compact"
	configs["cleanup.policy"] = &policy
	const prefix, suffix = "-", "-changelog"
	if len(topic) < len(appID)+len(prefix)+len(suffix) {
		return configs
	}
	def, ok := topo.stores[topic[len(appID)+len(prefix):len(topic)-len(suffix)]]
	if !ok || def.kind == kvStore {
		return configs
	}
	policy = "compact,delete"
	retention := strconv.FormatInt((def.retention + windowChangelogExtraRetention).Milliseconds(), 10)
	configs["retention.ms"] = &retention
	return configs
}
