package configs

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseBrokerDefaults(t *testing.T) {
	b, err := ParseBroker(nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []Listener{{Name: "PLAINTEXT", Host: "", Port: 9092, SecurityProtocol: "PLAINTEXT"}}
	if !reflect.DeepEqual(b.Listeners, want) || !reflect.DeepEqual(b.AdvertisedListeners, want) {
		t.Errorf("listeners %v / %v", b.Listeners, b.AdvertisedListeners)
	}
	if b.NodeID != 1 || !b.Roles.Broker || !b.Roles.Controller || len(b.ControllerQuorumVoters) != 0 {
		t.Errorf("node %+v", b)
	}
	if !reflect.DeepEqual(b.LogDirs, []string{"./data"}) || b.LogFlushNever || b.HTTPListener != ":9099" {
		t.Errorf("log dirs %v, flush never %v, http %q", b.LogDirs, b.LogFlushNever, b.HTTPListener)
	}
	if b.NumPartitions != 1 || b.DefaultReplicationFactor != 1 || !b.AutoCreateTopics || !b.DeleteTopicEnable {
		t.Errorf("topic creation %+v", b)
	}
	if b.OffsetsTopicNumPartitions != 50 || b.OffsetsTopicReplicationFactor != 1 || b.TransactionStateLogMinISR != 1 {
		t.Errorf("internal topics %+v", b)
	}
	if b.SocketRequestMaxBytes != 104857600 || b.LogRetentionCheckIntervalMs != 300000 || b.GroupInitialRebalanceDelayMs != 3000 {
		t.Errorf("misc %+v", b)
	}
	if b.TopicDefaults != DefaultTopic() {
		t.Errorf("topic defaults %+v", b.TopicDefaults)
	}
	if b.BrokerSessionTimeoutMs != 9000 || b.BrokerHeartbeatIntervalMs != 2000 || !b.AutoLeaderRebalanceEnable ||
		b.LeaderImbalancePerBrokerPercentage != 10 || b.LeaderImbalanceCheckIntervalSecs != 300 {
		t.Errorf("controller settings %+v", b)
	}
	b, err = ParseBroker(map[string]string{"broker.session.timeout.ms": "3000", "auto.leader.rebalance.enable": "false",
		"leader.imbalance.per.broker.percentage": "25"})
	if err != nil || b.BrokerSessionTimeoutMs != 3000 || b.AutoLeaderRebalanceEnable || b.LeaderImbalancePerBrokerPercentage != 25 {
		t.Errorf("controller settings set: %v %+v", err, b)
	}
	if _, err := ParseBroker(map[string]string{"leader.imbalance.per.broker.percentage": "101"}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("percentage 101: %v", err)
	}
}

func TestParseBroker(t *testing.T) {
	b, err := ParseBroker(map[string]string{
		"node.id":                        "3",
		"process.roles":                  "broker",
		"log.dirs":                       "/d1, /d2",
		"log.dir":                        "/ignored",
		"listeners":                      "internal://127.0.0.1:9092,EXTERNAL://[::]:9093",
		"advertised.listeners":           "INTERNAL://10.0.0.3:9092,EXTERNAL://kafka.example.com:19093",
		"listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:SASL_SSL",
		"log.flush":                      "never",
		"runnel.http.listener":           "",
		"num.partitions":                 "6",
		"default.replication.factor":     "3",
		"log.retention.hours":            "1",
		"message.max.bytes":              "2000000",
		"broker.rack":                    "eu-1a",
		"controller.quorum.voters":       "1@c1:9094,2@c2:9094,3@c3:9094",
	})
	if err != nil {
		t.Fatal(err)
	}
	wantL := []Listener{
		{Name: "INTERNAL", Host: "127.0.0.1", Port: 9092, SecurityProtocol: "PLAINTEXT"},
		{Name: "EXTERNAL", Host: "::", Port: 9093, SecurityProtocol: "SASL_SSL"},
	}
	wantA := []Listener{
		{Name: "INTERNAL", Host: "10.0.0.3", Port: 9092, SecurityProtocol: "PLAINTEXT"},
		{Name: "EXTERNAL", Host: "kafka.example.com", Port: 19093, SecurityProtocol: "SASL_SSL"},
	}
	if !reflect.DeepEqual(b.Listeners, wantL) || !reflect.DeepEqual(b.AdvertisedListeners, wantA) {
		t.Errorf("listeners\n%v\n%v", b.Listeners, b.AdvertisedListeners)
	}
	if got := b.Listeners[1].Addr(); got != "[::]:9093" {
		t.Errorf("Addr %q", got)
	}
	if got := b.AdvertisedListeners[1].String(); got != "EXTERNAL://kafka.example.com:19093" {
		t.Errorf("String %q", got)
	}
	if b.NodeID != 3 || !b.Roles.Broker || b.Roles.Controller || !reflect.DeepEqual(b.LogDirs, []string{"/d1", "/d2"}) {
		t.Errorf("%+v", b)
	}
	if !b.LogFlushNever || b.HTTPListener != "" || b.NumPartitions != 6 || b.DefaultReplicationFactor != 3 || b.BrokerRack != "eu-1a" {
		t.Errorf("%+v", b)
	}
	if b.TopicDefaults.RetentionMs != 3600000 || b.TopicDefaults.MaxMessageBytes != 2000000 {
		t.Errorf("topic defaults %+v", b.TopicDefaults)
	}
	if len(b.ControllerQuorumVoters) != 3 || b.ControllerQuorumVoters[2] != (Voter{ID: 3, Host: "c3", Port: 9094}) || b.ControllerQuorumVoters[0].Addr() != "c1:9094" {
		t.Errorf("voters %v", b.ControllerQuorumVoters)
	}
}

func TestParseBrokerErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   map[string]string
		want []string // lines of the joined error
		kind error
	}{
		{"unknown and invalid, all reported in key order", map[string]string{
			"num.partition":     "3",
			"log.segment.bytes": "10",
			"retention.ms":      "5",
		}, []string{
			`invalid value "10" for config log.segment.bytes: must be at least 1048576`,
			`unknown broker config "num.partition" (did you mean num.partitions?)`,
			`unknown broker config "retention.ms" (retention.ms is a topic config; its broker-wide default is log.retention.ms / log.retention.minutes / log.retention.hours)`,
		}, ErrUnknownConfig},
		{"listener without protocol", map[string]string{"listeners": "CLIENT://:9092"},
			[]string{"listener CLIENT has no entry in listener.security.protocol.map"}, ErrInvalidConfig},
		{"same address twice", map[string]string{"listeners": "PLAINTEXT://:9092,SSL://:9092"},
			[]string{"listeners PLAINTEXT and SSL both use :9092"}, ErrInvalidConfig},
		{"advertised not in listeners", map[string]string{"advertised.listeners": "SSL://h:9093"},
			[]string{"advertised listener SSL is not in listeners"}, ErrInvalidConfig},
		{"advertised wildcard", map[string]string{"advertised.listeners": "PLAINTEXT://0.0.0.0:9092"},
			[]string{`advertised listener PLAINTEXT must name a host clients can reach, not "0.0.0.0"`}, ErrInvalidConfig},
		{"advertised port 0", map[string]string{"advertised.listeners": "PLAINTEXT://h:0"},
			[]string{"advertised listener PLAINTEXT must have a port other than 0"}, ErrInvalidConfig},
		{"no roles", map[string]string{"process.roles": ""},
			[]string{"process.roles must name broker, controller or both"}, ErrInvalidConfig},
		{"controller not a voter", map[string]string{"controller.quorum.voters": "2@h:9093"},
			[]string{"node.id 1 must be one of controller.quorum.voters when process.roles includes controller"}, ErrInvalidConfig},
		{"voter port is a listener's", map[string]string{"controller.quorum.voters": "1@h:9092"},
			[]string{"controller.quorum.voters gives node 1 the port 9092, which listener PLAINTEXT binds too"}, ErrInvalidConfig},
		{"session timeouts", map[string]string{"group.min.session.timeout.ms": "10", "group.max.session.timeout.ms": "5"},
			[]string{"group.min.session.timeout.ms (10) must not exceed group.max.session.timeout.ms (5)"}, ErrInvalidConfig},
		{"compaction lags", map[string]string{"log.cleaner.min.compaction.lag.ms": "10", "log.cleaner.max.compaction.lag.ms": "5"},
			[]string{"conflicting topic configs: min.compaction.lag.ms (10) > max.compaction.lag.ms (5)"}, ErrInvalidConfig},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseBroker(tc.in)
			if err == nil {
				t.Fatal("no error")
			}
			if got := strings.Split(err.Error(), "\n"); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("\n got %q\nwant %q", got, tc.want)
			}
			if !errors.Is(err, tc.kind) {
				t.Errorf("error does not wrap %v", tc.kind)
			}
		})
	}
}

func TestResolveBrokerDynamicLayers(t *testing.T) {
	b, err := ResolveBroker(BrokerLayers{
		Dynamic:        map[string]string{"min.insync.replicas": "2", "num.partitions": "9", "from.a.newer.version": "x"},
		DynamicDefault: map[string]string{"message.max.bytes": "5000000"},
		Static:         map[string]string{"num.partitions": "3", "message.max.bytes": "10"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if b.NumPartitions != 3 { // not dynamic: the dynamic value is ignored
		t.Errorf("NumPartitions %d", b.NumPartitions)
	}
	if b.TopicDefaults.MinInsyncReplicas != 2 || b.TopicDefaults.MaxMessageBytes != 5000000 {
		t.Errorf("topic defaults %+v", b.TopicDefaults)
	}
	_, err = ResolveBroker(BrokerLayers{DynamicDefault: map[string]string{"min.insync.replicas": "0"}})
	if !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("bad dynamic value: %v", err)
	}
}
